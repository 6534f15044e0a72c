package ir

// OrderFree reports whether loop's result does not depend on which lane
// takes which element, so that a lowering may permute the elements of a
// group of vectors (the same way in every array) before the loop's
// operations see them: loads that deinterleave (bf16's even and odd
// halves of one full-width load) with no shuffle back. It holds for a
// loop that only reduces: no store (a permuted value would land on
// another element) and no load of a Param array (whose element i must
// meet the row's element i), over a layout whose lanes are elements of
// one row (in Columns each lane is a row). The sums' order changes, not
// their terms: the summation policy counts terms per lane, which a
// permutation within whole vectors keeps.
func (k *Kernel) OrderFree(loop *Loop) bool {
	if k.Layout == Columns {
		return false
	}
	for _, op := range loop.Ops {
		switch op.Code {
		case VStore:
			return false
		case VLoad:
			if k.Arrays[op.Array].Role == Param {
				return false
			}
		}
	}
	return true
}
