package write

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The packages of the crash tests: v2 replaces a.go, keeps b.s, creates
// d.go and e.go and removes c.go; user.go is the user's.
var (
	crashV1 = pkg("p.yaml", "a.go", "a1", "b.s", "b1", "c.go", "c1")
	crashV2 = pkg("p.yaml", "a.go", "a2", "b.s", "b1", "d.go", "d2", "e.go", "e2")
	crashV3 = pkg("p.yaml", "a.go", "a3", "f.go", "f3")
)

const userGo = "package p // the user's\n"

// want is the exact snapshot of dir holding p and user.go.
func want(p map[string][]byte) map[string]string {
	w := map[string]string{".": "<dir>", "user.go": userGo}
	for name, data := range p {
		w[name] = string(data)
	}
	return w
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func prepareV1(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "p")
	if err := Package(dir, crashV1); err != nil {
		t.Fatal(err)
	}
	setFiles(t, dir, map[string]string{"user.go": userGo})
	return dir
}

// TestHelperProcess is not a test: the tests below run the test binary
// again as a writer that dies or stalls at a chosen step.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("NORMGEN_WRITE_HELPER")
	if mode == "" {
		return
	}
	dir := os.Getenv("NORMGEN_WRITE_DIR")
	killAt, _ := strconv.Atoi(os.Getenv("NORMGEN_WRITE_KILL"))
	failAt, _ := strconv.Atoi(os.Getenv("NORMGEN_WRITE_FAIL"))
	linkOnly = os.Getenv("NORMGEN_WRITE_LINK") != ""
	n := 0
	hook = func(stage, name string) error {
		n++
		switch {
		case mode == "kill" && n == killAt:
			// No deferred cleanup, no unlock: as a power cut or kill -9.
			p, _ := os.FindProcess(os.Getpid())
			p.Kill()
			time.Sleep(time.Minute)
		case mode == "kill" && n == failAt:
			return errors.New("injected failure")
		case mode == "slow" && stage == "rename":
			// A slow disk: tell the test, then wait for it.
			os.WriteFile(dir+".reached", nil, 0o644)
			for !exists(dir + ".go") {
				time.Sleep(5 * time.Millisecond)
			}
		}
		return nil
	}
	err := Package(dir, crashV2)
	fmt.Fprintf(os.Stderr, "helper: %d steps, error %v\n", n, err)
	if mode == "kill" && failAt == 0 {
		os.Exit(3) // the kill step was never reached
	}
	if err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

