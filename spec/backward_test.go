package spec

import (
	"strings"
	"testing"
)

func TestBackward(t *testing.T) {
	const head = "version: 1\npackage: p\nkernels:\n  - name: K\n"
	ok := []struct{ body, want string }{
		{"    mean: true\n    backward: true\n    hidden: [64]\n", "save"},
		{"    mean: false\n    statistic: none\n    shift: true\n    backward: true\n    hidden: [64]\n", "nosave"},
		{"    mean: true\n    axis: batch\n    backward: true\n", "save"},
		{"    mean: false\n    statistic: none\n    axis: batch\n    scale: true\n    backward: true\n", "nosave"},
		{"    mean: true\n    axis: groups\n    groups: 2\n    backward: true\n", "save"},
		{"    mean: true\n    axis: channels\n    backward: true\n    hidden: [64]\n", "save"},
		{"    mean: true\n    axis: batch\n    backward: true\n    storage: bf16\n", "save"},
		{"    mean: true\n    axis: groups\n    groups: 2\n    backward: true\n    storage: f16\n", "save"},
		{"    mean: true\n    axis: channels\n    backward: true\n    storage: bf16\n    hidden: [64]\n", "save"},
	}
	for _, c := range ok {
		f, err := Parse("k.yaml", []byte(head+c.body))
		if err != nil {
			t.Fatalf("%q: %v", c.body, err)
		}
		k := f.Kernels[0]
		if !k.Backward || k.SaveStats != (c.want == "save") {
			t.Fatalf("%q: backward %v, save_stats %v", c.body, k.Backward, k.SaveStats)
		}
	}
	bad := []struct{ body, want string }{
		{"    mean: true\n    axis: groups\n    groups: 2\n    save_stats: false\n    backward: true\n", "save_stats: false with backward: true"},
		{"    mean: true\n    save_stats: false\n    backward: true\n    hidden: [64]\n", "save_stats: false with backward: true"},
		{"    mean: true\n    backward: 1\n    hidden: [64]\n", "backward"},
	}
	for _, c := range bad {
		_, err := Parse("k.yaml", []byte(head+c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one saying %q", c.body, err, c.want)
		}
	}
}
