// Package arm64 lowers ir.Kernels to NEON (ASIMD) Go assembly through the
// arm64asm emitter.
//
// Each function runs the kernel's per-row program over every row. A Loop
// becomes up to three phases over the row: an unrolled main loop of u
// vectors (4 float32 lanes each) per iteration with u partial sums per
// accumulator, single vectors for what is left of a multiple of 4, and a
// scalar tail for the last H%4 elements. The partial sums are reduced to
// a scalar before the tail, so no lane past the row end reaches them, and
// no phase touches memory outside the row. Every value of the loop body
// gets a group of u consecutive registers (the register list of one
// VLD1/VST1); the phases reuse the same groups, the tail their first
// register's low lane. The partial sums add at most ir.SumChunk terms in
// one chain (sums.go).
//
// Scalars live in the low lane of a V register; a scalar the loop
// broadcasts is duplicated in place (VDUP Vs.S[0], Vs.S4), which leaves
// its scalar view intact. Scalars that do not depend on the row (constants,
// 1/H and what follows from them) are computed once before the row loop.
//
// Every function returns the number of rows it completed (ret+N(FP), after
// the arguments): rows, or the index of the row an ir.SGuard abandoned. A
// guard compares its operand with its bounds (FCMPS) and branches to the
// exit on LT (below Lo) or HI (above Hi), the two conditions an unordered
// compare also meets, so NaN leaves too; the exit computes the count from
// the rows argument and the rows still to do. The bounds live in registers
// for the whole function, or, when the loops need those registers, are
// loaded at the guard each row.
//
// That is the lowering of ir.Rows. ir.Segments (segments.go) adds a loop
// over each row's segments inside every Loop; ir.Columns (columns.go) runs
// the program across blocks of four rows, one per lane, every scalar a
// vector.
package arm64

import (
	"errors"
	"fmt"
	"math"

	"github.com/normgen/normgen/gen/arm64asm"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
)

// Generate returns a Go arm64 assembly file holding one TEXT symbol per
// function, in the order given, each followed by its STP form where that
// gains (storeform.go): header verbatim, the !purego build constraint,
// textflag.h, then the functions, and MIDRFunc after them when some
// function has an STP form. Every f must be target.NEON.
func Generate(header string, funcs []target.Func) ([]byte, error) {
	return generate(header, funcs, bothForms)
}

// forms selects what generate writes of each function.
type forms int

const (
	bothForms forms = iota // the first form, then the STP form where it gains
	firstForm              // the first form only
	pairsForm              // the STP form only, under the function's own name
)

func generate(header string, funcs []target.Func, which forms) ([]byte, error) {
	file := arm64asm.NewFile(header, "!purego")
	midr := false
	for _, tf := range funcs {
		fn, gain, err := lowerFunc(tf, which == pairsForm)
		if err != nil {
			return nil, err
		}
		if which == pairsForm {
			fn.Name = tf.Name()
		}
		file.Add(fn)
		if !gain || which != bothForms {
			continue
		}
		if fn, _, err = lowerFunc(tf, true); err != nil {
			return nil, err
		}
		file.Add(fn)
		midr = true
	}
	if midr {
		file.Add(midrFunc())
	}
	return file.Bytes()
}

// argName reports whether name can spell an argument as name+off(FP): the
// assembler reads g and the all-capital names (R0, F1, V2, SP, system
// registers) as registers, and rows and the shape arguments are taken.
func argName(name string) bool {
	switch name {
	case "", "g", "rows", "h", "stride", "segs", "seglen", "segstride", "rowstride":
		return false
	}
	lower := false
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c == '_' || c >= 'A' && c <= 'Z' || (i > 0 && c >= '0' && c <= '9'):
		default:
			return false
		}
	}
	return lower
}

// errPressure says a lowering ran out of registers; a smaller unroll is tried.
var errPressure = pass.ErrPressure

// unrolls are the vectors per main-loop iteration, best first.
var unrolls = []int{4, 2, 1}

// attempt is one configuration the register-pressure retry tries.
type attempt struct {
	u     int  // vectors per main-loop iteration
	hoist bool // guard bounds in registers for the whole function
}

