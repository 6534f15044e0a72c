package gen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// File names and identifiers are derived from the spec, not from the
// package, so that any number of specs and hand-written files share one
// package:
//
//   - Every file of spec rmsnorm.yaml is named rmsnorm_normgen*, e.g.
//     rmsnorm_normgen.go, rmsnorm_normgen_amd64.s,
//     rmsnorm_normgen_test.go. The stem (Stem) always ends in _normgen
//     before any build suffix, so no spec name can make the go command
//     read a file as _test, _<GOOS> or _<GOARCH> by accident.
//   - Every unexported package-level identifier of the generated Go code
//     (functions, variables, constants, types, in the code and in the
//     tests) and every Test function is qualified with the spec's
//     identifier prefix (IdentPrefix) by one pass over the generated
//     files (qualify): rowCount becomes rmsnormRowCount, TestDispatch
//     becomes TestRmsnormDispatch. The assembly symbols are renamed with
//     their Go declarations. Exported names (the entry points) and the
//     Fuzz, Benchmark and Example functions, which are named after the
//     kernels, keep their names: the CLI rejects two specs whose kernels
//     would declare the same one in a directory.

// Stem is the base of the names of the files generated from the spec at
// specPath: the file name without directory and extension, in lower
// case, each run of characters other than a-z and 0-9 made one _, with
// no _ at either end, "n" in front when it would start with a digit, and
// "_normgen" after it: spec/RMS-Norm.v2.yaml gives rms_norm_v2_normgen.
func Stem(specPath string) string {
	base := specPath
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	if ext := path.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(base) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = false
			b.WriteRune(r)
			continue
		}
		under = true
	}
	s := b.String()
	if s == "" {
		s = "spec"
	}
	if s[0] >= '0' && s[0] <= '9' {
		s = "n" + s
	}
	return s + "_normgen"
}

// IdentPrefix is the prefix of the unexported package-level identifiers
// of the files with stem stem: the stem without "_normgen", in lower camel
// case (a _ before a letter is dropped and the letter made upper case):
// rms_norm_v2_normgen gives rmsNormV2, norm_2d_normgen norm_2d.
func IdentPrefix(stem string) string {
	s := strings.TrimSuffix(stem, "_normgen")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '_' && i+1 < len(s) && s[i+1] >= 'a' && s[i+1] <= 'z' {
			b.WriteByte(s[i+1] - 'a' + 'A')
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// qualified is name as qualify renames it, or "" when it keeps its name.
func qualified(prefix, name string, isFunc bool) string {
	switch {
	case name == "_" || name == "init" || name == "main":
		return ""
	case isFunc && name == "TestMain":
		return ""
	case isFunc && isTestName(name, "Test"):
		return "Test" + upperFirst(prefix) + name[len("Test"):]
	case ast.IsExported(name):
		return ""
	}
	return prefix + upperFirst(name)
}

// isTestName reports whether name is a test function name with prefix:
// the prefix alone or followed by a character that is not lower case.
func isTestName(name, prefix string) bool {
	if !strings.HasPrefix(name, prefix) {
		return false
	}
	if len(name) == len(prefix) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(name[len(prefix):])
	return !unicode.IsLower(r)
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// asmSymbol is a Go symbol in assembly: ·name(SB).
var asmSymbol = regexp.MustCompile(`·([\p{L}_][\p{L}\p{N}_]*)\(SB\)`)

// qualify renames the package-level identifiers of the generated files
// (see the comment at the top) in place. The Go files are renamed as a
// whole package, so that a helper defined in one file and used in
// another is renamed in both; the result is gofmt'ed again.
func qualify(files map[string][]byte, prefix string) error {
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	renames := map[string]string{}
	fields := map[string]bool{} // names of struct fields, anywhere
	for _, name := range names {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, files[name], parser.ParseComments)
		if err != nil {
			return fmt.Errorf("generated %s does not parse (a generator bug): %v", name, firstLine(err.Error()))
		}
		parsed[name] = f
		for _, id := range topLevel(f) {
			_, isFunc := id.Obj.Decl.(*ast.FuncDecl)
			if q := qualified(prefix, id.Name, isFunc); q != "" {
				renames[id.Name] = q
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if st, ok := n.(*ast.StructType); ok {
				for _, fl := range st.Fields.List {
					for _, id := range fl.Names {
						fields[id.Name] = true
					}
				}
			}
			return true
		})
	}
	for _, name := range names {
		if f, ok := parsed[name]; ok {
			out, err := rename(files[name], fset, f, renames, fields)
			if err != nil {
				return fmt.Errorf("generated %s: %v", name, err)
			}
			files[name] = out
			continue
		}
		if strings.HasSuffix(name, ".s") {
			files[name] = asmSymbol.ReplaceAllFunc(files[name], func(m []byte) []byte {
				sym := asmSymbol.FindSubmatch(m)[1]
				if q, ok := renames[string(sym)]; ok {
					return []byte("·" + q + "(SB)")
				}
				return m
			})
		}
	}
	return nil
}

// topLevel lists the identifiers f declares at package level (with their
// objects set), methods excluded.
func topLevel(f *ast.File) []*ast.Ident {
	var ids []*ast.Ident
	add := func(id *ast.Ident, decl any) {
		if id.Obj == nil {
			id.Obj = &ast.Object{Name: id.Name, Decl: decl}
		}
		ids = append(ids, id)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				add(d.Name, d)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, id := range s.Names {
						add(id, s)
					}
				case *ast.TypeSpec:
					add(s.Name, s)
				}
			}
		}
	}
	return ids
}

