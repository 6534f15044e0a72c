package harness

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The guest's own lines all start with Prefix, so that the host can tell them
// from the test binaries' output:
//
//	normgen-guest: started as init
//	normgen-guest: BEGIN 1/2 ops.test
//	... the binary's -test.v output ...
//	normgen-guest: END 1/2 ops.test PASS (exit status 0, dispatch avx512, 12.3s)
//	normgen-guest: BEGIN 2/2 fixture.test
//	...
//	normgen-guest: END 2/2 fixture.test FAIL (exit status 1, dispatch avx512, 2.0s)
//	normgen-guest: FINAL FAIL (1 passed, 1 failed)
//
// A binary passes when it exits with status 0 and, if the configuration
// requires an ISA, printed the dispatch line for it.
const Prefix = "normgen-guest: "

// DispatchMarker starts the line that the generated packages' TestDispatch
// logs: "normgen dispatch: <isa>".
const DispatchMarker = "normgen dispatch: "

var (
	beginRE    = regexp.MustCompile(`^` + Prefix + `BEGIN (\d+)/(\d+) (\S+)$`)
	endRE      = regexp.MustCompile(`^` + Prefix + `END (\d+)/(\d+) (\S+) (PASS|FAIL)(?: \((.*)\))?$`)
	finalRE    = regexp.MustCompile(`^` + Prefix + `FINAL (PASS|FAIL)(?: \((.*)\))?$`)
	dispatchRE = regexp.MustCompile(regexp.QuoteMeta(DispatchMarker) + `([A-Za-z0-9_.+-]+)`)
)

func beginLine(i, n int, name string) string {
	return fmt.Sprintf("%sBEGIN %d/%d %s", Prefix, i, n, name)
}

func endLine(i, n int, name string, pass bool, detail string) string {
	return fmt.Sprintf("%sEND %d/%d %s %s (%s)", Prefix, i, n, name, verdictWord(pass), detail)
}

func finalLine(pass bool, detail string) string {
	return fmt.Sprintf("%sFINAL %s (%s)", Prefix, verdictWord(pass), detail)
}

func verdictWord(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

// DispatchISAs returns the ISAs named by dispatch lines in line, in order.
func DispatchISAs(line string) []string {
	var isas []string
	for _, m := range dispatchRE.FindAllStringSubmatch(line, -1) {
		isas = append(isas, m[1])
	}
	return isas
}

func dispatchSummary(isas []string) string {
	if len(isas) == 0 {
		return "no dispatch line"
	}
	return "dispatch " + strings.Join(isas, ",")
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// addUnique appends s to list unless it is there already.
func addUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
