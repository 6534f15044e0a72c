package peers

import "github.com/normgen/normgen/benchkit"

// Set by the build-tagged files: empty when a peer is not built in.
var (
	archSIMDPeers []benchkit.Impl // GOEXPERIMENT=simd on amd64
	oneDNNPeers   []benchkit.Impl // cgo and the onednn build tag
)

// Missing explains the peers this binary was built without.
func Missing() []string {
	var out []string
	if archSIMDPeers == nil {
		out = append(out, "archsimd: not built in (needs amd64 and GOEXPERIMENT=simd)")
	}
	if oneDNNPeers == nil {
		out = append(out, "onednn: not built in (needs cgo, libdnnl-dev and -tags onednn)")
	}
	return out
}

// All is every peer built into this binary, in table order (normgen's own
// kernels are added by the caller).
func All() []benchkit.Impl {
	out := []benchkit.Impl{Extend(Naive, naiveBackward, naiveHalf), Extend(Gonum, nil, nil)}
	for _, im := range archSIMDPeers {
		out = append(out, Extend(im, nil, nil))
	}
	out = append(out, oneDNNPeers...) // extended by their file
	return out
}

// KernelOf returns an implementation's kernel for a shape, or nil and why
// not.
type KernelOf func(s benchkit.Shape) (benchkit.KernelFunc, string)

// Extend gives im the backward and half-storage ops: bwd and half prepare
// those shapes (nil: n/a), every other shape goes to im as before.
func Extend(im benchkit.Impl, bwd, half KernelOf) benchkit.Impl {
	base := im
	im.PrepareArgs = func(s benchkit.Shape) (benchkit.KernelFunc, string) {
		switch {
		case IsBackward(s):
			if bwd == nil {
				return nil, "no backward kernels"
			}
			return bwd(s)
		case s.Storage != benchkit.F32:
			if half == nil {
				return nil, "no " + s.Storage + " kernels"
			}
			return half(s)
		}
		return benchkit.PrepareKernel(base, s)
	}
	return im
}

// notes are functions (of build-tagged peers) describing library versions
// and choices made at run time; call Notes after Run.
var notes []func() []string

// Notes describes the peers' libraries as loaded, for the report's machine
// section (call it after benchkit.Run: some notes depend on what ran).
func Notes() []string {
	var out []string
	for _, f := range notes {
		out = append(out, f()...)
	}
	return out
}
