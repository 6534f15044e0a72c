package arm64asm

import (
	"fmt"
	"math"
)

// Inst is one line of a function body: an instruction, a label or a comment.
type Inst struct {
	Op      string    // mnemonic as Go spells it ("VLD1.P", "WORD"); "" for a label or comment line
	Args    []Operand // in Go assembler order
	Comment string    // trailing comment; the GNU mnemonic for WORD
	Label   Label     // a label definition when Op is ""

	wop wordOp // 1 + the encoded form, for WORD; 0 otherwise
}

// Func is one TEXT symbol being built. Misuse (a bad operand, an unknown
// label) is recorded and reported by File.Bytes, so that building code
// reads straight through, as with avo.
type Func struct {
	Name    string // Go symbol without the package's middle dot
	Doc     []string
	ArgSize int // bytes of arguments, 8 per pointer or int
	insts   []Inst
	err     error
}

func (f *Func) fail(err error) {
	if f.err == nil {
		f.err = fmt.Errorf("arm64asm: %s: %w", f.Name, err)
	}
}

func (f *Func) failf(format string, args ...any) { f.fail(fmt.Errorf(format, args...)) }

// Insts returns the body built so far.
func (f *Func) Insts() []Inst { return f.insts }

// Err is the first misuse recorded, if any.
func (f *Func) Err() error { return f.err }

func (f *Func) emit(op string, args ...Operand) {
	for _, a := range args {
		f.check(op, a)
	}
	f.insts = append(f.insts, Inst{Op: op, Args: args})
}

// reserved lists the general registers Go code must not clobber or that
// the platform owns: R18 (platform), R26 (closure context), R27 (the
// assembler's temporary), R28 (g), R29 (frame pointer), R30 (link).
func reserved(r Reg) bool { return r == 18 || (r >= 26 && r <= 30) }

func (f *Func) check(op string, a Operand) {
	switch a := a.(type) {
	case Reg:
		if a > ZR || reserved(a) {
			f.failf("%s: register %s is reserved or invalid", op, a.asm())
		}
	case Mem:
		if a.Base == ZR || a.Base > ZR || reserved(a.Base) {
			f.failf("%s: base register %s is reserved or invalid", op, a.Base.asm())
		}
	case FReg:
		if a > 31 {
			f.failf("%s: vector register out of range", op)
		}
	case VArr:
		if a.Reg > 31 {
			f.failf("%s: vector register out of range", op)
		}
	case VElem:
		if a.Reg > 31 || a.Index > 3 {
			f.failf("%s: bad lane %s", op, a.asm())
		}
	case HElem:
		if a.Reg > 31 || a.Index > 7 {
			f.failf("%s: bad lane %s", op, a.asm())
		}
	case QPair:
		if a.A > 31 || a.B > 31 {
			f.failf("%s: vector register out of range", op)
		}
	case VList:
		if a.Len < 1 || a.Len > 4 || a.First > 31 {
			f.failf("%s: register list of %d from V%d", op, a.Len, a.First)
		}
	}
}

// Label defines l at the current position.
func (f *Func) Label(l Label) { f.insts = append(f.insts, Inst{Label: l}) }

// Comment adds a comment line, for a reader of the generated file.
func (f *Func) Comment(text string) { f.insts = append(f.insts, Inst{Comment: text}) }

// General-purpose instructions.

// MOVD moves a 64-bit argument, register or constant into d.
func (f *Func) MOVD(src Operand, d Reg) {
	switch src.(type) {
	case Param, Reg, Imm:
	default:
		f.failf("MOVD: unsupported source %s", src.asm())
	}
	f.emit("MOVD", src, d)
}

// MOVW sets the low 32 bits of d to a constant (and clears the rest).
func (f *Func) MOVW(src Operand, d Reg) {
	switch src := src.(type) {
	case Hex:
	case Imm:
		if src < math.MinInt32 || src > math.MaxUint32 {
			f.failf("MOVW: constant %d does not fit 32 bits", int64(src))
		}
	default:
		f.failf("MOVW: unsupported source %s", src.asm())
	}
	f.emit("MOVW", src, d)
}

