package onnx

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// Messages built with protowire, field by field, as onnx.proto numbers them.

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func packedFloats(vs []float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func TestParseTensor(t *testing.T) {
	vals := []float32{1.5, -2, float32(math.Inf(1)), 0}
	packedDims := protowire.AppendVarint(protowire.AppendVarint(nil, 2), 2)
	var unpacked []byte // dims and floats as repeated single fields
	unpacked = appendVarint(unpacked, 1, 2)
	unpacked = appendVarint(unpacked, 1, 2)
	unpacked = appendVarint(unpacked, 2, dataFloat)
	for _, v := range vals {
		unpacked = protowire.AppendTag(unpacked, 4, protowire.Fixed32Type)
		unpacked = protowire.AppendFixed32(unpacked, math.Float32bits(v))
	}
	var doubles []byte
	for _, v := range vals {
		doubles = binary.LittleEndian.AppendUint64(doubles, math.Float64bits(float64(v)))
	}
	head := appendString(appendMessage(nil, 1, packedDims), 8, "X")
	for name, msg := range map[string][]byte{
		"packed float_data": appendMessage(appendVarint(head, 2, dataFloat), 4, packedFloats(vals)),
		"raw_data":          appendMessage(appendVarint(head, 2, dataFloat), 9, packedFloats(vals)),
		"double raw_data":   appendMessage(appendVarint(head, 2, dataDouble), 9, doubles),
		"double_data":       appendMessage(appendVarint(head, 2, dataDouble), 10, doubles),
		// an unknown field (doc_string, 12) is skipped
		"unpacked": appendString(appendString(unpacked, 12, "doc"), 8, "X"),
	} {
		got, err := ParseTensor(msg)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := (&Tensor{Name: "X", Dims: []int64{2, 2}, Data: vals}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	scalar, err := ParseTensor(appendMessage(appendVarint(nil, 2, dataFloat), 4, packedFloats([]float32{7})))
	if err != nil || len(scalar.Dims) != 0 || !reflect.DeepEqual(scalar.Data, []float32{7}) {
		t.Errorf("scalar: %+v %v", scalar, err)
	}

	for name, tc := range map[string]struct {
		msg  []byte
		want string
	}{
		"int64":          {appendVarint(head, 2, 7), "data_type 7 is not supported"},
		"too few values": {appendMessage(appendVarint(head, 2, dataFloat), 4, packedFloats(vals[:3])), "3 values for dims [2 2]"},
		"short raw_data": {appendMessage(appendVarint(head, 2, dataFloat), 9, packedFloats(vals[:3])), "12 bytes of raw_data for dims [2 2]"},
		"odd packed":     {appendMessage(appendVarint(head, 2, dataFloat), 4, []byte{1, 2, 3}), "3 bytes of packed floats"},
		"truncated":      {appendMessage(appendVarint(head, 2, dataFloat), 4, packedFloats(vals))[:20], "unexpected EOF"},
		"bad tag":        {[]byte{0}, "invalid field number"},
		"external":       {appendVarint(appendVarint(head, 2, dataFloat), 14, 1), "external data is not supported"},
		"negative dim":   {appendVarint(appendVarint(nil, 2, dataFloat), 1, math.MaxUint64), "out of range"},
		"string name":    {appendVarint(nil, 8, 1), "wire type 0, want bytes"},
	} {
		_, err := ParseTensor(tc.msg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
}

// model builds a one-node ModelProto.
func model(opType string, attrs ...[]byte) []byte {
	var node []byte
	for _, in := range []string{"X", "W", ""} {
		node = appendString(node, 1, in)
	}
	node = appendString(node, 2, "Y")
	node = appendString(node, 4, opType)
	for _, a := range attrs {
		node = appendMessage(node, 5, a)
	}
	var graph []byte
	graph = appendMessage(graph, 1, node)
	graph = appendString(graph, 2, "g")
	for _, in := range []string{"X", "W"} {
		graph = appendMessage(graph, 11, appendString(nil, 1, in))
	}
	graph = appendMessage(graph, 12, appendString(nil, 1, "Y"))
	var m []byte
	m = appendVarint(m, 1, 8) // ir_version
	m = appendMessage(m, 8, appendVarint(appendString(nil, 1, ""), 2, 17))
	m = appendMessage(m, 8, appendVarint(appendString(nil, 1, "ai.onnx.ml"), 2, 3))
	return appendMessage(m, 7, graph)
}

func attrF(name string, f float32, typed bool) []byte {
	a := appendString(nil, 1, name)
	a = protowire.AppendTag(a, 2, protowire.Fixed32Type)
	a = protowire.AppendFixed32(a, math.Float32bits(f))
	if typed {
		a = appendVarint(a, 20, uint64(AttrFloat))
	}
	return a
}

func attrI(name string, i int64) []byte {
	return appendVarint(appendVarint(appendString(nil, 1, name), 3, uint64(i)), 20, uint64(AttrInt))
}

func TestParseModel(t *testing.T) {
	m, err := ParseModel(model("LayerNormalization", attrI("axis", -2), attrF("epsilon", 0.1, false)))
	if err != nil {
		t.Fatal(err)
	}
	want := &Model{
		Opsets: map[string]int64{"": 17, "ai.onnx.ml": 3},
		Graph: Graph{Name: "g", Inputs: []string{"X", "W"}, Outputs: []string{"Y"}, Nodes: []Node{{
			OpType: "LayerNormalization", Inputs: []string{"X", "W", ""}, Outputs: []string{"Y"},
			Attrs: map[string]Attr{
				"axis":    {Name: "axis", Type: AttrInt, I: -2},
				"epsilon": {Name: "epsilon", Type: AttrFloat, F: 0.1}, // type inferred
			},
		}}},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got  %+v\nwant %+v", m, want)
	}
	for name, tc := range map[string]struct {
		msg  []byte
		want string
	}{
		"no graph":        {appendVarint(nil, 1, 8), "holds 0 graphs"},
		"duplicate attr":  {model("X", attrI("axis", 1), attrI("axis", 2)), `attribute "axis" given twice`},
		"attr f as bytes": {model("X", appendString(appendString(nil, 1, "epsilon"), 2, "x")), "AttributeProto.f: wire type 2"},
		"truncated":       {model("X")[:30], "unexpected EOF"},
	} {
		_, err := ParseModel(tc.msg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
}

// TestLayerNormNoBias runs the harness's path for a LayerNormalization
// without its optional input B, which the ONNX data of this version does
// not exercise, against a float64 oracle written from ONNX's definition.
func TestLayerNormNoBias(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, eps := range []float32{1e-5, 0.1} {
		x := &Tensor{Name: "X", Dims: []int64{2, 3, 5}}
		w := &Tensor{Name: "W", Dims: []int64{3, 5}}
		for range 30 {
			x.Data = append(x.Data, float32(3+rng.NormFloat64()))
		}
		for range 15 {
			w.Data = append(w.Data, float32(rng.NormFloat64()))
		}
		node := &Node{OpType: "LayerNormalization", Inputs: []string{"X", "W"}, Outputs: []string{"Y", "", "R"},
			Attrs: map[string]Attr{"axis": {Type: AttrInt, I: 1}, "epsilon": {Type: AttrFloat, F: eps}}}
		got, err := layerNorm(node, map[string]*Tensor{"X": x, "W": w})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got["Y"] == nil || got["R"] == nil {
			t.Fatalf("outputs %v, want Y and R", got)
		}
		y, rstd := &Tensor{}, &Tensor{}
		for r := range 2 {
			row := x.Data[r*15 : (r+1)*15]
			var mu, v float64
			for _, e := range row {
				mu += float64(e) / 15
			}
			for _, e := range row {
				v += (float64(e) - mu) * (float64(e) - mu) / 15
			}
			rs := 1 / math.Sqrt(v+float64(eps))
			rstd.Data = append(rstd.Data, float32(rs))
			for i, e := range row {
				y.Data = append(y.Data, float32((float64(e)-mu)*rs*float64(w.Data[i])))
			}
		}
		res := &result{}
		compare(t, res, "Y", got["Y"], y)
		compare(t, res, "InvStdDev", got["R"], rstd)
		t.Logf("epsilon %g: max abs %.3g, max rel %.3g", eps, res.maxAbs, res.maxRel)
	}
}

// FuzzParse: any bytes give a message or an error, never a panic.
func FuzzParse(f *testing.F) {
	f.Add(model("LayerNormalization", attrI("axis", 1), attrF("epsilon", 1e-5, true)))
	f.Add(appendMessage(appendVarint(appendMessage(nil, 1, []byte{2, 2}), 2, dataFloat), 9, packedFloats([]float32{1, 2, 3, 4})))
	// A few real files when the test data is installed.
	if paths, _ := filepath.Glob(filepath.Join(defaultDataDir, "test_instancenorm_example", "*", "*.pb")); len(paths) > 0 {
		for _, p := range append(paths, filepath.Join(filepath.Dir(filepath.Dir(paths[0])), "model.onnx")) {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := ParseModel(data); (m == nil) == (err == nil) {
			t.Fatalf("ParseModel: %v and %v", m, err)
		}
		if tn, err := ParseTensor(data); err == nil {
			if tn == nil || len(tn.Data) != product(tn.Dims) {
				t.Fatalf("ParseTensor: %+v", tn)
			}
		}
	})
}
