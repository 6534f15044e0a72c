package ir

import "fmt"

// Builder assembles a Kernel statement by statement.
type Builder struct {
	k *Kernel
}

// NewBuilder starts a kernel.
func NewBuilder(name, doc string) *Builder {
	return &Builder{k: &Kernel{Name: name, Doc: doc}}
}

// SetLayout sets where the kernel's rows lie (Rows unless set).
func (b *Builder) SetLayout(l Layout) { b.k.Layout = l }

// Array declares the next parameter and returns its index.
func (b *Builder) Array(name string, role Role, doc string) int {
	b.k.Arrays = append(b.k.Arrays, Array{Name: name, Role: role, Doc: doc})
	return len(b.k.Arrays) - 1
}

// SetFallback sets the kernel that computes a row a guard abandoned after
// row outputs were stored (ir.Kernel.Fallback).
func (b *Builder) SetFallback(fb *Kernel) { b.k.Fallback = fb }

// SetStreaming sets the form the kernel's streaming-store functions lower
// (ir.Kernel.Streaming).
func (b *Builder) SetStreaming(st *Kernel) { b.k.Streaming = st }

// SetElem sets the storage format of a row array (F32 unless set).
func (b *Builder) SetElem(array int, e Elem) { b.k.Arrays[array].Elem = e }

// NewAcc allocates an accumulator.
func (b *Builder) NewAcc() int {
	b.k.NumAccs++
	return b.k.NumAccs - 1
}

func (b *Builder) scalar(code ScalarCode, args ...S) S {
	dst := S(b.k.NumScalars)
	b.k.NumScalars++
	b.k.Body = append(b.k.Body, &Scalar{Code: code, Dst: dst, Args: args})
	return dst
}

// Const is a constant scalar.
func (b *Builder) Const(c float32) S {
	s := b.scalar(SConst)
	b.last().Const = c
	return s
}

// Arg declares a float32 argument of every call and returns its value.
func (b *Builder) Arg(name, doc string) S {
	b.k.Args = append(b.k.Args, Arg{Name: name, Doc: doc})
	s := b.scalar(SArg)
	b.last().Arg = len(b.k.Args) - 1
	return s
}

// InvLen is 1/H.
func (b *Builder) InvLen() S { return b.scalar(SInvLen) }

// Sum is the horizontal sum of acc after the loop that filled it.
func (b *Builder) Sum(acc int) S {
	s := b.scalar(SSum)
	b.last().Acc = acc
	return s
}

func (b *Builder) Add(x, y S) S  { return b.scalar(SAdd, x, y) }
func (b *Builder) Sub(x, y S) S  { return b.scalar(SSub, x, y) }
func (b *Builder) Mul(x, y S) S  { return b.scalar(SMul, x, y) }
func (b *Builder) Div(x, y S) S  { return b.scalar(SDiv, x, y) }
func (b *Builder) Sqrt(x S) S    { return b.scalar(SSqrt, x) }
func (b *Builder) last() *Scalar { return b.k.Body[len(b.k.Body)-1].(*Scalar) }

// Name names scalar s, which the last statements assigned, and returns it.
func (b *Builder) Name(s S, name string) S {
	for i := len(b.k.Body) - 1; i >= 0; i-- {
		if st, ok := b.k.Body[i].(*Scalar); ok && st.Dst == s && st.Code != SStore && st.Code != SGuard {
			st.Name = name
			return s
		}
	}
	panic(fmt.Sprintf("ir: Name of unassigned scalar s%d", s))
}

// LoadRow reads the current row's value of a RowScalarIn array, or the
// first element of the current row of a row array (a pivot for shifted sums).
func (b *Builder) LoadRow(array int) S {
	s := b.scalar(SLoad)
	b.last().Array = array
	return s
}

// StoreRow writes v as the current row's value of a RowScalarOut or
// RowScalarInOut array.
func (b *Builder) StoreRow(array int, v S) {
	b.k.Body = append(b.k.Body, &Scalar{Code: SStore, Dst: -1, Args: []S{v}, Array: array})
}

// Guard abandons the row, for the caller to compute another way, unless
// lo <= v <= hi (NaN included).
func (b *Builder) Guard(v S, lo, hi float32) {
	b.k.Body = append(b.k.Body, &Scalar{Code: SGuard, Dst: -1, Args: []S{v}, Lo: lo, Hi: hi})
}

// Loop appends one sweep over the row, whose body body writes through l.
func (b *Builder) Loop(body func(l *LoopBuilder)) {
	l := &LoopBuilder{}
	body(l)
	b.k.Body = append(b.k.Body, &l.loop)
}

// Kernel checks and returns the finished kernel.
func (b *Builder) Kernel() (*Kernel, error) {
	if err := Check(b.k); err != nil {
		return nil, err
	}
	return b.k, nil
}

// LoopBuilder assembles the body of one Loop.
type LoopBuilder struct {
	loop Loop
}

