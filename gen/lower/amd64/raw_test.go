package amd64

import (
	"fmt"
	"testing"
)

// The encodings of VCVTNEPS2BF16 zmm, ymm that GNU objdump decodes as
// such, across the register numbers' extension bits (R, R', B, X).
func TestEVEXVCVTNEPS2BF16(t *testing.T) {
	for _, c := range []struct {
		src, dst uint8
		want     string
	}{
		{15, 14, "62527e4872f7"},
		{0, 0, "62f27e4872c0"},
		{31, 16, "62827e4872c7"},
		{8, 23, "62c27e4872f8"},
		{17, 9, "62327e4872c9"},
	} {
		b := evexZY(0x72, c.src, c.dst)
		if got := fmt.Sprintf("%x", b[:]); got != c.want {
			t.Errorf("Z%d, Y%d: %s, want %s", c.src, c.dst, got, c.want)
		}
	}
}
