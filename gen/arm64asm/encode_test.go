package arm64asm

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requireTool returns the path of a tool an independent check needs. A
// missing tool skips the test, except in CI (NORMGEN_CI=1), where it fails.
func requireTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("%s not found (apt-get install -y %s)", name, pkg)
		if os.Getenv("NORMGEN_CI") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// form is one instruction the emitter prints as WORD, reached through its
// public method with operands r in the method's order.
type form struct {
	name string
	emit func(f *Func, r [3]VReg, a Arrangement)
	arrs []Arrangement // the arrangements the method accepts
	regs int           // how many register operands vary
}

var allArrs = []Arrangement{B8, B16, H4, H8, S2, S4, D1, D2}

var forms = []form{
	{"fadd", func(f *Func, r [3]VReg, a Arrangement) { f.VFADD(VArr{r[0], a}, VArr{r[1], a}, VArr{r[2], a}) }, []Arrangement{S2, S4, D2}, 3},
	{"fsub", func(f *Func, r [3]VReg, a Arrangement) { f.VFSUB(VArr{r[0], a}, VArr{r[1], a}, VArr{r[2], a}) }, []Arrangement{S2, S4, D2}, 3},
	{"fmul", func(f *Func, r [3]VReg, a Arrangement) { f.VFMUL(VArr{r[0], a}, VArr{r[1], a}, VArr{r[2], a}) }, []Arrangement{S2, S4, D2}, 3},
	{"faddp", func(f *Func, r [3]VReg, a Arrangement) { f.VFADDP(VArr{r[0], a}, VArr{r[1], a}, VArr{r[2], a}) }, []Arrangement{S2, S4, D2}, 3},
	{"fdiv", func(f *Func, r [3]VReg, a Arrangement) { f.VFDIV(VArr{r[0], a}, VArr{r[1], a}, VArr{r[2], a}) }, []Arrangement{S2, S4, D2}, 3},
	{"fcmge", func(f *Func, r [3]VReg, a Arrangement) { f.VFCMGE(VArr{r[0], a}, VArr{r[1], a}, VArr{r[2], a}) }, []Arrangement{S2, S4, D2}, 3},
	{"fsqrt", func(f *Func, r [3]VReg, a Arrangement) { f.VFSQRT(VArr{r[0], a}, VArr{r[1], a}) }, []Arrangement{S2, S4, D2}, 2},
	{"faddp scalar", func(f *Func, r [3]VReg, a Arrangement) { f.FADDP(VArr{r[0], a}, r[1].F()) }, []Arrangement{S2}, 2},
	{"fcmeq", func(f *Func, r [3]VReg, a Arrangement) { f.VFCMEQ(VArr{r[0], a}, VArr{r[1], a}, VArr{r[2], a}) }, []Arrangement{S2, S4, D2}, 3},
	// The half forms take their 16-bit side's arrangement: 4H, or 8H for
	// the "2" forms.
	{"fcvtl", func(f *Func, r [3]VReg, a Arrangement) { f.VFCVTL(VArr{r[0], a}, r[1].S4()) }, []Arrangement{H4, H8}, 2},
	{"fcvtn", func(f *Func, r [3]VReg, a Arrangement) { f.VFCVTN(r[0].S4(), VArr{r[1], a}) }, []Arrangement{H4, H8}, 2},
	{"shll", func(f *Func, r [3]VReg, a Arrangement) { f.VSHLL(VArr{r[0], a}, r[1].S4()) }, []Arrangement{H4, H8}, 2},
	{"shrn", func(f *Func, r [3]VReg, a Arrangement) { f.VSHRN(1+int(r[2])%16, r[0].S4(), VArr{r[1], a}) }, []Arrangement{H4}, 3},
	{"fmax", func(f *Func, r [3]VReg, a Arrangement) { f.VFMAX(VArr{r[0], a}, VArr{r[1], a}, VArr{r[2], a}) }, []Arrangement{S2, S4, D2}, 3},
	{"addhn", func(f *Func, r [3]VReg, a Arrangement) { f.VADDHN(r[0].S4(), r[1].S4(), VArr{r[2], a}) }, []Arrangement{H4, H8}, 3},
	{"ldr q register offset", func(f *Func, r [3]VReg, a Arrangement) { f.VLDRQ(gpOf(r[1]), gpOf(r[2]), VArr{r[0], a}) }, []Arrangement{S4}, 3},
}

