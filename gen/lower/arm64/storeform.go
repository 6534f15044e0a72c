package arm64

import (
	"sync"

	"github.com/normgen/normgen/gen/arm64asm"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
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
//
// Where that leaves N2, V1 or V2 more than 5% short of the loop with every
// pair an STP (pairCycles), the function is lowered a second time in that
// STP form, named with PairsSuffix, and the dispatch picks the form by the
// core's part number (MIDR_EL1, midrFunc): N1 and unknown cores the first.

// PairsSuffix ends the name of a function's STP form.
const PairsSuffix = "STP"

// MIDRFunc names the function that reads MIDR_EL1, in a file with STP forms.
const MIDRFunc = "neonMIDR"

// pairsGain is how much faster a loop must run in the STP form on some
// core for the function to get one.
const pairsGain = 1.05

// StoreForms reports whether tf gets an STP form beside it (PairsSuffix):
// Generate adds one, and the dispatch must declare and choose it.
// The generator asks for each function several times (declarations,
// dispatch, tests, assembly): the answers are kept.
func StoreForms(tf target.Func) (bool, error) {
	key := formKey{tf.Kernel, tf.H}
	formsMu.Lock()
	r, ok := formsSeen[key]
	formsMu.Unlock()
	if !ok {
		_, r.gain, r.err = lowerFunc(tf, false)
		formsMu.Lock()
		formsSeen[key] = r
		formsMu.Unlock()
	}
	return r.gain, r.err
}

type formKey struct {
	k *ir.Kernel
	h int
}

var (
	formsMu   sync.Mutex
	formsSeen = map[formKey]struct {
		gain bool
		err  error
	}{}
)

// midrFunc returns MIDRFunc: func() uint64, MIDR_EL1. Call it only where
// cpu.ARM64.HasCPUID.
func midrFunc() *arm64asm.Func {
	fn := arm64asm.NewFunc(MIDRFunc, 8)
	fn.Doc = []string{MIDRFunc + " returns MIDR_EL1, which Linux emulates where HWCAP_CPUID is set (cpu.ARM64.HasCPUID); it faults elsewhere."}
	fn.MRS(arm64asm.MIDR, 0)
	fn.MOVDParam(0, arm64asm.Param{Name: "ret", Off: 0})
	fn.RET()
	return fn
}

// core is a Neoverse model's cost of a loop iteration's parts.
type core struct {
	fp      int     // FP/ASIMD pipes; store data runs on two of them
	stpData float64 // store-data slots an STP q takes per register
	fcvtl   float64 // cycles of one FCVTL (f16 widening), which issues on one pipe
}

// pairCores are N2, V1 and V2, the cores of the STP form.
var pairCores = []core{{fp: 2, stpData: 1, fcvtl: 2}, {fp: 4, stpData: 0.5, fcvtl: 1}, {fp: 4, stpData: 1, fcvtl: 1}}

// cycles is c's port-bound time of an iteration with loads load
// registers, fp vector ops, cvt FCVTLs and st stored registers, stp of them by STP:
// loads go to 3 pipes, store addresses to 2 of them, at half a slot a
// register for STP.
func (c core) cycles(loads, fp, cvt, st, stp int) float64 {
	addr := float64(st-stp) + float64(stp)/2
	ls := max((float64(loads)+addr)/3, addr/2)
	data := float64(st-stp) + float64(stp)*c.stpData
	v := max((float64(fp)+data)/float64(c.fp), data/2)
	return max(ls, v, float64(cvt)*c.fcvtl)
}

// storePairs returns, for each float32 store of p's main iteration (u
// vectors), how many of its u/2 register pairs are stored by STP, and
// nothing when no pair is.
func (l *lowering) storePairs(p *loopPlan) map[int]int {
	if p.noPost || l.u%2 != 0 {
		return nil
	}
	u := l.u
	loads, fp := 0, 0
	// The model's: half loads are half the registers and a widening each
	// (bf16: a ZIP on any pipe; f16: an FCVTL).
	mLoads, mFP, mCvt := 0, 0, 0
	var stores []int
	for i, op := range p.ops {
		if p.splat[i] || p.dead[i] {
			continue
		}
		switch op.Code {
		case ir.VLoad:
			loads += u
			switch e := l.elem(op.Array); {
			case e == ir.F16:
				mLoads += (u + 1) / 2
				mCvt += u
			case e.Half():
				mLoads += (u + 1) / 2
				mFP += u
			default:
				mLoads += u
			}
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
	if len(stores) == 0 {
		return nil
	}
	all := map[int]int{}
	for _, i := range stores {
		all[i] = u / 2
	}
	n1 := l.n1Pairs(stores, (fp-loads)/2)
	stp := 0
	for _, n := range n1 {
		stp += 2 * n
	}
	mFP += fp
	// A row of one iteration has no loop to speed up.
	loops := l.h == 0 || l.h/(4*u) >= 2
	for _, c := range pairCores {
		st := u * len(stores)
		if loops && c.cycles(mLoads, mFP, mCvt, st, stp) > pairsGain*c.cycles(mLoads, mFP, mCvt, st, st) {
			l.gain = true
		}
	}
	if l.pairs {
		return all
	}
	return n1
}

// n1Pairs spreads free STP pairs over stores, in order, at most u/2 each:
// the N1 form. Each STP pair costs N1 two load/store slots more than ST1;
// its FP pipes carry fp ops and one data slot per stored register either
// way, so free is half of what the FP pipes do beyond the loads.
func (l *lowering) n1Pairs(stores []int, free int) map[int]int {
	u := l.u
	if free <= 0 {
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
