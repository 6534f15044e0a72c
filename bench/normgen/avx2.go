//go:build normgen_avx2

package normgen

import "github.com/normgen/normgen/bench/gen/nbavx2"

func init() {
	register(pkg{
		isa: "avx2",
		ln: map[int]func(dst, x, gamma, beta []float32){
			768:  nbavx2.LayerNorm768,
			4096: nbavx2.LayerNorm4096,
			8192: nbavx2.LayerNorm8192,
		},
		lnAny: nbavx2.LayerNormAny,
		rms: map[int]func(dst, x, gamma []float32){
			768:  nbavx2.RMSNorm768,
			4096: nbavx2.RMSNorm4096,
			8192: nbavx2.RMSNorm8192,
		},
		rmsAny: nbavx2.RMSNormAny,
		bn:     nbavx2.BatchNorm,
		lnPar: map[int]func(dst, x, gamma, beta []float32){
			768:  nbavx2.LayerNorm768Parallel,
			4096: nbavx2.LayerNorm4096Parallel,
			8192: nbavx2.LayerNorm8192Parallel,
		},
		rmsPar: map[int]func(dst, x, gamma []float32){
			768:  nbavx2.RMSNorm768Parallel,
			4096: nbavx2.RMSNorm4096Parallel,
			8192: nbavx2.RMSNorm8192Parallel,
		},
		bnPar: nbavx2.BatchNormParallel,
	})
}
