package onnx

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/normgen/normgen/tests/onnx/onnxnorm"
)

// ONNX's backend test runner compares with numpy's assert_allclose at these
// tolerances unless a test says otherwise (none of the normalization tests
// does): |got - want| <= atol + rtol*|want|.
const (
	rtol = 1e-3
	atol = 1e-7
)

// defaultDataDir is where Debian's libonnx-testdata puts the node tests;
// $ONNX_TESTDATA overrides it (scripts/test-onnx.sh sets it from dpkg -L).
const defaultDataDir = "/usr/share/libonnx-testdata/data/node"

// families are the node tests this harness runs: every directory matching.
var families = []string{"test_layer_normalization_*", "test_instancenorm_*", "test_batchnorm_*"}

// The generated kernels by epsilon (as the float32 the ONNX attribute holds).
type layerNormFunc func(dst, mean, rstd, x, gamma, beta []float32, h int)

var (
	layerNorms = map[float32]struct{ withBias, noBias layerNormFunc }{
		1e-5: {onnxnorm.LayerNormAny, func(dst, mean, rstd, x, gamma, _ []float32, h int) {
			onnxnorm.LayerNormNoBiasAny(dst, mean, rstd, x, gamma, h)
		}},
		0.1: {onnxnorm.LayerNormEps01Any, func(dst, mean, rstd, x, gamma, _ []float32, h int) {
			onnxnorm.LayerNormEps01NoBiasAny(dst, mean, rstd, x, gamma, h)
		}},
	}
	instanceNorms = map[float32]func(dst, x, gamma, beta []float32, channels, spatial int){
		1e-5: onnxnorm.InstanceNorm,
		0.01: onnxnorm.InstanceNormEps001,
	}
	// BatchNormalization's training kernels by epsilon and momentum.
	batchNormTrainings = map[struct{ eps, momentum float32 }]func(dst, x, gain, bias, runMean, runVar []float32, channels, spatial int){
		{1e-5, 0.9}: onnxnorm.BatchNormTraining,
		{0.01, 0.9}: onnxnorm.BatchNormTrainingEps001,
	}
)

// result is one case's outcome, for the summary.
type result struct {
	name, op, status, note string
	values                 int // output values compared
	maxAbs, maxRel         float64
}

func TestNodeTests(t *testing.T) {
	dir := os.Getenv("ONNX_TESTDATA")
	if dir == "" {
		dir = defaultDataDir
	}
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("NORMGEN_CI") == "1" {
			t.Fatalf("ONNX test data missing (%v): apt-get install libonnx-testdata, or run scripts/test-onnx.sh", err)
		}
		t.Skipf("ONNX test data missing (%v): apt-get install libonnx-testdata, or run scripts/test-onnx.sh", err)
	}
	var cases []string
	for _, pattern := range families {
		matches, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		if len(matches) == 0 {
			t.Fatalf("no %s cases in %s", pattern, dir)
		}
		cases = append(cases, matches...)
	}
	sort.Strings(cases)

	var results []*result
	for _, c := range cases {
		r := &result{name: filepath.Base(c), status: "FAIL"}
		results = append(results, r)
		t.Run(r.name, func(t *testing.T) {
			defer func() { // t.Skip and t.Fatal end the function early
				switch {
				case t.Skipped():
					r.status = "skip"
				case !t.Failed():
					r.status = "pass"
				}
			}()
			runCase(t, c, r)
		})
	}

	var sb strings.Builder
	counts := map[string]int{}
	fmt.Fprintf(&sb, "ONNX node tests from %s (rtol %g, atol %g):\n", dir, rtol, atol)
	fmt.Fprintf(&sb, "%-61s %-22s %-4s %6s %9s %9s  %s\n", "case", "op", "", "values", "max abs", "max rel", "note")
	for _, r := range results {
		counts[r.status]++
		abs, rel := fmt.Sprintf("%.3g", r.maxAbs), fmt.Sprintf("%.3g", r.maxRel)
		if r.status == "skip" {
			abs, rel = "-", "-"
		}
		fmt.Fprintf(&sb, "%-61s %-22s %-4s %6d %9s %9s  %s\n", r.name, r.op, r.status, r.values, abs, rel, r.note)
	}
	fmt.Fprintf(&sb, "%d cases run through normgen kernels (%d pass, %d skip, %d FAIL)", len(results), counts["pass"], counts["skip"], counts["FAIL"])
	t.Log(sb.String())
}

