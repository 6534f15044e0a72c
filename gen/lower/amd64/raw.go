package amd64

import (
	"fmt"
	"strings"

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

// opVCVTNE2PS2BF16 is the placeholder opcode of VCVTNE2PS2BF16 zmm, zmm
// -> zmm (AVX512_BF16): two vectors of float32 to one of bfloat16, the
// first in the low half.
const opVCVTNE2PS2BF16 = "VCVTNE2PS2BF16"

// vcvtne2ps2bf16 narrows the float32 of lo and hi into the bfloat16 of
// d, lo's in its low half.
func (e *emitter) vcvtne2ps2bf16(lo, hi, d reg.Register) {
	e.fn.AddInstruction(&avoir.Instruction{
		Opcode:   opVCVTNE2PS2BF16,
		Operands: []operand.Op{lo, hi, d},
		Inputs:   []operand.Op{lo, hi},
		Outputs:  []operand.Op{d},
	})
}

// encodeRaw replaces the placeholders of fn, its registers allocated, by
// their machine code.
func encodeRaw(fn *avoir.Function) error {
	var out []avoir.Node
	for _, n := range fn.Nodes {
		i, ok := n.(*avoir.Instruction)
		if !ok || (i.Opcode != opVCVTNEPS2BF16 && i.Opcode != opVCVTNE2PS2BF16) {
			out = append(out, n)
			continue
		}
		var phys []reg.Physical
		for _, o := range i.Operands {
			phys = append(phys, reg.ToPhysical(o.(reg.Register)))
		}
		var b [6]byte
		switch {
		case i.Opcode == opVCVTNEPS2BF16 && phys[0] != nil && phys[1] != nil && phys[0].Size() == 64 && phys[1].Size() == 32:
			b = evexZY(0x72, uint8(phys[0].PhysicalIndex()), uint8(phys[1].PhysicalIndex()))
		case i.Opcode == opVCVTNE2PS2BF16 && phys[0] != nil && phys[1] != nil && phys[2] != nil &&
			phys[0].Size() == 64 && phys[1].Size() == 64 && phys[2].Size() == 64:
			b = evexZZZ(0x72, uint8(phys[0].PhysicalIndex()), uint8(phys[1].PhysicalIndex()), uint8(phys[2].PhysicalIndex()))
		default:
			return fmt.Errorf("%s: operands %v, want allocated registers of its widths", i.Opcode, i.Operands)
		}
		var asm []string
		for _, r := range phys {
			asm = append(asm, r.Asm())
		}
		out = append(out, avoir.NewComment(fmt.Sprintf("%s %s", i.Opcode, strings.Join(asm, ", "))),
			&avoir.Instruction{Opcode: "LONG", Operands: []operand.Op{operand.U32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)}},
			&avoir.Instruction{Opcode: "WORD", Operands: []operand.Op{operand.U16(uint16(b[4]) | uint16(b[5])<<8)}})
	}
	fn.Nodes = out
	return nil
}

func inv(r uint8, bit uint) byte { return byte(^r>>bit) & 1 }

// evexZY encodes opcode op of map 0F38, prefix F3, W0, 512-bit, unmasked,
// with register operands: ModRM.rm the ZMM src, ModRM.reg the dst.
func evexZY(op byte, src, dst uint8) [6]byte {
	p0 := inv(dst, 3)<<7 | inv(src, 4)<<6 | inv(src, 3)<<5 | inv(dst, 4)<<4 | 0x2 // R X B R' 0 mmm=0F38
	const p1 = 0x7e                                                               // W0, vvvv unused (1111), 1, pp=F3
	const p2 = 0x48                                                               // z=0, L'L=512, b=0, V'=1, aaa=k0
	return [6]byte{0x62, p0, p1, p2, op, 0xc0 | (dst&7)<<3 | src&7}
}

// evexZZZ encodes opcode op of map 0F38, prefix F2, W0, 512-bit,
// unmasked, with ZMM operands: ModRM.rm rm, EVEX.vvvv v, ModRM.reg dst.
func evexZZZ(op byte, rm, v, dst uint8) [6]byte {
	p0 := inv(dst, 3)<<7 | inv(rm, 4)<<6 | inv(rm, 3)<<5 | inv(dst, 4)<<4 | 0x2 // R X B R' 0 mmm=0F38
	p1 := (^v&0xf)<<3 | 0x4 | 0x3                                               // W0, vvvv, 1, pp=F2
	p2 := 0x40 | inv(v, 4)<<3                                                   // z=0, L'L=512, b=0, V', aaa=k0
	return [6]byte{0x62, p0, p1, p2, op, 0xc0 | (dst&7)<<3 | rm&7}
}
