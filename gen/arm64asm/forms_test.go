package arm64asm

// allForms emits one instance of every instruction form the emitter
// offers, each with distinct registers so that operand roles show.
func allForms(f *Func) {
	f.MOVD(Param{"x", 0}, 0)
	f.MOVD(Imm(5), 3)
	f.MOVD(Reg(1), 5)
	f.MOVDParam(6, Param{"ret", 8})
	f.MOVW(Hex(0x3f800000), 3)
	f.MOVW(Imm(7), 4)
	f.ADD(Imm(16), 1, 2)
	f.ADD(Reg(4), 1, 2)
	f.SUB(Imm(2), 5, 6)
	f.SUB(Reg(7), 8, 9)
	f.SUBS(Imm(1), 3, 4)
	f.SUBS(Reg(5), 3, 4)
	f.AND(Imm(3), 3, 4)
	f.AND(Reg(5), 6, 7)
	f.MUL(Reg(1), 2, 3)
	f.LSR(4, 2, 3)
	f.LSL(2, 2, 3)
	f.Label("top")
	f.CBZ(6, "top")
	f.CBNZ(7, "top")
	f.BNE("top")
	f.BLT("top")
	f.BHI("top")
	f.BVS("top")
	f.B("top")
	f.VLD1(Mem{Base: 8}, VReg(4).List(1, S4))
	f.VLD1(Mem{Base: 8}, VReg(30).List(4, S4))
	f.VLD1P(9, VReg(1).List(4, S4))
	f.VLD1P(9, VReg(2).List(2, S4))
	f.VLD1P(9, VReg(3).List(1, S4))
	f.VLD1RP(12, VReg(24).List(1, S4))
	f.VLD1P(9, VReg(4).List(4, H4))
	f.VLD1P(9, VReg(6).List(2, H8))
	f.VLD1(Mem{Base: 8}, VReg(5).List(1, H4))
	f.VLD1Lane(Mem{Base: 8}, VReg(3).HLane(0))
	f.VLD1LaneP(9, VReg(4).HLane(0))
	f.VST1(VReg(5).List(3, S4), Mem{Base: 10})
	f.VST1P(VReg(6).List(4, S4), 11)
	f.VST1P(VReg(7).List(1, S4), 11)
	f.VST1P(VReg(8).List(2, H8), 11)
	f.VST1(VReg(9).List(1, H4), Mem{Base: 10})
	f.FSTPQ(12, 13, Mem{Base: 10})
	f.FSTPQ(14, 15, Mem{Base: 11, Off: 32})
	f.VST1Lane(VReg(10).HLane(0), Mem{Base: 10})
	f.VST1LaneP(VReg(11).HLane(0), 11)
	f.VEOR(VReg(1).B16(), VReg(2).B16(), VReg(3).B16())
	f.VMOV(VReg(2).B16(), VReg(4).B16())
	f.VAND(VReg(1).B16(), VReg(2).B16(), VReg(3).B16())
	f.VORR(VReg(4).B16(), VReg(5).B16(), VReg(6).B16())
	f.VBIF(VReg(7).B16(), VReg(8).B16(), VReg(9).B16())
	f.VADD(VReg(10).S4(), VReg(11).S4(), VReg(12).S4())
	f.VSHL(15, VReg(13).S4(), VReg(14).S4())
	f.VUSRA(31, VReg(15).S4(), VReg(16).S4())
	f.VUZP2(VReg(17).H8(), VReg(18).H8(), VReg(19).H8())
	f.VZIP1(VReg(20).H8(), VReg(21).H8(), VReg(22).H8())
	f.VZIP2(VReg(23).H8(), VReg(24).H8(), VReg(25).H8())
	f.VSUB(VReg(26).S4(), VReg(27).S4(), VReg(28).S4())
	f.VCMTST(VReg(29).S4(), VReg(30).S4(), VReg(31).S4())
	f.VMOVLane(VReg(5).DLane(0), 6)
	f.VMOVLane(VReg(7).DLane(1), 8)
	f.VDUP(VReg(3).SLane(1), VReg(5).S4())
	f.VFMLA(VReg(1).S4(), VReg(2).S4(), VReg(3).S4())
	f.VFADD(VReg(1).S4(), VReg(2).S4(), VReg(3).S4())
	f.VFSUB(VReg(4).S4(), VReg(5).S4(), VReg(6).S4())
	f.VFMUL(VReg(7).S4(), VReg(8).S4(), VReg(9).S4())
	f.VFADDP(VReg(10).S4(), VReg(11).S4(), VReg(12).S4())
	f.FADDP(VReg(13).S2(), VReg(14).F())
	f.VFDIV(VReg(15).S4(), VReg(16).S4(), VReg(17).S4())
	f.VFCMGE(VReg(18).S4(), VReg(19).S4(), VReg(20).S4())
	f.VFSQRT(VReg(21).S4(), VReg(22).S4())
	f.VLDRQ(6, 9, VReg(1).S4())
	f.VFCMEQ(VReg(23).S4(), VReg(24).S4(), VReg(25).S4())
	f.VFCVTL(VReg(26).H4(), VReg(27).S4())
	f.VFCVTL(VReg(28).H8(), VReg(29).S4())
	f.VFCVTN(VReg(30).S4(), VReg(31).H4())
	f.VFCVTN(VReg(0).S4(), VReg(1).H8())
	f.VSHLL(VReg(2).H4(), VReg(3).S4())
	f.VSHLL(VReg(4).H8(), VReg(5).S4())
	f.VSHRN(16, VReg(6).S4(), VReg(7).H4())
	f.VFMAX(VReg(8).S4(), VReg(9).S4(), VReg(10).S4())
	f.VADDHN(VReg(11).S4(), VReg(12).S4(), VReg(13).H4())
	f.VADDHN(VReg(14).S4(), VReg(15).S4(), VReg(16).H8())
	f.FMOVS(Mem{Base: 1}, FReg(2))
	f.FMOVS(Mem{Base: 1, Off: 8}, FReg(2))
	f.FMOVSP(Mem{Base: 1, Off: 4}, FReg(3))
	f.FMOVS(FReg(4), Mem{Base: 2})
	f.FMOVSP(FReg(5), Mem{Base: 2, Off: 4})
	f.FMOVS(FReg(6), FReg(7))
	f.FMOVS(Reg(3), FReg(8))
	f.FMOVS(ZR, FReg(9))
	f.FADDS(1, 2, 3)
	f.FSUBS(4, 5, 6)
	f.FMULS(7, 8, 9)
	f.FDIVS(10, 11, 12)
	f.FSQRTS(13, 14)
	f.FMADDS(1, 2, 3, 4)
	f.FCMPS(1, 2)
	f.FCMPS(7, 3)
	f.SCVTFS(3, 6)
	f.MRS(MIDR, 10)
	f.RET()
}