func (f *Func) arith(op string, a Operand, n, d Reg) {
	switch a.(type) {
	case Imm, Reg:
	default:
		f.failf("%s: unsupported operand %s", op, a.asm())
	}
	f.emit(op, a, n, d)
}

// ADD: d = n + a.
func (f *Func) ADD(a Operand, n, d Reg) { f.arith("ADD", a, n, d) }

// SUB: d = n - a.
func (f *Func) SUB(a Operand, n, d Reg) { f.arith("SUB", a, n, d) }

// SUBS: d = n - a, setting the flags.
func (f *Func) SUBS(a Operand, n, d Reg) { f.arith("SUBS", a, n, d) }

// AND: d = n & a.
func (f *Func) AND(a Operand, n, d Reg) { f.arith("AND", a, n, d) }

// MUL: d = n * m (the low 64 bits).
func (f *Func) MUL(m, n, d Reg) { f.emit("MUL", m, n, d) }

// MOVDParam stores r into the Go argument or result slot p, name+off(FP)
// (a result is spelled ret+off(FP) when the Go declaration leaves it
// unnamed, as go vet's asmdecl expects).
func (f *Func) MOVDParam(r Reg, p Param) {
	if p.Off < 0 || p.Off%8 != 0 {
		f.failf("MOVD: slot %s is not an 8-byte aligned argument", p.asm())
	}
	f.emit("MOVD", r, p)
}

// LSR: d = n >> s (logical).
func (f *Func) LSR(s Imm, n, d Reg) { f.emit("LSR", s, n, d) }

// LSL: d = n << s.
func (f *Func) LSL(s Imm, n, d Reg) { f.emit("LSL", s, n, d) }

// CBZ branches to l when r is zero.
func (f *Func) CBZ(r Reg, l Label) { f.emit("CBZ", r, l) }

// CBNZ branches to l when r is not zero.
func (f *Func) CBNZ(r Reg, l Label) { f.emit("CBNZ", r, l) }

// BNE branches to l when the last flag-setting result was not zero.
func (f *Func) BNE(l Label) { f.emit("BNE", l) }

// BLT branches to l when the last flag-setting result was less than
// (N != V). After FCMPS this means less than or unordered: an unordered
// compare (a NaN operand) sets N=0, Z=0, C=1, V=1.
func (f *Func) BLT(l Label) { f.emit("BLT", l) }

// BHI branches to l when the last flag-setting result was higher (C=1 and
// Z=0). After FCMPS this means greater than or unordered.
func (f *Func) BHI(l Label) { f.emit("BHI", l) }

// BVS branches to l when the overflow flag is set: after FCMPS, exactly
// when the compare was unordered (a NaN operand).
func (f *Func) BVS(l Label) { f.emit("BVS", l) }

// B branches to l.
func (f *Func) B(l Label) { f.emit("B", l) }

// SysReg is a system register MRS reads.
type SysReg string

func (s SysReg) asm() string { return string(s) }

// MIDR is MIDR_EL1, the core's implementer, part number and revision.
// EL0 reads it only where the kernel traps and emulates the read (Linux
// with HWCAP_CPUID: x/sys/cpu's ARM64.HasCPUID); elsewhere it faults.
const MIDR SysReg = "MIDR_EL1"

// MRS reads system register s into d.
func (f *Func) MRS(s SysReg, d Reg) {
	if s != MIDR {
		f.failf("MRS: system register %s not offered", s)
	}
	f.emit("MRS", s, d)
}

// RET returns to the caller.
func (f *Func) RET() { f.emit("RET") }

// Vector memory instructions.

// VLD1 loads l's registers from consecutive memory at m.
func (f *Func) VLD1(m Mem, l VList) {
	if m.Off != 0 {
		f.failf("VLD1: no offset addressing, got %s", m.asm())
	}
	f.emit("VLD1", m, l)
}

// VLD1P loads l's registers from (base) and advances base past them.
func (f *Func) VLD1P(base Reg, l VList) {
	f.emit("VLD1.P", Mem{base, int32(l.Bytes())}, l)
}

