module github.com/normgen/normgen

go 1.22.0

require (
	github.com/dave/jennifer v1.7.1
	github.com/mmcloughlin/avo v0.6.0
	github.com/spf13/cobra v1.6.1
	go.yaml.in/yaml/v3 v3.0.2
	golang.org/x/sys v0.26.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
