// Command neonmca estimates the speed of the generated NEON kernels with
// llvm-mca, since no arm64 machine is at hand and qemu says nothing about
// speed. It assembles every out/*/*_arm64.s for arm64, finds the innermost
// loops of the NEON functions, takes their machine code (the exact words the
// Go assembler emitted) to GNU syntax with llvm-mc, and simulates each loop
// and its port floor on four Neoverse models. bench/neon-mca.sh runs it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// cpus are the modelled cores, in table order.
var cpus = []struct{ name, mcpu string }{
	{"N1", "neoverse-n1"},
	{"N2", "neoverse-n2"},
	{"V1", "neoverse-v1"},
	{"V2", "neoverse-v2"},
}

// target is the ratio to the floor every rated loop and row should meet.
const target = 1.05

func main() {
	root := flag.String("root", ".", "repository root (holds out/)")
	outFile := flag.String("o", "", "write the markdown here (default: stdout)")
	mc := flag.String("mc", "llvm-mc-19", "llvm-mc binary")
	mca := flag.String("mca", "llvm-mca-19", "llvm-mca binary")
	check := flag.Bool("check", false, "exit 1 when a rated loop or row misses the target")
	flag.Parse()
	t := &tools{mc: *mc, mca: *mca, work: mustTemp()}
	defer os.RemoveAll(t.work)
	md, miss, err := run(t, *root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "neonmca:", err)
		os.Exit(2)
	}
	if *outFile == "" {
		os.Stdout.WriteString(md)
	} else if err := os.WriteFile(*outFile, []byte(md), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "neonmca:", err)
		os.Exit(2)
	}
	if *check && miss > 0 {
		fmt.Fprintf(os.Stderr, "neonmca: %d loops or rows above %.2fx their floor\n", miss, target)
		os.Exit(1)
	}
}

func mustTemp() string {
	d, err := os.MkdirTemp("", "neonmca")
	if err != nil {
		panic(err)
	}
	return d
}

type tools struct{ mc, mca, work string }

func (t *tools) cmd(env []string, name string, args ...string) ([]byte, error) {
	c := exec.Command(name, args...)
	c.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// function is one NEON function of a package with its machine code.
type function struct {
	pkg, name string
	insns     []insn
	loops     []*loop
	h         int  // fixed row length, 0 for Any and tensor kernels
	pairs     bool // has an STP form, merged in (mergeForms)
}

type insn struct {
	line   int    // source line in the .s file
	word   uint32 // machine code
	goText string
	gnu    string // GNU syntax, filled for loop bodies
}

// loop is one innermost loop: insns[start..end] of its function, end being
// the backward branch.
type loop struct {
	fn         *function
	start, end int
	label      string // the source label it branches back to
	body       []string
	el         int  // row elements per iteration
	scalar     bool // no vector memory access: a tail, not rated
	key        string
	res        map[string]*estimate
	pairs      bool // the STP form's figures on N2, V1 and V2 (mergeForms)
}

// estimate is one loop on one model, in cycles per iteration.
type estimate struct {
	raw, fwd, floor float64
	floorForm       string
	forms           map[string]float64 // every floor form and mix
}

var (
	objLine  = regexp.MustCompile(`^\s+\S+:(\d+)\s+0x[0-9a-f]+\s+([0-9a-f]{8})\s+(.*?)\s*$`)
	textLine = regexp.MustCompile(`^TEXT \S+\.(\w+)\(SB\)`)
	pcRel    = regexp.MustCompile(`(-?\d+)\(PC\)`)
	labelRe  = regexp.MustCompile(`^(\w+):`)
	sizeRe   = regexp.MustCompile(`Neon\w*?(\d+)$`)
)

func run(t *tools, root string) (string, int, error) {
	files, err := filepath.Glob(filepath.Join(root, "out", "*", "*_arm64.s"))
	if err != nil {
		return "", 0, err
	}
	sort.Strings(files)
	goroot, err := t.cmd(nil, "go", "env", "GOROOT")
	if err != nil {
		return "", 0, err
	}
	inc := filepath.Join(strings.TrimSpace(string(goroot)), "pkg", "include")
	var fns []*function
	for i, f := range files {
		pkg := filepath.Base(filepath.Dir(f))
		obj := filepath.Join(t.work, fmt.Sprintf("%d.o", i))
		env := []string{"GOOS=linux", "GOARCH=arm64"}
		if _, err := t.cmd(env, "go", "tool", "asm", "-p", "out/"+pkg, "-I", inc, "-o", obj, f); err != nil {
			return "", 0, err
		}
		dump, err := t.cmd(env, "go", "tool", "objdump", obj)
		if err != nil {
			return "", 0, err
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return "", 0, err
		}
		got, err := parseDump(pkg, string(dump), strings.Split(string(src), "\n"))
		if err != nil {
			return "", 0, fmt.Errorf("%s: %v", f, err)
		}
		fns = append(fns, got...)
	}
	var loops []*loop
	for _, fn := range fns {
		loops = append(loops, fn.loops...)
	}
	if err := t.disassemble(loops); err != nil {
		return "", 0, err
	}
	for _, l := range loops {
		l.el, l.scalar = elements(l.body)
		if l.el == 0 {
			return "", 0, fmt.Errorf("%s.%s %s: no memory access in the loop", l.fn.pkg, l.fn.name, l.label)
		}
		l.key = strings.Join(l.body, "\n")
	}
	fwd, err := t.forwarding()
	if err != nil {
		return "", 0, err
	}
	if err := t.simulate(loops, fwd); err != nil {
		return "", 0, err
	}
	if fns, loops, err = mergeForms(fns); err != nil {
		return "", 0, err
	}
	ver, err := t.cmd(nil, t.mca, "--version")
	if err != nil {
		return "", 0, err
	}
	md, miss := report(fns, loops, fwd, versionLine(string(ver)))
	return md, miss, nil
}

func versionLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "LLVM version") {
			return strings.TrimSpace(l)
		}
	}
	return "unknown"
}