// allFormsGNU is allForms as the x/arch disassembler (go tool objdump -gnu)
// spells it: the operand roles each method documents, e.g. FMADDS(m, a,
// n, d) is d = n*m + a. Branch targets are left out.
var allFormsGNU = []string{
	"ldr x0, [sp,#8]",
	"mov x3, #0x5",
	"mov x5, x1",
	"str x6, [sp,#16]",
	"mov w3, #0x3f800000",
	"orr w4, wzr, #0x7",
	"add x2, x1, #0x10",
	"add x2, x1, x4",
	"sub x6, x5, #0x2",
	"sub x9, x8, x7",
	"subs x4, x3, #0x1",
	"subs x4, x3, x5",
	"and x4, x3, #0x3",
	"and x7, x6, x5",
	"mul x3, x2, x1",
	"lsr x3, x2, #4",
	"lsl x3, x2, #2",
	"cbz x6,",
	"cbnz x7,",
	"b.ne",
	"b.lt",
	"b.hi",
	"b.vs",
	"b",
	"ld1 {v4.4s}, [x8]",
	"ld1 {v30.4s, v31.4s, v0.4s, v1.4s}, [x8]",
	"ld1 {v1.4s-v4.4s}, [x9],#64",
	"ld1 {v2.4s, v3.4s}, [x9],#32",
	"ld1 {v3.4s}, [x9],#16",
	"ld1r {v24.4s}, [x12],#4",
	"ld1 {v4.4h-v7.4h}, [x9],#32",
	"ld1 {v6.8h, v7.8h}, [x9],#32",
	"ld1 {v5.4h}, [x8]",
	"ld1 {v3.h}[0], [x8]",
	"ld1 {v4.h}[0], [x9],#2",
	"st1 {v5.4s-v7.4s}, [x10]",
	"st1 {v6.4s-v9.4s}, [x11],#64",
	"st1 {v7.4s}, [x11],#16",
	"st1 {v8.8h, v9.8h}, [x11],#32",
	"st1 {v9.4h}, [x10]",
	"stp q12, q13, [x10]",
	"stp q14, q15, [x11,#32]",
	"st1 {v10.h}[0], [x10]",
	"st1 {v11.h}[0], [x11],#2",
	"eor v3.16b, v2.16b, v1.16b",
	"mov v4.16b, v2.16b",
	"and v3.16b, v2.16b, v1.16b",
	"orr v6.16b, v5.16b, v4.16b",
	"bif v9.16b, v8.16b, v7.16b",
	"add v12.4s, v11.4s, v10.4s",
	"shl v14.4s, v13.4s, #15",
	"usra v16.4s, v15.4s, #31",
	"uzp2 v19.8h, v18.8h, v17.8h",
	"zip1 v22.8h, v21.8h, v20.8h",
	"zip2 v25.8h, v24.8h, v23.8h",
	"sub v28.4s, v27.4s, v26.4s",
	"cmtst v31.4s, v30.4s, v29.4s",
	"mov x6, v5.d[0]",
	"mov x8, v7.d[1]",
	"dup v5.4s, v3.s[1]",
	"fmla v3.4s, v2.4s, v1.4s",
	"fadd v3.4s, v2.4s, v1.4s",
	"fsub v6.4s, v5.4s, v4.4s",
	"fmul v9.4s, v8.4s, v7.4s",
	"faddp v12.4s, v11.4s, v10.4s",
	"faddp s14, v13.2s",
	"fdiv v17.4s, v16.4s, v15.4s",
	"fcmge v20.4s, v19.4s, v18.4s",
	"fsqrt v22.4s, v21.4s",
	"ldr q1, [x6,x9]",
	"fcmeq v25.4s, v24.4s, v23.4s",
	"fcvtl v27.4s, v26.4h",
	"fcvtl2 v29.4s, v28.8h",
	"fcvtn v31.4h, v30.4s",
	"fcvtn2 v1.8h, v0.4s",
	"shll v3.4s, v2.4h, #16",
	"shll2 v5.4s, v4.8h, #16",
	"shrn v7.4h, v6.4s, #16",
	"fmax v10.4s, v9.4s, v8.4s",
	"addhn v13.4h, v12.4s, v11.4s",
	"addhn2 v16.8h, v15.4s, v14.4s",
	"ldr s2, [x1]",
	"ldr s2, [x1,#8]",
	"ldr s3, [x1],#4",
	"str s4, [x2]",
	"str s5, [x2],#4",
	"fmov s7, s6",
	"fmov s8, w3",
	"fmov s9, wzr",
	"fadd s3, s2, s1",
	"fsub s6, s5, s4",
	"fmul s9, s8, s7",
	"fdiv s12, s11, s10",
	"fsqrt s14, s13",
	"fmadd s4, s3, s1, s2",
	"fcmp s2, s1",
	"fcmp s3, s7",
	"scvtf s6, x3",
	"mrs x10, s3_0_c0_c0_0", // MIDR_EL1
	"ret",
}
