//go:build normgen_avx512

package normgen

import "github.com/normgen/normgen/bench/gen/nbavx512"

func init() {
	register(pkg{
		isa: "avx512",
		ln: map[int]func(dst, x, gamma, beta []float32){
			768:  nbavx512.LayerNorm768,
			4096: nbavx512.LayerNorm4096,
			8192: nbavx512.LayerNorm8192,
		},
		lnAny: nbavx512.LayerNormAny,
		rms: map[int]func(dst, x, gamma []float32){
			768:  nbavx512.RMSNorm768,
			4096: nbavx512.RMSNorm4096,
			8192: nbavx512.RMSNorm8192,
		},
		rmsAny: nbavx512.RMSNormAny,
		bn:     nbavx512.BatchNorm,
		lnPar: map[int]func(dst, x, gamma, beta []float32){
			768:  nbavx512.LayerNorm768Parallel,
			4096: nbavx512.LayerNorm4096Parallel,
			8192: nbavx512.LayerNorm8192Parallel,
		},
		rmsPar: map[int]func(dst, x, gamma []float32){
			768:  nbavx512.RMSNorm768Parallel,
			4096: nbavx512.RMSNorm4096Parallel,
			8192: nbavx512.RMSNorm8192Parallel,
		},
		bnPar: nbavx512.BatchNormParallel,
	})
}