// parseDump splits go tool objdump's output into the NEON functions and
// finds their innermost loops: backward branches whose range holds no
// other backward branch.
func parseDump(pkg, dump string, src []string) ([]*function, error) {
	var fns []*function
	var cur *function
	for _, ln := range strings.Split(dump, "\n") {
		if m := textLine.FindStringSubmatch(ln); m != nil {
			cur = nil
			name, ok := strings.CutPrefix(m[1], pkg+"Neon")
			if !ok {
				continue
			}
			cur = &function{pkg: pkg, name: name}
			if s := sizeRe.FindStringSubmatch(m[1]); s != nil {
				cur.h, _ = strconv.Atoi(s[1])
			}
			fns = append(fns, cur)
			continue
		}
		m := objLine.FindStringSubmatch(ln)
		if cur == nil || m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[1])
		w, err := strconv.ParseUint(m[2], 16, 32)
		if err != nil {
			return nil, err
		}
		cur.insns = append(cur.insns, insn{line: line, word: uint32(w), goText: m[3]})
	}
	for _, fn := range fns {
		type br struct{ from, to int }
		var back []br
		for i, in := range fn.insns {
			if t, ok := branchTarget(in.goText); ok && t <= 0 {
				back = append(back, br{i, i + t})
			}
		}
		for _, b := range back {
			inner := true
			for _, o := range back {
				if o != b && o.from >= b.to && o.from < b.from {
					inner = false
				}
			}
			if !inner {
				continue
			}
			l := &loop{fn: fn, start: b.to, end: b.from, res: map[string]*estimate{}}
			for j := fn.insns[b.to].line - 2; j >= 0 && j < len(src); j-- {
				if m := labelRe.FindStringSubmatch(src[j]); m != nil {
					l.label = m[1]
					break
				}
			}
			fn.loops = append(fn.loops, l)
		}
	}
	return fns, nil
}