// lowerFunc lowers tf, in the STP form when pairs (storeform.go), and
// reports whether its STP form gains on some core.
func lowerFunc(tf target.Func, pairs bool) (*arm64asm.Func, bool, error) {
	if tf.Kernel == nil {
		return nil, false, errors.New("arm64: function without a kernel")
	}
	if tf.ISA != target.NEON {
		return nil, false, fmt.Errorf("arm64: %s: ISA %s, want %s", tf.Name(), tf.ISA, target.NEON)
	}
	if tf.H < 0 {
		return nil, false, fmt.Errorf("arm64: %s: negative H %d", tf.Name(), tf.H)
	}
	if tf.NT {
		return nil, false, fmt.Errorf("arm64: %s: NEON has no non-temporal variant (target.NonTemporal)", tf.Name())
	}
	if err := ir.Check(tf.Kernel); err != nil {
		return nil, false, fmt.Errorf("arm64: %s: %w", tf.Name(), err)
	}
	for _, a := range tf.Kernel.Arrays {
		if !argName(a.Name) {
			return nil, false, fmt.Errorf("arm64: %s: array %q cannot name an assembly argument; use a lowercase Go identifier other than g, rows and the shape arguments", tf.Name(), a.Name)
		}
	}
	if e := target.KernelElem(tf.Kernel); e != ir.F32 {
		if _, ok := target.NEON.Storage(e); !ok {
			return nil, false, fmt.Errorf("arm64: %s: no NEON lowering of %v storage", tf.Name(), e)
		}
	}
	if tf.Kernel.Layout == ir.Segments && tf.H != 0 {
		return nil, false, fmt.Errorf("arm64: %s: a Segments kernel takes its shape at run time (H must be 0, got %d)", tf.Name(), tf.H)
	}
	tries := attempts(tf)
	var last *lowering
	fn, err := pass.Retry(0, func(i int) (*arm64asm.Func, error) {
		last = newLowering(tf, tries[i].u, tries[i].hoist, pairs)
		return last.function()
	}, func(i int, _ *arm64asm.Func) (int, bool) { return i + 1, i+1 < len(tries) })
	switch {
	case errors.Is(err, errPressure):
		return nil, false, fmt.Errorf("arm64: %s: %w even without unrolling", tf.Name(), errPressure)
	case err != nil:
		return nil, false, fmt.Errorf("arm64: %s: %w", tf.Name(), err)
	}
	return fn, last.gain, nil
}

// attempts lists the configurations of tf's lowering, best first: each
// unroll, with the guard bounds hoisted and then loaded at each guard.
func attempts(tf target.Func) []attempt {
	var out []attempt
	for _, u := range unrolls {
		// A fixed row shorter than u vectors gains nothing from the unroll
		// (Columns: than u elements, one vector each).
		per := 4
		if tf.Kernel.Layout == ir.Columns {
			per = 1
		}
		if tf.H > 0 && u > 1 && tf.H < per*u {
			continue
		}
		// Guard bounds kept in registers cost a few instructions less per
		// row than loading them each time, but less than a smaller unroll.
		for _, hoist := range []bool{true, false} {
			if hoist && tf.Kernel.Layout == ir.Columns {
				continue // its guards load broadcast bounds (guardColumns)
			}
			if !hoist && !pass.HasGuard(tf.Kernel) && tf.Kernel.Layout != ir.Columns {
				break // the same function again
			}
			out = append(out, attempt{u, hoist})
		}
	}
	return out
}

// gpRegs are the general registers a kernel may use: R18 is the
// platform's, R26 to R30 belong to Go (closure context, assembler
// temporary, g, frame pointer, link).
var gpRegs = func() []arm64asm.Reg {
	var rs []arm64asm.Reg
	for r := arm64asm.Reg(0); r <= 25; r++ {
		if r != 18 {
			rs = append(rs, r)
		}
	}
	return rs
}()

