package arm64

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/lower/lowertest"
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
	asm, err := generate(header, funcs, firstForm)
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

// TestPairsForms checks Generate's STP forms: a function has one exactly
// when StoreForms says so, right after it with its frame, every float32
// store of its main loops by STP q (each loop stores the registers its
// first form stores), and the file then ends with MIDRFunc, once.
func TestPairsForms(t *testing.T) {
	funcs := testFuncs(testKernels(t))
	asm, err := Generate(header, funcs)
	if err != nil {
		t.Fatal(err)
	}
	s := string(asm)
	text := regexp.MustCompile(`(?m)^TEXT ·(\w+)\(SB\), NOSPLIT, (\$0-\d+)$`)
	frames := map[string]string{}
	var order []string
	for _, m := range text.FindAllStringSubmatch(s, -1) {
		frames[m[1]] = m[2]
		order = append(order, m[1])
	}
	loopRe := regexp.MustCompile(`(?s)\n(pass\d+(?:main|iter)):\n(.*?)\n\tBNE\t(pass\d+(?:main|iter))\n`)
	stored := func(body string) (st1, pairs int) {
		for _, ln := range strings.Split(body, "\n") {
			f := strings.Fields(ln)
			switch {
			case len(f) == 0:
			case f[0] == "VST1.P" && strings.Contains(ln, ".S4"):
				st1 += strings.Count(ln, ".S4")
			case f[0] == "FSTPQ":
				pairs++
			}
		}
		return st1, pairs
	}
	with, without := 0, 0
	for _, f := range funcs {
		gain, err := StoreForms(f)
		if err != nil {
			t.Fatal(err)
		}
		name, stp := f.Name(), f.Name()+PairsSuffix
		_, has := frames[stp]
		if has != gain {
			t.Errorf("%s: STP form in the file %v, StoreForms %v", name, has, gain)
			continue
		}
		if !gain {
			without++
			continue
		}
		with++
		if frames[stp] != frames[name] {
			t.Errorf("%s: frame %s, its first form's %s", stp, frames[stp], frames[name])
		}
		if i := slices.Index(order, name); i+1 >= len(order) || order[i+1] != stp {
			t.Errorf("%s does not follow %s", stp, name)
		}
		first := loopRe.FindAllStringSubmatch(funcText(s, name), -1)
		second := loopRe.FindAllStringSubmatch(funcText(s, stp), -1)
		if len(first) != len(second) {
			t.Errorf("%s: %d main loops, its first form %d", stp, len(second), len(first))
			continue
		}
		gained := false
		for i := range first {
			st1, pairs := stored(second[i][2])
			a, b := stored(first[i][2])
			if st1 != 0 || 2*pairs != a+2*b {
				t.Errorf("%s %s: %d registers by ST1 and %d STP pairs, want none and %d pairs:\n%s", stp, second[i][1], st1, pairs, (a+2*b)/2, second[i][2])
			}
			gained = gained || pairs > b
		}
		if !gained {
			t.Errorf("%s: no loop stores more pairs than %s", stp, name)
		}
	}
	if with == 0 || without == 0 {
		t.Errorf("%d test functions with an STP form, %d without; want both", with, without)
	}
	if n := strings.Count(s, "TEXT ·"+MIDRFunc+"(SB)"); n != 1 || order[len(order)-1] != MIDRFunc {
		t.Errorf("%d %s functions, the last function %s; want one, last", n, MIDRFunc, order[len(order)-1])
	}
	if !strings.Contains(funcText(s, MIDRFunc), "MRS\tMIDR_EL1, R0") {
		t.Errorf("%s does not read MIDR_EL1:\n%s", MIDRFunc, funcText(s, MIDRFunc))
	}
}

// TestExecutePairs runs the kit's Rows cases on the STP forms of the test
// kernels that have one, as TestExecute runs their first forms.
func TestExecutePairs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and emulates an arm64 package")
	}
	tg := neon(t)
	var funcs []target.Func
	for _, f := range testFuncs(testKernels(t)) {
		if ok, err := StoreForms(f); err != nil {
			t.Fatal(err)
		} else if ok {
			funcs = append(funcs, f)
		}
	}
	if len(funcs) == 0 {
		t.Fatal("no test kernel has an STP form")
	}
	asm, err := generate(header, funcs, pairsForm)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(asm), "FSTPQ") {
		t.Fatal("the STP forms store nothing by STP")
	}
	suite := lowertest.RowSuite{Sizes: testSizes, Rows: testRows, LongKernels: longKernels, LongSizes: longSizes, LongRows: longCounts,
		InPlaceRows: []int{2}, KindSizes: []int{1, 17, 100}, KindFixed: true}
	cases, _ := suite.Cases(t, funcs)
	tg.Execute(t, asm, funcs, cases)
}