func branchTarget(goText string) (int, bool) {
	f := strings.Fields(goText)
	if len(f) == 0 {
		return 0, false
	}
	op := f[0]
	if !(op == "JMP" || op == "CBZ" || op == "CBNZ" || op == "CBZW" || op == "CBNZW" || op == "TBZ" || op == "TBNZ" || (op[0] == 'B' && len(op) <= 3)) {
		return 0, false
	}
	m := pcRel.FindStringSubmatch(goText)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	return n, true
}

// disassemble turns every loop's machine words into GNU syntax with one
// llvm-mc run, the closing branch pointing at a label.
func (t *tools) disassemble(loops []*loop) error {
	var in bytes.Buffer
	n := 0
	for _, l := range loops {
		for _, x := range l.fn.insns[l.start : l.end+1] {
			w := x.word
			fmt.Fprintf(&in, "0x%02x 0x%02x 0x%02x 0x%02x\n", w&0xff, w>>8&0xff, w>>16&0xff, w>>24)
			n++
		}
	}
	f := filepath.Join(t.work, "words.txt")
	if err := os.WriteFile(f, in.Bytes(), 0o644); err != nil {
		return err
	}
	out, err := t.cmd(nil, t.mc, "--disassemble", "-triple=aarch64", f)
	if err != nil {
		return err
	}
	var lines []string
	for _, ln := range strings.Split(string(out), "\n") {
		ln = strings.TrimSpace(ln)
		if ln == "" || strings.HasPrefix(ln, ".") {
			continue
		}
		lines = append(lines, strings.Join(strings.Fields(ln), " "))
	}
	if len(lines) != n {
		return fmt.Errorf("llvm-mc decoded %d of %d instructions", len(lines), n)
	}
	for _, l := range loops {
		k := l.end - l.start + 1
		l.body, lines = lines[:k], lines[k:]
		last := l.body[k-1]
		i := strings.LastIndex(last, "#")
		if i < 0 {
			return fmt.Errorf("%s.%s: loop branch %q", l.fn.pkg, l.fn.name, last)
		}
		l.body[k-1] = last[:i] + "LOOP"
	}
	return nil
}

// mem describes a load or store: its bytes, its elements (float32 or, for
// .8h/.4h/.h registers, 16-bit) and its base register.
type mem struct {
	load, vector bool
	bytes, elems int
	base         string
}

var (
	regList = regexp.MustCompile(`\{([^}]*)\}`)
	baseRe  = regexp.MustCompile(`\[(\w+)`)
)

func memOp(s string) (mem, bool) {
	f := strings.Fields(s)
	op := f[0]
	var m mem
	switch {
	case strings.HasPrefix(op, "ld"):
		m.load = true
	case strings.HasPrefix(op, "st"):
	default:
		return m, false
	}
	b := baseRe.FindStringSubmatch(s)
	if b == nil {
		return m, false
	}
	m.base = b[1]
	// regSize is a register's bytes and elements.
	regSize := func(r string) (int, int) {
		r = strings.TrimSpace(r)
		switch {
		case strings.HasSuffix(r, ".h"), strings.Contains(r, ".h["): // one 16-bit lane
			return 2, 1
		case strings.HasSuffix(r, ".s"), strings.Contains(r, "["): // one lane
			return 4, 1
		case strings.HasSuffix(r, ".4s"), strings.HasSuffix(r, ".16b"), strings.HasSuffix(r, ".2d"):
			return 16, 4
		case strings.HasSuffix(r, ".8h"):
			return 16, 8
		case strings.HasSuffix(r, ".4h"):
			return 8, 4
		case strings.HasSuffix(r, ".2s"):
			return 8, 2
		case r[0] == 'q':
			return 16, 4
		case r[0] == 'd':
			return 8, 2
		case r[0] == 's':
			return 4, 1
		case r[0] == 'h':
			return 2, 1
		}
		return 0, 0
	}
	add := func(r string, k int) {
		b, e := regSize(r)
		m.bytes += k * b
		m.elems += k * e
	}
	if l := regList.FindStringSubmatch(s); l != nil {
		for _, r := range strings.Split(l[1], ",") {
			add(r, 1)
		}
	} else {
		args := strings.Split(strings.TrimPrefix(s, op), ",")
		k := 1
		if op == "ldp" || op == "stp" {
			k = 2
		}
		add(args[0], k)
	}
	if strings.HasSuffix(op, "r") && strings.HasPrefix(op, "ld1") { // ld1r: one element to every lane
		m.bytes, m.elems = 4, 1
	}
	m.vector = m.elems >= 4 && !strings.HasPrefix(op, "ld1r")
	return m, m.bytes > 0
}

