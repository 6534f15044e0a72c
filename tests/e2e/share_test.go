package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTwoSpecsInAnExistingPackage is the README's go generate use in a
// real package: the package already has kernels.go and kernels_test.go,
// the names a package's own files usually have, and two specs generate
// into it. go generate, go vet (amd64 and arm64) and go test pass, the
// hand-written files are untouched, and a spec whose kernel would clash
// with the other spec's is refused with both positions.
func TestTwoSpecsInAnExistingPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module and runs the go command: not in -short")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		path := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/infer\n\ngo 1.26\n\ntool github.com/normgen/normgen/cmd/normgen\n\nrequire github.com/normgen/normgen v0.0.0\n\nreplace github.com/normgen/normgen => "+repo+"\n")
	hand := map[string]string{
		"kernels/kernels.go": `// Package kernels is an inference package with hand-written code.
package kernels

//go:generate go tool normgen -spec rmsnorm.yaml
//go:generate go tool normgen -spec layernorm.yaml

// Norm is the package's own code, using both specs' kernels.
func Norm(dst, x, gamma, beta []float32) {
	RMSNorm64(dst, x, gamma)
	LayerNorm48(dst[:len(x)/64*48], x[:len(x)/64*48], gamma[:48], beta[:48])
}

// helper and rowCount are names a package may well have.
func helper() int { return 1 }

func rowCount() int { return 2 }
`,
		"kernels/kernels_test.go": `package kernels

import "testing"

func TestNorm(t *testing.T) {
	x := make([]float32, 64*3)
	for i := range x {
		x[i] = float32(i % 7)
	}
	g := make([]float32, 64)
	for i := range g {
		g[i] = 1
	}
	dst := make([]float32, len(x))
	Norm(dst, x, g, make([]float32, 64))
	if helper()+rowCount() != 3 {
		t.Fatal("helpers")
	}
}
`,
		"kernels/rmsnorm.yaml":   "version: 1\npackage: ignored\nkernels:\n  - name: RMSNorm\n    mean: false\n    hidden: [64]\n",
		"kernels/layernorm.yaml": "version: 1\npackage: ignored\nkernels:\n  - name: LayerNorm\n    doc: \"//go:generate touch PWNED */ /*\"\n    mean: true\n    shift: true\n    hidden: [48]\n",
	}
	for name, data := range hand {
		write(name, data)
	}
	gocmd := func(env []string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(cleanEnv(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(env []string, args ...string) string {
		t.Helper()
		out, err := gocmd(env, args...)
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	must(nil, "mod", "tidy")
	must(nil, "generate", "./...")
	must(nil, "mod", "tidy")
	for name, data := range hand {
		if got, _ := os.ReadFile(filepath.Join(mod, name)); string(got) != data {
			t.Errorf("%s changed", name)
		}
	}
	for _, want := range []string{"rmsnorm_normgen.go", "rmsnorm_normgen_test.go", "rmsnorm_normgen_amd64.s", "layernorm_normgen.go", "layernorm_normgen_arm64.s"} {
		if _, err := os.Stat(filepath.Join(mod, "kernels", want)); err != nil {
			t.Errorf("not generated: %v", err)
		}
	}
	must(nil, "vet", "./...")
	must([]string{"GOARCH=arm64"}, "vet", "./...")
	must([]string{"GOARCH=amd64"}, "vet", "./...")
	must(nil, "test", "-short", "./...")
	must(nil, "test", "-short", "-tags", "purego", "./...")
	// The doc's directive stayed a comment: a second go generate runs
	// only the two normgen lines.
	must(nil, "generate", "./...")
	if _, err := os.Stat(filepath.Join(mod, "kernels", "PWNED")); err == nil {
		t.Error("the spec's doc ran as a go:generate directive")
	}

	// A third spec whose kernel is the first one's: refused, nothing written.
	write("kernels/clash.yaml", "version: 1\npackage: ignored\nkernels:\n  - name: LN\n    mean: true\n    hidden: [32]\n  - name: RMSNorm\n    mean: false\n    hidden: [32]\n")
	write("kernels/clash.go", "package kernels\n\n//go:generate go tool normgen -spec clash.yaml\n")
	out, err := gocmd(nil, "generate", "./...")
	want := "clash.yaml:7:5: kernel RMSNorm would declare RMSNormAny, which rmsnorm.yaml:4:5 (kernel RMSNorm) already declares"
	if err == nil || !strings.Contains(out, "\n"+want) && !strings.HasPrefix(out, want) {
		t.Errorf("go generate with a clashing spec: %v\n%s\nwant a line starting %s", err, out, want)
	}
	if m, _ := filepath.Glob(filepath.Join(mod, "kernels", "clash_normgen*")); len(m) > 0 {
		t.Errorf("the refused spec wrote %v", m)
	}
}
