package golang

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/spec"
)

// TestLayoutsRender prints the pure-Go kernels of the non-row layouts for
// inspection and checks their signatures; their results are tested by
// the generated packages against a float64 oracle.
func TestLayoutsRender(t *testing.T) {
	for _, tc := range []struct {
		k    spec.Kernel
		want string
	}{
		{spec.Kernel{Name: "CF", Axis: "channels", Mean: true, Epsilon: 1e-6, Scale: true, Shift: true}, "rows, h, stride int"},
		{spec.Kernel{Name: "BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, AffinePerRow: true,
			SaveStats: true, Running: &spec.Running{Momentum: 0.1, Convention: "pytorch"}}, "rows, segs, seglen, segstride, rowstride int"},
		{spec.Kernel{Name: "GN", Axis: "groups", Groups: 4, Mean: true, Epsilon: 1e-5, Scale: true, Shift: true}, "rows, segs, seglen, segstride, rowstride int"},
	} {
		k, err := algo.Build(tc.k)
		if err != nil {
			t.Fatal(err)
		}
		f := jen.NewFile("p")
		f.Add(Func(k))
		src := fmt.Sprintf("%#v", f)
		if !strings.Contains(src, tc.want) {
			t.Errorf("%s: signature lacks %q:\n%s", tc.k.Name, tc.want, src)
		}
		t.Log(src)
	}
}