// elements is the row elements one iteration covers: the most elements
// accessed through one base register.
func elements(body []string) (int, bool) {
	per := map[string]int{}
	vector := false
	for _, s := range body {
		if m, ok := memOp(s); ok {
			per[m.base] += m.elems
			vector = vector || m.vector
		}
	}
	most := 0
	for _, e := range per {
		most = max(most, e)
	}
	return most, !vector
}

var (
	fmlaRe    = regexp.MustCompile(`^fmla (v\d+)\.4s, (v\d+\.4s), (v\d+\.4s)$`)
	vregRe    = regexp.MustCompile(`\b[vqsd](\d+)\b`)
	operandRe = regexp.MustCompile(`^([vqsd])\d+(.*)$`)
)

// withForwarding rewrites every loop-carried FMLA (its accumulator not
// written earlier in the iteration) as an FADD into the accumulator: the
// same pipes, one uop, and FADD's latency, which is what the late
// accumulator forwarding of the real cores gives an FMLA chain.
func withForwarding(body []string) []string {
	out := make([]string, len(body))
	written := map[string]bool{}
	for i, s := range body {
		out[i] = s
		if m := fmlaRe.FindStringSubmatch(s); m != nil && !written[m[1]] {
			out[i] = fmt.Sprintf("fadd %s.4s, %s.4s, %s", m[1], m[1], m[2])
		}
		for _, r := range writes(s) {
			written[r] = true
		}
	}
	return out
}

// writes lists the vector registers an instruction writes (as vN).
func writes(s string) []string {
	f := strings.Fields(s)
	if len(f) < 2 || strings.HasPrefix(f[0], "st") {
		return nil
	}
	if l := regList.FindStringSubmatch(s); l != nil && strings.HasPrefix(f[0], "ld") {
		var rs []string
		for _, m := range vregRe.FindAllStringSubmatch(l[1], -1) {
			rs = append(rs, "v"+m[1])
		}
		return rs
	}
	args := strings.Split(strings.TrimPrefix(s, f[0]), ",")
	var rs []string
	n := 1
	if f[0] == "ldp" {
		n = 2
	}
	for _, a := range args[:min(n, len(args))] {
		if m := vregRe.FindStringSubmatch(a); m != nil {
			rs = append(rs, "v"+m[1])
		}
	}
	return rs
}

// regOffset matches a register-offset address: the strided walk of a
// Columns loop, one vector per line.
var regOffset = regexp.MustCompile(`\[x\d+, x\d+\]`)

// floorBodies are synthetic iterations with the loop's loads, stores and
// vector ops and nothing else: no address increments, no loop counter, no
// dependency between instructions (an FMLA becomes the FMUL it costs like
// when not chained). One body per pair of load and store forms; the floor
// is the fastest. An LD1R (a value loaded into every lane) stays as it is
// in every form: it is a load and the broadcast a DUP would make. A loop
// that addresses a vector through a register offset walks columns, each
// vector stride bytes from the next, which no multi-register or pair form
// can load or store: its forms take one vector per instruction.
func floorBodies(body []string, scalar bool) map[string][]string {
	return floorParts(body).forms(scalar)
}

// floorCounts is what a floor body keeps of a loop: its bytes and
// elements loaded and stored, its LD1Rs and its vector ops (renamed to
// depend on nothing).
type floorCounts struct {
	loadB, storeB, loadE, storeE int
	repl, fp                     []string
	strided                      bool
}

