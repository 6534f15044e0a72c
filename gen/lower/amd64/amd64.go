// Package amd64 lowers normgen's IR to Go assembly for amd64: AVX2+FMA with
// 256-bit vectors and AVX-512F with 512-bit vectors and masked row tails.
//
// Each function is built as an avo IR function with virtual registers,
// compiled by avo's passes (liveness, register allocation) and printed by
// avo's Go assembly printer. The instruction selection lives here:
// emit.go wraps avo, lower.go turns the per-row program into code and
// sweep.go turns one Loop into vector code over a row. Kernels of the
// other layouts: columns.go runs one row per lane (ir.Columns), and
// segments.go sweeps each row's segments in turn (ir.Segments). sums.go
// holds what every layout's sums share: the IR's summation policy.
package amd64

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"

	"github.com/normgen/normgen/gen/ir"
	irpass "github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
)

// Generate returns one complete Go assembly file holding funcs, in order:
// header verbatim, the !purego build constraint, textflag.h, then one TEXT
// per function. Every func must target AVX512 or AVX2. The arguments of
// each TEXT follow f.AsmSignature(), so go vet's asmdecl checks them
// against the Go declarations built from the same signature.
func Generate(header string, funcs []target.Func) ([]byte, error) {
	var out bytes.Buffer
	out.WriteString(header)
	out.WriteString("\n//go:build !purego\n\n#include \"textflag.h\"\n")
	seen := map[string]bool{}
	for _, f := range funcs {
		if f.Kernel == nil {
			return nil, fmt.Errorf("amd64: function with no kernel")
		}
		if seen[f.Name()] {
			return nil, fmt.Errorf("amd64: %s: generated twice", f.Name())
		}
		seen[f.Name()] = true
	}
	for _, f := range funcs {
		name := f.Name()
		text, err := compile(f)
		if err != nil {
			return nil, fmt.Errorf("amd64: %s: %w", name, err)
		}
		out.Write(text)
	}
	return out.Bytes(), nil
}

// compile lowers, allocates, checks and prints one function. Each function
// gets its own avo file so errors name it and no state is shared.
//
// A function that needs more registers than the ISA has (avo's allocator
// does not spill) is lowered again with the super-totals of its chunked
// sums (sums.go, any layout) in the frame, if it kept them in registers,
// then with their totals too, then (Columns) with its per-row scalars
// too, then with half the rows per block (Columns: blocks per group;
// sums in registers again), down to single rows. An AVX-512 Columns
// function of any element count holds two group sizes
// (compileColumnGroups), each searched for alone.
func compile(f target.Func) ([]byte, error) {
	if small := columnSmallGroup(f); small > 0 {
		return compileColumnGroups(f, small)
	}
	r, err := search(f, lowerConfig{})
	return r.text, err
}

// lowerConfig is one attempt of compile's search.
type lowerConfig struct { // maxBlock 0: planBlock's choice
	maxBlock, stackSums int
	noPrefetch          bool
	hoistCut            int
}

// lowerResult is an attempt's outcome, with the config that made it.
type lowerResult struct {
	text        []byte
	block, next int
	hoisted     bool
	cfg         lowerConfig
}

// search is compile's retries, from start.
func search(f target.Func, start lowerConfig) (lowerResult, error) {
	return irpass.Retry(start, func(c lowerConfig) (lowerResult, error) {
		fn, block, next, l, err := lowerOpts(f, c, nil)
		if err != nil {
			return lowerResult{}, err
		}
		text, err := finish(fn, f.ISA)
		return lowerResult{text, block, next, l.hoisted, c}, irpass.Pressure(err)
	}, func(c lowerConfig, r lowerResult) (lowerConfig, bool) {
		switch {
		case r.next > 0:
			// Sums in the frame first: each step is one attempt, and
			// they cost little (touched once a chunk).
			return lowerConfig{c.maxBlock, r.next, c.noPrefetch, 0}, true
		case r.hoisted && c.hoistCut < maxHoistCut:
			// Then fewer frame scalars held across the loops.
			return lowerConfig{c.maxBlock, c.stackSums, c.noPrefetch, c.hoistCut + 1}, true
		case !c.noPrefetch && f.Kernel.Layout == ir.Columns:
			return lowerConfig{c.maxBlock, 0, true, 0}, true
		case r.block == 1:
			return c, false
		}
		return lowerConfig{r.block / 2, 0, c.noPrefetch, 0}, true
	})
}

// finish runs avo's passes on fn, applies the register guard and returns
// the printed TEXT block.
func finish(fn *avoir.Function, isa target.ISA) ([]byte, error) {
	file := avoir.NewFile()
	file.AddSection(fn)
	if err := beforeAllocation.Execute(file); err != nil {
		return nil, err
	}
	if err := liveBound(fn, isa); err != nil {
		return nil, err
	}
	if err := fromAllocation.Execute(file); err != nil {
		return nil, err
	}
	if err := checkRegisters(fn, isa); err != nil {
		return nil, err
	}
	if err := encodeRaw(fn); err != nil {
		return nil, err
	}
	text, err := printer.NewGoAsm(printer.Config{Name: "normgen"}).Print(file)
	if err != nil {
		return nil, err
	}
	// Drop avo's own header: the caller's header and build line replace it.
	_, body, ok := bytes.Cut(text, []byte("#include \"textflag.h\"\n"))
	if !ok && fn.Attributes == 0 {
		// No flags, no include: a function that is not NOSPLIT.
		_, body, ok = bytes.Cut(text, []byte("DO NOT EDIT.\n"))
	}
	if !ok {
		return nil, fmt.Errorf("avo output has no textflag.h include")
	}
	return body, nil
}