func helper(mode, dir string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "NORMGEN_WRITE_HELPER="+mode, "NORMGEN_WRITE_DIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// steps lists the steps of the v1 -> v2 generation, with the step
// failAt (counting from 1) failing when it is not 0.
func steps(t *testing.T, failAt int) []string {
	t.Helper()
	defer func() { hook = nil }()
	dir := prepareV1(t)
	var list []string
	hook = func(stage, name string) error {
		list = append(list, stage+" "+name)
		if len(list) == failAt {
			return errors.New("injected failure")
		}
		return nil
	}
	err := Package(dir, crashV2)
	if (err != nil) != (failAt != 0) {
		t.Fatalf("dry run: %v", err)
	}
	return list
}

// TestKillAtEachStep kills a writer (SIGKILL, in a child process) at
// every step of a generation in turn, and, for each, checks that Check
// fails saying what the kill left, and that the next Check or Package
// leaves exactly the old or exactly the new package and nothing else.
func TestKillAtEachStep(t *testing.T) {
	list := steps(t, 0)
	for _, s := range []string{"lock ", "journal forward", "rename a.go", "remove c.go", "syncdir ", "unjournal ", "cleanup ", "unlock "} {
		if !strings.Contains(strings.Join(list, ","), s) {
			t.Fatalf("no step %q in %v", s, list)
		}
	}
	for i, s := range list {
		killAt := i + 1
		killTest(t, fmt.Sprintf("%d %s", killAt, s), killAt, 0)
	}
}

// TestKillAtEachStepLink is TestKillAtEachStep where renames that must
// not replace are done by link(2) and unlink(2), as where the kernel or
// file system has no RENAME_NOREPLACE: kills between the two included.
func TestKillAtEachStepLink(t *testing.T) {
	t.Setenv("NORMGEN_WRITE_LINK", "1")
	linkOnly = true
	defer func() { linkOnly = false }()
	list := steps(t, 0)
	if !strings.Contains(strings.Join(list, ","), "unlink d.go") {
		t.Fatalf("no unlink step in %v", list)
	}
	for i, s := range list {
		if stage, _, _ := strings.Cut(s, " "); stage == "rename" || stage == "unlink" || stage == "syncdir" {
			killTest(t, fmt.Sprintf("%d %s", i+1, s), i+1, 0)
		}
	}
}

// TestKillDuringRollBack makes the second rename fail, so that the run
// rolls back, and kills it at each step of the roll back.
func TestKillDuringRollBack(t *testing.T) {
	failAt := 0
	for i, s := range steps(t, 0) {
		if s == "rename d.go" {
			failAt = i + 1
		}
	}
	list := steps(t, failAt)
	if !strings.Contains(strings.Join(list[failAt:], ","), "restore ") {
		t.Fatalf("no restore step in %v", list[failAt:])
	}
	for i := failAt; i < len(list); i++ {
		killTest(t, fmt.Sprintf("%d %s after failed %s", i+1, list[i], list[failAt-1]), i+1, failAt)
	}
}

func killTest(t *testing.T, name string, killAt, failAt int) {
	for _, next := range []string{"Check", "Package"} {
		t.Run(name+" then "+next, func(t *testing.T) {
			dir := prepareV1(t)
			out, err := helper("kill", dir, "NORMGEN_WRITE_KILL="+strconv.Itoa(killAt), "NORMGEN_WRITE_FAIL="+strconv.Itoa(failAt)).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Exited() {
				t.Fatalf("the writer was not killed: %v\n%s", err, out)
			}
			journal := exists(filepath.Join(dir, journalName))
			tmps := tempDirs(dir)
			switch next {
			case "Check":
				problems, err := Check(dir, crashV2)
				if err != nil {
					t.Fatal(err)
				}
				all := strings.Join(problems, "\n")
				if journal && !strings.Contains(all, filepath.Join(dir, journalName)+": an interrupted normgen commit was pending") {
					t.Errorf("a journal was left, but Check says:\n%s", all)
				}
				for _, tmp := range tmps {
					// The journal's own directory goes with the journal.
					if !journal && !strings.Contains(all, tmp+": left by an interrupted normgen run") {
						t.Errorf("%s was left, but Check says:\n%s", tmp, all)
					}
				}
				if (journal || len(tmps) > 0) && len(problems) == 0 {
					t.Error("Check passed with leftovers")
				}
			case "Package":
				if err := Package(dir, crashV2); err != nil {
					t.Fatal(err)
				}
			}
			got := snapshot(t, dir)
			old, new := want(crashV1.Files), want(crashV2.Files)
			switch {
			case sameMap(got, new):
				t.Logf("new package (journal left: %v, temporary directories: %d)", journal, len(tmps))
			case sameMap(got, old) && next == "Check":
				t.Logf("old package (journal left: %v, temporary directories: %d)", journal, len(tmps))
			default:
				sameSnap(t, "after the kill and "+next+" (compared with the new package)", got, new)
				return
			}
			if problems, err := Check(dir, crashV2); err != nil || (sameMap(got, new) != (len(problems) == 0)) {
				t.Errorf("second Check: %v %v", problems, err)
			}
			if err := Package(dir, crashV2); err != nil {
				t.Fatal(err)
			}
			sameSnap(t, "regenerated", snapshot(t, dir), new)
		})
	}
}

// syncBuffer is a bytes.Buffer safe to write from one goroutine and
// read from another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestConcurrentWriters stalls one writer (a child process) at its first
// rename, as on a slow disk, and starts a second one: the second waits,
// saying so, and the directory ends up holding its package, whole.
func TestConcurrentWriters(t *testing.T) {
	stderr, timeout := Stderr, LockTimeout
	defer func() { Stderr, LockTimeout = stderr, timeout }()
	dir := prepareV1(t)
	child := helper("slow", dir)
	var childOut bytes.Buffer
	child.Stdout, child.Stderr = &childOut, &childOut
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	for deadline := time.Now().Add(30 * time.Second); !exists(dir + ".reached"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the child never reached its rename:\n%s", childOut.String())
		}
	}
	pid := strconv.Itoa(child.Process.Pid)

	// A writer that cannot wait long gives up, and says for whom.
	var msgs syncBuffer
	Stderr, LockTimeout = &msgs, 100*time.Millisecond
	err := Package(dir, crashV3)
	if err == nil || !strings.Contains(err.Error(), "gave up after 100ms waiting for another normgen writing "+dir+" (pid "+pid+",") {
		t.Errorf("impatient writer: %v", err)
	}

	LockTimeout = time.Minute
	done := make(chan error, 1)
	go func() { done <- Package(dir, crashV3) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the second writer did not wait: %v", err)
	default:
	}
	if want := "normgen: waiting for another normgen writing " + dir + " (pid " + pid + ")\n"; !strings.Contains(msgs.String(), want) {
		t.Errorf("messages %q; want %q", msgs.String(), want)
	}
	os.WriteFile(dir+".go", nil, 0o644) // the slow disk catches up
	if err := child.Wait(); err != nil {
		t.Fatalf("first writer: %v\n%s", err, childOut.String())
	}
	if err := <-done; err != nil {
		t.Fatalf("second writer: %v", err)
	}
	sameSnap(t, "after both writers", snapshot(t, dir), want(crashV3.Files))
}