func (l *LoopBuilder) op(o VecOp) V {
	l.loop.Ops = append(l.loop.Ops, o)
	return V(len(l.loop.Ops) - 1)
}

func (l *LoopBuilder) Load(array int) V     { return l.op(VecOp{Code: VLoad, Array: array}) }
func (l *LoopBuilder) Splat(s S) V          { return l.op(VecOp{Code: VSplat, Scalar: s}) }
func (l *LoopBuilder) Add(x, y V) V         { return l.op(VecOp{Code: VAdd, Args: []V{x, y}}) }
func (l *LoopBuilder) Sub(x, y V) V         { return l.op(VecOp{Code: VSub, Args: []V{x, y}}) }
func (l *LoopBuilder) Mul(x, y V) V         { return l.op(VecOp{Code: VMul, Args: []V{x, y}}) }
func (l *LoopBuilder) FMA(x, y, z V) V      { return l.op(VecOp{Code: VFMA, Args: []V{x, y, z}}) }
func (l *LoopBuilder) Store(array int, v V) { l.op(VecOp{Code: VStore, Array: array, Args: []V{v}}) }
func (l *LoopBuilder) Acc(acc int, v V)     { l.op(VecOp{Code: VAcc, Acc: acc, Args: []V{v}}) }

// Name names vector value v and returns it.
func (l *LoopBuilder) Name(v V, name string) V {
	l.loop.Ops[v].Name = name
	return v
}

// AccMul adds x*y to acc with one rounding.
func (l *LoopBuilder) AccMul(acc int, x, y V) {
	l.op(VecOp{Code: VAccMul, Acc: acc, Args: []V{x, y}})
}

// Check verifies the invariants every lowering relies on: operands defined
// before use, arrays used according to their roles, scalars assigned once,
// accumulators summed only after the loop that filled them, values named
// by the rules of names.go.
func Check(k *Kernel) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("ir: kernel %s: %s", k.Name, fmt.Sprintf(format, args...))
	}
	defined := make([]bool, k.NumScalars)
	filled := make([]bool, k.NumAccs)
	stored := false                      // a per-row scalar was stored: no guard may follow
	early := make([]bool, len(k.Arrays)) // row outputs stored so far: a guard needs k.Fallback
	guarded := false
	arrayOK := func(i int, roles ...Role) bool {
		if i < 0 || i >= len(k.Arrays) {
			return false
		}
		for _, r := range roles {
			if k.Arrays[i].Role == r {
				return true
			}
		}
		return false
	}
	for i, a := range k.Arrays {
		if a.Elem < F32 || a.Elem > F16 {
			return fail("array %s: unknown storage %v", a.Name, a.Elem)
		}
		if a.Elem != F32 && a.Role != RowIn && a.Role != RowOut {
			return fail("array %d (%s): %v storage, allowed only for row arrays", i, a.Name, a.Elem)
		}
	}
	for si, st := range k.Body {
		switch st := st.(type) {
		case *Loop:
			if len(st.Ops) == 0 {
				return fail("statement %d: empty loop", si)
			}
			for oi, op := range st.Ops {
				for _, a := range op.Args {
					if a < 0 || int(a) >= oi || !st.Ops[a].Code.MakesValue() {
						return fail("statement %d op %d (%s): operand v%d undefined", si, oi, op.Code, a)
					}
				}
				want := map[VecCode]int{VLoad: 0, VSplat: 0, VAdd: 2, VSub: 2, VMul: 2, VFMA: 3, VStore: 1, VAcc: 1, VAccMul: 2}[op.Code]
				if len(op.Args) != want {
					return fail("statement %d op %d (%s): %d operands, want %d", si, oi, op.Code, len(op.Args), want)
				}
				switch op.Code {
				case VLoad:
					if !arrayOK(op.Array, RowIn, RowOut, Param) {
						return fail("statement %d op %d: load from array %d, which is not a row or parameter array", si, oi, op.Array)
					}
				case VStore:
					if !arrayOK(op.Array, RowOut) {
						return fail("statement %d op %d: store to array %d, which is not a row output", si, oi, op.Array)
					}
					early[op.Array] = true
				case VSplat:
					if op.Scalar < 0 || int(op.Scalar) >= k.NumScalars || !defined[op.Scalar] {
						return fail("statement %d op %d: splat of undefined scalar s%d", si, oi, op.Scalar)
					}
				case VAcc, VAccMul:
					if op.Acc < 0 || op.Acc >= k.NumAccs {
						return fail("statement %d op %d: unknown accumulator %d", si, oi, op.Acc)
					}
					filled[op.Acc] = true
				}
			}
		case *Scalar:
			for _, a := range st.Args {
				if a < 0 || int(a) >= k.NumScalars || !defined[a] {
					return fail("statement %d (%s): operand s%d undefined", si, st.Code, a)
				}
			}
			switch st.Code {
			case SSum:
				if st.Acc < 0 || st.Acc >= k.NumAccs || !filled[st.Acc] {
					return fail("statement %d: sum of accumulator %d before any loop filled it", si, st.Acc)
				}
			case SLoad:
				if !arrayOK(st.Array, RowScalarIn, RowScalarInOut, RowIn) {
					return fail("statement %d: row load from array %d, which is not a per-row scalar input or a row input", si, st.Array)
				}
			case SStore:
				if !arrayOK(st.Array, RowScalarOut, RowScalarInOut) {
					return fail("statement %d: row store to array %d, which is not a per-row scalar output", si, st.Array)
				}
				stored = true
				continue
			case SArg:
				if st.Arg < 0 || st.Arg >= len(k.Args) {
					return fail("statement %d: unknown scalar argument %d", si, st.Arg)
				}
			case SGuard:
				if stored {
					return fail("statement %d: guard after a store: an abandoned row must be untouched", si)
				}
				if err := checkFallback(k, early); err != nil {
					return fail("statement %d (guard): %v", si, err)
				}
				guarded = true
				if len(st.Args) != 1 || !(st.Lo <= st.Hi) {
					return fail("statement %d: guard needs one operand and lo <= hi", si)
				}
				continue
			}
			if st.Dst < 0 || int(st.Dst) >= k.NumScalars || defined[st.Dst] {
				return fail("statement %d (%s): destination s%d invalid or assigned twice", si, st.Code, st.Dst)
			}
			defined[st.Dst] = true
		default:
			return fail("statement %d: unknown statement %T", si, st)
		}
	}
	if k.Fallback != nil && !guarded {
		return fail("a fallback, but no guard")
	}
	if err := checkStreaming(k); err != nil {
		return fail("%v", err)
	}
	return checkNames(k)
}

