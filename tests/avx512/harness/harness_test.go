package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// When HARNESS_FAKE is set, this test binary plays a generated package's
// test binary instead of running its tests (Run starts it as a child).
func TestMain(m *testing.M) {
	switch os.Getenv("HARNESS_FAKE") {
	case "":
		os.Exit(m.Run())
	case "pass":
		fmt.Println("=== RUN   TestDispatch")
		fmt.Println("    dispatch_test.go:9: normgen dispatch: avx512")
		fmt.Println("--- PASS: TestDispatch (0.00s)")
		fmt.Println("PASS")
		os.Exit(0)
	case "fail":
		fmt.Println("    dispatch_test.go:9: normgen dispatch: avx512")
		fmt.Fprintln(os.Stderr, "--- FAIL: TestSomething (0.00s)")
		fmt.Print("FAIL") // no newline: Run must add one
		os.Exit(1)
	case "avx2":
		fmt.Println("    dispatch_test.go:9: normgen dispatch: avx2")
		os.Exit(0)
	case "silent":
		os.Exit(0)
	case "args":
		wd, _ := os.Getwd()
		fmt.Printf("args=%q wd=%s\n", os.Args[1:], filepath.Base(wd))
		fmt.Println("normgen dispatch: avx512")
		os.Exit(0)
	}
	os.Exit(3)
}

func fakeConfig(t *testing.T, kinds ...string) *Config {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{RequireISA: "avx512"}
	for _, k := range kinds {
		// Each fake learns its part from the environment, which Run
		// shares among all binaries: wrap it in a script.
		script := filepath.Join(t.TempDir(), k+".sh")
		body := fmt.Sprintf("#!/bin/sh\nHARNESS_FAKE=%s exec %s \"$@\"\n", k, strconv.Quote(self))
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg.Tests = append(cfg.Tests, Test{Name: k + ".test", Path: script})
	}
	return cfg
}