// TestFileAppearsDuringRun puts a user's file, between the scan and the
// rename, where normgen is about to create, replace or remove one: the
// run must fail saying so, the file must survive byte-identical and the
// rest of the old package must be intact.
func TestFileAppearsDuringRun(t *testing.T) {
	defer func() { hook = nil }()
	for _, tc := range []struct{ stage, name, want string }{
		{"tempdir", "d.go", "appeared while normgen was writing"},
		{"rename", "d.go", "appeared while normgen was writing"},
		{"rename", "a.go", "was replaced while normgen was writing by a file normgen did not write"},
		{"remove", "c.go", "was replaced while normgen was writing by a file normgen did not write"},
	} {
		t.Run(tc.stage+" "+tc.name, func(t *testing.T) {
			dir := prepareV1(t)
			mine := "package p // written by the user during the run\n"
			hook = func(stage, name string) error {
				if stage == tc.stage && (name == tc.name || name == "") {
					if err := os.WriteFile(filepath.Join(dir, tc.name), []byte(mine), 0o644); err != nil {
						t.Error(err)
					}
				}
				return nil
			}
			err := Package(dir, crashV2)
			hook = nil
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tc.name)+" "+tc.want) {
				t.Fatalf("error %v; want one saying %s %s", err, tc.name, tc.want)
			}
			w := want(crashV1.Files)
			w[tc.name] = mine
			sameSnap(t, "after the run", snapshot(t, dir), w)
		})
	}
}

// TestStaleTempDir: a temporary directory left by an older normgen
// (killed before this one had a journal) fails Check, which names it,
// and is removed by the next run.
func TestStaleTempDir(t *testing.T) {
	for _, next := range []string{"Check", "Package"} {
		dir := prepareV1(t)
		setFiles(t, dir, map[string]string{tempPrefix + "123/a.go": string(file("p.yaml", "a2"))})
		if next == "Check" {
			problems, err := Check(dir, crashV1)
			if err != nil || len(problems) != 1 || problems[0] != filepath.Join(dir, tempPrefix+"123")+": left by an interrupted normgen run; removed" {
				t.Errorf("Check: %q %v", problems, err)
			}
		} else if err := Package(dir, crashV1); err != nil {
			t.Fatal(err)
		}
		sameSnap(t, "after "+next, snapshot(t, dir), want(crashV1.Files))
	}
}

func TestCheckCRLF(t *testing.T) {
	dir := t.TempDir()
	p := pkg("p.yaml", "a.go", "a", "b.go", "b")
	if err := Package(dir, p); err != nil {
		t.Fatal(err)
	}
	p.Files["c.go"] = file("p.yaml", "c") // to be generated where the user has a CRLF file
	crlf := func(s []byte) string { return strings.ReplaceAll(string(s), "\n", "\r\n") }
	setFiles(t, dir, map[string]string{
		"a.go": crlf(p.Files["a.go"]),
		"b.go": crlf(bytes.Replace(p.Files["b.go"], []byte("// b"), []byte("// B"), 1)),
		"c.go": "package p\r\n",
	})
	problems, err := Check(dir, p)
	if err != nil || len(problems) != 3 ||
		!strings.HasPrefix(problems[0], filepath.Join(dir, "a.go")+": has CRLF line endings (converted by git core.autocrlf or an editor?); otherwise it is what normgen generates") ||
		!strings.HasPrefix(problems[1], filepath.Join(dir, "b.go")+": has CRLF line endings and also differs") ||
		!strings.HasPrefix(problems[2], filepath.Join(dir, "c.go")+": not generated by normgen") {
		t.Errorf("problems:\n%s\n%v", strings.Join(problems, "\n"), err)
	}
}

// TestCheckCannotLock: where Check cannot take the lock (a directory it
// may not write), it reports a pending commit without settling it.
func TestCheckCannotLock(t *testing.T) {
	defer func() { hook = nil }()
	killAt := 0
	for i, s := range steps(t, 0) {
		if s == "rename d.go" {
			killAt = i + 1
		}
	}
	dir := prepareV1(t)
	helper("kill", dir, "NORMGEN_WRITE_KILL="+strconv.Itoa(killAt)).Run()
	before := snapshot(t, dir)
	tmps := tempDirs(dir)
	hook = func(stage, name string) error {
		if stage == "lock" {
			return errors.New("read-only file system")
		}
		return nil
	}
	problems, err := Check(dir, crashV2)
	hook = nil
	if err != nil || len(tmps) != 1 || len(problems) < 2 ||
		problems[0] != filepath.Join(dir, journalName)+": an interrupted normgen commit is pending (run normgen to complete it)" ||
		problems[1] != tmps[0]+": left by an interrupted normgen run (run normgen to remove it)" {
		t.Errorf("Check: %v\n%s", err, strings.Join(problems, "\n"))
	}
	sameSnap(t, "after Check", snapshot(t, dir), before)
	if err := Package(dir, crashV2); err != nil {
		t.Fatal(err)
	}
	sameSnap(t, "after Package", snapshot(t, dir), want(crashV2.Files))
}
