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
		bnBwd: nbavx2.BatchNormBackward,
		lnBwd: map[int]func(dx, dgamma, dbeta, dy, x, mean, rstd, gamma []float32){
			768:  nbavx2.LayerNormStatsBackward768,
			4096: nbavx2.LayerNormStatsBackward4096,
			8192: nbavx2.LayerNormStatsBackward8192,
		},
		lnBwdAny: nbavx2.LayerNormStatsBackwardAny,
		rmsBwd: map[int]func(dx, dgamma, dy, x, rstd, gamma []float32){
			768:  nbavx2.RMSNormStatsBackward768,
			4096: nbavx2.RMSNormStatsBackward4096,
			8192: nbavx2.RMSNormStatsBackward8192,
		},
		rmsBwdAny: nbavx2.RMSNormStatsBackwardAny,
		half: map[string]halfKernels{
			"bf16": {
				ln:        map[int]func(dst, x []uint16, gamma, beta []float32){768: nbavx2.BF16LayerNorm768, 4096: nbavx2.BF16LayerNorm4096, 8192: nbavx2.BF16LayerNorm8192},
				lnAny:     nbavx2.BF16LayerNormAny,
				rms:       map[int]func(dst, x []uint16, gamma []float32){768: nbavx2.BF16RMSNorm768, 4096: nbavx2.BF16RMSNorm4096, 8192: nbavx2.BF16RMSNorm8192},
				rmsAny:    nbavx2.BF16RMSNormAny,
				addRMS:    map[int]func(dst, sum, x, f []uint16, gamma []float32){768: nbavx2.BF16AddRMSNorm768, 4096: nbavx2.BF16AddRMSNorm4096, 8192: nbavx2.BF16AddRMSNorm8192},
				addRMSAny: nbavx2.BF16AddRMSNormAny,
			},
			"f16": {
				ln:        map[int]func(dst, x []uint16, gamma, beta []float32){768: nbavx2.F16LayerNorm768, 4096: nbavx2.F16LayerNorm4096, 8192: nbavx2.F16LayerNorm8192},
				lnAny:     nbavx2.F16LayerNormAny,
				rms:       map[int]func(dst, x []uint16, gamma []float32){768: nbavx2.F16RMSNorm768, 4096: nbavx2.F16RMSNorm4096, 8192: nbavx2.F16RMSNorm8192},
				rmsAny:    nbavx2.F16RMSNormAny,
				addRMS:    map[int]func(dst, sum, x, f []uint16, gamma []float32){768: nbavx2.F16AddRMSNorm768, 4096: nbavx2.F16AddRMSNorm4096, 8192: nbavx2.F16AddRMSNorm8192},
				addRMSAny: nbavx2.F16AddRMSNormAny,
			},
		},
	})
}
