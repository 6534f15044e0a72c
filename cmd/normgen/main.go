// Command normgen generates Go packages of normalization kernels
// (LayerNorm, RMSNorm, ...) from a YAML spec: AVX-512, AVX2 and NEON
// assembly, a pure-Go fallback, run-time dispatch and tests.
//
// Usage:
//
//	normgen                        generate the built-in catalogue into out/<package>
//	normgen -spec rmsnorm.yaml     generate one spec into out/<package>
//	normgen check [-spec F]        fail if generated files are stale or edited
//	normgen version                print the version
//	normgen schema                 print the spec format's JSON Schema
//	normgen completion bash        a shell completion script (also zsh, fish)
//
// Run normgen --help for every flag.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/normgen/normgen/gen"
	"github.com/normgen/normgen/gen/write"
	"github.com/normgen/normgen/spec"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// generate is gen.Generate; tests may replace it.
var generate = gen.Generate

// options are the command line's choices.
type options struct {
	spec, out, pkg string
	outSet, pkgSet bool
	getenv         func(string) string
	stdout, stderr io.Writer
}

// errReported is returned when the problems were already printed.
var errReported = errors.New("reported")

// usageError is a mistake in the command line (an unknown flag, an
// argument where none is allowed, a missing or empty value): exit
// status 2, as for the go command's usage errors.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// report prints err and returns the exit status: 2 for a usage error,
// else 1. An error located in a spec file is printed as
// FILE:LINE:COL: message, alone on its line, as compilers do, so that
// editors can jump to it (several, one per line); any other error is
// prefixed with "normgen: ".
func report(stderr io.Writer, err error) int {
	if err != errReported {
		var se *spec.Error
		var list spec.Errors
		if errors.As(err, &se) && se.Error() == err.Error() || errors.As(err, &list) && list.Error() == err.Error() {
			fmt.Fprintf(stderr, "%v\n", err)
		} else {
			fmt.Fprintf(stderr, "normgen: %v\n", err)
		}
	}
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// run is main without the process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer, getenv func(string) string) (status int) {
	// A bug in a generator stage must still end in one line, not a trace.
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "normgen: internal error: %v (please report it with the spec that caused it)\n", r)
			status = 1
		}
	}()
	o := &options{getenv: getenv, stdout: stdout, stderr: stderr}
	write.Stderr = stderr // "waiting for another normgen ..." and recovery notes
	root := newRoot(o)
	root.SetArgs(longFlags(args))
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		if !errors.Is(err, errReported) && strings.HasPrefix(err.Error(), "unknown command ") {
			err = usageError{err}
		}
		return report(stderr, err)
	}
	return 0
}

// knownLong are the flags that may be written with one dash, Go style
// (quick, keep and hidden are normgen bench's).
var knownLong = map[string]bool{"spec": true, "out": true, "package": true, "version": true, "help": true, "quick": true, "keep": true, "hidden": true}

