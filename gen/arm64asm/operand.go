// Package arm64asm is a small typed emitter of Go arm64 assembly, in the
// spirit of avo: registers, arrangements and memory operands are values,
// each instruction is a method, and a printer renders the text once.
//
// Operands follow the Go assembler's order (sources first, destination
// last) for every instruction, including those Go's assembler lacks: the
// emitter encodes those itself and prints them as WORD $0x........ with the
// GNU mnemonic in a comment (see encode.go).
package arm64asm

import "fmt"

// Operand is anything that can appear as an instruction argument.
type Operand interface {
	asm() string
}

// Reg is a general-purpose register R0..R30.
type Reg uint8

// ZR is the zero register; RSP is not offered (kernels never touch the stack).
const ZR Reg = 31

func (r Reg) asm() string {
	if r == ZR {
		return "ZR"
	}
	return fmt.Sprintf("R%d", uint8(r))
}

func (r Reg) String() string { return r.asm() }

// VReg is a SIMD&FP register V0..V31, the whole 128 bits.
type VReg uint8

// FReg is the low 32 bits of a SIMD&FP register, a float32 scalar (Go's F0..F31).
type FReg uint8

// F is the float32 scalar view of v.
func (v VReg) F() FReg { return FReg(v) }

// V is the vector register holding f in its lane 0.
func (f FReg) V() VReg { return VReg(f) }

func (f FReg) asm() string    { return fmt.Sprintf("F%d", uint8(f)) }
func (f FReg) String() string { return f.asm() }

// Arrangement is a vector register's shape: element size and lane count.
type Arrangement uint8

const (
	B8 Arrangement = iota
	B16
	H4
	H8
	S2
	S4
	D1
	D2
)

var arrNames = [...]struct{ goName, gnuName string }{
	{"B8", "8b"}, {"B16", "16b"}, {"H4", "4h"}, {"H8", "8h"},
	{"S2", "2s"}, {"S4", "4s"}, {"D1", "1d"}, {"D2", "2d"},
}

// Q reports whether the arrangement fills all 128 bits.
func (a Arrangement) Q() bool { return a == B16 || a == H8 || a == S4 || a == D2 }

func (a Arrangement) String() string { return arrNames[a].goName }

// VArr is a vector register with an arrangement, e.g. V3.S4.
type VArr struct {
	Reg VReg
	Arr Arrangement
}

// S4 is v as four float32 lanes.
func (v VReg) S4() VArr { return VArr{v, S4} }

// S2 is the low 64 bits of v as two float32 lanes.
func (v VReg) S2() VArr { return VArr{v, S2} }

// B16 is v as sixteen bytes (for bitwise moves).
func (v VReg) B16() VArr { return VArr{v, B16} }

// H4 is the low 64 bits of v as four 16-bit lanes.
func (v VReg) H4() VArr { return VArr{v, H4} }

// H8 is v as eight 16-bit lanes.
func (v VReg) H8() VArr { return VArr{v, H8} }

// D2 is v as two float64 lanes.
func (v VReg) D2() VArr { return VArr{v, D2} }

func (v VArr) asm() string { return fmt.Sprintf("V%d.%s", v.Reg, v.Arr) }

// gnu spells v the way GNU as does, for WORD comments.
func (v VArr) gnu() string { return fmt.Sprintf("v%d.%s", v.Reg, arrNames[v.Arr].gnuName) }

// VElem is one 32-bit lane of a vector register, e.g. V3.S[0].
type VElem struct {
	Reg   VReg
	Index uint8
}

// SLane is lane i of v as a float32 element.
func (v VReg) SLane(i uint8) VElem { return VElem{v, i} }

func (e VElem) asm() string { return fmt.Sprintf("V%d.S[%d]", e.Reg, e.Index) }

// HElem is one 16-bit lane of a vector register, e.g. V3.H[0].
type HElem struct {
	Reg   VReg
	Index uint8
}

// HLane is lane i of v as a 16-bit element.
func (v VReg) HLane(i uint8) HElem { return HElem{v, i} }

func (e HElem) asm() string { return fmt.Sprintf("V%d.H[%d]", e.Reg, e.Index) }

// DElem is one 64-bit lane of a vector register, e.g. V3.D[1].
type DElem struct {
	Reg   VReg
	Index uint8
}

// DLane is lane i of v as a 64-bit element.
func (v VReg) DLane(i uint8) DElem { return DElem{v, i} }

func (e DElem) asm() string { return fmt.Sprintf("V%d.D[%d]", e.Reg, e.Index) }

// VList is a list of 1 to 4 consecutive registers with one arrangement,
// the operand of VLD1/VST1.
type VList struct {
	First VReg
	Len   int
	Arr   Arrangement
}

// List is n consecutive registers from v (wrapping past V31), as arr.
func (v VReg) List(n int, arr Arrangement) VList { return VList{v, n, arr} }

func (l VList) asm() string {
	s := "["
	for i := 0; i < l.Len; i++ {
		if i > 0 {
			s += ", "
		}
		s += VArr{VReg((int(l.First) + i) % 32), l.Arr}.asm()
	}
	return s + "]"
}

// Bytes is how many bytes VLD1/VST1 move for l.
func (l VList) Bytes() int {
	if l.Arr.Q() {
		return 16 * l.Len
	}
	return 8 * l.Len
}

// QPair is two 128-bit registers stored together, Go's (Fa, Fb) of FSTPQ.
type QPair struct{ A, B VReg }

func (q QPair) asm() string { return fmt.Sprintf("(F%d, F%d)", q.A, q.B) }

// Imm is an immediate integer, $n.
type Imm int64

func (i Imm) asm() string { return fmt.Sprintf("$%d", int64(i)) }

// Hex is an immediate printed in hexadecimal (bit patterns of constants).
type Hex uint32

func (h Hex) asm() string { return fmt.Sprintf("$0x%08x", uint32(h)) }

// Mem is the address Base+Off.
type Mem struct {
	Base Reg
	Off  int32
}

func (m Mem) asm() string {
	if m.Off == 0 {
		return fmt.Sprintf("(%s)", m.Base.asm())
	}
	return fmt.Sprintf("%d(%s)", m.Off, m.Base.asm())
}

// Param is a Go argument in the caller's frame, name+off(FP), the spelling
// go vet's asmdecl checks against the Go declaration.
type Param struct {
	Name string
	Off  int
}

func (p Param) asm() string { return fmt.Sprintf("%s+%d(FP)", p.Name, p.Off) }

// Label is a branch target inside one function.
type Label string

func (l Label) asm() string { return string(l) }