func floorParts(body []string) floorCounts {
	var loadB, storeB, loadE, storeE int
	var ops, repl []string
	strided := false
	for _, s := range body {
		if m, ok := memOp(s); ok {
			strided = strided || regOffset.MatchString(s)
			if f := strings.Fields(s); strings.HasPrefix(f[0], "ld1r") {
				repl = append(repl, fmt.Sprintf("ld1r {v%d.4s}, [x%d]", 8+len(repl)%8, len(repl)%8))
				continue
			}
			if m.load {
				loadB += m.bytes
				loadE += m.elems
			} else {
				storeB += m.bytes
				storeE += m.elems
			}
			continue
		}
		f := strings.Fields(s)
		if len(f) < 2 || !vregRe.MatchString(s) || branch(f[0]) {
			continue
		}
		ops = append(ops, s)
	}
	var fp []string
	dst := 0
	for _, s := range ops {
		f := strings.Fields(s)
		op, args := f[0], strings.Split(strings.TrimPrefix(s, f[0]+" "), ", ")
		switch op {
		case "fmla":
			op = "fmul"
		case "fmadd", "fmsub":
			op, args = "fmul", args[:3]
		}
		for i := range args {
			n := 28 + i%2
			if i == 0 {
				n = 16 + dst%8
				dst++
			}
			if m := operandRe.FindStringSubmatch(args[i]); m != nil {
				args[i] = m[1] + strconv.Itoa(n) + m[2]
			}
		}
		fp = append(fp, op+" "+strings.Join(args, ", "))
	}
	return floorCounts{loadB, storeB, loadE, storeE, repl, fp, strided}
}

func (fc floorCounts) forms(scalar bool) map[string][]string {
	loadB, storeB, loadE, storeE, repl, fp, strided := fc.loadB, fc.storeB, fc.loadE, fc.storeE, fc.repl, fc.fp, fc.strided
	forms := map[string][]string{}
	if scalar {
		var b []string
		for i := 0; i < loadE; i++ {
			b = append(b, fmt.Sprintf("ldr s%d, [x0, #%d]", i%16, 4*i))
		}
		for i := 0; i < storeE; i++ {
			b = append(b, fmt.Sprintf("str s%d, [x1, #%d]", 24+i%4, 4*i))
		}
		forms["ldr/str"] = append(b, fp...)
		return forms
	}
	if strided {
		// Vector i from base x(i%8), stored from v24 to base x(8+i%8).
		for _, f := range []struct{ name, load, store string }{
			{"ld1/st1", "ld1 {v%d.4s}, [x%d]", "st1 {v24.4s}, [x%d]"},
			{"ldr/str", "ldr q%d, [x%d]", "str q24, [x%d]"},
		} {
			var b []string
			for i := 0; i < loadB/16; i++ {
				b = append(b, fmt.Sprintf(f.load, i%16, i%8))
			}
			for i := 0; i < storeB/16; i++ {
				b = append(b, fmt.Sprintf(f.store, 8+i%8))
			}
			name := f.name
			if storeB == 0 {
				name = strings.Split(name, "/")[0]
			}
			forms[name+" strided"] = append(append(b, repl...), fp...)
		}
		return forms
	}
	for ln, lf := range floorLoads {
		for sn, sf := range floorStores {
			if storeB == 0 && sn != "st1" {
				continue
			}
			name := ln
			if storeB > 0 {
				name += "/" + sn
			}
			b := append(lf(loadB/16), sf(storeB/16)...)
			forms[name] = append(append(b, repl...), fp...)
		}
	}
	return forms
}

// floorLoads and floorStores write q 128-bit loads or stores in each form
// of a floor body.
var floorLoads = map[string]func(q int) []string{
	"ld1": func(q int) []string {
		var b []string
		for i, r := 0, 0; q > 0; i++ {
			k := min(q, 4)
			b = append(b, fmt.Sprintf("ld1 {%s}, [x%d]", vlist(r%16, k), i%8))
			r += 4
			q -= k
		}
		return b
	},
	"ldp": func(q int) []string {
		var b []string
		for i := 0; q > 0; i++ {
			if q >= 2 {
				b = append(b, fmt.Sprintf("ldp q%d, q%d, [x0, #%d]", 2*i%16, 2*i%16+1, 32*i))
				q -= 2
			} else {
				b = append(b, fmt.Sprintf("ldr q%d, [x0, #%d]", 2*i%16, 32*i))
				q--
			}
		}
		return b
	},
}

