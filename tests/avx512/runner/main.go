// Command runner is the host side of scripts/avx512-bochs.sh.
//
//	runner prepare -mode bochs|native -dir DIR -init GUESTINIT [flags] BIN[@PKGDIR]...
//
// checks the test binaries and writes DIR/guest.json (the configuration of
// tests/avx512/guestinit) and, in bochs mode, DIR/initrd.cpio: an initramfs
// with guestinit as /init, the binaries under /normgen/bin and, for each
// BIN@PKGDIR, PKGDIR/testdata under /normgen/pkg/NAME (the binary's working
// directory, as under go test).
//
//	runner check -config DIR/guest.json -log LOG [-print-output] [-tag TAG]
//
// judges the log that guestinit wrote (the serial console of the emulated
// machine, or its standard output when run natively), prints one verdict line
// per binary and a final line, and exits 0 only if every binary passed.
package main

import (
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/normgen/normgen/tests/avx512/harness"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "prepare":
		err = prepare(os.Args[2:])
	case "check":
		var pass bool
		pass, err = check(os.Args[2:])
		if err == nil && !pass {
			os.Exit(1)
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "runner %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: runner prepare -mode bochs|native -dir DIR -init GUESTINIT [-require-isa ISA] [-env K=V]... [-arg ARG]... BIN[@PKGDIR]...")
	fmt.Fprintln(os.Stderr, "       runner check -config DIR/guest.json -log LOG [-print-output] [-tag TAG]")
	os.Exit(2)
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func prepare(args []string) error {
	fs := flag.NewFlagSet("prepare", flag.ContinueOnError)
	mode := fs.String("mode", "", "bochs (write an initramfs) or native")
	dir := fs.String("dir", "", "output directory")
	initBin := fs.String("init", "", "the guestinit binary (bochs mode)")
	requireISA := fs.String("require-isa", "", `fail a binary unless it prints "normgen dispatch: ISA"`)
	testTimeout := fs.String("test-timeout", "", "-test.timeout for every binary")
	var env, testArgs listFlag
	fs.Var(&env, "env", "KEY=VALUE for every binary (repeatable)")
	fs.Var(&testArgs, "arg", "argument for every binary, after -test.v (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || (*mode != "bochs" && *mode != "native") || (*mode == "bochs" && *initBin == "") {
		return errors.New("need -dir, -mode bochs|native and, for bochs, -init")
	}
	if fs.NArg() == 0 {
		return errors.New("no test binaries given")
	}
	for _, e := range env {
		if !strings.Contains(e, "=") || strings.HasPrefix(e, "=") {
			return fmt.Errorf("-env %q: want KEY=VALUE", e)
		}
	}

	cfg := &harness.Config{Env: env, RequireISA: *requireISA}
	if *testTimeout != "" {
		cfg.Args = append(cfg.Args, "-test.timeout="+*testTimeout)
	}
	cfg.Args = append(cfg.Args, testArgs...)

	img := harness.NewInitramfs()
	used := map[string]bool{}
	for _, arg := range fs.Args() {
		bin, pkgDir := arg, ""
		if i := strings.LastIndex(arg, "@"); i >= 0 {
			bin, pkgDir = arg[:i], arg[i+1:]
		}
		if err := checkBinary(bin, *mode == "bochs"); err != nil {
			return err
		}
		name := uniqueName(bin, used)
		t := harness.Test{Name: name}
		if *mode == "native" {
			abs, err := filepath.Abs(bin)
			if err != nil {
				return err
			}
			t.Path = abs
			if pkgDir != "" {
				if t.Dir, err = filepath.Abs(pkgDir); err != nil {
					return err
				}
			}
		} else {
			t.Path = "/normgen/bin/" + name
			img.File(t.Path, bin, 0o755)
			if pkgDir != "" {
				t.Dir = "/normgen/pkg/" + name
				img.Dir(t.Dir)
				td := filepath.Join(pkgDir, "testdata")
				if st, err := os.Stat(td); err == nil && st.IsDir() {
					if err := img.Tree(t.Dir+"/testdata", td); err != nil {
						return err
					}
				}
			}
		}
		if pkgDir != "" {
			if st, err := os.Stat(pkgDir); err != nil || !st.IsDir() {
				return fmt.Errorf("%s: package directory %q is not a directory", bin, pkgDir)
			}
		}
		cfg.Tests = append(cfg.Tests, t)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	cfgPath := filepath.Join(*dir, "guest.json")
	if err := harness.WriteConfig(cfgPath, cfg); err != nil {
		return err
	}
	if *mode == "native" {
		return nil
	}
	if err := checkBinary(*initBin, true); err != nil {
		return fmt.Errorf("guestinit: %w", err)
	}
	img.File("init", *initBin, 0o755)
	img.File("normgen/guest.json", cfgPath, 0o644)
	for _, d := range []string{"proc", "sys", "tmp", "bin"} {
		img.Dir(d)
	}
	f, err := os.Create(filepath.Join(*dir, "initrd.cpio"))
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkBinary makes sure that path is an x86-64 ELF executable and, when it is
// to run in the emulated machine (which has no dynamic loader), static.
func checkBinary(path string, static bool) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: not an executable file", path)
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not an ELF executable (%v); build it with CGO_ENABLED=0 go test -c", path, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("%s: built for %v, not x86-64 (GOARCH=amd64)", path, f.Machine)
	}
	if static {
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				return fmt.Errorf("%s: dynamically linked, but the emulated machine has no dynamic loader: build it with CGO_ENABLED=0 go test -c", path)
			}
		}
	}
	return nil
}

var oddChars = regexp.MustCompile(`[^A-Za-z0-9._+-]`)

// uniqueName derives a verdict-line name from the binary's file name.
func uniqueName(bin string, used map[string]bool) string {
	base := oddChars.ReplaceAllString(filepath.Base(bin), "_")
	name := base
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	used[name] = true
	return name
}

func check(args []string) (bool, error) {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "the guest.json written by prepare")
	logPath := fs.String("log", "", "the log to judge")
	printOutput := fs.Bool("print-output", false, "print the guest's output before the verdicts")
	tag := fs.String("tag", "avx512", "prefix of the verdict lines")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	if *cfgPath == "" || *logPath == "" || fs.NArg() != 0 {
		return false, errors.New("need -config and -log")
	}
	cfg, err := harness.ReadConfig(*cfgPath)
	if err != nil {
		return false, err
	}
	f, err := os.Open(*logPath)
	if err != nil {
		return false, err
	}
	defer f.Close()
	j, err := harness.Judge(f, cfg)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", *logPath, err)
	}
	if *printOutput {
		for _, l := range j.Output {
			fmt.Println(l)
		}
	}
	j.Report(os.Stdout, *tag)
	return j.Pass(), nil
}
