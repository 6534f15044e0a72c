module github.com/normgen/normgen/tests/schema

go 1.22.0

require (
	github.com/normgen/normgen v0.0.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.1
	go.yaml.in/yaml/v3 v3.0.2
)

require (
	golang.org/x/sys v0.26.0 // indirect
	golang.org/x/text v0.14.0 // indirect
)

replace github.com/normgen/normgen => ../..
