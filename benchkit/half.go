package benchkit

import (
	"fmt"
	"math"
)

// Storage formats of a shape's row arrays (Shape.Storage): float32, or the
// raw bits of bfloat16 or IEEE binary16 held in []uint16 (Args.In16,
// Args.Out16), parameters and statistics staying float32.
const (
	F32  = ""
	BF16 = "bf16"
	F16  = "f16"
)

// elemBytes is the size of one element of a row array.
func elemBytes(storage string) int64 {
	if storage == F32 {
		return 4
	}
	return 2
}

// unitRoundoff is half the distance from 1 to the next value of the
// format: the largest relative error of one rounding to nearest.
func unitRoundoff(storage string) float64 {
	switch storage {
	case BF16:
		return 0x1p-8
	case F16:
		return 0x1p-11
	}
	return 0
}

// halfNaN is the quiet NaN the check fills half outputs with.
func halfNaN(storage string) uint16 {
	if storage == BF16 {
		return 0x7fc0
	}
	return 0x7e00
}

// HalfFuncs returns ToHalf and FromHalf for one format (BF16 or F16), the
// format chosen once.
func HalfFuncs(storage string) (to func(float32) uint16, from func(uint16) float32) {
	switch storage {
	case BF16:
		return bf16FromFloat32, func(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
	case F16:
		return func(f float32) uint16 { return f16FromBits(math.Float32bits(f)) }, float32FromF16
	}
	panic(fmt.Sprintf("benchkit: storage %q is not bf16 or f16", storage))
}

// ToHalf rounds f to the storage format (BF16 or F16), to nearest with
// ties to even; NaN stays a quiet NaN, binary16 overflow gives infinity.
func ToHalf(storage string, f float32) uint16 {
	b := math.Float32bits(f)
	switch storage {
	case BF16:
		return bf16FromFloat32(f)
	case F16:
		return f16FromBits(b)
	}
	panic(fmt.Sprintf("benchkit: storage %q is not bf16 or f16", storage))
}

// FromHalf widens bits of the storage format (BF16 or F16) to float32,
// exactly.
func FromHalf(storage string, h uint16) float32 {
	switch storage {
	case BF16:
		return math.Float32frombits(uint32(h) << 16)
	case F16:
		return float32FromF16(h)
	}
	panic(fmt.Sprintf("benchkit: storage %q is not bf16 or f16", storage))
}

func bf16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

func float32FromF16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp, man := uint32(h>>10)&0x1f, uint32(h&0x3ff)
	switch exp {
	case 0: // zero or subnormal: man * 2^-24
		return math.Float32frombits(sign | math.Float32bits(float32(man)*0x1p-24))
	case 31: // infinity, or NaN made quiet (as VCVTPH2PS does)
		if man != 0 {
			man |= 0x200
		}
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// f16FromBits rounds the float32 of bits b to binary16.
func f16FromBits(b uint32) uint16 {
	sign := uint16(b>>16) & 0x8000
	exp, man := int(b>>23)&0xff, b&0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 31 {
		return sign | 0x7c00
	}
	// round drops the low shift bits of m, to nearest even; a carry out
	// of the mantissa moves to the next binade (or to infinity) correctly.
	round := func(m uint32, shift uint) uint16 {
		q, rem, half := m>>shift, m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && q&1 == 1 {
			q++
		}
		return uint16(q)
	}
	if e <= 0 { // subnormal in binary16 (units of 2^-24), or zero
		if e < -10 {
			return sign
		}
		return sign | round(man|0x800000, uint(14-e))
	}
	return sign | round(uint32(e)<<23|man, 13)
}
