package golang

import (
	"strings"

	"github.com/normgen/normgen/gen/ir"
)

// HalfSource is the pure-Go conversions of the half-precision storage
// formats among elems, as Go source for a file importing fmt and math:
// for each format the scalar widen and narrow the kernels call, and the
// exported bulk conversions users feed and read their data with. Each of
// those first calls simd<Name> (the architecture files' dispatch to the
// conversion's assembly: gopkg), which returns how many values it
// converted, and converts the rest.
func HalfSource(elems []ir.Elem) string {
	var b strings.Builder
	for _, e := range elems {
		switch e {
		case ir.BF16:
			b.WriteString(bf16Source)
		case ir.F16:
			b.WriteString(f16Source)
		}
	}
	return b.String()
}

const bf16Source = `
// BF16FromFloat32 rounds each value of src to bfloat16 (to nearest, ties to
// even; NaN stays NaN) into dst, which must have src's length.
func BF16FromFloat32(dst []uint16, src []float32) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("BF16FromFloat32: len(dst) = %d, len(src) = %d", len(dst), len(src)))
	}
	n := simdBF16FromFloat32(dst, src)
	for i, v := range src[n:] {
		dst[n+i] = narrowBF16(v)
	}
}

// Float32FromBF16 widens each bfloat16 value of src (exactly) into dst,
// which must have src's length.
func Float32FromBF16(dst []float32, src []uint16) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("Float32FromBF16: len(dst) = %d, len(src) = %d", len(dst), len(src)))
	}
	n := simdFloat32FromBF16(dst, src)
	for i, b := range src[n:] {
		dst[n+i] = widenBF16(b)
	}
}

// widenBF16 is the float32 value of bfloat16 bits: its upper half.
func widenBF16(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// narrowBF16 rounds v to bfloat16, to nearest, ties to even. A NaN is
// quieted instead: rounding its payload could carry into an infinity.
func narrowBF16(v float32) uint16 {
	u := math.Float32bits(v)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}
`

const f16Source = `
// F16FromFloat32 rounds each value of src to IEEE binary16 (to nearest, ties
// to even; beyond 65504 by half an ulp or more: Inf; NaN stays NaN) into
// dst, which must have src's length.
func F16FromFloat32(dst []uint16, src []float32) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("F16FromFloat32: len(dst) = %d, len(src) = %d", len(dst), len(src)))
	}
	n := simdF16FromFloat32(dst, src)
	for i, v := range src[n:] {
		dst[n+i] = narrowF16(v)
	}
}

// Float32FromF16 widens each binary16 value of src (exactly, subnormals
// included) into dst, which must have src's length.
func Float32FromF16(dst []float32, src []uint16) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("Float32FromF16: len(dst) = %d, len(src) = %d", len(dst), len(src)))
	}
	n := simdFloat32FromF16(dst, src)
	for i, b := range src[n:] {
		dst[n+i] = widenF16(b)
	}
}

// widenF16 is the float32 value of binary16 bits (exact). The magnitude's
// bits moved to float32's places read 2^112 too small, subnormals
// included; Inf and NaN take float32's top exponent instead, a NaN its
// payload quieted, as the hardware conversions do. Small enough to
// inline, and its selects compile without branches.
func widenF16(b uint16) float32 {
	a := uint32(b&0x7fff) << 13
	v := math.Float32bits(math.Float32frombits(a) * 0x1p112)
	if a >= 0x0f800000 {
		v = a | 0x70000000
	}
	if a > 0x0f800000 {
		v = a | 0x70400000
	}
	return math.Float32frombits(v | uint32(b&0x8000)<<16)
}

// narrowF16 rounds v to binary16, to nearest, ties to even; from 65520
// up, Inf. A NaN is quieted, keeping its payload's top bits. The cases
// are selects (at most a predictable branch around the subnormal one),
// and the function is small enough to inline.
func narrowF16(v float32) uint16 {
	u := math.Float32bits(v)
	a := u & 0x7fffffff
	// Normal: rebias, round on the 13 bits dropped (a carry into the
	// exponent is exact); beyond the largest finite, clamped to Inf.
	h := min((a-0x37fff001+a>>13&1)>>13, 0x7c00)
	if a < 0x38800000 {
		// Below 2^-14: adding 0.5 puts a's units of 2^-24 in the low bits
		// of a float32 in [0.5, 1), rounded to nearest even by the add.
		h = math.Float32bits(math.Float32frombits(a)+0.5) - 0x3f000000
	}
	if a > 0x7f800000 {
		h = 0x7e00 | a>>13&0x1ff
	}
	return uint16(h | u>>16&0x8000)
}
`
