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