// rename rewrites the identifiers of f (parsed from src) that name
// package-level declarations in renames. An identifier resolved to a
// local declaration, a selector's name, a method's name and a struct
// field's key in a composite literal keep their names.
func rename(src []byte, fset *token.FileSet, f *ast.File, renames map[string]string, fields map[string]bool) ([]byte, error) {
	top := map[any]bool{}
	for _, id := range topLevel(f) {
		top[id.Obj.Decl] = true
	}
	skip := map[*ast.Ident]bool{f.Name: true}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			skip[n.Sel] = true
		case *ast.FuncDecl:
			if n.Recv != nil {
				skip[n.Name] = true
			}
		case *ast.ImportSpec:
			if n.Name != nil {
				skip[n.Name] = true
			}
		case *ast.CompositeLit:
			for _, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if id, ok := kv.Key.(*ast.Ident); ok && fields[id.Name] {
						skip[id] = true
					}
				}
			}
		case *ast.LabeledStmt:
			skip[n.Label] = true
		case *ast.BranchStmt:
			if n.Label != nil {
				skip[n.Label] = true
			}
		}
		return true
	})
	type edit struct {
		off  int
		old  string
		repl string
	}
	var edits []edit
	tf := fset.File(f.Pos())
	ast.Inspect(f, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || skip[id] {
			return true
		}
		q, ok := renames[id.Name]
		if !ok {
			return true
		}
		if id.Obj != nil && !top[id.Obj.Decl] {
			return true // a local declaration of the same name
		}
		edits = append(edits, edit{tf.Offset(id.Pos()), id.Name, q})
		return true
	})
	if len(edits) == 0 {
		return src, nil
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].off < edits[j].off })
	var b bytes.Buffer
	last := 0
	for _, e := range edits {
		if e.off < last || string(src[e.off:e.off+len(e.old)]) != e.old {
			return nil, fmt.Errorf("renaming %s at offset %d failed (a generator bug)", e.old, e.off)
		}
		b.Write(src[last:e.off])
		b.WriteString(e.repl)
		last = e.off + len(e.old)
	}
	b.Write(src[last:])
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("does not format after renaming (a generator bug): %v", firstLine(err.Error()))
	}
	return out, nil
}

// firstLine is the first line of s: errors of go/format and go/parser
// must never carry generated source into a message.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 200 {
		line = line[:200] + "..."
	}
	return line
}

// duplicates returns the first package-level name that two of the
// generated Go files compiled together both declare, with the file that
// declares it again, or "". The spec's validation rejects every clash it
// knows of with the kernel's position; this is the net under it.
func duplicates(files map[string][]byte) (name, file string) {
	var names []string
	for n := range files {
		if strings.HasSuffix(n, ".go") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	decls := map[string][]string{}
	for _, n := range names {
		f, err := parser.ParseFile(token.NewFileSet(), n, files[n], parser.SkipObjectResolution)
		if err != nil {
			continue // qualify reported it
		}
		for _, id := range topLevel(f) {
			if id.Name != "_" && id.Name != "init" {
				decls[n] = append(decls[n], id.Name)
			}
		}
	}
	// Each configuration compiles the files without a build suffix and
	// those with its own.
	for _, suffix := range []string{"_amd64", "_arm64", "_purego"} {
		seen := map[string]bool{}
		for _, n := range names {
			base := strings.TrimSuffix(strings.TrimSuffix(n, ".go"), "_test")
			own := strings.HasSuffix(base, suffix)
			other := strings.HasSuffix(base, "_amd64") || strings.HasSuffix(base, "_arm64") || strings.HasSuffix(base, "_purego")
			if other && !own {
				continue
			}
			for _, id := range decls[n] {
				if seen[id] {
					return id, n
				}
				seen[id] = true
			}
		}
	}
	return "", ""
}
