package main

import (
	"fmt"
	"strings"
)

// pairsSuffix ends the name of a function's STP form: the generated
// dispatch runs it on the cores of pairsCPUs (by MIDR_EL1) and the
// function without the suffix on the others.
const pairsSuffix = "STP"

// pairsCPUs are the models whose cores run the STP forms.
var pairsCPUs = map[string]bool{"N2": true, "V1": true, "V2": true}

// pairsNote marks a loop or row whose STP form the figures of pairsCPUs are.
const pairsNote = "STP form on N2, V1, V2"

// mergeForms folds each STP form into its function: every loop keeps its
// first form's figures on the other models and takes the STP form's on
// pairsCPUs. It returns the functions and loops left, the STP forms gone.
func mergeForms(fns []*function) ([]*function, []*loop, error) {
	byName := map[string]*function{}
	for _, fn := range fns {
		byName[fn.pkg+"."+fn.name] = fn
	}
	var out []*function
	var loops []*loop
	for _, fn := range fns {
		base, ok := strings.CutSuffix(fn.name, pairsSuffix)
		if ok {
			if _, has := byName[fn.pkg+"."+base]; has {
				continue
			}
		}
		if stp, has := byName[fn.pkg+"."+fn.name+pairsSuffix]; has {
			if len(stp.loops) != len(fn.loops) {
				return nil, nil, fmt.Errorf("%s.%s: %d loops, its STP form %d", fn.pkg, fn.name, len(fn.loops), len(stp.loops))
			}
			fn.pairs = true
			for i, l := range fn.loops {
				s := stp.loops[i]
				if s.label != l.label || s.el != l.el {
					return nil, nil, fmt.Errorf("%s.%s: loop %d is %s (%d el/it), in the STP form %s (%d)", fn.pkg, fn.name, i, l.label, l.el, s.label, s.el)
				}
				// Identical loops share one res map: copy it.
				res := map[string]*estimate{}
				for _, c := range cpus {
					res[c.name] = l.res[c.name]
					if pairsCPUs[c.name] {
						res[c.name] = s.res[c.name]
					}
				}
				l.res = res
				if s.key != l.key {
					l.pairs = true
					l.key += "\x00" + s.key
				}
			}
		}
		out = append(out, fn)
		loops = append(loops, fn.loops...)
	}
	return out, loops, nil
}
