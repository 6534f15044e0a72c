package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestElements(t *testing.T) {
	for _, c := range []struct {
		body   []string
		el     int
		scalar bool
	}{
		{[]string{"ld1 { v4.4s, v5.4s, v6.4s, v7.4s }, [x4], #64", "fmla v0.4s, v4.4s, v4.4s", "subs x5, x5, #1", "b.ne LOOP"}, 16, false},
		// Two streams of 16 elements, one store: still 16 a row.
		{[]string{"ld1 { v0.4s, v1.4s, v2.4s, v3.4s }, [x5], #64", "ld1 { v4.4s, v5.4s, v6.4s, v7.4s }, [x6], #64", "st1 { v0.4s, v1.4s, v2.4s, v3.4s }, [x4], #64"}, 16, false},
		{[]string{"ldp q0, q1, [x0]", "ldr q2, [x1]"}, 8, false},
		{[]string{"ldr s0, [x4], #4", "fadd s1, s1, s0"}, 1, true},
		// Columns: one vector, the cursor stepping by a stride.
		{[]string{"ld1 { v1.4s }, [x6]", "add x6, x6, x9"}, 4, false},
		// Half precision: 16-bit elements, two to the byte count's four.
		{[]string{"ld1 { v6.8h, v7.8h }, [x5], #32", "st1 { v0.4h, v1.4h }, [x4], #16"}, 16, false},
		{[]string{"ld1 { v4.h }[0], [x8], #2", "fsub s4, s4, s24"}, 1, true},
		// STP q's offset form, the base stepped by an add.
		{[]string{"ld1 { v0.4s, v1.4s, v2.4s, v3.4s }, [x5], #64", "stp q0, q1, [x4]", "stp q2, q3, [x4, #32]", "add x4, x4, #64"}, 16, false},
	} {
		el, scalar := elements(c.body)
		if el != c.el || scalar != c.scalar {
			t.Errorf("elements(%q) = %d, %v; want %d, %v", c.body, el, scalar, c.el, c.scalar)
		}
	}
}

func TestWithForwarding(t *testing.T) {
	body := []string{
		"ld1 { v4.4s, v5.4s, v6.4s, v7.4s }, [x4], #64",
		"fmla v0.4s, v4.4s, v4.4s", // loop-carried: v0 not written before
		"fmla v5.4s, v1.4s, v2.4s", // v5 was just loaded: not a chain
	}
	want := []string{body[0], "fadd v0.4s, v0.4s, v4.4s", body[2]}
	if got := withForwarding(body); !reflect.DeepEqual(got, want) {
		t.Errorf("withForwarding = %q, want %q", got, want)
	}
}

