module github.com/normgen/normgen/bench

go 1.26.8

replace github.com/normgen/normgen => ../

require gonum.org/v1/gonum v0.17.0

require golang.org/x/sys v0.50.0