// VLD1RP loads the float32 at (base) into every lane of the S4 register of
// l and advances base past it (LD1R, post-index).
func (f *Func) VLD1RP(base Reg, l VList) {
	if l.Len != 1 || l.Arr != S4 {
		f.failf("VLD1R.P: want one S4 register")
	}
	f.emit("VLD1R.P", Mem{base, 4}, l)
}

// VST1 stores l's registers to consecutive memory at m.
func (f *Func) VST1(l VList, m Mem) {
	if m.Off != 0 {
		f.failf("VST1: no offset addressing, got %s", m.asm())
	}
	f.emit("VST1", l, m)
}

// VST1P stores l's registers at (base) and advances base past them.
func (f *Func) VST1P(l VList, base Reg) {
	f.emit("VST1.P", l, Mem{base, int32(l.Bytes())})
}

// FSTPQ stores the 128-bit registers a and b to m and m+16 (STP q, signed
// offset: a multiple of 16 in [-1024, 1008]).
func (f *Func) FSTPQ(a, b VReg, m Mem) {
	if m.Off%16 != 0 || m.Off < -1024 || m.Off > 1008 {
		f.failf("FSTPQ: offset %d not a multiple of 16 in [-1024, 1008]", m.Off)
	}
	f.emit("FSTPQ", QPair{a, b}, m)
}

// VLD1Lane loads the 16-bit value at m into lane e, leaving the others.
func (f *Func) VLD1Lane(m Mem, e HElem) {
	if m.Off != 0 {
		f.failf("VLD1: no offset addressing, got %s", m.asm())
	}
	f.emit("VLD1", m, e)
}

// VLD1LaneP loads the 16-bit value at (base) into lane e and advances base
// past it.
func (f *Func) VLD1LaneP(base Reg, e HElem) { f.emit("VLD1.P", Mem{base, 2}, e) }

// VST1Lane stores lane e's 16 bits at m.
func (f *Func) VST1Lane(e HElem, m Mem) {
	if m.Off != 0 {
		f.failf("VST1: no offset addressing, got %s", m.asm())
	}
	f.emit("VST1", e, m)
}

// VST1LaneP stores lane e's 16 bits at (base) and advances base past them.
func (f *Func) VST1LaneP(e HElem, base Reg) { f.emit("VST1.P", e, Mem{base, 2}) }

// Vector instructions Go's assembler has.

// VORR: d = n | m, bitwise.
func (f *Func) VORR(m, n, d VArr) {
	if !sameArr(m, n, d) || (d.Arr != B8 && d.Arr != B16) {
		f.failf("VORR: want B8 or B16 operands, got %s, %s, %s", m.asm(), n.asm(), d.asm())
	}
	f.emit("VORR", m, n, d)
}

// VBIF keeps d's bits where m's are set and takes n's where they are
// clear: d = m ? d : n, bitwise.
func (f *Func) VBIF(m, n, d VArr) {
	if !sameArr(m, n, d) || (d.Arr != B8 && d.Arr != B16) {
		f.failf("VBIF: want B8 or B16 operands, got %s, %s, %s", m.asm(), n.asm(), d.asm())
	}
	f.emit("VBIF", m, n, d)
}

// VADD: d = n + m, lane-wise integer addition (S4: 32-bit lanes).
func (f *Func) VADD(m, n, d VArr) {
	if !sameArr(m, n, d) || d.Arr != S4 {
		f.failf("VADD: want S4 operands, got %s, %s, %s", m.asm(), n.asm(), d.asm())
	}
	f.emit("VADD", m, n, d)
}

// VSHL: d = n << s, each 32-bit lane (S4), 0 <= s <= 31.
func (f *Func) VSHL(s Imm, n, d VArr) {
	if !sameArr(n, d) || d.Arr != S4 || s < 0 || s > 31 {
		f.failf("VSHL: want S4 operands and a shift of 0 to 31, got $%d, %s, %s", int64(s), n.asm(), d.asm())
	}
	f.emit("VSHL", s, n, d)
}

