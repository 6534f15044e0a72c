//go:build normgen_purego

package normgen

import "github.com/normgen/normgen/bench/gen/nbpurego"

func init() {
	register(pkg{
		isa: "purego",
		ln: map[int]func(dst, x, gamma, beta []float32){
			768:  nbpurego.LayerNorm768,
			4096: nbpurego.LayerNorm4096,
			8192: nbpurego.LayerNorm8192,
		},
		lnAny: nbpurego.LayerNormAny,
		rms: map[int]func(dst, x, gamma []float32){
			768:  nbpurego.RMSNorm768,
			4096: nbpurego.RMSNorm4096,
			8192: nbpurego.RMSNorm8192,
		},
		rmsAny: nbpurego.RMSNormAny,
		bn:     nbpurego.BatchNorm,
		addRMS: map[int]func(dst, sum, x, f, gamma []float32){
			768:  nbpurego.AddRMSNorm768,
			4096: nbpurego.AddRMSNorm4096,
			8192: nbpurego.AddRMSNorm8192,
		},
		addRMSAny: nbpurego.AddRMSNormAny,
		addLN: map[int]func(dst, sum, x, f, gamma, beta []float32){
			768:  nbpurego.AddLayerNorm768,
			4096: nbpurego.AddLayerNorm4096,
			8192: nbpurego.AddLayerNorm8192,
		},
		addLNAny: nbpurego.AddLayerNormAny,
		deep: map[int]func(dst, sum, x, f, gamma, beta []float32){
			768:  nbpurego.DeepNorm768,
			4096: nbpurego.DeepNorm4096,
			8192: nbpurego.DeepNorm8192,
		},
		deepAny: nbpurego.DeepNormAny,
		lnPar: map[int]func(dst, x, gamma, beta []float32){
			768:  nbpurego.LayerNorm768Parallel,
			4096: nbpurego.LayerNorm4096Parallel,
			8192: nbpurego.LayerNorm8192Parallel,
		},
		rmsPar: map[int]func(dst, x, gamma []float32){
			768:  nbpurego.RMSNorm768Parallel,
			4096: nbpurego.RMSNorm4096Parallel,
			8192: nbpurego.RMSNorm8192Parallel,
		},
		bnPar: nbpurego.BatchNormParallel,
		bnBwd: nbpurego.BatchNormBackward,
		lnBwd: map[int]func(dx, dgamma, dbeta, dy, x, mean, rstd, gamma []float32){
			768:  nbpurego.LayerNormStatsBackward768,
			4096: nbpurego.LayerNormStatsBackward4096,
			8192: nbpurego.LayerNormStatsBackward8192,
		},
		lnBwdAny: nbpurego.LayerNormStatsBackwardAny,
		rmsBwd: map[int]func(dx, dgamma, dy, x, rstd, gamma []float32){
			768:  nbpurego.RMSNormStatsBackward768,
			4096: nbpurego.RMSNormStatsBackward4096,
			8192: nbpurego.RMSNormStatsBackward8192,
		},
		rmsBwdAny: nbpurego.RMSNormStatsBackwardAny,
		half: map[string]halfKernels{
			"bf16": {
				ln:        map[int]func(dst, x []uint16, gamma, beta []float32){768: nbpurego.BF16LayerNorm768, 4096: nbpurego.BF16LayerNorm4096, 8192: nbpurego.BF16LayerNorm8192},
				lnAny:     nbpurego.BF16LayerNormAny,
				rms:       map[int]func(dst, x []uint16, gamma []float32){768: nbpurego.BF16RMSNorm768, 4096: nbpurego.BF16RMSNorm4096, 8192: nbpurego.BF16RMSNorm8192},
				rmsAny:    nbpurego.BF16RMSNormAny,
				addRMS:    map[int]func(dst, sum, x, f []uint16, gamma []float32){768: nbpurego.BF16AddRMSNorm768, 4096: nbpurego.BF16AddRMSNorm4096, 8192: nbpurego.BF16AddRMSNorm8192},
				addRMSAny: nbpurego.BF16AddRMSNormAny,
			},
			"f16": {
				ln:        map[int]func(dst, x []uint16, gamma, beta []float32){768: nbpurego.F16LayerNorm768, 4096: nbpurego.F16LayerNorm4096, 8192: nbpurego.F16LayerNorm8192},
				lnAny:     nbpurego.F16LayerNormAny,
				rms:       map[int]func(dst, x []uint16, gamma []float32){768: nbpurego.F16RMSNorm768, 4096: nbpurego.F16RMSNorm4096, 8192: nbpurego.F16RMSNorm8192},
				rmsAny:    nbpurego.F16RMSNormAny,
				addRMS:    map[int]func(dst, sum, x, f []uint16, gamma []float32){768: nbpurego.F16AddRMSNorm768, 4096: nbpurego.F16AddRMSNorm4096, 8192: nbpurego.F16AddRMSNorm8192},
				addRMSAny: nbpurego.F16AddRMSNormAny,
			},
		},
	})
}