// runCase runs every data set of one node test.
func runCase(t *testing.T, dir string, r *result) {
	node, graph, note, err := caseNode(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.op, r.note = node.OpType, note
	sets, err := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if err != nil || len(sets) == 0 {
		t.Fatalf("no test_data_set_* in %s (%v)", dir, err)
	}
	for _, set := range sets {
		in, want, err := readDataSet(set, graph)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string][]float32
		switch node.OpType {
		case "LayerNormalization":
			got, err = layerNorm(node, in)
		case "InstanceNormalization":
			got, err = instanceNorm(node, in)
		case "BatchNormalization":
			var mode int64
			if mode, err = attrInt(node, "training_mode", 0); err == nil {
				if mode != 0 {
					got, err = batchNormTraining(node, in)
				} else {
					got, err = batchNormInference(node, in)
				}
			}
		default:
			err = fmt.Errorf("op %s is not one this harness runs", node.OpType)
		}
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(set), err)
		}
		for _, name := range node.Outputs {
			w, ok := want[name]
			if name == "" || !ok {
				continue // an output the test does not check
			}
			g, ok := got[name]
			if !ok {
				t.Fatalf("%s: the harness computed no %s", filepath.Base(set), name)
			}
			compare(t, r, filepath.Base(set)+" "+name, g, w)
		}
	}
}

// caseNode returns the operator a node test runs. The _expanded tests hold
// the same data (input, output) as the test they are named after, with the
// operator replaced by its function body: the operator and its attributes
// come from that test's model, and the graph (its input and output names)
// from the expanded model.
func caseNode(dir string) (*Node, *Graph, string, error) {
	m, err := ReadModel(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return nil, nil, "", err
	}
	if v, ok := m.Opsets[""]; !ok || v < 1 {
		return nil, nil, "", fmt.Errorf("%s: no ai.onnx opset", dir)
	}
	note := ""
	n := m.Graph.Nodes
	if base := filepath.Base(dir); len(n) != 1 && strings.HasSuffix(base, "_expanded") {
		twin := strings.TrimSuffix(dir, "_expanded")
		tm, err := ReadModel(filepath.Join(twin, "model.onnx"))
		if err != nil {
			return nil, nil, "", fmt.Errorf("expanded test without its operator's test: %v", err)
		}
		if fmt.Sprint(tm.Graph.Inputs, tm.Graph.Outputs) != fmt.Sprint(m.Graph.Inputs, m.Graph.Outputs) {
			return nil, nil, "", fmt.Errorf("%s and %s have different inputs or outputs", base, filepath.Base(twin))
		}
		n, note = tm.Graph.Nodes, "expanded: the operator of "+filepath.Base(twin)
	}
	if len(n) != 1 {
		return nil, nil, "", fmt.Errorf("%s: %d nodes; the harness runs single-operator tests", dir, len(n))
	}
	if n[0].Domain != "" && n[0].Domain != "ai.onnx" {
		return nil, nil, "", fmt.Errorf("%s: operator of domain %q", dir, n[0].Domain)
	}
	return &n[0], &m.Graph, note, nil
}

// readDataSet reads input_<i>.pb and output_<i>.pb by the graph's names.
func readDataSet(set string, g *Graph) (in, out map[string]*Tensor, err error) {
	in, out = map[string]*Tensor{}, map[string]*Tensor{}
	for _, io := range []struct {
		prefix string
		names  []string
		m      map[string]*Tensor
	}{{"input", g.Inputs, in}, {"output", g.Outputs, out}} {
		for i, name := range io.names {
			path := filepath.Join(set, fmt.Sprintf("%s_%d.pb", io.prefix, i))
			if _, err := os.Stat(path); os.IsNotExist(err) {
				continue
			}
			t, err := ReadTensor(path)
			if err != nil {
				return nil, nil, err
			}
			if t.Name != "" && t.Name != name {
				return nil, nil, fmt.Errorf("%s holds %q, the graph's %s %d is %q", path, t.Name, io.prefix, i, name)
			}
			io.m[name] = t
		}
	}
	return in, out, nil
}

// input returns the node's i-th input, nil when omitted.
func input(n *Node, in map[string]*Tensor, i int) (*Tensor, error) {
	if i >= len(n.Inputs) || n.Inputs[i] == "" {
		return nil, nil
	}
	t, ok := in[n.Inputs[i]]
	if !ok {
		return nil, fmt.Errorf("input %d (%s) has no data", i, n.Inputs[i])
	}
	return t, nil
}

// required returns the node's i-th input, an error when omitted.
func required(n *Node, in map[string]*Tensor, i int) (*Tensor, error) {
	t, err := input(n, in, i)
	if err == nil && t == nil {
		err = fmt.Errorf("%s without its input %d", n.OpType, i)
	}
	return t, err
}

func attrInt(n *Node, name string, def int64) (int64, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return def, nil
	}
	if a.Type != AttrInt {
		return 0, fmt.Errorf("attribute %s of type %d, want INT", name, a.Type)
	}
	return a.I, nil
}

