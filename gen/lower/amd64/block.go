package amd64

import "github.com/normgen/normgen/gen/pass"

// Row blocks: for short rows, the statistics loops of several consecutive
// rows run together, each row with its own partial sums, and the rows'
// scalar code (reductions, square root, division) is interleaved, so that
// its latency overlaps; the loops that store still go row by row (see
// sweep). Measured on an AVX-512 Xeon, L2-resident inputs, time / copy:
// LayerNorm H=768 2.18 -> 2.04 (AVX2), 1.78 -> 1.56 (AVX-512); RMSNorm
// H=1024 1.34 -> 1.22 (AVX2), 1.22 -> 1.14 (AVX-512); no gain from H=4096
// on, where a row alone keeps the loops busy.

const (
	// blockBytes is the most bytes of one array a block of rows spans.
	blockBytes = 16 << 10
	// maxBlock is the most rows per block.
	maxBlock = 4
)

// planBlock chooses how many rows the block loop sweeps together (1: no
// block loop), at most limit when that is not 0: a power of two up to
// maxBlock, with the block's rows within blockBytes. Only for a fixed H,
// and not for NT functions (DRAM-bound), rows kept in registers, or
// kernels that store before a guard (a block a guard abandons is done
// again row by row, from inputs its stores may have overwritten).
func (l *lowering) planBlock(limit int) {
	l.block = 1
	if l.f.H == 0 || l.f.NT || l.resident != nil || pass.StoresBeforeGuard(l.k) {
		return
	}
	for 2*l.block <= maxBlock && 2*l.block*4*l.f.H <= blockBytes {
		l.block *= 2
	}
	if limit > 0 {
		l.block = min(l.block, limit)
	}
}