// longFlags rewrites -spec, -out, ... to --spec, --out: pflag would read
// "-spec" as the shorthands -s -p -e -c. Only known names are rewritten,
// and nothing after "--".
func longFlags(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if knownLong[name] {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// longHelp is the root command's help; %s is where catalogueHelp's list
// of the catalogue's packages goes.
const longHelp = `normgen generates a self-contained Go package of normalization kernels
(LayerNorm, RMSNorm and their fused variants) from a YAML spec: assembly for
AVX-512, AVX2+FMA and NEON, a pure-Go fallback, run-time CPU dispatch, and
tests that check every implementation against a float64 oracle.
The generated package imports only the standard library and
golang.org/x/sys/cpu; it does not import normgen.

Where the package goes:
  -out DIR        the package directory (with no -spec: the parent of one
                  directory per catalogue package)
  default         out/<package>, relative to the current directory
  go generate     when $GOPACKAGE is set and -out is not given, the current
                  directory, with package name $GOPACKAGE (as stringer does)

With no -spec, normgen uses its built-in catalogue: the spec/*.yaml files it
was built with%s, one package each.

Files are named after the spec, not the package: rmsnorm.yaml gives
rmsnorm_normgen.go, rmsnorm_normgen_amd64.s, rmsnorm_normgen_test.go, ...
Several specs and hand-written files may share one package; a spec whose
kernel would declare a name another spec's files in the directory declare
is refused, naming both specs.

normgen only replaces files whose first line starts with
"// Code generated by normgen"; it refuses to overwrite any other file, and
removes files it generated earlier from the same spec that are no longer
produced. A failed run leaves the previous files as they were.

Errors in a spec are printed as FILE:LINE:COL: message, one per line, up to
10 at a time. Exit status: 1 for spec and generation errors, 2 for usage
errors.

normgen version prints the version; normgen completion bash|zsh|fish|powershell
prints a shell completion script (see normgen completion bash -h).

Flags take one dash or two: -spec F and --spec F are the same.
The spec format is documented in spec/REFERENCE.md.`

const examples = `  normgen                              # the built-in catalogue into out/<package>, one per spec
  normgen -spec rmsnorm.yaml           # into out/rmsnorm
  normgen -spec rmsnorm.yaml -out internal/rmsnorm
  normgen check                        # is out/ up to date with the catalogue?
  normgen check -spec rmsnorm.yaml -out internal/rmsnorm

  In a Go file (go.mod: tool github.com/normgen/normgen/cmd/normgen):
  //go:generate go tool normgen -spec rmsnorm.yaml`

func newRoot(o *options) *cobra.Command {
	root := &cobra.Command{
		Use:           "normgen [-spec FILE] [-out DIR] [-package NAME]",
		Short:         "Generate Go packages of SIMD normalization kernels from a YAML spec",
		Long:          fmt.Sprintf(longHelp, catalogueHelp()),
		Example:       examples,
		Version:       gen.Version,
		Args:          noArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.generate(cmd)
		},
	}
	root.SetVersionTemplate("normgen {{.Version}}\n")
	// cobra's completion command: normgen completion bash|zsh|fish|powershell.
	root.CompletionOptions.HiddenDefaultCmd = false
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usagef("%v; run %s --help for the flags", err, cmd.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVar(&o.spec, "spec", "", "the YAML spec `FILE` (default: the built-in catalogue)")
	pf.StringVar(&o.out, "out", "", "the output `DIR` (default: out/<package>; $GOPACKAGE set: the current directory)")
	pf.StringVar(&o.pkg, "package", "", "the Go package `NAME`, instead of the spec's (default: $GOPACKAGE under go generate)")
	root.Flags().Bool("version", false, "print normgen's version")

	check := &cobra.Command{
		Use:   "check [-spec FILE] [-out DIR] [-package NAME]",
		Short: "Fail if generated files are missing, stale, edited by hand or no longer generated",
		Long: `check regenerates in memory, writes nothing, and compares with the files on
disk. It exits with status 1, naming each file, when one is missing, differs
from what normgen generates (stale, or edited by hand), or was generated from
the same spec but is no longer produced. The flags choose the spec and the
directory exactly as for generation.`,
		Example: `  normgen check
  normgen check -spec rmsnorm.yaml -out internal/rmsnorm`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.check(cmd)
		},
	}
	version := &cobra.Command{
		Use:   "version",
		Short: "Print normgen's version (the one written into generated headers)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q; version takes none", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(o.stdout, "normgen %s\n", gen.Version)
			return err
		},
	}
	schema := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the spec format (" + spec.SchemaFile + ")",
		Long: `schema prints the JSON Schema (draft-07) of spec format version 1, built from
the tables normgen validates specs with. The repository keeps it in
` + spec.SchemaFile + `; regenerate it with
  go run ./cmd/normgen schema > ` + spec.SchemaFile + `
A spec's first line can point YAML editors at it:
  # yaml-language-server: $schema=normgen.schema.json
normgen itself checks more than the schema can say.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q; schema takes none", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := o.stdout.Write(spec.Schema())
			return err
		},
	}
	root.AddCommand(check, newBench(o), version, schema)
	// The completion scripts go to the output set now.
	root.SetOut(o.stdout)
	root.SetErr(o.stderr)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			// Without a shell cobra would print the help and exit 0.
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return usagef("completion needs a shell: bash, zsh, fish or powershell, e.g. normgen completion bash")
				}
				return usagef("unknown shell %q; allowed: bash, zsh, fish or powershell", args[0])
			}
		}
	}
	return root
}

// catalogueHelp names the built-in catalogue's packages for the help, as
// " (a, b)" in the catalogue's order. It reads the catalogue itself, so
// that a new spec/*.yaml needs no edit here; it is empty when the
// catalogue does not load (the error comes when it is used).
func catalogueHelp() string {
	files, err := spec.Catalogue()
	if err != nil || len(files) == 0 {
		return ""
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Package)
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// noArgs rejects positional arguments with a hint: the spec is a flag.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q; give the spec with -spec FILE (run %s --help)", args[0], cmd.CommandPath())
	}
	return nil
}

// job is one package to generate or check.
type job struct {
	f   *spec.File
	dir string
}

// jobs resolves the flags and the environment into packages and directories.
func (o *options) jobs(cmd *cobra.Command) ([]job, error) {
	o.outSet = cmd.Flags().Changed("out")
	o.pkgSet = cmd.Flags().Changed("package")
	if o.outSet && o.out == "" {
		return nil, usagef("-out is empty; give a directory")
	}
	goPackage := o.getenv("GOPACKAGE")
	pkg := o.pkg
	if o.pkgSet {
		if msg := spec.CheckPackageName(pkg); msg != "" {
			return nil, usagef("-package: %s", msg)
		}
	} else if goPackage != "" && !o.outSet {
		if msg := spec.CheckPackageName(goPackage); msg != "" {
			return nil, fmt.Errorf("$GOPACKAGE: %s", msg)
		}
		pkg = goPackage
	}

	if o.spec == "" && (cmd.Flags().Changed("spec") || goPackage != "" && !o.outSet) {
		// Under go generate the catalogue would put several packages in
		// one directory: a //go:generate line names its spec.
		return nil, usagef("no spec given; use -spec FILE, e.g. //go:generate go tool normgen -spec rmsnorm.yaml")
	}
	if o.spec == "" {
		if o.pkgSet {
			return nil, usagef("-package needs -spec: the catalogue holds several packages")
		}
		files, err := spec.Catalogue()
		if err != nil {
			return nil, fmt.Errorf("built-in catalogue: %w", err)
		}
		parent := "out"
		if o.outSet {
			parent = o.out
		}
		var js []job
		for _, f := range files {
			js = append(js, job{f, filepath.Join(parent, f.Package)})
		}
		return js, nil
	}

	f, err := spec.Load(o.spec)
	if err != nil {
		return nil, err
	}
	if pkg != "" {
		f.Package = pkg
	}
	dir := filepath.Join("out", f.Package)
	switch {
	case o.outSet:
		dir = o.out
	case goPackage != "":
		dir = "."
	}
	return []job{{f, dir}}, nil
}

// quiet is true under go generate, where success should print nothing.
func (o *options) quiet() bool { return o.getenv("GOPACKAGE") != "" }

func (o *options) generate(cmd *cobra.Command) error {
	js, err := o.jobs(cmd)
	if err != nil {
		return err
	}
	for _, j := range js {
		p, err := generate(j.f, gen.Version)
		if err != nil {
			return err
		}
		if err := conflicts(j.dir, j.f, p); err != nil {
			return err
		}
		if err := write.Package(j.dir, p); err != nil {
			return err
		}
		if !o.quiet() {
			fmt.Fprintf(o.stdout, "normgen: %s: package %s, %d files, from %s\n", j.dir, p.Name, len(p.Files), j.f.Path)
		}
	}
	return nil
}

func (o *options) check(cmd *cobra.Command) error {
	js, err := o.jobs(cmd)
	if err != nil {
		return err
	}
	n := 0
	for _, j := range js {
		p, err := generate(j.f, gen.Version)
		if err != nil {
			return err
		}
		if err := conflicts(j.dir, j.f, p); err != nil {
			return err
		}
		problems, err := write.Check(j.dir, p)
		if err != nil {
			return err
		}
		for _, pr := range problems {
			fmt.Fprintf(o.stderr, "normgen check: %s\n", pr)
		}
		n += len(problems)
		if len(problems) == 0 && !o.quiet() {
			fmt.Fprintf(o.stdout, "normgen check: %s: up to date with %s\n", j.dir, j.f.Path)
		}
	}
	if n > 0 {
		fmt.Fprintf(o.stderr, "normgen check: %d generated file(s) out of date; run normgen with the same flags to regenerate\n", n)
		return errReported
	}
	return nil
}
