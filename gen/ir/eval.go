package ir

import "math"

// Eval runs k over rows rows of length h in float32 arithmetic, one element
// at a time. It is the IR's executable meaning, used to test lowerings; it
// is not the oracle of the generated tests, which is written from the
// formulas in float64, independently of this package.
//
// arrays[i] is the slice for k.Arrays[i]: rows*h values for row arrays, h
// for parameters, rows for per-row scalars; a half-storage array holds
// the values its format represents, and stores round to it. It returns the number of rows
// completed: rows, or the index of the first row a guard abandoned.
func Eval(k *Kernel, h, rows int, arrays [][]float32, args ...float32) int {
	return EvalShape(k, Shape{H: h}, rows, arrays, args...)
}

// EvalShape is Eval for a kernel of any Layout: shape says where each
// row's elements lie (see Layout), and the arrays are indexed accordingly.
// Per-row scalars of row r are at index r in every layout. args are the
// values of k.Args.
func EvalShape(k *Kernel, shape Shape, rows int, arrays [][]float32, args ...float32) int {
	h := shape.Len(k.Layout)
	scalars := make([]float32, k.NumScalars)
	accs := make([]BlockedSum, k.NumAccs)
	vals := []float32{}
	for r := 0; r < rows; r++ {
		at := func(array, i int) *float32 {
			switch k.Arrays[array].Role {
			case Param:
				return &arrays[array][shape.ParamIndex(k.Layout, r, i)]
			case RowScalarIn, RowScalarOut, RowScalarInOut:
				return &arrays[array][r]
			}
			return &arrays[array][shape.Index(k.Layout, r, i)]
		}
		for _, st := range k.Body {
			switch st := st.(type) {
			case *Scalar:
				if st.Code == SGuard {
					if v := scalars[st.Args[0]]; !(v >= st.Lo && v <= st.Hi) {
						return r
					}
					continue
				}
				var a, b float32
				if len(st.Args) > 0 {
					a = scalars[st.Args[0]]
				}
				if len(st.Args) > 1 {
					b = scalars[st.Args[1]]
				}
				var v float32
				switch st.Code {
				case SConst:
					v = st.Const
				case SArg:
					v = args[st.Arg]
				case SInvLen:
					v = 1 / float32(h)
				case SSum:
					v = accs[st.Acc].Value()
				case SAdd:
					v = a + b
				case SSub:
					v = a - b
				case SMul:
					v = a * b
				case SDiv:
					v = a / b
				case SSqrt:
					v = float32(math.Sqrt(float64(a)))
				case SLoad:
					v = *at(st.Array, 0)
				case SStore:
					*at(st.Array, 0) = a
					continue
				}
				scalars[st.Dst] = v
			case *Loop:
				for _, op := range st.Ops {
					if op.Code == VAcc || op.Code == VAccMul {
						accs[op.Acc] = BlockedSum{}
					}
				}
				if cap(vals) < len(st.Ops) {
					vals = make([]float32, len(st.Ops))
				}
				vals = vals[:len(st.Ops)]
				for i := 0; i < h; i++ {
					for oi, op := range st.Ops {
						arg := func(j int) float32 { return vals[op.Args[j]] }
						switch op.Code {
						case VLoad:
							vals[oi] = *at(op.Array, i)
						case VSplat:
							vals[oi] = scalars[op.Scalar]
						case VAdd:
							vals[oi] = arg(0) + arg(1)
						case VSub:
							vals[oi] = arg(0) - arg(1)
						case VMul:
							vals[oi] = arg(0) * arg(1)
						case VFMA:
							vals[oi] = float32(math.FMA(float64(arg(0)), float64(arg(1)), float64(arg(2))))
						case VStore:
							*at(op.Array, i) = k.Arrays[op.Array].Elem.Round(arg(0))
						case VAcc:
							accs[op.Acc].Add(arg(0))
						case VAccMul:
							accs[op.Acc].AddMul(arg(0), arg(1))
						}
					}
				}
			}
		}
	}
	return rows
}
