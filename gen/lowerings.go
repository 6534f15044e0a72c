package gen

import (
	"github.com/normgen/normgen/gen/lower/amd64"
	"github.com/normgen/normgen/gen/lower/arm64"
	"github.com/normgen/normgen/gen/target"
)

// lowering turns one architecture's implementations into a .s file.
type lowering func(header string, funcs []target.Func) ([]byte, error)

// lowerings maps each GOARCH of the ISA table (target.Desc.GOARCH) to
// the lowering of its assembly ISAs.
var lowerings = map[string]lowering{
	"amd64": amd64.Generate,
	"arm64": arm64.Generate,
}

// probes maps each GOARCH whose ISAs have features read with CPUID
// (target.Feature.CPUID) to the assembly of the probe, named name, that
// the generated dispatch declares (gopkg: cpuid).
var probes = map[string]func(name string) ([]byte, error){
	"amd64": amd64.CPUID,
}
