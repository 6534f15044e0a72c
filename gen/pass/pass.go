// Package pass holds the analyses of an ir.Kernel that do not depend on
// the instruction set, each a small function over the IR that every
// lowering calls instead of working it out again: which scalars are the
// same for every row, where the guards are, how many levels a sum needs
// under the summation policy, and the order in which a lowering that runs
// out of registers retries with less.
package pass

import "github.com/normgen/normgen/gen/ir"

// RowInvariant marks, per scalar, those that are the same for every row:
// constants, 1/n, the scalar arguments (a run-time epsilon) and
// arithmetic on them alone. A lowering may compute
// them once per call (or per block of rows) instead of once per row.
func RowInvariant(k *ir.Kernel) []bool {
	inv := make([]bool, k.NumScalars)
	for _, st := range k.Body {
		st, ok := st.(*ir.Scalar)
		if !ok || st.Dst < 0 {
			continue
		}
		switch st.Code {
		case ir.SConst, ir.SInvLen, ir.SArg:
			inv[st.Dst] = true
		case ir.SAdd, ir.SSub, ir.SMul, ir.SDiv, ir.SSqrt:
			inv[st.Dst] = true
			for _, a := range st.Args {
				inv[st.Dst] = inv[st.Dst] && inv[a]
			}
		}
	}
	return inv
}

// Hoistable marks, per statement of k's body, the scalar statements that
// define a row-invariant scalar (inv is RowInvariant(k)): those a lowering
// may move before the loop over the rows. Stores and guards act on the
// row and never are.
func Hoistable(k *ir.Kernel, inv []bool) []bool {
	out := make([]bool, len(k.Body))
	for si, st := range k.Body {
		if st, ok := st.(*ir.Scalar); ok && st.Dst >= 0 && st.Code != ir.SStore && st.Code != ir.SGuard {
			out[si] = inv[st.Dst]
		}
	}
	return out
}

// Guards returns the indices in k's body of its guards (ir.SGuard), in
// order: the statements that may abandon a row.
func Guards(k *ir.Kernel) []int {
	var out []int
	for si, st := range k.Body {
		if st, ok := st.(*ir.Scalar); ok && st.Code == ir.SGuard {
			out = append(out, si)
		}
	}
	return out
}

// HasGuard reports whether k can abandon a row.
func HasGuard(k *ir.Kernel) bool { return len(Guards(k)) > 0 }

// StoresBeforeGuard reports whether k stores a row output before one of
// its guards (what its ir.Kernel.Fallback then reads): an abandoned row is
// not untouched, so a lowering must not compute it again from the inputs.
func StoresBeforeGuard(k *ir.Kernel) bool {
	stored := false
	for _, st := range k.Body {
		switch st := st.(type) {
		case *ir.Loop:
			for _, op := range st.Ops {
				stored = stored || op.Code == ir.VStore
			}
		case *ir.Scalar:
			if st.Code == ir.SGuard && stored {
				return true
			}
		}
	}
	return false
}
