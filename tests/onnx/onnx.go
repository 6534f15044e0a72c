// Package onnx runs the ONNX project's own node tests of LayerNormalization,
// InstanceNormalization and BatchNormalization (Debian's libonnx-testdata)
// through kernels normgen generates, and compares with the expected outputs
// at ONNX's tolerances. It is its own module so that its protobuf dependency
// never reaches normgen's users.
//
// This file reads the two protobuf messages the test data holds, ModelProto
// (model.onnx) and TensorProto (test_data_set_*/input_*.pb, output_*.pb),
// with protowire: only the fields the harness needs, every other field
// skipped by its wire type. Field numbers are those of onnx/onnx.proto.
package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
)

// Model is the part of a ModelProto the harness needs.
type Model struct {
	Opsets map[string]int64 // operator set version by domain ("" is ai.onnx)
	Graph  Graph
}

// Graph is the part of a GraphProto the harness needs.
type Graph struct {
	Name         string
	Nodes        []Node
	Inputs       []string // graph inputs, in order: input_<i>.pb is Inputs[i]
	Outputs      []string // graph outputs, in order: output_<i>.pb is Outputs[i]
	Initializers []string // names of constant tensors held in the graph
}

// Node is one NodeProto.
type Node struct {
	OpType, Domain  string
	Inputs, Outputs []string // an empty name is an omitted optional input
	Attrs           map[string]Attr
}

// Attr is one AttributeProto; Type says which value field holds it.
type Attr struct {
	Name string
	Type AttrType
	F    float32
	I    int64
	S    []byte
}

// AttrType is AttributeProto.AttributeType.
type AttrType int32

// The attribute types the normalization ops use.
const (
	AttrUndefined AttrType = 0
	AttrFloat     AttrType = 1
	AttrInt       AttrType = 2
	AttrString    AttrType = 3
)

// Tensor is a TensorProto of float32 values.
type Tensor struct {
	Name string
	Dims []int64
	Data []float32
}

// TensorProto.DataType values.
const (
	dataFloat  = 1
	dataDouble = 11
)

// field is one field of a message: its number, wire type and value.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64 // varint, fixed32 and fixed64 values
	b   []byte // bytes (length-delimited) values
}

// fields splits a message into its fields, in order.
func fields(msg []byte) ([]field, error) {
	var fs []field
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		msg = msg[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(msg)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(msg)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(msg)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(msg)
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if n < 0 {
			return nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		msg = msg[n:]
		fs = append(fs, f)
	}
	return fs, nil
}

// str reads a string field.
func (f field) str() (string, error) {
	if f.typ != protowire.BytesType {
		return "", fmt.Errorf("field %d: wire type %d, want bytes", f.num, f.typ)
	}
	return string(f.b), nil
}

// varints reads a repeated integer field, packed or not.
func (f field) varints() ([]int64, error) {
	switch f.typ {
	case protowire.VarintType:
		return []int64{int64(f.v)}, nil
	case protowire.BytesType:
		var vs []int64
		for b := f.b; len(b) > 0; {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, fmt.Errorf("field %d: %w", f.num, protowire.ParseError(n))
			}
			vs = append(vs, int64(v))
			b = b[n:]
		}
		return vs, nil
	}
	return nil, fmt.Errorf("field %d: wire type %d, want varint", f.num, f.typ)
}

// floats reads a repeated float field, packed or not.
func (f field) floats() ([]float32, error) {
	switch f.typ {
	case protowire.Fixed32Type:
		return []float32{math.Float32frombits(uint32(f.v))}, nil
	case protowire.BytesType:
		if len(f.b)%4 != 0 {
			return nil, fmt.Errorf("field %d: %d bytes of packed floats", f.num, len(f.b))
		}
		vs := make([]float32, len(f.b)/4)
		for i := range vs {
			vs[i] = math.Float32frombits(binary.LittleEndian.Uint32(f.b[4*i:]))
		}
		return vs, nil
	}
	return nil, fmt.Errorf("field %d: wire type %d, want fixed32", f.num, f.typ)
}

// doubles reads a repeated double field, packed or not.
func (f field) doubles() ([]float64, error) {
	switch f.typ {
	case protowire.Fixed64Type:
		return []float64{math.Float64frombits(f.v)}, nil
	case protowire.BytesType:
		if len(f.b)%8 != 0 {
			return nil, fmt.Errorf("field %d: %d bytes of packed doubles", f.num, len(f.b))
		}
		vs := make([]float64, len(f.b)/8)
		for i := range vs {
			vs[i] = math.Float64frombits(binary.LittleEndian.Uint64(f.b[8*i:]))
		}
		return vs, nil
	}
	return nil, fmt.Errorf("field %d: wire type %d, want fixed64", f.num, f.typ)
}

