package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxSize bounds a spec file. Real specs are a few hundred bytes; the bound
// keeps a mistaken path (a log, a binary, /dev/zero) from being read whole.
const MaxSize = 1 << 20

// Load reads and parses the spec at path. Every error, including a missing
// or unreadable file, is an *Error located at 1:1 of path or deeper.
func Load(path string) (*File, error) {
	fail := func(msg string) error { return &Error{Path: path, Line: 1, Col: 1, Msg: msg} }
	if e := checkPath(path); e != nil {
		return nil, e
	}
	if path == "" {
		return nil, fail("no spec file named; give the path of a YAML spec, e.g. spec/rmsnorm.yaml")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fail(osProblem(err))
	}
	if fi.IsDir() {
		return nil, fail("is a directory; give a YAML spec file, e.g. spec/rmsnorm.yaml")
	}
	// Devices and pipes could block or never end: a spec is a plain file.
	if !fi.Mode().IsRegular() {
		return nil, fail("is not a regular file; give a YAML spec file, e.g. spec/rmsnorm.yaml")
	}
	r, err := os.Open(path)
	if err != nil {
		return nil, fail(osProblem(err))
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return nil, fail(osProblem(err))
	}
	return Parse(path, data)
}

// checkPath rejects a spec path holding a control character (a newline,
// say): the path is printed in messages, where it would break the line an
// editor matches, and its base name is written into a comment of every
// generated file. The error names the path quoted, as Go would.
func checkPath(path string) *Error {
	for _, r := range path {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\u2028' || r == '\u2029' {
			return &Error{Path: strconv.Quote(path), Line: 1, Col: 1,
				Msg: fmt.Sprintf("the spec's path holds the control character %U; rename the file", r)}
		}
	}
	return nil
}

// osProblem words a file system error without repeating the path, which
// the *Error already starts with.
func osProblem(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file; give the path of an existing YAML spec, e.g. spec/rmsnorm.yaml"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied; make the spec file readable"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Sprintf("cannot read the spec: %v; give the path of a readable YAML spec file", err)
}

// Parse parses and validates a spec held in data; path names it in errors
// and in the generated headers. It never panics: any input yields a valid
// *File, an *Error, or Errors (up to MaxErrors problems that do not
// depend on each other, then one saying how many more there are).
func Parse(path string, data []byte) (f *File, err error) {
	// The YAML library is third-party code run on hostile input: a panic in
	// it must still come out as a located error, not a stack trace.
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, &Error{Path: path, Line: 1, Col: 1,
				Msg: fmt.Sprintf("internal error while parsing (%v); please report this spec to the normgen authors", r)}
		}
	}()
	if e := checkPath(path); e != nil {
		return nil, e
	}
	if len(data) > MaxSize {
		return nil, &Error{Path: path, Line: 1, Col: 1,
			Msg: fmt.Sprintf("spec is larger than %d bytes; a spec is a short YAML file", MaxSize)}
	}
	if e := checkText(path, data); e != nil {
		return nil, e
	}
	root, e := parseYAML(path, data)
	if e != nil {
		return nil, e
	}
	d := &decoder{path: path}
	f, e = d.file(root)
	if e != nil {
		d.add(e)
	}
	if err := d.result(); err != nil {
		return nil, err
	}
	f.Path = path
	f.Source = bytes.Clone(data)
	return f, nil
}

// checkText rejects what is not YAML text before the YAML library sees it:
// the library reports these without a position (or, for some byte pairs,
// silently reads the input as UTF-16).
func checkText(path string, data []byte) *Error {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		at := func(msg string, args ...any) *Error {
			return &Error{Path: path, Line: line, Col: col, Msg: fmt.Sprintf(msg, args...)}
		}
		switch {
		case r == utf8.RuneError && size == 1:
			return at("byte 0x%02x is not valid UTF-8; a spec is UTF-8 text (is this a binary file?)", data[i])
		case r == '\uFEFF' && i == 0:
			// A leading byte order mark is allowed by YAML.
		case r == '\uFEFF':
			return at("byte order mark (U+FEFF) inside the text; allowed only as the very first character")
		case r == '\t' || r == '\n' || r == '\r':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f && r != 0x85) || r == 0xfffe || r == 0xffff:
			return at("control character U+%04X; a spec is text: only tab, line feed and carriage return are allowed (is this a binary file?)", r)
		}
		i += size
		switch {
		case r == '\n', r == '\r' && (i >= len(data) || data[i] != '\n'):
			line, col = line+1, 1
		case r == '\r', r == '\uFEFF' && i == size:
			// The \r of \r\n and a leading BOM take no column.
		default:
			col++
		}
	}
	return nil
}