// avo's pass.Compile (v0.6.0), split before register allocation: most of
// an attempt that runs out of registers goes on the allocator, and
// liveBound can refuse it from the liveness alone.
var (
	beforeAllocation = pass.Concat(
		pass.FunctionPass(pass.PruneJumpToFollowingLabel),
		pass.FunctionPass(pass.PruneDanglingLabels),
		pass.FunctionPass(pass.LabelTarget),
		pass.FunctionPass(pass.CFG),
		pass.InstructionPass(pass.ZeroExtend32BitOutputs),
		pass.FunctionPass(pass.Liveness),
	)
	fromAllocation = pass.Concat(
		pass.FunctionPass(pass.AllocateRegisters),
		pass.FunctionPass(pass.BindRegisters),
		pass.FunctionPass(pass.VerifyAllocation),
		pass.FunctionPass(pass.EnsureBasePointerCalleeSaved),
		pass.Func(pass.IncludeTextFlagHeader),
		pass.FunctionPass(pass.PruneSelfMoves),
		pass.FunctionPass(pass.RequiredISAExtensions),
	)
)

// liveBound refuses a function that keeps more vectors live after some
// instruction than the ISA has registers. Vectors defined on every path
// before that point all interfere with each other there (the later
// definition sees the others live), so neither avo's allocator, which
// does not spill, nor the register guard would let the function through:
// the bound only saves the allocator's time. Vectors live at the entry
// are left out: avo counts the upper half of a vector written through
// its low half as live from the entry, and that half need not interfere.
func liveBound(fn *avoir.Function, isa target.ISA) error {
	insts := fn.Instructions()
	if len(insts) == 0 {
		return nil
	}
	atEntry := insts[0].LiveIn.OfKind(reg.KindVector)
	limit := isa.Desc().VectorRegs
	for _, inst := range insts {
		n := 0
		for id := range inst.LiveOut.OfKind(reg.KindVector) {
			if _, phantom := atEntry[id]; !phantom {
				n++
			}
		}
		if n > limit {
			return fmt.Errorf("register guard: %d vectors live at once after %s; the function targets %s, which has %d (too many live vectors)", n, inst.Opcode, isa, limit)
		}
	}
	return nil
}

// checkRegisters is the register guard. avo's allocator draws from all 32
// vector registers and the mask registers without knowing the target, so
// an AVX2 function with too many live vectors silently gets Y16-Y31, which
// fault on AVX2-only CPUs. For AVX-512 it rejects 128/256-bit packed
// instructions on registers 16-31, which need AVX512VL: unless the ISA's
// dispatch checks AVX512VL and avo chose the instruction's EVEX form (its
// extensions name AVX512VL), which encodes them.
func checkRegisters(fn *avoir.Function, isa target.ISA) error {
	d := isa.Desc()
	hasVL := false
	for _, f := range d.Features {
		hasVL = hasVL || f.Doc == "AVX512VL"
	}
	for _, inst := range fn.Instructions() {
		hasZ := false
		var high reg.Physical
		for _, r := range inst.Registers() {
			p := reg.ToPhysical(r)
			if p == nil {
				return fmt.Errorf("unallocated register in %s", inst.Opcode)
			}
			switch p.Kind() {
			case reg.KindOpmask:
				if int(p.PhysicalIndex()) >= d.MaskRegs {
					return fmt.Errorf("register guard: %s uses mask register %s, which needs AVX-512; the function targets %s", inst.Opcode, p.Asm(), isa)
				}
			case reg.KindVector:
				if p.Size() == 64 {
					hasZ = true
				}
				if p.PhysicalIndex() >= 16 {
					if int(p.PhysicalIndex()) >= d.VectorRegs {
						return fmt.Errorf("register guard: %s uses %s, which needs AVX-512; the function targets %s (too many live vectors)", inst.Opcode, p.Asm(), isa)
					}
					if p.Size() < 64 {
						high = p
					}
				}
			}
		}
		if high != nil && !hasZ && !scalarOp(inst.Opcode) && !(hasVL && slices.Contains(inst.ISA, "AVX512VL")) {
			return fmt.Errorf("register guard: %s on %s needs AVX512VL", inst.Opcode, high.Asm())
		}
	}
	return nil
}

// scalarOp reports whether an instruction works on one element, so that
// its EVEX form on X16-X31 needs only AVX512F.
func scalarOp(op string) bool {
	return strings.HasSuffix(op, "SS") || strings.HasSuffix(op, "SSQ") || op == "VMOVD"
}
