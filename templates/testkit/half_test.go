package testkit

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/normgen/normgen/gen/ir"
)

// The definitions' values at known points.
func TestHalfFormatKnownValues(t *testing.T) {
	bf, f16 := halfFormats["bf16"], halfFormats["f16"]
	for _, c := range []struct {
		f    halfFormat
		bits uint16
		v    float64
	}{
		{f16, 0x3c00, 1}, {f16, 0x7bff, 65504}, {f16, 0x0001, 0x1p-24}, {f16, 0x0400, 0x1p-14},
		{f16, 0x03ff, 1023 * 0x1p-24}, {f16, 0xc000, -2}, {f16, 0x7c00, math.Inf(1)}, {f16, 0x3555, 0.333251953125},
		{bf, 0x3f80, 1}, {bf, 0x7f7f, 0x1.fep127}, {bf, 0x0001, 0x1p-133}, {bf, 0x0080, 0x1p-126},
		{bf, 0xff80, math.Inf(-1)}, {bf, 0x4049, 3.140625},
	} {
		if got := c.f.decode(c.bits); got != c.v {
			t.Errorf("%+v: decode %#04x = %v, want %v", c.f, c.bits, got, c.v)
		}
		if got := c.f.encode(c.v); got != c.bits {
			t.Errorf("%+v: encode %v = %#04x, want %#04x", c.f, c.v, got, c.bits)
		}
	}
	// Ties to even, overflow and underflow.
	for _, c := range []struct {
		f    halfFormat
		v    float64
		bits uint16
	}{
		{f16, 65519.99, 0x7bff}, {f16, 65520, 0x7c00}, {f16, 1 + 0x1p-11, 0x3c00}, {f16, 1 + 3*0x1p-11, 0x3c02},
		{f16, 0x1p-25, 0}, {f16, 0x1.000002p-25, 1}, {f16, 0x1.8p-24, 2}, {f16, -0x1p-26, 0x8000},
		{bf, 1 + 0x1p-8, 0x3f80}, {bf, 1 + 3*0x1p-8, 0x3f82}, {bf, 0x1.ffp127, 0x7f80}, {bf, 0x1p-134, 0},
	} {
		if got := c.f.encode(c.v); got != c.bits {
			t.Errorf("%+v: encode %v = %#04x, want %#04x", c.f, c.v, got, c.bits)
		}
	}
	if !math.IsNaN(f16.decode(0x7e00)) || !math.IsNaN(bf.decode(0xffc1)) || !math.IsNaN(bf.decode(bf.encode(math.NaN()))) {
		t.Error("NaN does not stay NaN")
	}
}

// TestHalfConversions run on ir's bit-level conversions (written apart
// from the definitions above): the test passes on them, and fails on a
// conversion that truncates instead of rounding.
func TestHalfConversionsOnIR(t *testing.T) {
	defer func(saved []halfConv) { halfConversions = saved }(halfConversions)
	conv := func(name string, narrow func(float32) uint16, widen func(uint16) float32) (func([]uint16, []float32), func([]float32, []uint16)) {
		return func(dst []uint16, src []float32) {
				if len(dst) != len(src) {
					panic(fmt.Sprintf("%sFromFloat32: len(dst) = %d, len(src) = %d", name, len(dst), len(src)))
				}
				for i, v := range src {
					dst[i] = narrow(v)
				}
			}, func(dst []float32, src []uint16) {
				if len(dst) != len(src) {
					panic(fmt.Sprintf("Float32From%s: len(dst) = %d, len(src) = %d", name, len(dst), len(src)))
				}
				for i, b := range src {
					dst[i] = widen(b)
				}
			}
	}
	bn, bw := conv("BF16", ir.NarrowBF16, ir.WidenBF16)
	fn, fw := conv("F16", ir.NarrowF16, ir.WidenF16)
	halfConversions = []halfConv{
		{storage: "bf16", narrowName: "BF16FromFloat32", widenName: "Float32FromBF16", narrow: bn, widen: bw},
		{storage: "f16", narrowName: "F16FromFloat32", widenName: "Float32FromF16", narrow: fn, widen: fw},
	}
	TestHalfConversions(t)

	truncate, _ := conv("BF16", func(v float32) uint16 { return uint16(math.Float32bits(v) >> 16) }, ir.WidenBF16)
	halfConversions = []halfConv{{storage: "bf16", narrowName: "BF16FromFloat32", widenName: "Float32FromBF16", narrow: truncate, widen: bw}}
	ft := &testing.T{}
	done := make(chan bool)
	go func() {
		defer func() { recover(); done <- true }()
		TestHalfConversions(ft)
	}()
	<-done
	if !ft.Failed() {
		t.Error("a truncating bf16 conversion passed")
	}
}

// halfCall keeps in-place and overlapping arrays so, fences the uint16
// arrays and decodes back what the call wrote.
func TestHalfCall(t *testing.T) {
	buf := make([]float32, 20)
	for i := range buf {
		buf[i] = float32(i)
	}
	x := buf[2:10]
	a := [][]float32{x, x, buf[12:16], {1.5}}
	half := []bool{true, true, true, false}
	halfCall("bf16", half, a, func(u [][]uint16) {
		if &u[0][0] != &u[1][0] {
			t.Error("in-place arrays not the same uint16 slice")
		}
		if u[3] != nil {
			t.Error("a float32 array converted")
		}
		for i := range u[0] {
			u[0][i] = ir.NarrowBF16(-float32(i) - 0.5)
		}
	})
	for i, v := range x {
		if v != -float32(i)-0.5 {
			t.Fatalf("x[%d] = %v after the call", i, v)
		}
	}
	shifted := [][]float32{buf[4:8], buf[5:9]}
	halfCall("f16", []bool{true, true}, shifted, func(u [][]uint16) {
		if &u[0][1] != &u[1][0] {
			t.Error("overlapping arrays not overlapping alike")
		}
	})
	msg := func() (msg string) {
		defer func() { msg, _ = recover().(string) }()
		halfCall("f16", []bool{true}, [][]float32{buf[:4]}, func(u [][]uint16) {
			unsafe.Slice(&u[0][0], 5)[4] = 0 // past the end, into the margin
		})
		return ""
	}()
	if !strings.Contains(msg, "wrote outside") {
		t.Errorf("a stray write into the margin: panic %q", msg)
	}
}