func attrFloat(n *Node, name string, def float32) (float32, error) {
	a, ok := n.Attrs[name]
	if !ok {
		return def, nil
	}
	if a.Type != AttrFloat {
		return 0, fmt.Errorf("attribute %s of type %d, want FLOAT", name, a.Type)
	}
	return a.F, nil
}

func product(dims []int64) int {
	p := 1
	for _, d := range dims {
		p *= int(d)
	}
	return p
}

// layerNorm runs LayerNormalization (opset 17): X viewed as rows =
// prod(shape[:axis]) rows of H = prod(shape[axis:]) values, Scale and B of H
// values, outputs Y, Mean and InvStdDev (one per row).
func layerNorm(n *Node, in map[string]*Tensor) (map[string][]float32, error) {
	axis, err := attrInt(n, "axis", -1)
	if err != nil {
		return nil, err
	}
	eps, err := attrFloat(n, "epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	// stash_type 1 (the default) computes the statistics in float32, as the
	// kernels do.
	if stash, err := attrInt(n, "stash_type", 1); err != nil || stash != 1 {
		return nil, fmt.Errorf("stash_type %d (%v): only 1, float32, is run", stash, err)
	}
	x, err := required(n, in, 0)
	if err != nil {
		return nil, err
	}
	scale, err := required(n, in, 1)
	if err != nil {
		return nil, err
	}
	bias, err := input(n, in, 2)
	if err != nil {
		return nil, err
	}
	rank := int64(len(x.Dims))
	if axis < 0 {
		axis += rank
	}
	if axis < 0 || axis >= rank {
		return nil, fmt.Errorf("axis %d out of range for dims %v", n.Attrs["axis"].I, x.Dims)
	}
	rows, h := product(x.Dims[:axis]), product(x.Dims[axis:])
	if len(scale.Data) != h || bias != nil && len(bias.Data) != h {
		return nil, fmt.Errorf("Scale or B not of the normalized shape %v (broadcasting is not run)", x.Dims[axis:])
	}
	k, ok := layerNorms[eps]
	if !ok {
		return nil, fmt.Errorf("epsilon %g has no kernel: add one to onnx.yaml and to layerNorms", eps)
	}
	y, mean, rstd := make([]float32, rows*h), make([]float32, rows), make([]float32, rows)
	if bias != nil {
		k.withBias(y, mean, rstd, x.Data, scale.Data, bias.Data, h)
	} else {
		k.noBias(y, mean, rstd, x.Data, scale.Data, nil, h)
	}
	out := map[string][]float32{}
	for i, v := range [][]float32{y, mean, rstd} {
		if i < len(n.Outputs) && n.Outputs[i] != "" {
			out[n.Outputs[i]] = v
		}
	}
	return out, nil
}

// channels checks x[N, C, spatial...] and returns N, C and H = prod(spatial)
// (1 for [N, C]).
func channels(x *Tensor) (n, c, h int, err error) {
	if len(x.Dims) < 2 {
		return 0, 0, 0, fmt.Errorf("input of dims %v; want [N, C, ...]", x.Dims)
	}
	return int(x.Dims[0]), int(x.Dims[1]), product(x.Dims[2:]), nil
}

// instanceNorm runs InstanceNormalization (opset 6): each image's channel
// normalized over its spatial values by its own mean and variance, then
// y = scale_c*x_hat + B_c.
func instanceNorm(node *Node, in map[string]*Tensor) (map[string][]float32, error) {
	eps, err := attrFloat(node, "epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	var ts [3]*Tensor
	for i := range ts {
		if ts[i], err = required(node, in, i); err != nil {
			return nil, err
		}
	}
	x, scale, bias := ts[0], ts[1], ts[2]
	n, c, h, err := channels(x)
	if err != nil {
		return nil, err
	}
	if len(scale.Data) != c || len(bias.Data) != c {
		return nil, fmt.Errorf("scale or B not of %d channels", c)
	}
	k, ok := instanceNorms[eps]
	if !ok {
		return nil, fmt.Errorf("epsilon %g has no kernel: add one to onnx.yaml and to instanceNorms", eps)
	}
	y := make([]float32, n*c*h)
	k(y, x.Data, scale.Data, bias.Data, c, h)
	return map[string][]float32{node.Outputs[0]: y}, nil
}

// batchNormInference runs BatchNormalization (opset 15) with training_mode
// 0: the running statistics folded per channel in float64,
//
//	a_c = scale_c / sqrt(var_c + epsilon),  b_c = B_c - mean_c*a_c,
//
// rounded to float32, then y = x*a_c + b_c by the BatchNorm-at-inference
// kernel (axis batch, statistic none), per channel.
func batchNormInference(node *Node, in map[string]*Tensor) (map[string][]float32, error) {
	bn, err := batchNormInputs(node, in)
	if err != nil {
		return nil, err
	}
	a, b := make([]float32, bn.c), make([]float32, bn.c)
	for i := range bn.c {
		ai := float64(bn.scale.Data[i]) / math.Sqrt(float64(bn.variance.Data[i])+float64(bn.eps))
		a[i] = float32(ai)
		b[i] = float32(float64(bn.bias.Data[i]) - float64(bn.mean.Data[i])*ai)
	}
	y := make([]float32, bn.n*bn.c*bn.h)
	onnxnorm.BatchNormFolded(y, bn.x.Data, a, b, bn.c, bn.h)
	return map[string][]float32{node.Outputs[0]: y}, nil
}

// batchNorm is a BatchNormalization node's inputs, checked: x[N, C,
// spatial...] and the per-channel scale, B, mean and var; h is
// prod(spatial).
type batchNorm struct {
	eps                            float32
	x, scale, bias, mean, variance *Tensor
	n, c, h                        int
}

func batchNormInputs(node *Node, in map[string]*Tensor) (*batchNorm, error) {
	eps, err := attrFloat(node, "epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	if spatial, err := attrInt(node, "spatial", 1); err != nil || spatial != 1 {
		return nil, fmt.Errorf("spatial %d (%v): only per-channel statistics are run", spatial, err)
	}
	var ts [5]*Tensor
	for i := range ts {
		if ts[i], err = required(node, in, i); err != nil {
			return nil, err
		}
	}
	bn := &batchNorm{eps: eps, x: ts[0], scale: ts[1], bias: ts[2], mean: ts[3], variance: ts[4]}
	if bn.n, bn.c, bn.h, err = channels(bn.x); err != nil {
		return nil, err
	}
	for _, p := range ts[1:] {
		if len(p.Data) != bn.c {
			return nil, fmt.Errorf("%s has %d values for %d channels", p.Name, len(p.Data), bn.c)
		}
	}
	return bn, nil
}

// batchNormTraining runs BatchNormalization (opset 15) with training_mode
// 1: each channel normalized by its batch mean and biased variance over N
// and the spatial axes, y = scale_c*x_hat + B_c, and the running statistics
// (copied from input_mean and input_var) updated in place as
//
//	running_mean = momentum*input_mean + (1-momentum)*batch_mean,
//	running_var = momentum*input_var + (1-momentum)*batch_var,
//
// the outputs Y, running_mean and running_var.
func batchNormTraining(node *Node, in map[string]*Tensor) (map[string][]float32, error) {
	bn, err := batchNormInputs(node, in)
	if err != nil {
		return nil, err
	}
	momentum, err := attrFloat(node, "momentum", 0.9)
	if err != nil {
		return nil, err
	}
	if bn.n*bn.h == 1 {
		return nil, fmt.Errorf("one value per channel (dims %v): no batch variance", bn.x.Dims)
	}
	k, ok := batchNormTrainings[struct{ eps, momentum float32 }{bn.eps, momentum}]
	if !ok {
		return nil, fmt.Errorf("epsilon %g with momentum %g has no kernel: add one to onnx.yaml and to batchNormTrainings", bn.eps, momentum)
	}
	y := make([]float32, bn.n*bn.c*bn.h)
	runMean, runVar := append([]float32(nil), bn.mean.Data...), append([]float32(nil), bn.variance.Data...)
	k(y, bn.x.Data, bn.scale.Data, bn.bias.Data, runMean, runVar, bn.c, bn.h)
	out := map[string][]float32{}
	for i, v := range [][]float32{y, runMean, runVar} {
		if i < len(node.Outputs) && node.Outputs[i] != "" {
			out[node.Outputs[i]] = v
		}
	}
	return out, nil
}

// compare checks got against want at ONNX's tolerances and records the
// largest errors in r.
func compare(t *testing.T, r *result, what string, got []float32, want *Tensor) {
	t.Helper()
	if len(got) != len(want.Data) {
		t.Errorf("%s: %d values, want %d (dims %v)", what, len(got), len(want.Data), want.Dims)
		return
	}
	bad := 0
	for i, g := range got {
		w := float64(want.Data[i])
		d := math.Abs(float64(g) - w)
		if math.IsNaN(w) && math.IsNaN(float64(g)) {
			d = 0
		}
		r.values++
		r.maxAbs = max(r.maxAbs, d)
		if w != 0 {
			r.maxRel = max(r.maxRel, d/math.Abs(w))
		}
		if !(d <= atol+rtol*math.Abs(w)) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %v, want %v (|diff| %.3g > %.3g)", what, i, g, w, d, atol+rtol*math.Abs(w))
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d values out of tolerance in all", what, bad)
	}
}
