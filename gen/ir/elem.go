package ir

import (
	"fmt"
	"math"
)

// Elem is how an array holds its values in memory. Arithmetic is float32
// whatever the storage: a load widens exactly, a store rounds to nearest,
// ties to even.
type Elem int

const (
	F32  Elem = iota // float32
	BF16             // bfloat16 bits in a uint16: float32's upper half
	F16              // IEEE 754 binary16 bits in a uint16
)

var elemNames = [...]string{"f32", "bf16", "f16"}

func (e Elem) String() string {
	if e >= 0 && int(e) < len(elemNames) {
		return elemNames[e]
	}
	return fmt.Sprintf("Elem(%d)", int(e))
}

// ParseElem reads a storage format's spec spelling.
func ParseElem(s string) (Elem, bool) {
	for i, n := range elemNames {
		if n == s {
			return Elem(i), true
		}
	}
	return 0, false
}

// Half reports a 16-bit storage format.
func (e Elem) Half() bool { return e == BF16 || e == F16 }

// Bytes is the size of one stored value.
func (e Elem) Bytes() int {
	if e.Half() {
		return 2
	}
	return 4
}

// Round is v stored and loaded again: v rounded to the format.
func (e Elem) Round(v float32) float32 {
	switch e {
	case BF16:
		return WidenBF16(NarrowBF16(v))
	case F16:
		return WidenF16(NarrowF16(v))
	}
	return v
}

// WidenBF16 is the float32 value of bfloat16 bits b (exact).
func WidenBF16(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// NarrowBF16 rounds v to bfloat16, to nearest, ties to even; a NaN stays a
// NaN (quieted: the rounding carry could otherwise reach the exponent and
// make it an infinity).
func NarrowBF16(v float32) uint16 {
	u := math.Float32bits(v)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// WidenF16 is the float32 value of binary16 bits b (exact, subnormals
// included).
func WidenF16(b uint16) float32 {
	sign := uint32(b&0x8000) << 16
	exp := uint32(b>>10) & 0x1f
	man := uint32(b & 0x3ff)
	switch {
	case exp == 0x1f: // Inf, NaN (payload kept, quiet bit set as the hardware does)
		if man != 0 {
			man |= 0x200
		}
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: man * 2^-24
		v := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// NarrowF16 rounds v to binary16, to nearest, ties to even: beyond 65504
// by half an ulp or more it is an infinity, below 2^-14 a subnormal, and a
// NaN stays a NaN (quieted, its payload's top bits kept).
func NarrowF16(v float32) uint16 {
	u := math.Float32bits(v)
	sign := uint16(u>>16) & 0x8000
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN
		return sign | 0x7e00 | uint16(a>>13)&0x1ff
	case a >= 0x477ff000: // 65520 and beyond, Inf included: rounds to Inf
		return sign | 0x7c00
	case a >= 0x38800000: // normal: 2^-14 and beyond
		r := a + 0xfff + (a>>13)&1 // the carry may reach the exponent: exact
		return sign | uint16((r-0x38000000)>>13)
	case a < 0x33000000: // below 2^-25, half the least subnormal: zero
		return sign
	}
	// Subnormal: the significand with its implicit bit, shifted to units of
	// 2^-24, rounded to nearest even.
	exp := a >> 23
	man := a&0x7fffff | 0x800000
	shift := 126 - exp // 2^(exp-127) * man/2^23 in units of 2^-24: man >> (126-exp)
	q := man >> shift
	rem := man & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && q&1 == 1 {
		q++
	}
	return sign | uint16(q)
}