var floorStores = map[string]func(q int) []string{
	"st1": func(q int) []string { return storeMix(q, 0) },
	"stp": func(q int) []string {
		b := storeMix(q-q%2, q/2)
		if q%2 != 0 {
			b = append(b, fmt.Sprintf("str q24, [x16, #%d]", 32*(q/2)))
		}
		return b
	},
}

// storeMix stores q 128-bit registers, pairs of them by STP q and the
// rest by ST1.
func storeMix(q, pairs int) []string {
	var b []string
	for i := 0; i < pairs; i++ {
		b = append(b, fmt.Sprintf("stp q24, q25, [x16, #%d]", 32*i))
	}
	q -= 2 * pairs
	for i := 0; q > 0; i++ {
		k := min(q, 4)
		b = append(b, fmt.Sprintf("st1 {%s}, [x%d]", vlist(24, k), 8+i%8))
		q -= k
	}
	return b
}

// mixBodies are floor bodies for one arm64 build on every core: two
// iterations of the loop (so that a mix can store half a pair per
// iteration) storing some register pairs by STP q and the rest by ST1,
// each named "<load form>/stp <pairs> of <all pairs>" and costing half the
// cycles it simulates at. The floors' pure forms take the models' fastest
// store form each, which differs between N1 (ST1) and N2/V1/V2 (STP); a
// mix is what one build can do between them. Loops with fewer than two
// stored registers, strided or scalar loops have no mix.
func mixBodies(body []string, scalar bool) map[string][]string {
	fc := floorParts(body)
	q := 2 * fc.storeB / 16
	if scalar || fc.strided || q < 4 {
		return nil
	}
	forms := map[string][]string{}
	for ln, lf := range floorLoads {
		for p := 1; 2*p < q; p++ {
			b := append(lf(2*fc.loadB/16), storeMix(q, p)...)
			b = append(append(b, fc.repl...), fc.repl...)
			b = append(append(b, fc.fp...), fc.fp...)
			forms[fmt.Sprintf("%s/stp %d of %d", ln, p, q/2)] = b
		}
	}
	return forms
}

// branch reports whether mnemonic op is a branch (B, B.cond, BL, BR, CBZ,
// TBNZ...): the vector bit-selects BIF, BIT, BSL and BIC are not.
func branch(op string) bool {
	switch op {
	case "b", "bl", "br", "blr", "ret", "cbz", "cbnz", "tbz", "tbnz":
		return true
	}
	return strings.HasPrefix(op, "b.")
}

func vlist(first, n int) string {
	rs := make([]string, n)
	for i := range rs {
		rs[i] = fmt.Sprintf("v%d.4s", first+i)
	}
	return strings.Join(rs, ", ")
}

// region is one body to simulate on every model.
type region struct {
	name string
	body []string
}

