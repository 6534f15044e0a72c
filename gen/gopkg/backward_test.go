package gopkg

import "testing"

func TestBackwardBlockRows(t *testing.T) {
	for _, tc := range []struct{ h, bytes, want int }{
		{768, 8, 32}, {4096, 8, 8}, {8192, 8, 4}, {4096, 4, 16}, {3, 8, 64}, {1 << 18, 8, 1}, {4096, 12, 4},
	} {
		if got := backwardBlockRows(tc.h, tc.bytes); got != tc.want {
			t.Errorf("backwardBlockRows(%d, %d) = %d, want %d", tc.h, tc.bytes, got, tc.want)
		}
	}
	// The largest power of two up to one float32 chunk within the bound.
	for h := 1; h < 1<<17; h += 37 {
		b := backwardBlockRows(h, 8)
		if b&(b-1) != 0 || b > backwardMaxBlock || (b > 1 && b*h*8 > backwardBlockBytes) ||
			(b < backwardMaxBlock && 2*b*h*8 <= backwardBlockBytes) {
			t.Fatalf("backwardBlockRows(%d, 8) = %d", h, b)
		}
	}
}