func TestParseDump(t *testing.T) {
	// An outer loop around two inner ones, the second entered again from
	// a later branch (as the chunked sums are): two innermost loops.
	dump := `TEXT out/p.pNeonK16(SB) /x/p_arm64.s
  p_arm64.s:3	0x0	f10100c6	SUBS $64, R6, R6
  p_arm64.s:5	0x4	4cdf2884	VLD1.P 64(R4), [V4.S4, V5.S4, V6.S4, V7.S4]
  p_arm64.s:6	0x8	f10004a5	SUBS $1, R5, R5
  p_arm64.s:7	0xc	54ffffc1	BNE -2(PC)
  p_arm64.s:9	0x10	4cdf2884	VLD1.P 64(R4), [V4.S4, V5.S4, V6.S4, V7.S4]
  p_arm64.s:10	0x14	54ffffe1	BNE -1(PC)
  p_arm64.s:11	0x18	b5ffffc5	CBNZ R5, -2(PC)
  p_arm64.s:12	0x1c	54fffe61	BNE -7(PC)
TEXT out/p.pOther(SB) /x/p_arm64.s
  p_arm64.s:20	0x20	54ffffe1	BNE -1(PC)
`
	src := strings.Split("row:\n\nSUBS\niter:\nVLD1\nSUBS\nBNE\nnext:\nVLD1\nBNE\nCBNZ\nBNE", "\n")
	fns, err := parseDump("p", dump, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(fns) != 1 || fns[0].name != "K16" || fns[0].h != 16 {
		t.Fatalf("functions %+v, want K16 alone", fns)
	}
	var got [][3]any
	for _, l := range fns[0].loops {
		got = append(got, [3]any{l.start, l.end, l.label})
	}
	want := [][3]any{{1, 3, "iter"}, {4, 5, "next"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("loops %v, want %v", got, want)
	}
}

func TestFloorBodies(t *testing.T) {
	body := []string{
		"ld1 { v0.4s, v1.4s, v2.4s, v3.4s }, [x5], #64",
		"fmla v4.4s, v0.4s, v8.4s",
		"st1 { v4.4s }, [x4], #16",
		"subs x7, x7, #1",
		"b.ne LOOP",
	}
	forms := floorBodies(body, false)
	want := map[string][]string{
		"ld1/st1": {"ld1 {v0.4s, v1.4s, v2.4s, v3.4s}, [x0]", "st1 {v24.4s}, [x8]", "fmul v16.4s, v29.4s, v28.4s"},
		"ld1/stp": {"ld1 {v0.4s, v1.4s, v2.4s, v3.4s}, [x0]", "str q24, [x16, #0]", "fmul v16.4s, v29.4s, v28.4s"},
		"ldp/st1": {"ldp q0, q1, [x0, #0]", "ldp q2, q3, [x0, #32]", "st1 {v24.4s}, [x8]", "fmul v16.4s, v29.4s, v28.4s"},
		"ldp/stp": {"ldp q0, q1, [x0, #0]", "ldp q2, q3, [x0, #32]", "str q24, [x16, #0]", "fmul v16.4s, v29.4s, v28.4s"},
	}
	if !reflect.DeepEqual(forms, want) {
		t.Errorf("floorBodies = %q\nwant %q", forms, want)
	}
}

// A Columns loop: element 0 at the cursor, element 1 a stride on through a
// register offset, a Param broadcast by LD1R, a store through an address.
// The bit-selects of a bf16 store's NaN case cost like any vector op; only
// the loop's branch leaves the floor.
func TestFloorBodiesSelects(t *testing.T) {
	body := []string{
		"ld1 { v0.4s }, [x5], #16",
		"bif v4.16b, v23.16b, v22.16b",
		"bsl v5.16b, v0.16b, v1.16b",
		"cbnz x7, LOOP",
		"b.ne LOOP",
	}
	got := floorBodies(body, false)["ld1"]
	want := []string{"ld1 {v0.4s}, [x0]", "bif v16.16b, v29.16b, v28.16b", "bsl v17.16b, v29.16b, v28.16b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("floorBodies = %q\nwant %q", got, want)
	}
}

func TestFloorBodiesStrided(t *testing.T) {
	body := []string{
		"ld1r { v4.4s }, [x9], #4",
		"ld1 { v0.4s }, [x7]",
		"ldr q1, [x7, x5]",
		"fmla v4.4s, v0.4s, v8.4s",
		"st1 { v4.4s }, [x6]",
		"add x13, x6, x5",
		"st1 { v5.4s }, [x13]",
		"subs x7, x7, #1",
		"b.ne LOOP",
	}
	forms := floorBodies(body, false)
	want := map[string][]string{
		"ld1/st1 strided": {"ld1 {v0.4s}, [x0]", "ld1 {v1.4s}, [x1]", "st1 {v24.4s}, [x8]", "st1 {v24.4s}, [x9]", "ld1r {v8.4s}, [x0]", "fmul v16.4s, v29.4s, v28.4s"},
		"ldr/str strided": {"ldr q0, [x0]", "ldr q1, [x1]", "str q24, [x8]", "str q24, [x9]", "ld1r {v8.4s}, [x0]", "fmul v16.4s, v29.4s, v28.4s"},
	}
	if !reflect.DeepEqual(forms, want) {
		t.Errorf("floorBodies = %q\nwant %q", forms, want)
	}
}

func TestRowKernel(t *testing.T) {
	fn := func(body ...string) *function {
		f := &function{h: 4096}
		f.loops = []*loop{{fn: f, body: body}}
		return f
	}
	for _, c := range []struct {
		fn   *function
		want bool
	}{
		{fn("ld1 { v0.4s, v1.4s, v2.4s, v3.4s }, [x5], #64", "st1 { v0.4s, v1.4s, v2.4s, v3.4s }, [x4], #64"), true},
		{fn("ld1 { v0.4s, v1.4s, v2.4s, v3.4s }, [x5], #64", "stp q0, q1, [x4]", "stp q2, q3, [x4, #32]", "add x4, x4, #64"), true},
		// The stored base never advances: not a pass over the row.
		{fn("ld1 { v0.4s, v1.4s, v2.4s, v3.4s }, [x5], #64", "stp q0, q1, [x4]", "add x6, x6, #64"), false},
		// Columns: a register offset.
		{fn("ldr q1, [x6, x9]", "add x6, x6, #16"), false},
	} {
		if got := rowKernel(c.fn); got != c.want {
			t.Errorf("rowKernel(%q) = %v, want %v", c.fn.loops[0].body, got, c.want)
		}
	}
}

// A loop storing 4 registers an iteration: two iterations store 8, 4 pairs;
// the mixes are 1 to 3 of them by STP, the rest by ST1, and repeat the
// loads and vector ops twice.
func TestMixBodies(t *testing.T) {
	body := []string{
		"ld1 { v0.4s, v1.4s, v2.4s, v3.4s }, [x5], #64",
		"fmul v0.4s, v0.4s, v26.4s",
		"st1 { v0.4s, v1.4s, v2.4s, v3.4s }, [x4], #64",
		"subs x7, x7, #1",
		"b.ne LOOP",
	}
	mixes := mixBodies(body, false)
	if len(mixes) != 6 {
		t.Fatalf("mixBodies: %d forms %q, want 6 (ld1, ldp x 1..3 pairs)", len(mixes), sortedKeys(mixes))
	}
	want := []string{
		"ld1 {v0.4s, v1.4s, v2.4s, v3.4s}, [x0]", "ld1 {v4.4s, v5.4s, v6.4s, v7.4s}, [x1]",
		"stp q24, q25, [x16, #0]", "stp q24, q25, [x16, #32]",
		"st1 {v24.4s, v25.4s, v26.4s, v27.4s}, [x8]",
		"fmul v16.4s, v29.4s, v28.4s", "fmul v16.4s, v29.4s, v28.4s",
	}
	if got := mixes["ld1/stp 2 of 4"]; !reflect.DeepEqual(got, want) {
		t.Errorf("mixBodies[ld1/stp 2 of 4] = %q\nwant %q", got, want)
	}
	// One stored register: no pair to mix; a scalar loop: none either.
	if m := mixBodies([]string{"ld1 { v0.4s }, [x5], #16", "st1 { v0.4s }, [x4], #16"}, false); len(m) != 0 {
		t.Errorf("mixBodies of one stored register = %q, want none", sortedKeys(m))
	}
	if m := mixBodies(body, true); len(m) != 0 {
		t.Errorf("mixBodies of a scalar loop = %q, want none", sortedKeys(m))
	}
}

// The best single form minimises the worst ratio to the models' floors:
// here the models' own floors disagree (N1 st1, the others stp), and a mix
// is better for all four than either pure form.
func TestOneBuild(t *testing.T) {
	cost := map[string][4]float64{ // N1, N2, V1, V2
		"ld1/st1":        {6, 6, 4, 4},
		"ld1/stp":        {8, 6, 3.33, 3.33},
		"ld1/stp 2 of 4": {7, 6, 3.67, 3.67},
	}
	l := &loop{res: map[string]*estimate{}}
	for i, c := range cpus {
		e := &estimate{forms: map[string]float64{}}
		for f, v := range cost {
			e.forms[f] = v[i]
		}
		e.floor = min(e.forms["ld1/st1"], e.forms["ld1/stp"])
		l.res[c.name] = e
	}
	form, bound, got := oneBuild(l)
	if form != "ld1/stp 2 of 4" || bound < 1.1666 || bound > 1.1667 || got["V1"] != 3.67 {
		t.Errorf("oneBuild = %q, %.4f, %v; want ld1/stp 2 of 4, 1.1667 (N1 7/6), V1 3.67", form, bound, got)
	}
	// Equal bounds keep the first form in name order (a pure one).
	for _, c := range cpus {
		l.res[c.name].forms["ld1/stp 2 of 4"] = l.res[c.name].forms["ld1/st1"]
	}
	if form, _, _ := oneBuild(l); form != "ld1/st1" {
		t.Errorf("oneBuild with a tie = %q, want ld1/st1", form)
	}
}

// TestMergeForms: an STP form's loops give its function the N2/V1/V2
// figures, N1 keeps the first form's, identical loops elsewhere keep
// theirs, and the STP form leaves the lists.
func TestMergeForms(t *testing.T) {
	est := func(v float64) *estimate { return &estimate{fwd: v, raw: v, floor: v} }
	shared := map[string]*estimate{}
	for _, c := range cpus {
		shared[c.name] = est(4)
	}
	first := &function{pkg: "p", name: "K8"}
	other := &function{pkg: "p", name: "L8"}
	stp := &function{pkg: "p", name: "K8" + pairsSuffix}
	first.loops = []*loop{{fn: first, label: "pass1main", el: 16, key: "st1", res: shared}}
	other.loops = []*loop{{fn: other, label: "pass1main", el: 16, key: "st1", res: shared}}
	sres := map[string]*estimate{}
	for _, c := range cpus {
		sres[c.name] = est(3)
	}
	stp.loops = []*loop{{fn: stp, label: "pass1main", el: 16, key: "stp", res: sres}}
	fns, loops, err := mergeForms([]*function{first, stp, other})
	if err != nil {
		t.Fatal(err)
	}
	if len(fns) != 2 || fns[0] != first || fns[1] != other || len(loops) != 2 {
		t.Fatalf("functions %v, %d loops; want K8, L8 and 2", fns, len(loops))
	}
	l := first.loops[0]
	if !first.pairs || !l.pairs {
		t.Error("K8 or its loop not marked as having an STP form")
	}
	for _, c := range cpus {
		want := 4.0
		if pairsCPUs[c.name] {
			want = 3
		}
		if l.res[c.name].fwd != want {
			t.Errorf("K8 on %s: %v, want %v", c.name, l.res[c.name].fwd, want)
		}
		if other.loops[0].res[c.name].fwd != 4 {
			t.Errorf("L8 on %s changed to %v", c.name, other.loops[0].res[c.name].fwd)
		}
	}
	if l.key == other.loops[0].key {
		t.Error("K8's merged loop groups with L8's first-form loop")
	}
	stp.loops[0].label = "pass2main"
	first.loops[0].res = shared
	if _, _, err := mergeForms([]*function{first, stp}); err == nil {
		t.Error("loops of different labels merged")
	}
}