// ReadModel reads a model.onnx file.
func ReadModel(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := ParseModel(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParseModel decodes a ModelProto.
func ParseModel(data []byte) (*Model, error) {
	fs, err := fields(data)
	if err != nil {
		return nil, fmt.Errorf("ModelProto: %w", err)
	}
	m := &Model{Opsets: map[string]int64{}}
	graphs := 0
	for _, f := range fs {
		switch f.num {
		case 7: // graph
			if f.typ != protowire.BytesType {
				return nil, fmt.Errorf("ModelProto.graph: wire type %d", f.typ)
			}
			g, err := parseGraph(f.b)
			if err != nil {
				return nil, fmt.Errorf("ModelProto.graph: %w", err)
			}
			m.Graph = *g
			graphs++
		case 8: // opset_import: OperatorSetIdProto{domain = 1, version = 2}
			if f.typ != protowire.BytesType {
				return nil, fmt.Errorf("ModelProto.opset_import: wire type %d", f.typ)
			}
			ofs, err := fields(f.b)
			if err != nil {
				return nil, fmt.Errorf("ModelProto.opset_import: %w", err)
			}
			var domain string
			var version int64
			for _, of := range ofs {
				switch of.num {
				case 1:
					if domain, err = of.str(); err != nil {
						return nil, err
					}
				case 2:
					vs, err := of.varints()
					if err != nil || len(vs) != 1 {
						return nil, fmt.Errorf("OperatorSetIdProto.version: %v", err)
					}
					version = vs[0]
				}
			}
			if domain == "ai.onnx" {
				domain = ""
			}
			m.Opsets[domain] = version
		}
	}
	if graphs != 1 {
		return nil, fmt.Errorf("ModelProto holds %d graphs, want 1", graphs)
	}
	return m, nil
}

// parseGraph decodes a GraphProto.
func parseGraph(data []byte) (*Graph, error) {
	fs, err := fields(data)
	if err != nil {
		return nil, err
	}
	g := &Graph{}
	for _, f := range fs {
		switch f.num {
		case 1: // node
			if f.typ != protowire.BytesType {
				return nil, fmt.Errorf("node: wire type %d", f.typ)
			}
			n, err := parseNode(f.b)
			if err != nil {
				return nil, fmt.Errorf("node %d: %w", len(g.Nodes), err)
			}
			g.Nodes = append(g.Nodes, *n)
		case 2: // name
			if g.Name, err = f.str(); err != nil {
				return nil, err
			}
		case 5: // initializer: TensorProto, name = 8
			t, err := ParseTensor(f.b)
			if err != nil {
				// An initializer of another type (the expanded graphs hold
				// int64 axes): only its name matters here.
				name, nerr := tensorName(f.b)
				if nerr != nil {
					return nil, fmt.Errorf("initializer: %w", err)
				}
				g.Initializers = append(g.Initializers, name)
				continue
			}
			g.Initializers = append(g.Initializers, t.Name)
		case 11, 12: // input, output: ValueInfoProto, name = 1
			name, err := valueInfoName(f)
			if err != nil {
				return nil, err
			}
			if f.num == 11 {
				g.Inputs = append(g.Inputs, name)
			} else {
				g.Outputs = append(g.Outputs, name)
			}
		}
	}
	return g, nil
}

func valueInfoName(f field) (string, error) {
	if f.typ != protowire.BytesType {
		return "", fmt.Errorf("ValueInfoProto: wire type %d", f.typ)
	}
	vfs, err := fields(f.b)
	if err != nil {
		return "", fmt.Errorf("ValueInfoProto: %w", err)
	}
	for _, vf := range vfs {
		if vf.num == 1 {
			return vf.str()
		}
	}
	return "", fmt.Errorf("ValueInfoProto without a name")
}

func tensorName(data []byte) (string, error) {
	fs, err := fields(data)
	if err != nil {
		return "", err
	}
	for _, f := range fs {
		if f.num == 8 {
			return f.str()
		}
	}
	return "", nil
}

// parseNode decodes a NodeProto.
func parseNode(data []byte) (*Node, error) {
	fs, err := fields(data)
	if err != nil {
		return nil, err
	}
	n := &Node{Attrs: map[string]Attr{}}
	for _, f := range fs {
		var s string
		switch f.num {
		case 1, 2, 4, 7: // input, output, op_type, domain
			if s, err = f.str(); err != nil {
				return nil, err
			}
		}
		switch f.num {
		case 1:
			n.Inputs = append(n.Inputs, s)
		case 2:
			n.Outputs = append(n.Outputs, s)
		case 4:
			n.OpType = s
		case 7:
			n.Domain = s
		case 5: // attribute
			if f.typ != protowire.BytesType {
				return nil, fmt.Errorf("attribute: wire type %d", f.typ)
			}
			a, err := parseAttr(f.b)
			if err != nil {
				return nil, fmt.Errorf("attribute: %w", err)
			}
			if _, dup := n.Attrs[a.Name]; dup {
				return nil, fmt.Errorf("attribute %q given twice", a.Name)
			}
			n.Attrs[a.Name] = *a
		}
	}
	return n, nil
}

// parseAttr decodes an AttributeProto's scalar value fields: name = 1,
// f = 2, i = 3, s = 4, type = 20.
func parseAttr(data []byte) (*Attr, error) {
	fs, err := fields(data)
	if err != nil {
		return nil, err
	}
	a := &Attr{}
	inferred := AttrUndefined
	for _, f := range fs {
		switch f.num {
		case 1:
			if a.Name, err = f.str(); err != nil {
				return nil, err
			}
		case 2:
			if f.typ != protowire.Fixed32Type {
				return nil, fmt.Errorf("AttributeProto.f: wire type %d", f.typ)
			}
			a.F, inferred = math.Float32frombits(uint32(f.v)), AttrFloat
		case 3:
			if f.typ != protowire.VarintType {
				return nil, fmt.Errorf("AttributeProto.i: wire type %d", f.typ)
			}
			a.I, inferred = int64(f.v), AttrInt
		case 4:
			if f.typ != protowire.BytesType {
				return nil, fmt.Errorf("AttributeProto.s: wire type %d", f.typ)
			}
			a.S, inferred = f.b, AttrString
		case 20:
			if f.typ != protowire.VarintType {
				return nil, fmt.Errorf("AttributeProto.type: wire type %d", f.typ)
			}
			a.Type = AttrType(f.v)
		}
	}
	if a.Type == AttrUndefined {
		a.Type = inferred // models before IR version 0.0.2 leave type out
	}
	return a, nil
}

// ReadTensor reads a TensorProto file (input_<i>.pb, output_<i>.pb).
func ReadTensor(path string) (*Tensor, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTensor(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseTensor decodes a TensorProto of FLOAT (or DOUBLE, converted to
// float32) values held in float_data, double_data or raw_data.
func ParseTensor(data []byte) (*Tensor, error) {
	fs, err := fields(data)
	if err != nil {
		return nil, fmt.Errorf("TensorProto: %w", err)
	}
	t := &Tensor{}
	dataType := int64(0)
	var floats []float32
	var doubles []float64
	var raw []byte
	hasRaw := false
	for _, f := range fs {
		switch f.num {
		case 1: // dims
			ds, err := f.varints()
			if err != nil {
				return nil, fmt.Errorf("TensorProto.dims: %w", err)
			}
			t.Dims = append(t.Dims, ds...)
		case 2: // data_type
			vs, err := f.varints()
			if err != nil || len(vs) != 1 {
				return nil, fmt.Errorf("TensorProto.data_type: %v", err)
			}
			dataType = vs[0]
		case 3:
			return nil, fmt.Errorf("TensorProto.segment: segmented tensors are not supported")
		case 4: // float_data
			vs, err := f.floats()
			if err != nil {
				return nil, fmt.Errorf("TensorProto.float_data: %w", err)
			}
			floats = append(floats, vs...)
		case 8: // name
			if t.Name, err = f.str(); err != nil {
				return nil, err
			}
		case 9: // raw_data
			if f.typ != protowire.BytesType {
				return nil, fmt.Errorf("TensorProto.raw_data: wire type %d", f.typ)
			}
			raw, hasRaw = f.b, true
		case 10: // double_data
			vs, err := f.doubles()
			if err != nil {
				return nil, fmt.Errorf("TensorProto.double_data: %w", err)
			}
			doubles = append(doubles, vs...)
		case 13, 14: // external_data, data_location
			return nil, fmt.Errorf("TensorProto: external data is not supported")
		}
	}
	n := int64(1)
	for _, d := range t.Dims {
		if d < 0 || d > 1<<31 || n*d > 1<<31 {
			return nil, fmt.Errorf("TensorProto: dims %v out of range", t.Dims)
		}
		n *= d
	}
	switch dataType {
	case dataFloat:
		if hasRaw {
			if len(raw) != 4*int(n) {
				return nil, fmt.Errorf("TensorProto: %d bytes of raw_data for dims %v", len(raw), t.Dims)
			}
			f := field{num: 9, typ: protowire.BytesType, b: raw}
			floats, _ = f.floats()
		}
		t.Data = floats
	case dataDouble:
		if hasRaw {
			if len(raw) != 8*int(n) {
				return nil, fmt.Errorf("TensorProto: %d bytes of raw_data for dims %v", len(raw), t.Dims)
			}
			f := field{num: 9, typ: protowire.BytesType, b: raw}
			doubles, _ = f.doubles()
		}
		for _, v := range doubles {
			t.Data = append(t.Data, float32(v))
		}
	default:
		return nil, fmt.Errorf("TensorProto: data_type %d is not supported (FLOAT or DOUBLE only)", dataType)
	}
	if int64(len(t.Data)) != n {
		return nil, fmt.Errorf("TensorProto: %d values for dims %v", len(t.Data), t.Dims)
	}
	if t.Data == nil {
		t.Data = []float32{}
	}
	return t, nil
}
