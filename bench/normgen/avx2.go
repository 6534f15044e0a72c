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
		addRMS: map[int]func(dst, sum, x, f, gamma []float32){
			768:  nbavx2.AddRMSNorm768,
			4096: nbavx2.AddRMSNorm4096,
			8192: nbavx2.AddRMSNorm8192,
		},
		addRMSAny: nbavx2.AddRMSNormAny,
		addLN: map[int]func(dst, sum, x, f, gamma, beta []float32){
			768:  nbavx2.AddLayerNorm768,
			4096: nbavx2.AddLayerNorm4096,
			8192: nbavx2.AddLayerNorm8192,
		},
		addLNAny: nbavx2.AddLayerNormAny,
		deep: map[int]func(dst, sum, x, f, gamma, beta []float32){
			768:  nbavx2.DeepNorm768,
			4096: nbavx2.DeepNorm4096,
			8192: nbavx2.DeepNorm8192,
		},
		deepAny: nbavx2.DeepNormAny,
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
