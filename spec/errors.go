package spec

import (
	"fmt"
	"strings"
)

// MaxErrors bounds the problems Parse reports from one spec; past it a
// last error says that more were left out.
const MaxErrors = 10

// Error is a problem with a spec, located in its file. Every error Parse
// and Load return is an *Error or, when a spec has several problems, an
// Errors of them, so a caller (or an editor reading the output) can
// always jump to the offending lines.
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

// Errors is several problems with one spec, in file order. Parse returns
// an Errors when it finds more than one, else the *Error alone; either way
// errors.As finds an *Error (the first).
type Errors []*Error

// Error formats one FILE:LINE:COL: message per line.
func (l Errors) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the errors, for errors.As and errors.Is.
func (l Errors) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}
