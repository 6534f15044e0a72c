package amd64

import (
	"fmt"

	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Instructions neither avo nor the Go assembler knows are built as avo
// instructions on virtual registers, so that liveness and allocation see
// them, and after allocation replaced by their machine code (LONG, WORD)
// under a comment that spells them.

// opVCVTNEPS2BF16 is the placeholder opcode of VCVTNEPS2BF16 zmm -> ymm
// (AVX512_BF16): packed float32 to bfloat16, round to nearest even.
const opVCVTNEPS2BF16 = "VCVTNEPS2BF16"

// vcvtneps2bf16 narrows the 16 float32 of z into the bfloat16 of y.
func (e *emitter) vcvtneps2bf16(z, y reg.Register) {
	e.fn.AddInstruction(&avoir.Instruction{
		Opcode:   opVCVTNEPS2BF16,
		Operands: []operand.Op{z, y},
		Inputs:   []operand.Op{z},
		Outputs:  []operand.Op{y},
	})
}

// encodeRaw replaces the placeholders of fn, its registers allocated, by
// their machine code.
func encodeRaw(fn *avoir.Function) error {
	var out []avoir.Node
	for _, n := range fn.Nodes {
		i, ok := n.(*avoir.Instruction)
		if !ok || i.Opcode != opVCVTNEPS2BF16 {
			out = append(out, n)
			continue
		}
		src, dst := reg.ToPhysical(i.Operands[0].(reg.Register)), reg.ToPhysical(i.Operands[1].(reg.Register))
		if src == nil || dst == nil || src.Size() != 64 || dst.Size() != 32 {
			return fmt.Errorf("%s: operands %v, want an allocated ZMM and YMM", i.Opcode, i.Operands)
		}
		b := evexZY(0x72, uint8(src.PhysicalIndex()), uint8(dst.PhysicalIndex()))
		out = append(out, avoir.NewComment(fmt.Sprintf("%s %s, %s", i.Opcode, src.Asm(), dst.Asm())),
			&avoir.Instruction{Opcode: "LONG", Operands: []operand.Op{operand.U32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)}},
			&avoir.Instruction{Opcode: "WORD", Operands: []operand.Op{operand.U16(uint16(b[4]) | uint16(b[5])<<8)}})
	}
	fn.Nodes = out
	return nil
}

// evexZY encodes opcode op of map 0F38, prefix F3, W0, 512-bit, unmasked,
// with register operands: ModRM.rm the ZMM src, ModRM.reg the dst.
func evexZY(op byte, src, dst uint8) [6]byte {
	inv := func(r uint8, bit uint) byte { return byte(^r>>bit) & 1 }
	p0 := inv(dst, 3)<<7 | inv(src, 4)<<6 | inv(src, 3)<<5 | inv(dst, 4)<<4 | 0x2 // R X B R' 0 mmm=0F38
	const p1 = 0x7e                                                               // W0, vvvv unused (1111), 1, pp=F3
	const p2 = 0x48                                                               // z=0, L'L=512, b=0, V'=1, aaa=k0
	return [6]byte{0x62, p0, p1, p2, op, 0xc0 | (dst&7)<<3 | src&7}
}
