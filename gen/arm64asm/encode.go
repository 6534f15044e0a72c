package arm64asm

import "fmt"

// Go's arm64 assembler has no floating-point vector arithmetic besides
// VFMLA/VFMLS (its VADD, VADDP and VADDV are integer instructions), so the
// emitter encodes these forms itself from the Arm ARM and prints them as
// WORD with the GNU mnemonic in a comment. encode_test.go assembles every
// form with binutils and compares the words.

// wordOp is one instruction form the emitter encodes itself.
type wordOp uint8

const (
	wFADD      wordOp = iota // FADD (vector), Advanced SIMD three same
	wFSUB                    // FSUB (vector)
	wFMUL                    // FMUL (vector)
	wFADDP                   // FADDP (vector)
	wFADDPScal               // FADDP (scalar): Sd = Vn.S[0] + Vn.S[1]
	wFDIV                    // FDIV (vector)
	wFCMGE                   // FCMGE (vector, register)
	wFSQRT                   // FSQRT (vector), Advanced SIMD two-register miscellaneous
	wLDRQReg                 // LDR (register, SIMD&FP), 128 bits: Qt = [Xn + Xm]
	wFCMEQ                   // FCMEQ (vector, register)
	wFCVTL                   // FCVTL, FCVTL2: 4H (or the upper 4H of 8H) to 4S
	wFCVTN                   // FCVTN, FCVTN2: 4S to 4H (or the upper 4H of 8H)
	wSHLL                    // SHLL, SHLL2 by 16: 4H (or the upper 4H of 8H) to 4S
	wSHRN                    // SHRN: 4S shifted right, narrowed to 4H
	wFMAX                    // FMAX (vector)
	wADDHN                   // ADDHN, ADDHN2: high halves of 4S sums to 4H (or the upper 4H of 8H)
	numWordOps
)

// threeSame holds the fixed bits of the "three same" float forms: U (bit
// 29), bit 23 (add/sub) and the opcode (bits 15..11), with bit 21 set.
var threeSame = map[wordOp]struct {
	base uint32
	gnu  string
}{
	wFADD:  {0x0e20d400, "fadd"},
	wFSUB:  {0x0ea0d400, "fsub"},
	wFMUL:  {0x2e20dc00, "fmul"},
	wFADDP: {0x2e20d400, "faddp"},
	wFDIV:  {0x2e20fc00, "fdiv"},
	wFCMGE: {0x2e20e400, "fcmge"},
	wFCMEQ: {0x0e20e400, "fcmeq"},
	wFMAX:  {0x0e20f400, "fmax"},
}

// encodeThreeSame encodes op Vd.T, Vn.T, Vm.T for T in 2S, 4S, 2D.
func encodeThreeSame(op wordOp, d, n, m VArr) (uint32, string, error) {
	f, ok := threeSame[op]
	if !ok {
		return 0, "", fmt.Errorf("arm64asm: wordOp %d is not a three-same form", op)
	}
	if d.Arr != n.Arr || d.Arr != m.Arr {
		return 0, "", fmt.Errorf("arm64asm: %s: arrangements differ: %s, %s, %s", f.gnu, d.asm(), n.asm(), m.asm())
	}
	var q, sz uint32
	switch d.Arr {
	case S2:
	case S4:
		q = 1
	case D2:
		q, sz = 1, 1
	default:
		return 0, "", fmt.Errorf("arm64asm: %s: arrangement %s is not 2S, 4S or 2D", f.gnu, d.Arr)
	}
	if d.Reg > 31 || n.Reg > 31 || m.Reg > 31 {
		return 0, "", fmt.Errorf("arm64asm: %s: register out of range", f.gnu)
	}
	w := f.base | q<<30 | sz<<22 | uint32(m.Reg)<<16 | uint32(n.Reg)<<5 | uint32(d.Reg)
	return w, fmt.Sprintf("%s %s, %s, %s", f.gnu, d.gnu(), n.gnu(), m.gnu()), nil
}