type lowering struct {
	k     *ir.Kernel
	h     int  // fixed row length, 0 when taken at run time
	u     int  // vectors per main-loop iteration
	hoist bool // guard bounds in registers for the whole function
	pairs bool // the STP form: every register pair of a main loop's float32 stores by STP
	gain  bool // a main loop's STP form is faster on some core (storeform.go)
	fn    *arm64asm.Func

	gpUsed   map[arm64asm.Reg]bool
	base     []arm64asm.Reg // per array: its current row (or the parameters)
	rows     arm64asm.Reg
	hReg     arm64asm.Reg     // run-time h (Segments: seglen, the length of each sweep)
	stride   arm64asm.Reg     // Rows: run-time h*4; Columns: stride*4, the step between a row's elements
	half     arm64asm.Reg     // Rows: run-time h*2, the step of a half-precision row
	bf16     [2]arm64asm.VReg // 0x7fff and 0x00010000 in every lane, when a loop stores bf16 (half.go)
	bf16Zero arm64asm.VReg    // zero, when a loop loads bf16

	shape   map[string]arm64asm.Param // the shape arguments after rows (target.ShapeArgs)
	segSkip arm64asm.Reg              // Segments: (segstride-seglen)*4, from a segment's end to the next one's start
	// segSkipHalf is segSkip for the half arrays, (segstride-seglen)*2,
	// with half storage.
	segSkipHalf arm64asm.Reg
	args        []arm64asm.Param // the float32 arguments after the shape (ir.Kernel.Args)

	vUsed     [32]bool
	sReg      []arm64asm.VReg // register of each live scalar
	sLast     []int           // last statement index using each scalar; -1 if none
	invariant []bool          // statement computes a scalar that does not depend on the row
	inv       []bool          // scalar does not depend on the row
	accOut    map[int]arm64asm.VReg
	bcast     map[ir.S]bool            // row scalars already broadcast in this row's code
	bounds    map[int][2]arm64asm.VReg // guard statement -> registers of Lo, Hi (hoisted)
	loopN     int
	err       error // first failure of gp
}

// exit is the label of the code that stores the rows completed and returns.
const exit = arm64asm.Label("done")