func runAndJudge(t *testing.T, cfg *Config) (bool, string, *Judgement) {
	t.Helper()
	var out bytes.Buffer
	ok := Run(cfg, &out)
	j, err := Judge(strings.NewReader(out.String()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ok, out.String(), j
}

func TestRunAndJudgePass(t *testing.T) {
	cfg := fakeConfig(t, "pass", "args")
	cfg.Args = []string{"-test.run", "^TestX$"}
	ok, out, j := runAndJudge(t, cfg)
	if !ok || !j.Pass() {
		t.Fatalf("Run=%v Judge=%v, want both true; output:\n%s", ok, j.Pass(), out)
	}
	for _, want := range []string{
		"normgen-guest: BEGIN 1/2 pass.test\n",
		"normgen-guest: END 1/2 pass.test PASS (exit status 0, dispatch avx512, ",
		`args=["-test.v" "-test.run" "^TestX$"] wd=run-args.test-`,
		"normgen-guest: FINAL PASS (2 passed, 0 failed)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var rep bytes.Buffer
	j.Report(&rep, "tag")
	if !strings.HasSuffix(rep.String(), "tag: PASS: 2 passed, 0 failed\n") {
		t.Errorf("report:\n%s", rep.String())
	}
}

func TestRunAndJudgeFailures(t *testing.T) {
	cfg := fakeConfig(t, "pass", "fail", "avx2", "silent")
	ok, out, j := runAndJudge(t, cfg)
	if ok || j.Pass() {
		t.Fatalf("Run=%v Judge=%v, want both false; output:\n%s", ok, j.Pass(), out)
	}
	if !strings.Contains(out, "\nFAIL\nnormgen-guest: END 2/4 fail.test FAIL (exit status 1,") {
		t.Errorf("the unterminated last line should be ended before the END line:\n%s", out)
	}
	want := map[string]string{
		"pass.test":   "",
		"fail.test":   "failed (exit status 1",
		"avx2.test":   `did not print "normgen dispatch: avx512" (the dispatch chose avx2)`,
		"silent.test": `did not print "normgen dispatch: avx512" (no dispatch line: `,
	}
	for _, v := range j.Verdicts {
		w := want[v.Name]
		got := strings.Join(v.Problems, "; ")
		if (w == "") != v.Pass || !strings.Contains(got, w) {
			t.Errorf("%s: pass=%v problems=%q, want %q", v.Name, v.Pass, got, w)
		}
	}
	if j.Failed() != 3 || len(j.Problems) != 0 {
		t.Errorf("Failed()=%d Problems=%q, want 3 and none", j.Failed(), j.Problems)
	}

	// Without the dispatch requirement only the failing binary fails.
	cfg.RequireISA = ""
	if _, _, j := runAndJudge(t, cfg); j.Failed() != 1 {
		t.Errorf("without RequireISA: %d failed, want 1", j.Failed())
	}
}

func TestRunMissingBinary(t *testing.T) {
	cfg := &Config{Tests: []Test{{Name: "gone", Path: filepath.Join(t.TempDir(), "gone")}}}
	ok, out, j := runAndJudge(t, cfg)
	if ok || j.Pass() || !strings.Contains(out, "END 1/1 gone FAIL (cannot start:") {
		t.Fatalf("Run=%v Judge=%v; output:\n%s", ok, j.Pass(), out)
	}
}

// A serial console log: boot messages, carriage returns, a binary whose
// output is cut off (the machine died or the timeout struck).
func TestJudgeTruncatedSerialLog(t *testing.T) {
	cfg := &Config{
		RequireISA: "avx512",
		Tests:      []Test{{Name: "a.test", Path: "x"}, {Name: "b.test", Path: "x"}, {Name: "c.test", Path: "x"}},
	}
	log := "[    0.000000] Linux version 6.1.0\r\n" +
		"normgen-guest: started as init\r\n" +
		"normgen-guest: BEGIN 1/3 a.test\r\n" +
		"    x_test.go:1: normgen dispatch: avx512\r\n" +
		"normgen-guest: END 1/3 a.test PASS (exit status 0, dispatch avx512, 1.0s)\r\n" +
		"normgen-guest: BEGIN 2/3 b.test\r\n" +
		"=== RUN   TestBig\r\n"
	j, err := Judge(strings.NewReader(log), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if j.Pass() || !j.Verdicts[0].Pass || j.Verdicts[1].Pass || j.Verdicts[2].Pass {
		t.Fatalf("verdicts %+v", j.Verdicts)
	}
	if got := j.Verdicts[1].Problems[0]; !strings.Contains(got, "did not finish") {
		t.Errorf("b.test: %q", got)
	}
	if got := j.Verdicts[2].Problems[0]; !strings.Contains(got, "did not run") {
		t.Errorf("c.test: %q", got)
	}
	if len(j.Problems) != 1 || !strings.Contains(j.Problems[0], "no final verdict line") {
		t.Errorf("problems %q", j.Problems)
	}
	if j.Output[0] != "normgen-guest: started as init" || len(j.Output) != 6 {
		t.Errorf("output should start at the guest's first line, without \\r: %q", j.Output)
	}

	// A log without any guest line: the boot failed.
	j, _ = Judge(strings.NewReader("Kernel panic - not syncing: VFS\r\n"), cfg)
	if j.Pass() || len(j.Problems) != 1 || !strings.Contains(j.Problems[0], "never started") {
		t.Errorf("boot failure: problems %q", j.Problems)
	}
}

// The host does not take the guest's word: a binary that the guest calls PASS
// without a dispatch line in its own section fails, and so does a FINAL PASS
// after a failed binary, or a binary nobody asked for.
func TestJudgeIsIndependent(t *testing.T) {
	cfg := &Config{RequireISA: "avx512", Tests: []Test{{Name: "a.test", Path: "x"}}}
	log := strings.Join([]string{
		"normgen dispatch: avx512", // outside any section: does not count
		"normgen-guest: BEGIN 1/1 a.test",
		"normgen-guest: END 1/1 a.test PASS (exit status 0, dispatch avx512, 0.1s)",
		"normgen-guest: BEGIN 1/1 other.test",
		"normgen-guest: FINAL PASS (1 passed, 0 failed)",
	}, "\n")
	j, err := Judge(strings.NewReader(log), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if j.Pass() || j.Verdicts[0].Pass {
		t.Fatalf("want failure: %+v", j)
	}
	if len(j.Problems) != 1 || !strings.Contains(j.Problems[0], `"other.test", which was not asked for`) {
		t.Errorf("problems %q", j.Problems)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{},
		{Tests: []Test{{Name: "a b", Path: "x"}}},
		{Tests: []Test{{Name: "a", Path: "x"}, {Name: "a", Path: "y"}}},
		{Tests: []Test{{Name: "a"}}},
		{Tests: []Test{{Name: "a", Path: "x"}}, RequireISA: "avx 512"},
	} {
		if c.Validate() == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	path := filepath.Join(t.TempDir(), "c.json")
	want := &Config{Tests: []Test{{Name: "a", Path: "/x", Dir: "/d"}}, Args: []string{"-test.run", "X"}, Env: []string{"A=1"}, RequireISA: "avx512"}
	if err := WriteConfig(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("round trip: %+v, want %+v", got, want)
	}
}

// readNewc is an independent reader of the newc format, written from its
// description in the kernel's Documentation/driver-api/early-userspace.
type cpioEntry struct {
	mode, rdevMajor, rdevMinor uint64
	data                       string
}

func readNewc(t *testing.T, b []byte) (map[string]cpioEntry, []string) {
	t.Helper()
	entries := map[string]cpioEntry{}
	var order []string
	off := 0
	align := func() { off = (off + 3) &^ 3 }
	for {
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad header at %d", off)
		}
		field := func(i int) uint64 {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatalf("header at %d field %d: %v", off, i, err)
			}
			return v
		}
		mode, size, rmaj, rmin, nameLen := field(1), field(6), field(9), field(10), int(field(11))
		name := string(b[off+110 : off+110+nameLen-1])
		if b[off+110+nameLen-1] != 0 {
			t.Fatalf("%s: name not NUL-terminated", name)
		}
		off += 110 + nameLen
		align()
		data := string(b[off : off+int(size)])
		off += int(size)
		align()
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}
			return entries, order
		}
		entries[name] = cpioEntry{mode, rmaj, rmin, data}
		order = append(order, name)
	}
}

func TestInitramfs(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "bin")
	if err := os.WriteFile(src, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	td := filepath.Join(dir, "testdata", "fuzz", "FuzzX")
	if err := os.MkdirAll(td, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(td, "seed1"), []byte("go test fuzz v1\nint(3)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := NewInitramfs()
	a.File("/init", src, 0o755)
	a.Bytes("normgen/guest.json", []byte("{}"), 0o644)
	if err := a.Tree("/normgen/pkg/p/testdata", filepath.Join(dir, "testdata")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := a.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("WriteTo returned %d, wrote %d", n, buf.Len())
	}
	entries, order := readNewc(t, buf.Bytes())
	checks := map[string]cpioEntry{
		"init":               {mode: 0o100755, data: "#!binary"},
		"normgen/guest.json": {mode: 0o100644, data: "{}"},
		"dev/console":        {mode: 0o020600, rdevMajor: 5, rdevMinor: 1},
		"dev/null":           {mode: 0o020666, rdevMajor: 1, rdevMinor: 3},
		"normgen/pkg/p/testdata/fuzz/FuzzX/seed1": {mode: 0o100644, data: "go test fuzz v1\nint(3)\n"},
		"normgen/pkg/p/testdata/fuzz":             {mode: 0o040755},
		"normgen":                                 {mode: 0o040755},
	}
	for name, want := range checks {
		if got, ok := entries[name]; !ok || got != want {
			t.Errorf("%s: got %+v (present %v), want %+v", name, got, ok, want)
		}
	}
	seen := map[string]bool{}
	for _, name := range order {
		if name == "" || strings.HasPrefix(name, "/") {
			t.Errorf("bad entry name %q", name)
		}
		if parent := filepath.Dir(name); parent != "." && !seen[parent] {
			t.Errorf("%s comes before its directory", name)
		}
		seen[name] = true
	}

	// Reproducible: the same inputs give the same bytes.
	var again bytes.Buffer
	if _, err := a.WriteTo(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two writes differ")
	}
}