// VUSRA: d += n >> s (logical), each 32-bit lane (S4), 1 <= s <= 32.
func (f *Func) VUSRA(s Imm, n, d VArr) {
	if !sameArr(n, d) || d.Arr != S4 || s < 1 || s > 32 {
		f.failf("VUSRA: want S4 operands and a shift of 1 to 32, got $%d, %s, %s", int64(s), n.asm(), d.asm())
	}
	f.emit("VUSRA", s, n, d)
}

// VUZP2 puts the odd-numbered 16-bit lanes of n, then those of m, in d
// (H8): the upper halves of the 32-bit lanes of n and m.
func (f *Func) VUZP2(m, n, d VArr) {
	if !sameArr(m, n, d) || d.Arr != H8 {
		f.failf("VUZP2: want H8 operands, got %s, %s, %s", m.asm(), n.asm(), d.asm())
	}
	f.emit("VUZP2", m, n, d)
}

// VZIP1 interleaves the lower 16-bit lanes of n and m into d (H8): n0,
// m0, n1, m1...; with n zero, each 32-bit lane is m's lane shifted left
// 16 (bfloat16 to float32).
func (f *Func) VZIP1(m, n, d VArr) {
	if !sameArr(m, n, d) || d.Arr != H8 {
		f.failf("VZIP1: want H8 operands, got %s, %s, %s", m.asm(), n.asm(), d.asm())
	}
	f.emit("VZIP1", m, n, d)
}

// VZIP2 is VZIP1 of the upper 16-bit lanes (4 to 7) of n and m.
func (f *Func) VZIP2(m, n, d VArr) {
	if !sameArr(m, n, d) || d.Arr != H8 {
		f.failf("VZIP2: want H8 operands, got %s, %s, %s", m.asm(), n.asm(), d.asm())
	}
	f.emit("VZIP2", m, n, d)
}

// VSUB: d = n - m, lane-wise integer subtraction (S4: 32-bit lanes).
func (f *Func) VSUB(m, n, d VArr) {
	if !sameArr(m, n, d) || d.Arr != S4 {
		f.failf("VSUB: want S4 operands, got %s, %s, %s", m.asm(), n.asm(), d.asm())
	}
	f.emit("VSUB", m, n, d)
}

// VCMTST: each 32-bit lane of d = all ones when n & m is not zero, else
// zero (S4).
func (f *Func) VCMTST(m, n, d VArr) {
	if !sameArr(m, n, d) || d.Arr != S4 {
		f.failf("VCMTST: want S4 operands, got %s, %s, %s", m.asm(), n.asm(), d.asm())
	}
	f.emit("VCMTST", m, n, d)
}

// VEOR: d = n ^ m, bitwise (VEOR v, v, v zeroes v).
func (f *Func) VEOR(m, n, d VArr) {
	if !sameArr(m, n, d) || (d.Arr != B8 && d.Arr != B16) {
		f.failf("VEOR: want B8 or B16 operands, got %s, %s, %s", m.asm(), n.asm(), d.asm())
	}
	f.emit("VEOR", m, n, d)
}

// VAND: d = n & m, bitwise.
func (f *Func) VAND(m, n, d VArr) {
	if !sameArr(m, n, d) || (d.Arr != B8 && d.Arr != B16) {
		f.failf("VAND: want B8 or B16 operands, got %s, %s, %s", m.asm(), n.asm(), d.asm())
	}
	f.emit("VAND", m, n, d)
}

// VMOVLane copies one 64-bit lane of a vector register to a general
// register (Go's VMOV Vn.D[i], Rd; umov).
func (f *Func) VMOVLane(e DElem, d Reg) {
	if e.Reg > 31 || e.Index > 1 {
		f.failf("VMOV: bad lane %s", e.asm())
	}
	f.emit("VMOV", e, d)
}

// VMOV copies a whole register (B16) or its low half (B8).
func (f *Func) VMOV(src, d VArr) {
	if !sameArr(src, d) || (d.Arr != B8 && d.Arr != B16) {
		f.failf("VMOV: want B8 or B16 operands, got %s, %s", src.asm(), d.asm())
	}
	f.emit("VMOV", src, d)
}

