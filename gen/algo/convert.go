package algo

import (
	"fmt"
	"strings"

	"github.com/normgen/normgen/gen/ir"
)

// ConversionName is the name of the bulk conversion between float32 and
// half format e: "BF16FromFloat32" (narrow) or "Float32FromBF16".
func ConversionName(e ir.Elem, narrow bool) string {
	name := strings.ToUpper(e.String())
	if narrow {
		return name + "FromFloat32"
	}
	return "Float32From" + name
}

// Conversion is the bulk conversion between float32 and half format e
// (narrow: float32 to e) as a kernel over rows: dst = src, element by
// element, one load and one store, which every lowering widens and
// rounds as it does in the norms. Its entry point calls it as rows of a
// fixed chunk (no fixed sizes: the kernel takes h at run time).
func Conversion(e ir.Elem, narrow bool) (*Plan, error) {
	if !e.Half() {
		return nil, fmt.Errorf("conversion to %v: not a half-precision format", e)
	}
	name := ConversionName(e, narrow)
	b := ir.NewBuilder(name, "dst = src, "+map[bool]string{true: "rounded to " + e.String(), false: "widened to float32"}[narrow])
	dst := b.Array("dst", ir.RowOut, "the converted values")
	src := b.Array("src", ir.RowIn, "the values to convert")
	if narrow {
		b.SetElem(dst, e)
	} else {
		b.SetElem(src, e)
	}
	b.Loop(func(l *ir.LoopBuilder) { l.Store(dst, l.Name(l.Load(src), "v")) })
	k, err := b.Kernel()
	if err != nil {
		return nil, fmt.Errorf("conversion %s: %w", name, err)
	}
	return &Plan{Kernel: k, Form: Rows, Sized: true, Statistic: "none"}, nil
}