// cycles simulates the regions on one model and returns each one's cycles
// per iteration: the difference of 2000 and 1000 iterations, so that the
// pipeline's fill and drain drop out.
func (t *tools) cycles(mcpu string, regions []region) (map[string]float64, error) {
	var src bytes.Buffer
	for i, r := range regions {
		fmt.Fprintf(&src, "# LLVM-MCA-BEGIN %s\n.Lr%d:\n", r.name, i)
		for _, s := range r.body {
			fmt.Fprintf(&src, "%s\n", strings.ReplaceAll(s, "LOOP", fmt.Sprintf(".Lr%d", i)))
		}
		src.WriteString("# LLVM-MCA-END\n")
	}
	f := filepath.Join(t.work, mcpu+".s")
	if err := os.WriteFile(f, src.Bytes(), 0o644); err != nil {
		return nil, err
	}
	total := func(iters int) (map[string]int, error) {
		out, err := t.cmd(nil, t.mca, "-mtriple=aarch64", "-mcpu="+mcpu, fmt.Sprintf("-iterations=%d", iters),
			"-resource-pressure=false", "-instruction-info=false", f)
		if err != nil {
			return nil, err
		}
		res := map[string]int{}
		name := ""
		for _, ln := range strings.Split(string(out), "\n") {
			if i := strings.Index(ln, "Code Region - "); i >= 0 {
				name = strings.TrimSpace(ln[i+len("Code Region - "):])
			}
			if v, ok := strings.CutPrefix(ln, "Total Cycles:"); ok {
				res[name], _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if len(res) != len(regions) {
			return nil, fmt.Errorf("llvm-mca %s: %d of %d regions", mcpu, len(res), len(regions))
		}
		return res, nil
	}
	a, err := total(1000)
	if err != nil {
		return nil, err
	}
	b, err := total(2000)
	if err != nil {
		return nil, err
	}
	c := map[string]float64{}
	for k := range a {
		c[k] = float64(b[k]-a[k]) / 1000
	}
	return c, nil
}

// forwarding reports, per model, whether the model already gives a chain
// of FMLAs into one accumulator late forwarding (less than FMLA's full
// latency between them).
func (t *tools) forwarding() (map[string]float64, error) {
	chain := map[string]float64{}
	for _, c := range cpus {
		r, err := t.cycles(c.mcpu, []region{{"chain", []string{"fmla v0.4s, v1.4s, v2.4s"}}})
		if err != nil {
			return nil, err
		}
		chain[c.name] = r["chain"]
	}
	return chain, nil
}

// modelForwards says whether a chained FMLA issues faster than FMLA's 4
// cycles of latency in the model.
func modelForwards(chain float64) bool { return chain < 3 }

func (t *tools) simulate(loops []*loop, chain map[string]float64) error {
	uniq := map[string]*loop{}
	var keys []string
	for _, l := range loops {
		if _, ok := uniq[l.key]; !ok {
			uniq[l.key] = l
			keys = append(keys, l.key)
		}
	}
	for _, c := range cpus {
		var regions []region
		for i, k := range keys {
			l := uniq[k]
			regions = append(regions, region{fmt.Sprintf("l%d", i), l.body})
			if !modelForwards(chain[c.name]) {
				regions = append(regions, region{fmt.Sprintf("l%dfwd", i), withForwarding(l.body)})
			}
			forms := floorBodies(l.body, l.scalar)
			for _, fname := range sortedKeys(forms) {
				regions = append(regions, region{fmt.Sprintf("l%dfloor_%s", i, strings.ReplaceAll(fname, "/", "_")), forms[fname]})
			}
			mixes := mixBodies(l.body, l.scalar)
			for j, fname := range sortedKeys(mixes) {
				regions = append(regions, region{fmt.Sprintf("l%dmix%d", i, j), mixes[fname]})
			}
		}
		res, err := t.cycles(c.mcpu, regions)
		if err != nil {
			return err
		}
		for i, k := range keys {
			l := uniq[k]
			e := &estimate{raw: res[fmt.Sprintf("l%d", i)], forms: map[string]float64{}}
			e.fwd = e.raw
			if v, ok := res[fmt.Sprintf("l%dfwd", i)]; ok {
				e.fwd = v
			}
			forms := floorBodies(l.body, l.scalar)
			for _, fname := range sortedKeys(forms) {
				v := res[fmt.Sprintf("l%dfloor_%s", i, strings.ReplaceAll(fname, "/", "_"))]
				if e.floorForm == "" || v < e.floor {
					e.floor, e.floorForm = v, fname
				}
				e.forms[fname] = v
			}
			for j, fname := range sortedKeys(mixBodies(l.body, l.scalar)) {
				e.forms[fname] = res[fmt.Sprintf("l%dmix%d", i, j)] / 2
			}
			l.res[c.name] = e
		}
	}
	for _, l := range loops {
		l.res = uniq[l.key].res
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