// checkFallback checks what a guard needs when row outputs are stored
// before it (early[i]: array i was): a fallback that reads each of them
// instead of the inputs (an output may be an input's memory, so that
// input may be gone), reads no row input of k, and writes every other
// output of k. Its arrays are k's of the same name, its inputs stored
// before every guard; it has the kernel's layout and scalar arguments,
// and stores nothing before its own guards.
func checkFallback(k *Kernel, early []bool) error {
	fb := k.Fallback
	if fb == nil {
		for i, e := range early {
			if e {
				return fmt.Errorf("%s is stored, and no fallback reads it: an abandoned row must be untouched", k.Arrays[i].Name)
			}
		}
		return nil
	}
	if fb.Layout != k.Layout || fb.Fallback != nil || fb.Streaming != nil || len(fb.Args) != len(k.Args) {
		return fmt.Errorf("fallback %s: another layout or scalar arguments, or a fallback or form of its own", fb.Name)
	}
	for i, a := range fb.Args {
		if a.Name != k.Args[i].Name {
			return fmt.Errorf("fallback %s: scalar argument %s where the kernel has %s", fb.Name, a.Name, k.Args[i].Name)
		}
	}
	in := make([]bool, len(k.Arrays)) // what the fallback has of k's arrays
	for _, a := range fb.Arrays {
		j := k.ArrayIndex(a.Name)
		if j < 0 || k.Arrays[j].Elem != a.Elem {
			return fmt.Errorf("fallback %s: array %s is none of the kernel's", fb.Name, a.Name)
		}
		in[j] = true
		switch {
		case a.Role == RowIn && (k.Arrays[j].Role != RowOut || !early[j]):
			return fmt.Errorf("fallback %s: reads %s, which is not a row output stored before the guard", fb.Name, a.Name)
		case a.Role != RowIn && a.Role != k.Arrays[j].Role:
			return fmt.Errorf("fallback %s: %s is a %v, the kernel's a %v", fb.Name, a.Name, a.Role, k.Arrays[j].Role)
		}
	}
	for i, a := range k.Arrays {
		if a.Role.Written() && !early[i] && !in[i] {
			return fmt.Errorf("fallback %s: does not write %s", fb.Name, a.Name)
		}
	}
	return Check(fb) // with no fallback of its own: nothing stored before its guards
}

// checkStreaming checks k's streaming form: k's name, layout, arrays and
// arguments, nothing stored before a guard.
func checkStreaming(k *Kernel) error {
	st := k.Streaming
	if st == nil {
		return nil
	}
	same := st.Name == k.Name && st.Layout == k.Layout && len(st.Arrays) == len(k.Arrays) && len(st.Args) == len(k.Args) &&
		st.Fallback == nil && st.Streaming == nil
	for i := 0; same && i < len(st.Arrays); i++ {
		same = st.Arrays[i] == k.Arrays[i]
	}
	for i := 0; same && i < len(st.Args); i++ {
		same = st.Args[i].Name == k.Args[i].Name
	}
	if !same {
		return fmt.Errorf("streaming form: another name, layout, array, argument, fallback or form")
	}
	return Check(st)
}
