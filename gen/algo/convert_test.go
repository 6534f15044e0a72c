package algo

import (
	"math"
	"testing"

	"github.com/normgen/normgen/gen/ir"
)

// A conversion kernel is one load and one store, which round as the
// format's definition says when evaluated; float32 is not a conversion.
func TestConversion(t *testing.T) {
	if _, err := Conversion(ir.F32, true); err == nil {
		t.Error("Conversion accepted float32")
	}
	for _, e := range []ir.Elem{ir.BF16, ir.F16} {
		for _, narrow := range []bool{true, false} {
			p, err := Conversion(e, narrow)
			if err != nil {
				t.Fatal(err)
			}
			k := p.Kernel
			if k.Name != ConversionName(e, narrow) || len(k.Arrays) != 2 || (k.Arrays[0].Elem == e) != narrow || (k.Arrays[1].Elem == e) == narrow {
				t.Errorf("%s: arrays %+v", k.Name, k.Arrays)
			}
			src := []float32{1 + 0x1p-8, 1 + 0x1p-11, 65520, float32(math.NaN())}
			dst := make([]float32, len(src))
			ir.Eval(k, len(src), 1, [][]float32{dst, src})
			for i, v := range src {
				want := v
				if narrow {
					want = e.Round(v)
				}
				if math.Float32bits(dst[i]) != math.Float32bits(want) && !(math.IsNaN(float64(v)) && math.IsNaN(float64(dst[i]))) {
					t.Errorf("%s(%v) = %v, want %v", k.Name, v, dst[i], want)
				}
			}
		}
	}
	if ConversionName(ir.F16, true) != "F16FromFloat32" || ConversionName(ir.BF16, false) != "Float32FromBF16" {
		t.Error("conversion names")
	}
}
