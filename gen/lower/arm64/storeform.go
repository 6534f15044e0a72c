package arm64

import (
	"github.com/normgen/normgen/gen/arm64asm"
	"github.com/normgen/normgen/gen/ir"
)

// Store forms. A main-loop iteration stores each float32 value as u/2
// register pairs, each either half of an ST1 {u regs} or one STP q. The
// cores' costs, in the units of LLVM's Neoverse scheduling models, per
// 128-bit register:
//
//	                 load pipes        ST1 address  STP address  store data
//	N1               2 (shared)        1            2            1 (on the 2 FP pipes)
//	N2, V1, V2       3 (2 also store)  1            1/2          1 (V1 STP: 1/2)
//
// So STP halves the store-address slots on N2/V1/V2 (where a loop that
// loads and stores is bound by them) and doubles them on N1, where loads
// and store addresses share the same two pipes. One build runs on all
// four, so a pair goes to STP only while N1's load/store pipes stay
// within its FP pipes' time: N1 is never slower than with ST1, and
// N2/V1/V2 gain what N1 leaves room for. Loops without that room (one FP
// op per value loaded, e.g. x*r*g) keep ST1 and stay N1-optimal.

// storePairs returns, for each float32 store of p's main iteration (u
// vectors), how many of its u/2 register pairs are stored by STP, and
// nothing when no pair is.
func (l *lowering) storePairs(p *loopPlan) map[int]int {
	if p.noPost || l.u%2 != 0 {
		return nil
	}
	u := l.u
	loads, fp := 0, 0
	var stores []int
	for i, op := range p.ops {
		if p.splat[i] || p.dead[i] {
			continue
		}
		switch op.Code {
		case ir.VLoad:
			loads += u
		case ir.VStore:
			if l.elem(op.Array).Half() {
				break
			}
			if p.splat[op.Args[0]] {
				fp += u // the VMOVs copying it into the stored group
			}
			if p.final[op.Array] == i {
				stores = append(stores, i)
			}
		case ir.VAdd, ir.VSub, ir.VMul, ir.VAcc, ir.VAccMul:
			fp += u
		case ir.VFMA:
			fp += u
			if p.reg[i] != p.reg[op.Args[2]] {
				fp += u // the VMOV of its addend
			}
		}
	}
	// Each STP pair costs N1 two load/store slots more than ST1; its FP
	// pipes carry fp ops and one data slot per stored register either way.
	free := (fp - loads) / 2
	if free <= 0 || len(stores) == 0 {
		return nil
	}
	pairs := map[int]int{}
	for _, i := range stores {
		n := min(free, u/2)
		if n == 0 {
			break
		}
		pairs[i] = n
		free -= n
	}
	return pairs
}

// storeMixed stores the width registers from src at cur, the last stp
// pairs of them by STP, and advances cur past them.
func (l *lowering) storeMixed(src arm64asm.VReg, width, stp int, cur arm64asm.Reg) {
	fn := l.fn
	reg := func(c int) arm64asm.VReg { return arm64asm.VReg((int(src) + c) % 32) }
	st1 := width - 2*stp
	for c := 0; c < st1; c += 4 {
		fn.VST1P(reg(c).List(min(4, st1-c), arm64asm.S4), cur)
	}
	// STP q's post-index form costs V2 twice the offset form's.
	off := 0
	for c := st1; c < width; c += 2 {
		fn.FSTPQ(reg(c), reg(c+1), arm64asm.Mem{Base: cur, Off: int32(off)})
		off += 32
	}
	fn.ADD(arm64asm.Imm(off), cur, cur)
}
