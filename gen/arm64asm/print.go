package arm64asm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// File is one Go assembly file: a header, a build constraint and functions.
type File struct {
	header     string
	constraint string
	funcs      []*Func
}

// NewFile starts a file whose text begins with header (printed verbatim)
// and, if constraint is not empty, the line //go:build constraint.
func NewFile(header, constraint string) *File {
	return &File{header: header, constraint: constraint}
}

// NewFunc starts a NOSPLIT function with no frame and argSize bytes of
// arguments; File.Add places it in a file.
func NewFunc(name string, argSize int) *Func {
	return &Func{Name: name, ArgSize: argSize}
}

// Add appends f to the file's functions.
func (file *File) Add(f *Func) { file.funcs = append(file.funcs, f) }

// Bytes renders the file, or reports every function's first misuse.
func (file *File) Bytes() ([]byte, error) {
	var errs []error
	for _, f := range file.funcs {
		if err := f.checkLabels(); err != nil {
			f.fail(err)
		}
		if f.err != nil {
			errs = append(errs, f.err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var b bytes.Buffer
	b.WriteString(file.header)
	if file.constraint != "" {
		fmt.Fprintf(&b, "\n//go:build %s\n", file.constraint)
	}
	b.WriteString("\n#include \"textflag.h\"\n")
	for _, f := range file.funcs {
		b.WriteString("\n")
		f.print(&b)
	}
	return b.Bytes(), nil
}

func (f *Func) print(b *bytes.Buffer) {
	for _, d := range f.Doc {
		comment(b, "", d)
	}
	fmt.Fprintf(b, "TEXT ·%s(SB), NOSPLIT, $0-%d\n", f.Name, f.ArgSize)
	for _, in := range f.insts {
		switch {
		case in.Op == "" && in.Label != "":
			fmt.Fprintf(b, "%s:\n", in.Label)
		case in.Op == "":
			comment(b, "\t", in.Comment)
		default:
			b.WriteString("\t" + in.Op)
			if len(in.Args) > 0 {
				args := make([]string, len(in.Args))
				for i, a := range in.Args {
					args[i] = a.asm()
				}
				b.WriteString("\t" + strings.Join(args, ", "))
			}
			if in.Comment != "" {
				// One line: a newline would turn the rest into code.
				b.WriteString(" // " + strings.ReplaceAll(in.Comment, "\n", " "))
			}
			b.WriteString("\n")
		}
	}
}

// comment writes text as comment lines, each line of it commented.
func comment(b *bytes.Buffer, indent, text string) {
	for _, line := range strings.Split(text, "\n") {
		fmt.Fprintf(b, "%s// %s\n", indent, line)
	}
}

// checkLabels reports labels defined twice or branched to but never defined.
func (f *Func) checkLabels() error {
	defined := map[Label]bool{}
	for _, in := range f.insts {
		if in.Op == "" && in.Label != "" {
			if defined[in.Label] {
				return fmt.Errorf("label %s defined twice", in.Label)
			}
			defined[in.Label] = true
		}
	}
	for _, in := range f.insts {
		for _, a := range in.Args {
			if l, ok := a.(Label); ok && !defined[l] {
				return fmt.Errorf("%s to undefined label %s", in.Op, l)
			}
		}
	}
	return nil
}