// encodeFADDPScalar encodes faddp Sd, Vn.2S (Advanced SIMD scalar pairwise, sz = 0).
func encodeFADDPScalar(d FReg, n VArr) (uint32, string, error) {
	if n.Arr != S2 {
		return 0, "", fmt.Errorf("arm64asm: faddp (scalar): arrangement %s is not 2S", n.Arr)
	}
	if d > 31 || n.Reg > 31 {
		return 0, "", fmt.Errorf("arm64asm: faddp (scalar): register out of range")
	}
	w := uint32(0x7e30d800) | uint32(n.Reg)<<5 | uint32(d)
	return w, fmt.Sprintf("faddp s%d, %s", d, n.gnu()), nil
}

// encodeFSQRT encodes fsqrt Vd.T, Vn.T for T in 2S, 4S, 2D (two-register
// miscellaneous: U=1, bit 23 set, opcode 11111).
func encodeFSQRT(d, n VArr) (uint32, string, error) {
	if d.Arr != n.Arr {
		return 0, "", fmt.Errorf("arm64asm: fsqrt: arrangements differ: %s, %s", d.asm(), n.asm())
	}
	var q, sz uint32
	switch d.Arr {
	case S2:
	case S4:
		q = 1
	case D2:
		q, sz = 1, 1
	default:
		return 0, "", fmt.Errorf("arm64asm: fsqrt: arrangement %s is not 2S, 4S or 2D", d.Arr)
	}
	if d.Reg > 31 || n.Reg > 31 {
		return 0, "", fmt.Errorf("arm64asm: fsqrt: register out of range")
	}
	w := uint32(0x2ea1f800) | q<<30 | sz<<22 | uint32(n.Reg)<<5 | uint32(d.Reg)
	return w, fmt.Sprintf("fsqrt %s, %s", d.gnu(), n.gnu()), nil
}

// encodeLDRQReg encodes ldr Qt, [Xn, Xm] (size 00, opc 11, option LSL
// with no shift). Go's assembler has no register-offset 128-bit load.
func encodeLDRQReg(t VArr, n, m Reg) (uint32, string, error) {
	if t.Arr != S4 {
		return 0, "", fmt.Errorf("arm64asm: ldr q: arrangement %s is not 4S", t.Arr)
	}
	if t.Reg > 31 || n >= ZR || m >= ZR || reserved(n) || reserved(m) {
		return 0, "", fmt.Errorf("arm64asm: ldr q: register out of range or reserved")
	}
	w := uint32(0x3ce06800) | uint32(m)<<16 | uint32(n)<<5 | uint32(t.Reg)
	return w, fmt.Sprintf("ldr q%d, [x%d, x%d]", t.Reg, n, m), nil
}

// halfForms holds the fixed bits of the forms between 16-bit and 32-bit
// lanes (two-register miscellaneous, size 0:sz of half to single), Q
// clear: the lower 4H; Q set selects the "2" form, the upper 4H of 8H.
var halfForms = map[wordOp]struct {
	base  uint32
	gnu   string
	widen bool // 4H -> 4S; else 4S -> 4H
}{
	wFCVTL: {0x0e217800, "fcvtl", true},
	wFCVTN: {0x0e216800, "fcvtn", false},
	wSHLL:  {0x2e613800, "shll", true},
}

// encodeHalf encodes op between the 4S register s and the 4H or 8H
// register h (8H: the "2" form, on h's upper half).
func encodeHalf(op wordOp, s, h VArr) (uint32, string, error) {
	f, ok := halfForms[op]
	if !ok {
		return 0, "", fmt.Errorf("arm64asm: wordOp %d is not a half-precision form", op)
	}
	if s.Arr != S4 || (h.Arr != H4 && h.Arr != H8) {
		return 0, "", fmt.Errorf("arm64asm: %s: want 4S and 4H or 8H, got %s, %s", f.gnu, s.asm(), h.asm())
	}
	if s.Reg > 31 || h.Reg > 31 {
		return 0, "", fmt.Errorf("arm64asm: %s: register out of range", f.gnu)
	}
	gnu, q := f.gnu, uint32(0)
	if h.Arr == H8 {
		gnu, q = gnu+"2", 1
	}
	d, n := s, h
	if !f.widen {
		d, n = h, s
	}
	w := f.base | q<<30 | uint32(n.Reg)<<5 | uint32(d.Reg)
	text := fmt.Sprintf("%s %s, %s", gnu, d.gnu(), n.gnu())
	if op == wSHLL {
		text += ", #16"
	}
	return w, text, nil
}

