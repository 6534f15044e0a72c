package harness

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Verdict is the host's judgement of one test binary.
type Verdict struct {
	Name string
	Pass bool
	// Problems say why it failed.
	Problems []string
	// Detail is the guest's own summary from the END line.
	Detail string
	// Dispatch lists the ISAs named by dispatch lines in its output.
	Dispatch []string
}

// Judgement is the host's judgement of a whole log.
type Judgement struct {
	Verdicts []Verdict
	// Problems concern the run as a whole (no final line, unknown binaries).
	Problems []string
	// Output is the log from the guest's first line on: the test output
	// without the kernel's boot messages.
	Output []string
	// Final is the guest's final line, "" when it is missing.
	Final string
}

// Pass reports whether every binary passed and the run itself had no problem.
func (j *Judgement) Pass() bool {
	if len(j.Problems) > 0 {
		return false
	}
	for _, v := range j.Verdicts {
		if !v.Pass {
			return false
		}
	}
	return true
}

// Failed counts the binaries that failed.
func (j *Judgement) Failed() int {
	n := 0
	for _, v := range j.Verdicts {
		if !v.Pass {
			n++
		}
	}
	return n
}

type section struct {
	began, ended bool
	pass         bool
	detail       string
	dispatch     []string
}

// Judge reads a log written by Run (directly, or through a serial console
// with its carriage returns and the kernel's boot messages around it) and
// judges it against cfg independently of the guest's own verdicts: a binary
// passes only if it began, ended with PASS, and, when cfg.RequireISA is set,
// its own output holds the dispatch line for that ISA. The run fails if the
// final line is missing (the guest crashed, hung or was stopped).
func Judge(log io.Reader, cfg *Config) (*Judgement, error) {
	j := &Judgement{}
	sections := map[string]*section{}
	for _, t := range cfg.Tests {
		sections[t.Name] = &section{}
	}
	var cur *section
	curName := ""
	finalPass := false
	started := false
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r \t")
		line = strings.TrimLeft(line, "\r")
		if !started && strings.HasPrefix(line, Prefix) {
			started = true
		}
		if started {
			j.Output = append(j.Output, line)
		}
		if m := beginRE.FindStringSubmatch(line); m != nil {
			name := m[3]
			s, ok := sections[name]
			if !ok {
				j.Problems = append(j.Problems, fmt.Sprintf("the guest ran %q, which was not asked for", name))
				cur, curName = nil, ""
				continue
			}
			if s.began {
				j.Problems = append(j.Problems, fmt.Sprintf("%s began twice (did the machine reboot?)", name))
			}
			s.began = true
			cur, curName = s, name
			continue
		}
		if m := endRE.FindStringSubmatch(line); m != nil {
			name := m[3]
			if cur == nil || name != curName {
				j.Problems = append(j.Problems, fmt.Sprintf("END line for %s without its BEGIN line", name))
				cur, curName = nil, ""
				continue
			}
			cur.ended = true
			cur.pass = m[4] == "PASS"
			cur.detail = m[5]
			cur, curName = nil, ""
			continue
		}
		if m := finalRE.FindStringSubmatch(line); m != nil {
			j.Final = line
			finalPass = m[1] == "PASS"
			cur, curName = nil, ""
			continue
		}
		if cur != nil {
			for _, isa := range DispatchISAs(line) {
				cur.dispatch = addUnique(cur.dispatch, isa)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}

	for _, t := range cfg.Tests {
		s := sections[t.Name]
		v := Verdict{Name: t.Name, Detail: s.detail, Dispatch: s.dispatch}
		dispatchMissing := s.ended && cfg.RequireISA != "" && !contains(s.dispatch, cfg.RequireISA)
		switch {
		case !s.began:
			v.Problems = append(v.Problems, "did not run (the guest stopped before it)")
		case !s.ended:
			v.Problems = append(v.Problems, "did not finish (crash, hang or timeout while it ran)")
		case !s.pass && !(dispatchMissing && strings.HasPrefix(s.detail, "exit status 0,")):
			// (A binary that exited 0 and failed only for want of
			// the dispatch line is explained below.)
			v.Problems = append(v.Problems, "failed ("+s.detail+")")
		}
		if dispatchMissing {
			why := "no dispatch line: a binary without TestDispatch, or a -test.run that skips it, cannot show which kernels ran"
			if len(s.dispatch) > 0 {
				why = "the dispatch chose " + strings.Join(s.dispatch, ", ")
			}
			v.Problems = append(v.Problems, fmt.Sprintf("did not print %q (%s)", DispatchMarker+cfg.RequireISA, why))
		}
		v.Pass = len(v.Problems) == 0
		j.Verdicts = append(j.Verdicts, v)
	}
	switch {
	case !started:
		j.Problems = append(j.Problems, "the guest program never started (the boot failed, or the timeout struck first)")
	case j.Final == "":
		j.Problems = append(j.Problems, "no final verdict line: the guest crashed, hung or was stopped by the timeout")
	case !finalPass && j.Failed() == 0:
		j.Problems = append(j.Problems, "the guest's final verdict is FAIL: "+j.Final)
	}
	return j, nil
}

// Report writes one line per binary and a final line, each starting with tag.
func (j *Judgement) Report(w io.Writer, tag string) {
	for _, v := range j.Verdicts {
		if v.Pass {
			fmt.Fprintf(w, "%s: %s: PASS (%s)\n", tag, v.Name, v.Detail)
			continue
		}
		fmt.Fprintf(w, "%s: %s: FAIL: %s\n", tag, v.Name, strings.Join(v.Problems, "; "))
	}
	for _, p := range j.Problems {
		fmt.Fprintf(w, "%s: FAIL: %s\n", tag, p)
	}
	n := len(j.Verdicts)
	if j.Pass() {
		fmt.Fprintf(w, "%s: PASS: %d passed, 0 failed\n", tag, n)
		return
	}
	fmt.Fprintf(w, "%s: FAIL: %d passed, %d failed\n", tag, n-j.Failed(), j.Failed())
}