func newLowering(tf target.Func, u int, hoist, pairs bool) *lowering {
	k := tf.Kernel
	sReg := make([]arm64asm.VReg, k.NumScalars)
	for i := range sReg {
		sReg[i] = noReg
	}
	name := tf.Name()
	if pairs {
		name += PairsSuffix
	}
	return &lowering{
		k: k, h: tf.H, u: u, hoist: hoist, pairs: pairs,
		// The arguments, then the int result.
		// A float32 argument takes a word of its own: the result that
		// follows is aligned to 8.
		fn:     arm64asm.NewFunc(name, 8*len(k.Arrays)+8+8*len(target.ShapeArgs(k.Layout, tf.H))+8*len(k.Args)+8),
		shape:  map[string]arm64asm.Param{},
		gpUsed: map[arm64asm.Reg]bool{},
		sReg:   sReg,
		accOut: map[int]arm64asm.VReg{},
		bcast:  map[ir.S]bool{},
		bounds: map[int][2]arm64asm.VReg{},
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (l *lowering) function() (*arm64asm.Func, error) {
	k, fn := l.k, l.fn
	size := fmt.Sprint(l.h)
	if l.h == 0 {
		size = "h (run time)"
	}
	switch k.Layout {
	case ir.Columns:
		fn.Doc = []string{fmt.Sprintf("%s is %s for H=%s on NEON, across blocks of 4 rows (the columns of lines stride floats long), %d elements per iteration: %s.", fn.Name, k.Name, size, l.u, k.Doc)}
	case ir.Segments:
		fn.Doc = []string{fmt.Sprintf("%s is %s on NEON for rows of segs segments of seglen floats, %d vectors per iteration: %s.", fn.Name, k.Name, l.u, k.Doc)}
	default:
		per := fmt.Sprintf("%d vectors per iteration", l.u)
		for _, st := range k.Body {
			if lp, ok := st.(*ir.Loop); ok && chainBound(k, lp) && l.u == unrolls[0] {
				per += fmt.Sprintf(" (%d in a sum of one array)", 2*l.u)
				break
			}
		}
		fn.Doc = []string{fmt.Sprintf("%s is %s for H=%s on NEON, %s: %s.", fn.Name, k.Name, size, per, k.Doc)}
	}
	if l.pairs {
		fn.Doc = append(fn.Doc, "Its main loops store every register pair by STP q, the form of Neoverse N2, V1 and V2.")
	}

	// Arguments, in AsmSignature order.
	off := 0
	for _, a := range k.Arrays {
		r := l.gp()
		l.base = append(l.base, r)
		fn.MOVD(arm64asm.Param{Name: a.Name, Off: off}, r)
		off += 8
	}
	rowsArg := arm64asm.Param{Name: "rows", Off: off}
	l.rows = l.gp()
	fn.MOVD(rowsArg, l.rows)
	off += 8
	for _, name := range target.ShapeArgs(k.Layout, l.h) {
		l.shape[name] = arm64asm.Param{Name: name, Off: off}
		off += 8
	}
	for _, a := range k.Args {
		l.args = append(l.args, arm64asm.Param{Name: a.Name, Off: off})
		off += 8
	}
	ret := arm64asm.Param{Name: "ret", Off: off}
	switch k.Layout {
	case ir.Rows:
		if l.h == 0 {
			l.hReg, l.stride = l.gp(), l.gp()
			fn.MOVD(l.shape["h"], l.hReg)
			fn.LSL(2, l.hReg, l.stride)
			if l.hasHalf() {
				l.half = l.gp()
				fn.LSL(1, l.hReg, l.half)
			}
		}
	case ir.Columns:
		l.columnsArgs()
	case ir.Segments:
		l.segmentsArgs()
	}

	l.analyze()
	if err := l.prologue(); err != nil {
		return nil, err
	}
	if err := l.bf16Setup(); err != nil {
		return nil, err
	}

	fn.Label("row")
	for si, st := range k.Body {
		switch st := st.(type) {
		case *ir.Scalar:
			if l.invariant[si] {
				continue
			}
			if err := l.scalar(si, st); err != nil {
				return nil, err
			}
		case *ir.Loop:
			if err := l.loop(si, st); err != nil {
				return nil, err
			}
		}
		l.freeScalarsAfter(si)
	}

	switch k.Layout {
	case ir.Columns:
		l.nextBlock()
	case ir.Segments:
		l.nextSegmentsRow()
	default:
		fn.Comment("next row")
		for i, a := range k.Arrays {
			switch {
			case a.Role.PerRow():
				fn.ADD(arm64asm.Imm(4), l.base[i], l.base[i])
			case a.Role == ir.Param:
			case l.h > 0:
				fn.ADD(arm64asm.Imm(a.Elem.Bytes()*l.h), l.base[i], l.base[i])
			case a.Elem.Half():
				fn.ADD(l.half, l.base[i], l.base[i])
			default:
				fn.ADD(l.stride, l.base[i], l.base[i])
			}
		}
	}
	fn.SUBS(arm64asm.Imm(1), l.rows, l.rows)
	fn.BNE("row")

	// Here l.rows holds the rows not completed: none, or those from the
	// one a guard abandoned (Columns: the blocks of 4 rows not completed).
	fn.Label(exit)
	done := l.gp()
	fn.MOVD(rowsArg, done)
	if k.Layout == ir.Columns {
		// 4*(rows/4 - blocks left): the rows of the blocks completed;
		// the rows%4 of the tail are left to the caller too.
		fn.LSR(2, done, done)
		fn.SUB(l.rows, done, done)
		fn.LSL(2, done, done)
	} else {
		fn.SUB(l.rows, done, done)
	}
	fn.MOVDParam(done, ret)
	l.gpFree(done)
	fn.RET()
	if l.err != nil {
		return nil, l.err
	}
	return fn, fn.Err()
}

// analyze finds each scalar's last use and the row-invariant statements.
func (l *lowering) analyze() {
	k := l.k
	l.sLast = make([]int, k.NumScalars)
	for i := range l.sLast {
		l.sLast[i] = -1
	}
	l.inv = pass.RowInvariant(k)
	l.invariant = pass.Hoistable(k, l.inv)
	for si, st := range k.Body {
		switch st := st.(type) {
		case *ir.Scalar:
			for _, a := range st.Args {
				l.sLast[a] = si
			}
		case *ir.Loop:
			for _, op := range st.Ops {
				if op.Code == ir.VSplat {
					l.sLast[op.Scalar] = si
				}
			}
		}
	}
}

// prologue computes the row-invariant scalars once, before the row loop,
// in registers they keep for the whole function, broadcast in place if
// any loop needs them as vectors.
func (l *lowering) prologue() error {
	splatted := map[ir.S]bool{}
	for _, st := range l.k.Body {
		if lp, ok := st.(*ir.Loop); ok {
			for _, op := range lp.Ops {
				if op.Code == ir.VSplat {
					splatted[op.Scalar] = true
				}
			}
		}
	}
	var regs []ir.S
	consts := map[uint32]arm64asm.VReg{} // equal constants share a register
	for si, st := range l.k.Body {
		st, ok := st.(*ir.Scalar)
		if !ok || !l.invariant[si] || l.sLast[st.Dst] < 0 {
			continue
		}
		c, isConst := l.constValue(st)
		if isConst {
			if r, ok := consts[math.Float32bits(c)]; ok {
				l.sReg[st.Dst] = r
				regs = append(regs, st.Dst)
				continue
			}
		}
		d, err := l.vreg()
		if err != nil {
			return err
		}
		l.sReg[st.Dst] = d
		if err := l.emitScalar(st, d); err != nil {
			return err
		}
		if isConst {
			consts[math.Float32bits(c)] = d
		}
		regs = append(regs, st.Dst)
	}
	if l.hoist {
		for si, st := range l.k.Body {
			if st, ok := st.(*ir.Scalar); ok && st.Code == ir.SGuard {
				var b [2]arm64asm.VReg
				for i, c := range []float32{st.Lo, st.Hi} {
					if !boundNeeded(c, i == 0) {
						continue
					}
					r, ok := consts[math.Float32bits(c)]
					if !ok {
						var err error
						if r, err = l.vreg(); err != nil {
							return err
						}
						l.constant(c, r)
						consts[math.Float32bits(c)] = r
					}
					b[i] = r
				}
				l.bounds[si] = b
			}
		}
	}
	done := map[arm64asm.VReg]bool{}
	for _, s := range regs {
		// Columns scalars are vectors from the start (emitScalarColumns).
		if r := l.sReg[s]; splatted[s] && !done[r] && l.k.Layout != ir.Columns {
			done[r] = true
			l.fn.VDUP(r.SLane(0), r.S4())
		}
	}
	return nil
}

// constValue is the value of a statement known when generating: a
// constant, or 1/H for a fixed H.
func (l *lowering) constValue(st *ir.Scalar) (float32, bool) {
	switch {
	case st.Code == ir.SConst:
		return st.Const, true
	case st.Code == ir.SInvLen && l.h > 0:
		// Rounded once, as float32(1)/float32(H) is at run time.
		one, n := float32(1), float32(l.h)
		return one / n, true
	}
	return 0, false
}

// gp takes a free general register. Running out (a kernel with some twenty
// arrays) is recorded and reported when the function is done.
func (l *lowering) gp() arm64asm.Reg {
	for _, r := range gpRegs {
		if !l.gpUsed[r] {
			l.gpUsed[r] = true
			return r
		}
	}
	if l.err == nil {
		l.err = fmt.Errorf("%d arrays need more general registers than the %d available", len(l.k.Arrays), len(gpRegs))
	}
	return gpRegs[0]
}

func (l *lowering) gpFree(r arm64asm.Reg) { delete(l.gpUsed, r) }

// vreg takes a free V register for a scalar, from the top, keeping the
// low registers in runs for the loops' groups.
func (l *lowering) vreg() (arm64asm.VReg, error) {
	for r := 31; r >= 0; r-- {
		if !l.vUsed[r] {
			l.vUsed[r] = true
			return arm64asm.VReg(r), nil
		}
	}
	return 0, errPressure
}

// group takes n consecutive free V registers, the lowest run there is.
func (l *lowering) group(n int) (arm64asm.VReg, error) {
	for first := 0; first+n <= 32; first++ {
		ok := true
		for r := first; r < first+n; r++ {
			ok = ok && !l.vUsed[r]
		}
		if ok {
			for r := first; r < first+n; r++ {
				l.vUsed[r] = true
			}
			return arm64asm.VReg(first), nil
		}
	}
	return 0, errPressure
}

func (l *lowering) vFree(first arm64asm.VReg, n int) {
	for r := int(first); r < int(first)+n; r++ {
		l.vUsed[r] = false
	}
}

// freeScalarsAfter releases the registers of scalars whose last use was
// statement si (invariant ones keep theirs for the whole function).
func (l *lowering) freeScalarsAfter(si int) {
	for s, last := range l.sLast {
		if last == si && !l.inv[s] && l.live(ir.S(s)) {
			l.vFree(l.sReg[s], 1)
			l.sReg[s] = noReg
		}
	}
}

// noReg marks a scalar without a register (not yet computed, or freed).
const noReg = arm64asm.VReg(255)

func (l *lowering) live(s ir.S) bool { return l.sReg[s] != noReg }

// sumsAfter counts the SSum statements reading acc after statement si and
// before a later loop refills it.
func (l *lowering) sumsAfter(si, acc int) int {
	n := 0
	for _, st := range l.k.Body[si+1:] {
		switch st := st.(type) {
		case *ir.Scalar:
			if st.Code == ir.SSum && st.Acc == acc {
				n++
			}
		case *ir.Loop:
			for _, op := range st.Ops {
				if (op.Code == ir.VAcc || op.Code == ir.VAccMul) && op.Acc == acc {
					return n
				}
			}
		}
	}
	return n
}

// scalar lowers one per-row scalar statement.
func (l *lowering) scalar(si int, st *ir.Scalar) error {
	switch st.Code {
	case ir.SStore:
		return l.emitScalar(st, 0)
	case ir.SGuard:
		return l.guard(si, st)
	}
	if l.sLast[st.Dst] < 0 {
		if st.Code == ir.SSum && l.sumsAfter(si, st.Acc) == 0 {
			l.vFree(l.accOut[st.Acc], 1)
			delete(l.accOut, st.Acc)
		}
		return nil // nothing reads it
	}
	if st.Code == ir.SSum {
		l.fn.Comment(l.k.ScalarText(st, l.h))
		src := l.accOut[st.Acc]
		if l.sumsAfter(si, st.Acc) == 0 {
			// The last read of this sum: the scalar takes over its register.
			delete(l.accOut, st.Acc)
			l.sReg[st.Dst] = src
			return nil
		}
		d, err := l.vreg()
		if err != nil {
			return err
		}
		if l.k.Layout == ir.Columns {
			l.fn.VMOV(src.B16(), d.B16()) // a sum per lane
		} else {
			l.fn.FMOVS(src.F(), d.F())
		}
		l.sReg[st.Dst] = d
		return nil
	}
	// Operands dying here may hold the result: one instruction reads them
	// before it writes.
	var dying []ir.S
	for _, a := range st.Args {
		if l.sLast[a] == si && !l.inv[a] && l.live(a) {
			l.vFree(l.sReg[a], 1)
			dying = append(dying, a)
		}
	}
	d, err := l.vreg()
	if err != nil {
		return err
	}
	if err := l.emitScalar(st, d); err != nil {
		return err
	}
	for _, a := range dying {
		l.sReg[a] = noReg
	}
	l.sReg[st.Dst] = d
	return nil
}

// emitScalar writes the instructions of st with its result in d.
func (l *lowering) emitScalar(st *ir.Scalar, d arm64asm.VReg) error {
	l.fn.Comment(l.k.ScalarText(st, l.h))
	if l.k.Layout == ir.Columns {
		return l.emitScalarColumns(st, d)
	}
	return l.emitScalarLane(st, d)
}

// emitScalarLane writes st as a scalar in the low lane of d.
func (l *lowering) emitScalarLane(st *ir.Scalar, d arm64asm.VReg) error {
	fn := l.fn
	arg := func(i int) arm64asm.FReg { return l.sReg[st.Args[i]].F() }
	switch st.Code {
	case ir.SConst:
		l.constant(st.Const, d)
	case ir.SArg:
		fn.FMOVS(l.args[st.Arg], d.F())
	case ir.SInvLen:
		if c, ok := l.constValue(st); ok {
			l.constant(c, d)
			break
		}
		one, err := l.vreg()
		if err != nil {
			return err
		}
		l.constant(1, one)
		if l.k.Layout == ir.Segments {
			// n = segs*seglen, converted once as ir.EvalShape does.
			n := l.gp()
			fn.MOVD(l.shape["segs"], n)
			fn.MUL(l.hReg, n, n)
			fn.SCVTFS(n, d.F())
			l.gpFree(n)
		} else {
			fn.SCVTFS(l.hReg, d.F())
		}
		fn.FDIVS(d.F(), one.F(), d.F())
		l.vFree(one, 1)
	case ir.SAdd:
		fn.FADDS(arg(1), arg(0), d.F())
	case ir.SSub:
		fn.FSUBS(arg(1), arg(0), d.F())
	case ir.SMul:
		fn.FMULS(arg(1), arg(0), d.F())
	case ir.SDiv:
		fn.FDIVS(arg(1), arg(0), d.F())
	case ir.SSqrt:
		fn.FSQRTS(arg(0), d.F())
	case ir.SLoad:
		// A per-row scalar, or the first element of a row: both at the base.
		if l.elem(st.Array).Half() {
			for _, w := range l.loadHalf(st.Array, l.base[st.Array], d, 1, false, true) {
				w()
			}
			break
		}
		fn.FMOVS(arm64asm.Mem{Base: l.base[st.Array]}, d.F())
	case ir.SStore:
		fn.FMOVS(arg(0), arm64asm.Mem{Base: l.base[st.Array]})
	default:
		return fmt.Errorf("unknown scalar op %v", st.Code)
	}
	return nil
}

// boundNeeded reports whether a guard must compare with bound c, its Lo
// when lo: nothing is below -Inf or above +Inf.
func boundNeeded(c float32, lo bool) bool {
	if lo {
		return !math.IsInf(float64(c), -1)
	}
	return !math.IsInf(float64(c), 1)
}

// guard leaves the row for the exit, before anything of it is stored,
// unless Lo <= v <= Hi: FCMPS then BLT for Lo and BHI for Hi, the
// conditions that also hold after an unordered compare (N=0, Z=0, C=1,
// V=1), so a NaN leaves too, as ir.Eval says. Equal passes. With both
// bounds infinite, FCMPS v, v and BVS catch NaN alone.
func (l *lowering) guard(si int, st *ir.Scalar) error {
	if l.k.Layout == ir.Columns {
		return l.guardColumns(st)
	}
	fn := l.fn
	v := l.sReg[st.Args[0]].F()
	fn.Comment(l.k.ScalarText(st, 0))
	var tmp arm64asm.VReg = noReg
	compared := false
	for i, c := range []float32{st.Lo, st.Hi} {
		if !boundNeeded(c, i == 0) {
			continue
		}
		var r arm64asm.VReg
		if l.hoist {
			r = l.bounds[si][i]
		} else {
			if tmp == noReg {
				var err error
				if tmp, err = l.vreg(); err != nil {
					return err
				}
			}
			r = tmp
			l.constant(c, r)
		}
		fn.FCMPS(r.F(), v)
		if i == 0 {
			fn.BLT(exit)
		} else {
			fn.BHI(exit)
		}
		compared = true
	}
	if !compared {
		fn.FCMPS(v, v)
		fn.BVS(exit)
	}
	if tmp != noReg {
		l.vFree(tmp, 1)
	}
	return nil
}

// constant loads the float32 c into d through a general register.
func (l *lowering) constant(c float32, d arm64asm.VReg) {
	bits := math.Float32bits(c)
	if bits == 0 {
		l.fn.FMOVS(arm64asm.ZR, d.F())
		return
	}
	t := l.gp()
	l.fn.MOVW(arm64asm.Hex(bits), t)
	l.fn.FMOVS(t, d.F())
	l.gpFree(t)
}
