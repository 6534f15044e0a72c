// Package variants generates kernels the shipped specs do not contain
// (tests/variants/variants.yaml) into a scratch module and runs their
// generated tests on every instruction set this machine can execute:
// natively, with the purego tag, with AVX-512 and AVX2 switched off, and
// for arm64 under qemu-user.
package variants

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/normgen/normgen/gen"
	"github.com/normgen/normgen/gen/write"
	"github.com/normgen/normgen/spec"
)

func TestVariants(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a generated package: not in -short")
	}
	f, err := spec.Load("variants.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := gen.Generate(f, gen.Version)
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	if err := write.Package(filepath.Join(mod, p.Name), p); err != nil {
		t.Fatal(err)
	}
	writeModule(t, mod)

	run := func(env []string, args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=mod"), env...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s go %s: %v\n%s", strings.Join(env, " "), strings.Join(args, " "), err, out)
		}
		t.Logf("%s go %s: ok (%v)", strings.Join(env, " "), strings.Join(args, " "), time.Since(start).Round(time.Second))
	}
	run([]string{"GOARCH=amd64"}, "vet", "./...")
	run([]string{"GOARCH=arm64"}, "vet", "./...")
	// The long-set tests (LongRows: every implementation the CPU runs, in
	// one run; LongSets: the dispatched one) run once per implementation,
	// not once per run: they take most of the time.
	if runtime.GOARCH == "amd64" {
		run(nil, "test", "-count=1", "./...")
		// NORMGEN_REQUIRE_ISA=purego: Implementation must follow the
		// features switched off. The long reductions too run once per
		// implementation: the pure-Go functions' in the purego fallback
		// below (the same functions, through the same entry points).
		run([]string{"NORMGEN_REQUIRE_ISA=purego"}, "test", "-count=1", "-tags", "purego", "-skip", "LongRows|LongSets|LongReductions", "./...")
		// The fallbacks through the entry points (the native run checked
		// every implementation the CPU runs, on every input): -short keeps
		// every entry point and fixed size, on fewer inputs. The long sets
		// (the dispatched implementation's) run with
		// NORMGEN_LONG_ASM_ONLY, as under qemu: tensor sets of 2^20
		// values, not 2^22 (a quarter of the time; 2^20 still passes
		// every summation level, chunks, totals and super-totals, of
		// every instruction set), float32 kernels alone (the half
		// kernels sum in the same float32 code after the load; their
		// loads and stores ran in the equivalence tests). 2^22 and the
		// half kernels' long sets run natively here, and under every
		// fallback in the shipped packages' runs (scripts/test.sh).
		for _, env := range [][]string{
			{"GODEBUG=cpu.avx512f=off", "NORMGEN_ONLY_ISA=avx2"},
			{"GODEBUG=cpu.avx512f=off,cpu.avx2=off,cpu.fma=off", "NORMGEN_REQUIRE_ISA=purego", "NORMGEN_ONLY_ISA=purego"},
		} {
			run(env, "test", "-count=1", "-short", "-skip", "LongRows|LongSets|LongReductions", "./...")
			run(append(env, "NORMGEN_LONG_ASM_ONLY=1"), "test", "-count=1", "-run", "LongSets|LongReductions", "./...")
		}
	}
	qemu, err := exec.LookPath("qemu-aarch64-static")
	switch {
	case err == nil:
		// NEON's long sets and long reductions: the shipped packages' runs
		// under qemu cover every layout (convnorm: a position's channels
		// and a channel's batch, as here), in the same chunked NEON sums;
		// here they would cost minutes of emulation per variant (the
		// long reductions alone nearly half of this run). The variants'
		// own long sets and reductions ran natively above.
		// NEON alone (NORMGEN_ONLY_ISA): the pure-Go code ran natively.
		run([]string{"GOARCH=arm64", "NORMGEN_ONLY_ISA=neon", "NORMGEN_LONG_ASM_ONLY=1"}, "test", "-count=1", "-exec", qemu, "-skip", "LongRows|LongSets|LongReductions", "./...")
	case os.Getenv("NORMGEN_CI") == "1":
		t.Fatal("qemu-aarch64-static is missing (apt-get install qemu-user-static)")
	default:
		t.Log("qemu-aarch64-static is missing: arm64 not run")
	}
}

// writeModule makes mod a module that needs only golang.org/x/sys, at the
// version and checksums normgen's own go.mod and go.sum pin.
func writeModule(t *testing.T, mod string) {
	t.Helper()
	root := filepath.Join("..", "..")
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var sysVersion string
	for _, line := range strings.Split(string(gomod), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == "golang.org/x/sys" {
			sysVersion = fields[1]
		}
	}
	if sysVersion == "" {
		t.Fatal("golang.org/x/sys not found in go.mod")
	}
	modFile := "module variantstest\n\ngo 1.24\n\nrequire golang.org/x/sys " + sysVersion + "\n"
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(modFile), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.Open(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	defer sum.Close()
	var lines []string
	sc := bufio.NewScanner(sum)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "golang.org/x/sys ") {
			lines = append(lines, sc.Text())
		}
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
