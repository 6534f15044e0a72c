package gen

import "github.com/normgen/normgen/gen/target"

// lowering turns one architecture's implementations into a .s file.
type lowering func(header string, funcs []target.Func) ([]byte, error)

// lowerings maps GOARCH to its assembly lowering.
var lowerings = map[string]lowering{}