// parseYAML returns the root node of the single YAML document in data.
func parseYAML(path string, data []byte) (*yaml.Node, *Error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, &Error{Path: path, Line: 1, Col: 1,
				Msg: "empty spec; a spec is a YAML mapping that starts with version: 1"}
		}
		return nil, syntaxError(path, data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == io.EOF:
	case err != nil:
		return nil, syntaxError(path, data, err)
	default:
		return nil, &Error{Path: path, Line: max(extra.Line, 1), Col: max(extra.Column, 1),
			Msg: "a second YAML document; a spec is one document (remove the ---)"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &Error{Path: path, Line: 1, Col: 1,
			Msg: "spec holds no YAML document; a spec is a YAML mapping that starts with version: 1"}
	}
	return doc.Content[0], nil
}

// parserProblems are the messages of the YAML library's parser (as opposed
// to its scanner). The library prints the parser's 0-based line numbers
// unchanged but the scanner's plus one, and drops the line when it is 0.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

var (
	lineRE   = regexp.MustCompile(`^line ([0-9]+): (.*)$`)
	anchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// syntaxError turns a YAML library error into an *Error. The library gives
// a line but no column: the column is the offending tab when the problem
// is one, else the line's first non-blank character.
func syntaxError(path string, data []byte, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := anchorRE.FindStringSubmatch(msg); m != nil {
		line, col := 1, 1
		if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
			line, col = position(data, i)
		}
		return &Error{Path: path, Line: line, Col: col,
			Msg: fmt.Sprintf("alias *%s names no anchor; aliases are not supported in specs: write the value out", lit(m[1]))}
	}
	line := 0
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	for _, p := range parserProblems {
		if msg == p {
			line++
			break
		}
	}
	lines := bytes.Split(data, []byte("\n"))
	line = min(max(line, 1), len(lines))
	text := string(bytes.TrimRight(lines[line-1], "\r"))
	col := 1
	if i := strings.IndexFunc(text, func(r rune) bool { return r != ' ' }); i >= 0 {
		col = utf8.RuneCountInString(text[:i]) + 1
	}
	if msg == "mapping values are not allowed in this context" {
		// "a: b: c": the culprit is the second key indicator.
		if i := secondColon(text); i >= 0 {
			col = utf8.RuneCountInString(text[:i]) + 1
		}
	}
	if strings.Contains(msg, "tab") || strings.Contains(msg, "cannot start any token") {
		// The library may report the line of the enclosing mapping: the
		// tab is on that line or a later one.
		for l := line; l <= len(lines); l++ {
			text := string(lines[l-1])
			indent := len(text) - len(strings.TrimLeft(text, " \t"))
			if i := strings.IndexByte(text[:indent], '\t'); i >= 0 {
				return &Error{Path: path, Line: l, Col: utf8.RuneCountInString(text[:i]) + 1,
					Msg: "invalid YAML: a tab in the indentation; indent with spaces, not tabs"}
			}
		}
	}
	if i := strings.IndexAny(text, "@`"); i >= 0 && strings.Contains(msg, "cannot start any token") {
		return &Error{Path: path, Line: line, Col: utf8.RuneCountInString(text[:i]) + 1,
			Msg: fmt.Sprintf("invalid YAML: a plain value cannot start with %q; quote the value", text[i])}
	}
	return &Error{Path: path, Line: line, Col: col,
		Msg: fmt.Sprintf("invalid YAML: %s; a spec is plain YAML: key: value mappings, lists, spaces for indentation", msg)}
}

// secondColon returns the byte offset of the second ": " (or final ":")
// in line, or -1.
func secondColon(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		if line[i] == ':' && (i+1 == len(line) || line[i+1] == ' ') {
			if n++; n == 2 {
				return i
			}
		}
	}
	return -1
}

// position is the 1-based line and column (in characters) of byte offset i.
func position(data []byte, i int) (line, col int) {
	before := data[:i]
	line = bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}