// encodeSHRN encodes shrn Vd.4H, Vn.4S, #shift, 1 <= shift <= 16 (shift
// by immediate: immh:immb = 32 - shift for 16-bit results).
func encodeSHRN(shift int, n, d VArr) (uint32, string, error) {
	if n.Arr != S4 || d.Arr != H4 {
		return 0, "", fmt.Errorf("arm64asm: shrn: want 4S to 4H, got %s, %s", n.asm(), d.asm())
	}
	if shift < 1 || shift > 16 || n.Reg > 31 || d.Reg > 31 {
		return 0, "", fmt.Errorf("arm64asm: shrn: shift %d or register out of range", shift)
	}
	w := uint32(0x0f008400) | uint32(32-shift)<<16 | uint32(n.Reg)<<5 | uint32(d.Reg)
	return w, fmt.Sprintf("shrn %s, %s, #%d", d.gnu(), n.gnu(), shift), nil
}

// encodeADDHN encodes addhn Vd.4H, Vn.4S, Vm.4S, or with d an 8H addhn2
// into its upper half (Advanced SIMD three different, size 01, opcode 0100).
func encodeADDHN(d, n, m VArr) (uint32, string, error) {
	if n.Arr != S4 || m.Arr != S4 || (d.Arr != H4 && d.Arr != H8) {
		return 0, "", fmt.Errorf("arm64asm: addhn: want 4S sources and a 4H or 8H result, got %s, %s, %s", d.asm(), n.asm(), m.asm())
	}
	if d.Reg > 31 || n.Reg > 31 || m.Reg > 31 {
		return 0, "", fmt.Errorf("arm64asm: addhn: register out of range")
	}
	gnu, q := "addhn", uint32(0)
	if d.Arr == H8 {
		gnu, q = "addhn2", 1
	}
	w := uint32(0x0e604000) | q<<30 | uint32(m.Reg)<<16 | uint32(n.Reg)<<5 | uint32(d.Reg)
	return w, fmt.Sprintf("%s %s, %s, %s", gnu, d.gnu(), n.gnu(), m.gnu()), nil
}

func (f *Func) word(op wordOp, w uint32, gnu string, err error) {
	if err != nil {
		f.fail(err)
		return
	}
	f.insts = append(f.insts, Inst{Op: "WORD", Args: []Operand{Hex(w)}, Comment: gnu, wop: op + 1})
}

// VFADD: d = n + m, lane-wise (FADD vector, as WORD).
func (f *Func) VFADD(m, n, d VArr) {
	w, s, err := encodeThreeSame(wFADD, d, n, m)
	f.word(wFADD, w, s, err)
}

// VFSUB: d = n - m, lane-wise (FSUB vector, as WORD).
func (f *Func) VFSUB(m, n, d VArr) {
	w, s, err := encodeThreeSame(wFSUB, d, n, m)
	f.word(wFSUB, w, s, err)
}

// VFMUL: d = n * m, lane-wise (FMUL vector, as WORD).
func (f *Func) VFMUL(m, n, d VArr) {
	w, s, err := encodeThreeSame(wFMUL, d, n, m)
	f.word(wFMUL, w, s, err)
}

// VFADDP: d = pairwise sums of n's lanes, then of m's (FADDP vector, as WORD).
func (f *Func) VFADDP(m, n, d VArr) {
	w, s, err := encodeThreeSame(wFADDP, d, n, m)
	f.word(wFADDP, w, s, err)
}

