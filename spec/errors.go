package spec

import "fmt"

// Error is a problem with a spec, located in its file. Every error Parse
// and Load return is an *Error, so a caller (or an editor reading the
// output) can always jump to the offending line.
type Error struct {
	Path string // the spec's path as given
	Line int    // 1-based
	Col  int    // 1-based, in characters
	Msg  string // "what is wrong; what is allowed"
}

// Error formats the error as FILE:LINE:COL: message.
func (e *Error) Error() string {
	path := e.Path
	if path == "" {
		path = "<spec>"
	}
	return fmt.Sprintf("%s:%d:%d: %s", path, e.Line, e.Col, e.Msg)
}

// Errorf returns an error at pos in f, for later stages (the generator)
// that find a problem with a kernel after the spec validated.
func (f *File) Errorf(pos Pos, format string, args ...any) *Error {
	return &Error{Path: f.Path, Line: max(pos.Line, 1), Col: max(pos.Col, 1), Msg: fmt.Sprintf(format, args...)}
}
