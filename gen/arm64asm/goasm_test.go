package arm64asm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoAssembler prints one of every form, assembles the file with Go's
// arm64 assembler (so every native form is one it accepts) and
// disassembles it with the x/arch decoder behind go tool objdump, checking
// each method's operand roles and, a second time, the WORD encodings.
func TestGoAssembler(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	file := NewFile("// test\n", "arm64")
	f := NewFunc("forms", 16)
	allForms(f)
	file.Add(f)
	src, err := file.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, o := filepath.Join(dir, "forms_arm64.s"), filepath.Join(dir, "forms.o")
	if err := os.WriteFile(s, src, 0o644); err != nil {
		t.Fatal(err)
	}
	goroot, err := exec.Command(goTool, "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	inc := filepath.Join(strings.TrimSpace(string(goroot)), "pkg", "include")
	cmd := exec.Command(goTool, "tool", "asm", "-I", inc, "-p", "forms", "-o", o, s)
	cmd.Env = append(os.Environ(), "GOARCH=arm64", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go tool asm: %v\n%s\n%s", err, out, src)
	}
	out, err := exec.Command(goTool, "tool", "objdump", "-gnu", o).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool objdump: %v\n%s", err, out)
	}
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		_, gnu, ok := strings.Cut(line, "// ")
		if !ok {
			continue
		}
		got = append(got, strings.TrimSpace(gnu))
		if got[len(got)-1] == "ret" {
			break
		}
	}
	if len(got) != len(allFormsGNU) {
		t.Fatalf("disassembled %d instructions, want %d:\n%s", len(got), len(allFormsGNU), strings.Join(got, "\n"))
	}
	for i, want := range allFormsGNU {
		if got[i] != want && !(strings.HasSuffix(want, ",") || strings.HasPrefix(want, "b")) {
			t.Errorf("instruction %d: got %q, want %q", i, got[i], want)
		}
		if !strings.HasPrefix(got[i], want) {
			t.Errorf("instruction %d: got %q, want %q...", i, got[i], want)
		}
	}
}