// FADDP: d = n.S[0] + n.S[1] for n a 2S arrangement (FADDP scalar, as WORD).
func (f *Func) FADDP(n VArr, d FReg) {
	w, s, err := encodeFADDPScalar(d, n)
	f.word(wFADDPScal, w, s, err)
}

// VFDIV: d = n / m, lane-wise, correctly rounded (FDIV vector, as WORD).
func (f *Func) VFDIV(m, n, d VArr) {
	w, s, err := encodeThreeSame(wFDIV, d, n, m)
	f.word(wFDIV, w, s, err)
}

// VFCMGE: each lane of d = all ones when n >= m, else zero; a NaN in
// either operand gives zero (FCMGE vector register form, as WORD).
func (f *Func) VFCMGE(m, n, d VArr) {
	w, s, err := encodeThreeSame(wFCMGE, d, n, m)
	f.word(wFCMGE, w, s, err)
}

// VFSQRT: d = sqrt(n), lane-wise, correctly rounded (FSQRT vector, as WORD).
func (f *Func) VFSQRT(n, d VArr) {
	w, s, err := encodeFSQRT(d, n)
	f.word(wFSQRT, w, s, err)
}

// VLDRQ loads d from base+index, index a byte offset in a register (LDR Q
// register offset, as WORD): the n-th element of a strided walk with one
// pointer, which VLD1 cannot address.
func (f *Func) VLDRQ(base, index Reg, d VArr) {
	w, s, err := encodeLDRQReg(d, base, index)
	f.word(wLDRQReg, w, s, err)
}

// VFCMEQ: each lane of d = all ones when n == m, else zero; VFCMEQ(v, v,
// d) is zero exactly in v's NaN lanes (FCMEQ vector register form, as WORD).
func (f *Func) VFCMEQ(m, n, d VArr) {
	w, s, err := encodeThreeSame(wFCMEQ, d, n, m)
	f.word(wFCMEQ, w, s, err)
}

// VFCVTL widens binary16 lanes to float32, exactly: n's lower 4H, or
// with n an 8H its upper 4H (FCVTL, FCVTL2, as WORD).
func (f *Func) VFCVTL(n, d VArr) {
	w, s, err := encodeHalf(wFCVTL, d, n)
	f.word(wFCVTL, w, s, err)
}

// VFCVTN rounds float32 lanes to binary16 under FPCR's rounding mode
// into d's lower 4H, or with d an 8H into its upper 4H, leaving the
// lower (FCVTN, FCVTN2, as WORD).
func (f *Func) VFCVTN(n, d VArr) {
	w, s, err := encodeHalf(wFCVTN, n, d)
	f.word(wFCVTN, w, s, err)
}

// VSHLL widens 16-bit lanes to 32 bits shifted left 16: bfloat16 to
// float32, exactly; n's lower 4H, or with n an 8H its upper 4H (SHLL,
// SHLL2, as WORD).
func (f *Func) VSHLL(n, d VArr) {
	w, s, err := encodeHalf(wSHLL, d, n)
	f.word(wSHLL, w, s, err)
}

// VSHRN: each 32-bit lane of n shifted right by shift, its low 16 bits
// into d's 4H (SHRN, as WORD).
func (f *Func) VSHRN(shift int, n, d VArr) {
	w, s, err := encodeSHRN(shift, n, d)
	f.word(wSHRN, w, s, err)
}

// VFMAX: d = max(n, m), lane-wise (FMAX vector, as WORD). VFMAX(v, v, d)
// is v, except that a signaling NaN comes out quiet (FPCR.DN clear: the
// payload kept, the quiet bit set).
func (f *Func) VFMAX(m, n, d VArr) {
	w, s, err := encodeThreeSame(wFMAX, d, n, m)
	f.word(wFMAX, w, s, err)
}

// VADDHN: the upper 16 bits of each 32-bit lane of n + m into d's 4H, or
// with d an 8H into its upper 4H, leaving the lower (ADDHN, ADDHN2, as
// WORD).
func (f *Func) VADDHN(m, n, d VArr) {
	w, s, err := encodeADDHN(d, n, m)
	f.word(wADDHN, w, s, err)
}
