package amd64

// masked reports an ISA with mask registers: tails and edges under a
// k-mask, where without them they take VMASKMOVPS or scalar code.
func (l *lowering) masked() bool { return l.isa.MaskRegs > 0 }

// zmm reports 512-bit vectors.
func (l *lowering) zmm() bool { return l.isa.VectorBytes == 64 }
