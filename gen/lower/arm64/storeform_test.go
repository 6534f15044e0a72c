package arm64

import (
	"regexp"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/target"
)

// TestStorePairs reads every main loop of the test kernels (fixed and
// run-time H) back from the assembly and checks the store form against
// Neoverse N1's port counts (storeform.go): STP pairs never make its
// load/store pipes busier than its FP pipes, every pair the FP pipes
// leave room for is an STP, and the loops still advance each stored
// array by the iteration's bytes.
func TestStorePairs(t *testing.T) {
	var funcs []target.Func
	for _, k := range testKernels(t) {
		for _, h := range []int{0, 4096} {
			funcs = append(funcs, target.Func{Kernel: k, H: h, ISA: target.NEON})
		}
	}
	asm, err := Generate(header, funcs)
	if err != nil {
		t.Fatal(err)
	}
	loopRe := regexp.MustCompile(`(?s)\n(pass\d+(?:main|iter)):\n(.*?)\n\tBNE\t(pass\d+(?:main|iter))\n`)
	listRe := regexp.MustCompile(`\[([^\]]*)\]`)
	stpLoops, st1Loops := 0, 0
	for _, f := range funcs {
		for _, m := range loopRe.FindAllStringSubmatch(funcText(string(asm), f.Name()), -1) {
			if m[1] != m[3] {
				continue
			}
			loads, fp, st1, pairs := 0, 0, 0, 0
			stepped := map[string]int{}
			for _, ln := range strings.Split(m[2], "\n") {
				fields := strings.Fields(ln)
				if len(fields) == 0 {
					continue
				}
				regs := 0
				if l := listRe.FindStringSubmatch(ln); l != nil {
					regs = len(strings.Split(l[1], ","))
				}
				switch op := fields[0]; {
				case op == "VLD1.P" || op == "VLD1":
					loads += regs
				case op == "VST1.P":
					st1 += regs
				case op == "FSTPQ":
					pairs++
				case op == "ADD" && len(fields) == 4 && strings.TrimSuffix(fields[2], ",") == fields[3]:
					stepped[fields[3]]++
				case op == "VFMLA" || op == "VMOV" || op == "WORD" && regexp.MustCompile(`// f(add|sub|mul|mla) v`).MatchString(ln):
					fp++
				}
			}
			if strings.Contains(m[2], ".H") || strings.Contains(m[2], "shll") {
				continue // half precision: stores narrow, never paired
			}
			stored := st1 + 2*pairs
			if pairs > 0 {
				stpLoops++
				if len(stepped) == 0 {
					t.Errorf("%s %s: STP q stores but no ADD steps a cursor:\n%s", f.Name(), m[1], m[2])
				}
			} else if stored > 0 {
				st1Loops++
			}
			// N1: loads and store addresses on 2 pipes (STP q: 2 a register,
			// ST1: 1), FP ops and store data on 2 others.
			if ls, v := loads+st1+4*pairs, fp+stored; pairs > 0 && ls > v {
				t.Errorf("%s %s: %d STP pairs make N1's load/store pipes (%d) busier than its FP pipes (%d)", f.Name(), m[1], pairs, ls, v)
			}
			if room := (fp - loads) / 2; st1 >= 2 && room > pairs {
				t.Errorf("%s %s: %d STP pairs, but N1's pipes leave room for %d (loads %d, FP %d, ST1 registers %d)", f.Name(), m[1], pairs, room, loads, fp, st1)
			}
		}
	}
	if stpLoops == 0 || st1Loops == 0 {
		t.Errorf("the kernels cover %d loops storing by STP q and %d by ST1 only; want both", stpLoops, st1Loops)
	}
}
