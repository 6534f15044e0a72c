package amd64

import (
	"fmt"

	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"
)

// emitter appends instructions to one avo function. It plays the part of
// avo's build.Context without that package, whose golang.org/x/tools
// dependency normgen does not need: avo's x86 constructors check operand
// forms, and the first error is kept.
type emitter struct {
	fn   *avoir.Function
	regs *reg.Collection
	err  error
}

func newEmitter(fn *avoir.Function) *emitter {
	return &emitter{fn: fn, regs: reg.NewCollection()}
}

// I appends the result of an avo x86 constructor.
func (e *emitter) I(i *avoir.Instruction, err error) {
	if err != nil {
		e.fail(err)
		return
	}
	e.fn.AddInstruction(i)
}

func (e *emitter) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *emitter) label(name string) { e.fn.AddLabel(avoir.Label(name)) }

func (e *emitter) comment(format string, args ...any) {
	e.fn.AddComment(fmt.Sprintf(format, args...))
}

func (e *emitter) gp64() reg.GPVirtual { return e.regs.GP64() }
func (e *emitter) gp32() reg.GPVirtual { return e.regs.GP32() }
func (e *emitter) xmm() reg.VecVirtual { return e.regs.XMM() }

// zeroZ clears a ZMM register. VPXORD z, z, z is a zero idiom, but avo's
// table does not mark it as one, so liveness would see a read of an
// undefined register and keep it live from the function's entry; say so.
func (e *emitter) zeroZ(z reg.Register) {
	i, err := x86.VPXORD(z, z, z)
	if err == nil {
		i.CancellingInputs = true
	}
	e.I(i, err)
}

// imm32 is a signed 32-bit immediate.
func imm32(v int) operand.I32 { return operand.I32(int32(v)) }

// mem is a memory operand base+index*4+disp (no index when index is nil).
func mem(base, index reg.Register, disp int) operand.Mem {
	m := operand.Mem{Base: base, Disp: disp}
	if index != nil {
		m.Index = index
		m.Scale = 4
	}
	return m
}
