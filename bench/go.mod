module github.com/normgen/normgen/bench

go 1.26.8

replace github.com/normgen/normgen => ../

require gonum.org/v1/gonum v0.17.0

require (
	github.com/normgen/normgen v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.50.0
)
