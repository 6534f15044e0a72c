package algo

import (
	"fmt"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/spec"
)

// Form is how an entry point's call maps onto the rows of its kernel.
type Form int

const (
	// Rows: rows of H contiguous values (axis last).
	Rows Form = iota
	// Positions: per image of an [N, C, L] tensor, L rows (the spatial
	// positions) of C values, L apart (axis channels; ir.Columns).
	Positions
	// Channels: C rows (the channels) of N segments (the images) of L
	// values, C*L apart (axis batch; ir.Segments); with L = 1, the
	// Columns kernel over the [N, C] matrix.
	Channels
	// Groups: per image, G rows (the groups) of C/G segments (the
	// channels) of L values (axis groups; ir.Segments).
	Groups
)

// Axis is the form's spec spelling, for the generated tests' messages.
func (f Form) Axis() string { return [...]string{"last", "channels", "batch", "groups"}[f] }

// Tensor reports whether the entry points take an [N, C, L] tensor.
func (f Form) Tensor() bool { return f != Rows }

// PerImage reports whether a call runs the kernel once per image, with
// the arrays resliced to that image (per-row outputs included).
func (f Form) PerImage() bool { return f == Positions || f == Groups }

// Plan is the whole call plan of one spec kernel: the IR its entry
// points run and how each call maps onto the IR's rows and shape.
type Plan struct {
	Kernel *ir.Kernel
	// Columns, for Channels, is the same kernel in the Columns layout
	// (BatchColumns), run when the spatial size is 1.
	Columns *ir.Kernel
	Form    Form
	// Sizes are the fixed sizes that get entry points (row length H, or
	// channel count C for Positions); Sized tells whether the form has
	// fixed sizes at all: without, the run-time entry point has no
	// "Any" suffix, there being no other.
	Sizes []int
	Sized bool
	// Groups: the fixed number of groups, or with GroupSize > 0 instead
	// the fixed number of channels per group.
	GroupCount, GroupSize int
	// Statistic is the resolved statistic (spec.Kernel.Stat).
	Statistic string
	// OneValuePanics: a call with N*L = 1 has no spread to normalize by
	// (Channels with a statistic).
	OneValuePanics bool
	// Backward is the backward pass (spec backward: true), nil without.
	Backward *Backward
}

// NoStat reports a kernel that only scales and shifts.
func (p *Plan) NoStat() bool { return p.Statistic == "none" }

// EntrySuffix is what follows the kernel's name in the entry point for
// size h (0: chosen at run time).
func (p *Plan) EntrySuffix(h int) string {
	switch {
	case h > 0:
		return fmt.Sprint(h)
	case p.Sized:
		return "Any"
	}
	return ""
}

// NewPlan builds the IR of spec kernel k and its call plan.
func NewPlan(k spec.Kernel) (*Plan, error) {
	ik, err := Build(k)
	if err != nil {
		return nil, err
	}
	p := &Plan{Kernel: ik, Sizes: k.Hidden, Statistic: k.Stat()}
	switch k.Axis {
	case "last", "":
		p.Form, p.Sized = Rows, true
	case "channels":
		p.Form, p.Sized = Positions, true
	case "batch":
		p.Form = Channels
		p.OneValuePanics = p.Statistic != "none"
		if p.Columns, err = BatchColumns(k); err != nil {
			return nil, err
		}
	case "groups":
		p.Form, p.GroupCount, p.GroupSize = Groups, k.Groups, k.GroupSize
	}
	if k.Backward {
		if p.Backward, err = NewBackward(k); err != nil {
			return nil, err
		}
	}
	return p, nil
}
