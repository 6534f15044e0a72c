module github.com/normgen/normgen/tests/onnx

go 1.26.8

require google.golang.org/protobuf v1.36.12

require (
	github.com/dave/jennifer v1.7.1 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mmcloughlin/avo v0.6.0 // indirect
	github.com/normgen/normgen v0.0.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/normgen/normgen => ../..

tool github.com/normgen/normgen/cmd/normgen
