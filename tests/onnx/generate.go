package onnx

// The kernels are generated, never edited: onnxnorm/ is git-ignored and
// written from onnx.yaml by the normgen of this checkout (go.mod's replace
// and tool directives).
//go:generate go tool normgen -spec onnx.yaml -out onnxnorm
