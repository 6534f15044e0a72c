package pass

import "github.com/normgen/normgen/gen/ir"

// The summation policy (ir.SumChunk, ir.SumTotal) in terms one lane of an
// accumulator adds: up to ChunkTerms a lane's sum is one chain; past it
// the sum runs in chunks added into a total; past SuperTerms the totals
// are added into super-totals too.
const (
	ChunkTerms = ir.SumChunk
	SuperTerms = ir.SumChunk * ir.SumTotal
)

// Levels of an accumulator's sums: the chunk alone, the chunk and its
// total, and the super-total as well.
const (
	ChunkOnly  = 1
	WithTotals = 2
	WithSupers = 3
)

// SumLevels is how many levels a lane that adds terms terms needs; 0
// terms means a count known only at run time, which may need all three.
func SumLevels(terms int) int {
	switch {
	case terms == 0 || terms > SuperTerms:
		return WithSupers
	case terms > ChunkTerms:
		return WithTotals
	}
	return ChunkOnly
}

// FoldLevels is how many levels a lane needs whose chunks are added into
// its total folds times (a lowering that ends chunks where its loop
// structure does, rather than every ChunkTerms terms): a total takes
// ir.SumTotal chunks before a super-total must take it.
func FoldLevels(folds int) int {
	switch {
	case folds > ir.SumTotal:
		return WithSupers
	case folds > 0:
		return WithTotals
	}
	return ChunkOnly
}
