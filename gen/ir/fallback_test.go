package ir_test

import (
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/spec"
)

// TestCheckFallback: a row output may be stored before a guard only when
// the kernel's fallback reads it instead of the inputs, reads no row input
// of the kernel and writes every other output, and the stores come before
// every guard; the streaming form matches the kernel and stores nothing
// before its guard.
func TestCheckFallback(t *testing.T) {
	build := func() *ir.Kernel {
		k, err := algo.Build(spec.Kernel{Name: "AddLN", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true,
			Residual: &spec.Residual{Alpha: 0.7, StoreSum: true}, SaveStats: true})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if k := build(); k.Fallback == nil || k.Streaming == nil || ir.Check(k) != nil {
		t.Fatalf("the stored-sum kernel lacks its fallback or streaming form, or fails Check")
	}
	// rename gives the fallback's array name a new name.
	rename := func(k *ir.Kernel, name, to string) {
		fb := *k.Fallback
		fb.Arrays = append([]ir.Array(nil), fb.Arrays...)
		fb.Arrays[fb.ArrayIndex(name)].Name = to
		k.Fallback = &fb
	}
	for _, tt := range []struct {
		name   string
		mutate func(k *ir.Kernel)
		want   string
	}{
		{"no fallback", func(k *ir.Kernel) { k.Fallback = nil }, "sum is stored, and no fallback reads it"},
		{"fallback reads x", func(k *ir.Kernel) {
			rename(k, "sum", "x")
		}, "reads x, which is not a row output stored before the guard"},
		{"fallback skips rstd", func(k *ir.Kernel) { rename(k, "rstd", "mean") }, "does not write rstd"},
		{"fallback of another layout", func(k *ir.Kernel) {
			fb := *k.Fallback
			fb.Layout = ir.Columns
			k.Fallback = &fb
		}, "another layout"},
		{"guard before the store", func(k *ir.Kernel) {
			g := &ir.Scalar{Code: ir.SGuard, Dst: -1, Args: []ir.S{0}, Lo: -1, Hi: 1}
			k.Body = append([]ir.Stmt{k.Body[0], g}, k.Body[1:]...)
		}, "reads sum, which is not a row output stored before the guard"},
		{"streaming form that stores first", func(k *ir.Kernel) {
			st := *k
			st.Streaming = nil
			k.Streaming = &st
		}, "streaming form"},
		{"streaming form renamed", func(k *ir.Kernel) {
			st := *k.Streaming
			st.Name = "Other"
			k.Streaming = &st
		}, "streaming form"},
	} {
		k := build()
		tt.mutate(k)
		err := ir.Check(k)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Check says %v, want %q", tt.name, err, tt.want)
		}
	}
	// A kernel whose guard comes before its stores needs no fallback, and
	// may not have one.
	k, err := algo.Build(spec.Kernel{Name: "AddLN", Mean: true, Epsilon: 1e-5, Residual: &spec.Residual{Alpha: 1}})
	if err != nil || k.Fallback != nil || k.Streaming != nil {
		t.Fatalf("a residual kernel without a stored sum: %v, fallback %v, streaming form %v", err, k.Fallback != nil, k.Streaming != nil)
	}
	k.Fallback = build().Fallback
	if err := ir.Check(k); err == nil {
		t.Error("Check accepts a fallback that nothing stored reads")
	}
}