// VDUP broadcasts one float32 lane to every lane of d (S2 or S4).
func (f *Func) VDUP(e VElem, d VArr) {
	if d.Arr != S2 && d.Arr != S4 {
		f.failf("VDUP: want an S2 or S4 destination, got %s", d.asm())
	}
	f.emit("VDUP", e, d)
}

// VFMLA: d += n * m, lane-wise, one rounding.
func (f *Func) VFMLA(m, n, d VArr) {
	if !sameArr(m, n, d) || (d.Arr != S2 && d.Arr != S4 && d.Arr != D2) {
		f.failf("VFMLA: want S2, S4 or D2 operands, got %s, %s, %s", m.asm(), n.asm(), d.asm())
	}
	f.emit("VFMLA", m, n, d)
}

func sameArr(vs ...VArr) bool {
	for _, v := range vs[1:] {
		if v.Arr != vs[0].Arr {
			return false
		}
	}
	return true
}

// Scalar float32 instructions.

// FMOVS moves a float32: load (Mem or a float32 argument to FReg), store
// (FReg to Mem), between F registers, or from the low 32 bits of a
// general register.
func (f *Func) FMOVS(src, dst Operand) { f.fmovs("FMOVS", src, dst) }

// FMOVSP is FMOVS with post-index addressing: the load or store uses
// (Base) and then adds Off to Base.
func (f *Func) FMOVSP(src, dst Operand) {
	_, l := src.(Mem)
	_, s := dst.(Mem)
	if !l && !s {
		f.failf("FMOVS.P: needs a memory operand")
	}
	f.fmovs("FMOVS.P", src, dst)
}

func (f *Func) fmovs(op string, src, dst Operand) {
	switch src.(type) {
	case Mem, Reg, FReg:
	case Param:
		if _, ok := dst.(FReg); !ok || op != "FMOVS" {
			f.failf("%s: %s to %s", op, src.asm(), dst.asm())
		}
	default:
		f.failf("%s: unsupported source %s", op, src.asm())
	}
	switch dst.(type) {
	case Mem, FReg:
	default:
		f.failf("%s: unsupported destination %s", op, dst.asm())
	}
	_, fromMem := src.(Mem)
	_, toMem := dst.(Mem)
	_, fromF := src.(FReg)
	if (fromMem && toMem) || (toMem && !fromF) {
		f.failf("%s: %s to %s", op, src.asm(), dst.asm())
	}
	f.emit(op, src, dst)
}

// FADDS: d = n + m.
func (f *Func) FADDS(m, n, d FReg) { f.emit("FADDS", m, n, d) }

// FSUBS: d = n - m.
func (f *Func) FSUBS(m, n, d FReg) { f.emit("FSUBS", m, n, d) }

// FMULS: d = n * m.
func (f *Func) FMULS(m, n, d FReg) { f.emit("FMULS", m, n, d) }

// FDIVS: d = n / m, correctly rounded.
func (f *Func) FDIVS(m, n, d FReg) { f.emit("FDIVS", m, n, d) }

// FSQRTS: d = sqrt(n), correctly rounded.
func (f *Func) FSQRTS(n, d FReg) { f.emit("FSQRTS", n, d) }

// FMADDS: d = n*m + a with one rounding.
func (f *Func) FMADDS(m, a, n, d FReg) { f.emit("FMADDS", m, a, n, d) }

// FCMPS compares n with m and sets the flags (fcmp Sn, Sm): n < m gives
// N=1 (MI), n == m Z=1 C=1, n > m C=1 (GT), and unordered (either a NaN)
// C=1 V=1, the one outcome neither MI nor GT accepts.
func (f *Func) FCMPS(m, n FReg) { f.emit("FCMPS", m, n) }

// SCVTFS: d = float32(r) for a signed 64-bit r, rounded to nearest.
func (f *Func) SCVTFS(r Reg, d FReg) { f.emit("SCVTFS", r, d) }
