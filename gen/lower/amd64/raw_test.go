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

// The encodings of VCVTNE2PS2BF16 zmm, zmm, zmm as LLVM's assembler
// writes them (AT&T order: rm, vvvv, reg).
func TestEVEXVCVTNE2PS2BF16(t *testing.T) {
	for _, c := range []struct {
		rm, v, dst uint8
		want       string
	}{
		{3, 2, 1, "62f26f4872cb"},
		{31, 17, 9, "6212774072cf"},
		{0, 15, 16, "62e2074872c0"},
		{8, 24, 7, "62d23f4072f8"},
	} {
		b := evexZZZ(0x72, c.rm, c.v, c.dst)
		if got := fmt.Sprintf("%x", b[:]); got != c.want {
			t.Errorf("Z%d, Z%d, Z%d: %s, want %s", c.rm, c.v, c.dst, got, c.want)
		}
	}
}
