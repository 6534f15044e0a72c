package amd64

import (
	"strings"
	"testing"
)

// The probe reads its arguments and writes its four results at the
// offsets of CPUIDSignature (go vet's asmdecl checks the generated
// packages), around one CPUID.
func TestCPUID(t *testing.T) {
	b, err := CPUID("probe")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TEXT ·probe(SB), NOSPLIT, $0-24", "MOVL leaf+0(FP), AX", "MOVL sub+4(FP), CX", "\tCPUID\n",
		"MOVL AX, eax+8(FP)", "MOVL BX, ebx+12(FP)", "MOVL CX, ecx+16(FP)", "MOVL DX, edx+20(FP)", "\tRET\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("probe lacks %q:\n%s", want, b)
		}
	}
}
