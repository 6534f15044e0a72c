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
		addRMS: map[int]func(dst, sum, x, f, gamma []float32){
			768:  nbavx512.AddRMSNorm768,
			4096: nbavx512.AddRMSNorm4096,
			8192: nbavx512.AddRMSNorm8192,
		},
		addRMSAny: nbavx512.AddRMSNormAny,
		addLN: map[int]func(dst, sum, x, f, gamma, beta []float32){
			768:  nbavx512.AddLayerNorm768,
			4096: nbavx512.AddLayerNorm4096,
			8192: nbavx512.AddLayerNorm8192,
		},
		addLNAny: nbavx512.AddLayerNormAny,
		deep: map[int]func(dst, sum, x, f, gamma, beta []float32){
			768:  nbavx512.DeepNorm768,
			4096: nbavx512.DeepNorm4096,
			8192: nbavx512.DeepNorm8192,
		},
		deepAny: nbavx512.DeepNormAny,
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
		bnBwd: nbavx512.BatchNormBackward,
		lnBwd: map[int]func(dx, dgamma, dbeta, dy, x, mean, rstd, gamma []float32){
			768:  nbavx512.LayerNormStatsBackward768,
			4096: nbavx512.LayerNormStatsBackward4096,
			8192: nbavx512.LayerNormStatsBackward8192,
		},
		lnBwdAny: nbavx512.LayerNormStatsBackwardAny,
		rmsBwd: map[int]func(dx, dgamma, dy, x, rstd, gamma []float32){
			768:  nbavx512.RMSNormStatsBackward768,
			4096: nbavx512.RMSNormStatsBackward4096,
			8192: nbavx512.RMSNormStatsBackward8192,
		},
		rmsBwdAny: nbavx512.RMSNormStatsBackwardAny,
		half: map[string]halfKernels{
			"bf16": {
				ln:        map[int]func(dst, x []uint16, gamma, beta []float32){768: nbavx512.BF16LayerNorm768, 4096: nbavx512.BF16LayerNorm4096, 8192: nbavx512.BF16LayerNorm8192},
				lnAny:     nbavx512.BF16LayerNormAny,
				rms:       map[int]func(dst, x []uint16, gamma []float32){768: nbavx512.BF16RMSNorm768, 4096: nbavx512.BF16RMSNorm4096, 8192: nbavx512.BF16RMSNorm8192},
				rmsAny:    nbavx512.BF16RMSNormAny,
				addRMS:    map[int]func(dst, sum, x, f []uint16, gamma []float32){768: nbavx512.BF16AddRMSNorm768, 4096: nbavx512.BF16AddRMSNorm4096, 8192: nbavx512.BF16AddRMSNorm8192},
				addRMSAny: nbavx512.BF16AddRMSNormAny,
			},
			"f16": {
				ln:        map[int]func(dst, x []uint16, gamma, beta []float32){768: nbavx512.F16LayerNorm768, 4096: nbavx512.F16LayerNorm4096, 8192: nbavx512.F16LayerNorm8192},
				lnAny:     nbavx512.F16LayerNormAny,
				rms:       map[int]func(dst, x []uint16, gamma []float32){768: nbavx512.F16RMSNorm768, 4096: nbavx512.F16RMSNorm4096, 8192: nbavx512.F16RMSNorm8192},
				rmsAny:    nbavx512.F16RMSNormAny,
				addRMS:    map[int]func(dst, sum, x, f []uint16, gamma []float32){768: nbavx512.F16AddRMSNorm768, 4096: nbavx512.F16AddRMSNorm4096, 8192: nbavx512.F16AddRMSNorm8192},
				addRMSAny: nbavx512.F16AddRMSNormAny,
			},
		},
	})
}
