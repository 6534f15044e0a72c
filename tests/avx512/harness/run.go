package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Run runs every binary of cfg with -test.v, cfg.Args and cfg.Env, copying
// their output to out between a BEGIN and an END line each, and ends with a
// FINAL line. It reports whether every binary passed.
func Run(cfg *Config, out io.Writer) bool {
	passed, failed := 0, 0
	n := len(cfg.Tests)
	for i, t := range cfg.Tests {
		fmt.Fprintln(out, beginLine(i+1, n, t.Name))
		ok, detail := runOne(cfg, t, out)
		fmt.Fprintln(out, endLine(i+1, n, t.Name, ok, detail))
		if ok {
			passed++
		} else {
			failed++
		}
	}
	fmt.Fprintln(out, finalLine(failed == 0, fmt.Sprintf("%d passed, %d failed", passed, failed)))
	return failed == 0
}

// runOne runs one binary and returns its verdict and the detail for its END
// line.
func runOne(cfg *Config, t Test, out io.Writer) (bool, string) {
	dir := t.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "run-"+t.Name+"-")
		if err != nil {
			return false, fmt.Sprintf("cannot make a working directory: %v", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	args := append([]string{"-test.v"}, cfg.Args...)
	cmd := exec.Command(t.Path, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), cfg.Env...)
	r, w, err := os.Pipe()
	if err != nil {
		return false, fmt.Sprintf("cannot make a pipe: %v", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return false, fmt.Sprintf("cannot start: %v", err)
	}
	isas := copyOutput(r, out)
	r.Close()
	err = cmd.Wait()
	elapsed := seconds(time.Since(start))

	exit := "exit status 0"
	ok := err == nil
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			exit = ee.ProcessState.String() // "exit status 1", "signal: killed"
		} else {
			exit = err.Error()
		}
	}
	detail := []string{exit, dispatchSummary(isas), elapsed}
	if ok && cfg.RequireISA != "" && !contains(isas, cfg.RequireISA) {
		ok = false
		detail = append(detail, fmt.Sprintf("missing %q", DispatchMarker+cfg.RequireISA))
	}
	return ok, strings.Join(detail, ", ")
}

// copyOutput copies the binary's output to out line by line, noting the ISAs
// named by dispatch lines. A last line without a newline gets one, so that the
// END line always starts a line.
func copyOutput(r io.Reader, out io.Writer) []string {
	var isas []string
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			for _, isa := range DispatchISAs(line) {
				isas = addUnique(isas, isa)
			}
			if !strings.HasSuffix(line, "\n") {
				line += "\n"
			}
			io.WriteString(out, line)
		}
		if err != nil {
			return isas
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
