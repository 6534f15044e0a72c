package amd64

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/gotypes"
	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/target"
)

// CPUIDSignature is the Go signature of the CPUID probe of the generated
// packages that read a feature x/sys/cpu does not report
// (target.Feature.CPUID): the four registers after CPUID with EAX = leaf
// and ECX = sub, in target.Reg's order.
const CPUIDSignature = "func(leaf, sub uint32) (eax, ebx, ecx, edx uint32)"

// CPUID returns the TEXT block of the probe, named name.
func CPUID(name string) ([]byte, error) {
	sig, err := gotypes.ParseSignature(CPUIDSignature)
	if err != nil {
		return nil, err
	}
	fn := avoir.NewFunction(name)
	fn.Attributes = attr.NOSPLIT
	fn.SetSignature(sig)
	e := newEmitter(fn)
	for _, in := range []struct {
		name string
		r    reg.Register
	}{{"leaf", reg.EAX}, {"sub", reg.ECX}} {
		b, err := sig.Params().Lookup(in.name).Resolve()
		if err != nil {
			return nil, err
		}
		e.I(x86.MOVL(b.Addr, in.r))
	}
	e.I(x86.CPUID())
	for _, out := range []struct {
		name string
		r    reg.Register
	}{{"eax", reg.EAX}, {"ebx", reg.EBX}, {"ecx", reg.ECX}, {"edx", reg.EDX}} {
		b, err := sig.Results().Lookup(out.name).Resolve()
		if err != nil {
			return nil, err
		}
		e.I(x86.MOVL(out.r, b.Addr))
	}
	e.I(x86.RET())
	if e.err != nil {
		return nil, fmt.Errorf("amd64: cpuid probe: %w", e.err)
	}
	return finish(fn, target.AVX2)
}