// gpOf maps a register number of combos onto the general registers a
// kernel may use (R0-R17, R19-R25).
func gpOf(v VReg) Reg {
	r := Reg(v % 25)
	if r >= 18 {
		r++
	}
	return r
}

// combos is every register in every position (the others fixed but
// distinct), plus random triples.
func combos(n int) [][3]VReg {
	var out [][3]VReg
	for p := 0; p < n; p++ {
		for v := 0; v < 32; v++ {
			r := [3]VReg{VReg((v + 11) % 32), VReg((v + 22) % 32), VReg((v + 5) % 32)}
			r[p] = VReg(v)
			out = append(out, r)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 64; i++ {
		out = append(out, [3]VReg{VReg(rng.IntN(32)), VReg(rng.IntN(32)), VReg(rng.IntN(32))})
	}
	return out
}

func accepts(fm form, a Arrangement) bool {
	for _, x := range fm.arrs {
		if x == a {
			return true
		}
	}
	return false
}

// TestWordEncodings assembles the GNU mnemonic of every WORD the emitter
// can produce with binutils and compares the bytes with the emitter's word.
func TestWordEncodings(t *testing.T) {
	var words []Inst
	seen := map[wordOp]bool{}
	for _, fm := range forms {
		for _, a := range allArrs {
			for _, r := range combos(fm.regs) {
				f := &Func{Name: "t"}
				fm.emit(f, r, a)
				if !accepts(fm, a) {
					if f.Err() == nil {
						t.Fatalf("%s accepted arrangement %s, which the table does not list", fm.name, a)
					}
					break
				}
				if f.Err() != nil {
					t.Fatalf("%s %s %v: %v", fm.name, a, r, f.Err())
				}
				in := f.Insts()[0]
				if in.Op != "WORD" || in.wop == 0 {
					t.Fatalf("%s: got %q, want a WORD", fm.name, in.Op)
				}
				seen[in.wop-1] = true
				words = append(words, in)
			}
		}
	}
	for op := wordOp(0); op < numWordOps; op++ {
		if !seen[op] {
			t.Errorf("word form %d is not covered by the forms table", op)
		}
	}

	as := requireTool(t, "aarch64-linux-gnu-as", "binutils-aarch64-linux-gnu")
	objcopy := requireTool(t, "aarch64-linux-gnu-objcopy", "binutils-aarch64-linux-gnu")
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("\t.text\n")
	for _, in := range words {
		src.WriteString("\t" + in.Comment + "\n")
	}
	s, o, bin := filepath.Join(dir, "w.s"), filepath.Join(dir, "w.o"), filepath.Join(dir, "w.bin")
	if err := os.WriteFile(s, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{as, "-o", o, s}, {objcopy, "-O", "binary", "-j", ".text", o, bin}} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
		}
	}
	code, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if len(code) != 4*len(words) {
		t.Fatalf("binutils produced %d bytes for %d instructions", len(code), len(words))
	}
	bad := 0
	for i, in := range words {
		want := binary.LittleEndian.Uint32(code[4*i:])
		if got := uint32(in.Args[0].(Hex)); got != want {
			t.Errorf("%s: emitter %#08x, binutils %#08x", in.Comment, got, want)
			if bad++; bad > 20 {
				t.Fatal("too many mismatches")
			}
		}
	}
	t.Logf("%d WORD instructions checked against binutils", len(words))
}

func TestWordMisuse(t *testing.T) {
	f := &Func{Name: "t"}
	f.VFADD(VReg(1).S4(), VReg(2).S2(), VReg(3).S4())
	if f.Err() == nil {
		t.Error("mixed arrangements accepted")
	}
}
