package algo

import (
	"fmt"
	"math"
	"strings"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/spec"
)

// Backward is the backward pass of a kernel over rows, as two ordinary IR
// kernels that every lowering handles unchanged:
//
//   - Rows (layout ir.Rows): per row, the input gradient dx (and df with a
//     residual) and the per-row parameter gradients (dgain, dbias);
//   - Params (layout ir.Columns, nil without per-element parameters): the
//     per-element parameter gradients dgamma and dbeta, sums over the rows
//     of the call. Column i of the [rows, H] matrices is one IR row whose
//     elements are the original rows (stride H): one lane per column, so
//     each column's sum runs in a fixed order whichever way the columns
//     are split, under the blocked summation policy. The saved mean and
//     rstd, one value per original row, are its Param arrays.
type Backward struct {
	Name   string // the entry points' prefix: the kernel's name + "Backward"
	Rows   *ir.Kernel
	Params *ir.Kernel
	// Columns (axis batch): Rows in the Columns layout, for tensors with
	// one spatial position; Sums (axis channels): the sums over the images
	// of Params's per-image results, in the Columns layout.
	Columns, Sums *ir.Kernel
	// Args are the entry points' arrays in signature order: outputs,
	// inputs, parameters.
	Args []BackwardArg
	// GoRows (nil: Rows) is the Rows kernel the pure-Go form is written
	// from, where Fused needs a first loop that the other lowerings had
	// better not take (with a mean: one more product an element).
	GoRows *ir.Kernel
	// Fused (nil: none) lets the pure-Go form add the Params kernel's
	// column sums in the Rows kernel's first loop, which computes their
	// terms already, so that dy and x are read twice rather than three
	// times: see FusedSums.
	Fused *FusedSums
}

// FusedSums are the column sums of a Params kernel that a Rows kernel
// (layout Rows) computes the terms of: Rows.Body[Loop] computes each
// Cols[i].V, the same float32 value, by the same operations, that Params
// adds to Cols[i].Out for the element. A pure-Go form that adds V to a
// float32 chain per column, row after row, in the chunks Params uses,
// gives Params' bits.
type FusedSums struct {
	Loop int
	Cols []FusedCol // in the order of Params' outputs
}

// FusedCol is one column sum of FusedSums: Out (dgamma, dbeta) gets V.
type FusedCol struct {
	Out string
	V   ir.V
}

// Extent is how many values an array of a backward entry point holds.
type Extent int

const (
	PerElement Extent = iota // rows*H
	PerColumn                // H: one per element of a row (dgamma, gamma)
	PerRow                   // rows
)

// BackwardArg is one array of a backward entry point.
type BackwardArg struct {
	Name, Doc string
	Extent    Extent
	Out       bool
	// Elem is the storage of a PerElement array: the forward's storage
	// over rows (dy, x, dx: uint16 bits of a half format), else F32.
	Elem ir.Elem
}

// NewBackward builds the backward pass of spec kernel k. Over rows (axis
// last) it is as described at Backward. The tensor axes map onto the same
// two kernels in their forward's layouts:
//
//   - batch: Rows in the Segments layout, one row per channel over the
//     whole batch (and Columns, the same in the Columns layout, for [N, C]);
//     the per-channel gain gradients are its per-row outputs, no Params;
//   - groups: Rows in the Segments layout, run per image as the forward;
//     Params in the Segments layout, one row per channel, its segments the
//     images, the saved statistics gathered to one value per segment;
//   - channels: Rows in the Columns layout, run per image as the forward;
//     Params in the Rows layout per image (one row per channel, its
//     elements the positions, the statistics one per position), whose
//     per-image sums Sums adds over the images (Columns layout).
func NewBackward(k spec.Kernel) (*Backward, error) {
	bw := &Backward{Name: k.Name + "Backward"}
	var err error
	rowsLayout, paramsLayout := ir.Rows, ir.Columns
	switch k.Axis {
	case "batch", "groups":
		rowsLayout, paramsLayout = ir.Segments, ir.Segments
	case "channels":
		rowsLayout, paramsLayout = ir.Columns, ir.Rows
	}
	// Without a mean, every lowering takes the fused first loop: no
	// product more an element there.
	if bw.Rows, err = backwardRows(k, rowsLayout, "Rows", fusable(k) && !k.Mean); err != nil {
		return nil, err
	}
	if fusable(k) {
		goRows := bw.Rows
		if k.Mean {
			if goRows, err = backwardRows(k, rowsLayout, "Rows", true); err != nil {
				return nil, err
			}
			bw.GoRows = goRows
		}
		bw.Fused = fusedSums(goRows, k.Shift)
	}
	if k.Axis == "batch" {
		if bw.Columns, err = backwardRows(k, ir.Columns, "Columns", false); err != nil {
			return nil, err
		}
	}
	if !k.AffinePerRow && (k.Scale || k.Shift) {
		if bw.Params, err = backwardParams(k, paramsLayout); err != nil {
			return nil, err
		}
		if k.Axis == "channels" {
			if bw.Sums, err = columnSums(k); err != nil {
				return nil, err
			}
		}
	}
	elem, err := backwardElem(k)
	if err != nil {
		return nil, err
	}
	add := func(name, doc string, e Extent, out bool) {
		a := BackwardArg{Name: name, Doc: doc, Extent: e, Out: out, Elem: ir.F32}
		if e == PerElement {
			a.Elem = elem
		}
		bw.Args = append(bw.Args, a)
	}
	add("dx", "the gradient of the loss with respect to x", PerElement, true)
	if k.Residual != nil {
		add("df", "the gradient with respect to f", PerElement, true)
	}
	switch {
	case k.Scale && k.AffinePerRow:
		add("dgain", "the gradient with respect to each row's gain", PerRow, true)
	case k.Scale:
		add("dgamma", "the gradient with respect to gamma: the sum over the call's rows, overwritten", PerColumn, true)
	}
	switch {
	case k.Shift && k.AffinePerRow:
		add("dbias", "the gradient with respect to each row's bias", PerRow, true)
	case k.Shift:
		add("dbeta", "the gradient with respect to beta: the sum over the call's rows, overwritten", PerColumn, true)
	}
	add("dy", "the gradient of the loss with respect to the output", PerElement, false)
	if k.Residual != nil && k.Residual.StoreSum {
		add("dsum", "the gradient arriving through the forward's sum output (its other consumers)", PerElement, false)
	}
	if storesSum(k) {
		add("sum", "the forward's sum output s = alpha*x + f", PerElement, false)
	} else {
		add("x", "the forward's input x", PerElement, false)
		if k.Residual != nil {
			add("f", "the forward's input f", PerElement, false)
		}
	}
	if k.Mean {
		add("mean", "each row's mean, as the forward saved it", PerRow, false)
	}
	if k.Stat() != "none" {
		add("rstd", "each row's rstd, as the forward saved it", PerRow, false)
	}
	switch {
	case k.Scale && k.AffinePerRow:
		add("gain", "each row's scale, as in the forward", PerRow, false)
	case k.Scale:
		add("gamma", "the per-element scale, as in the forward", PerColumn, false)
	}
	return bw, nil
}

// GoRowsKernel is the Rows kernel of the pure-Go form: GoRows, else Rows.
func (bw *Backward) GoRowsKernel() *ir.Kernel {
	if bw.GoRows != nil {
		return bw.GoRows
	}
	return bw.Rows
}

// backwardElem is the storage of a backward's row arrays (dy, x, f,
// sum, dsum, dx, df): the forward's, over rows and over tensors alike.
func backwardElem(k spec.Kernel) (ir.Elem, error) {
	if k.Storage == "" || k.Storage == "f32" {
		return ir.F32, nil
	}
	e, ok := ir.ParseElem(k.Storage)
	if !ok {
		return ir.F32, fmt.Errorf("kernel %s: the backward has no storage %q", k.Name, k.Storage)
	}
	return e, nil
}

// setRowElems gives the row arrays (RowIn, RowOut) of b the backward's
// storage: parameters, saved statistics and their gradients stay float32.
func setRowElems(b *ir.Builder, k spec.Kernel, arrays ...int) error {
	e, err := backwardElem(k)
	if err != nil || e == ir.F32 {
		return err
	}
	for _, a := range arrays {
		if a >= 0 {
			b.SetElem(a, e)
		}
	}
	return nil
}

// storesSum reports a residual kernel whose forward writes s: its
// backward reads s from there rather than recomputing it from x and f
// (one stream fewer, and the very s the forward normalized).
func storesSum(k spec.Kernel) bool { return k.Residual != nil && k.Residual.StoreSum }

// backwardTerms are the pieces both backward kernels share: s (the
// normalized input: x, the forward's sum output, or recomputed from x and
// f with the forward's float32 operations) and xhat = (s - mean)*rstd.
type backwardTerms struct {
	b           *ir.Builder
	x, f        int
	alpha       ir.S
	mean, rstd  int  // arrays, -1 when absent
	perRowStats bool // mean and rstd are per-row scalars (Rows), else Params (Columns)
	mu, r       ir.S // per-row scalars (Rows layout)
}

// inputs declares the arrays s comes from: sum, or x (and f).
func (t *backwardTerms) inputs(k spec.Kernel) {
	if storesSum(k) {
		t.x = t.b.Array("sum", ir.RowIn, "the forward's sum output")
		return
	}
	t.x = t.b.Array("x", ir.RowIn, "the forward's input")
	if k.Residual != nil {
		t.f = t.b.Array("f", ir.RowIn, "the forward's residual input")
	}
}

func (t *backwardTerms) s(l *ir.LoopBuilder) ir.V {
	s := l.Load(t.x)
	if t.f >= 0 {
		if t.alpha >= 0 {
			s = l.Mul(l.Splat(t.alpha), s)
		}
		s = l.Add(s, l.Load(t.f))
	}
	return s
}

func (t *backwardTerms) xhat(l *ir.LoopBuilder) ir.V {
	v := t.centered(l)
	switch {
	case t.rstd >= 0 && t.perRowStats:
		v = l.Mul(v, l.Splat(t.r))
	case t.rstd >= 0:
		v = l.Mul(v, l.Load(t.rstd))
	}
	return v
}

// centered is s - mean (s without a mean): xhat before its scaling by rstd.
func (t *backwardTerms) centered(l *ir.LoopBuilder) ir.V {
	v := t.s(l)
	switch {
	case t.mean >= 0 && t.perRowStats:
		v = l.Sub(v, l.Splat(t.mu))
	case t.mean >= 0:
		v = l.Sub(v, l.Load(t.mean))
	}
	return v
}

// fusable reports a kernel whose Rows kernel computes the terms of its
// Params kernel's column sums, dy*xhat (dgamma) and dy (dbeta), in its
// first loop: over rows, a per-element gamma without an offset (beta
// optional), without a residual, in float32.
func fusable(k spec.Kernel) bool {
	return k.Axis == "last" && k.Stat() != "none" && k.Scale && k.ScaleOffset == 0 && !k.AffinePerRow &&
		k.Residual == nil && (k.Storage == "" || k.Storage == "f32")
}

// fusedSums finds the column sums' terms in the first loop of a fusable
// kernel's Rows kernel: dy*xhat, the left operand of its AccMul, and
// (with a shift) the loaded dy.
func fusedSums(rows *ir.Kernel, shift bool) *FusedSums {
	for i, st := range rows.Body {
		lp, ok := st.(*ir.Loop)
		if !ok {
			continue
		}
		for _, op := range lp.Ops {
			if op.Code != ir.VAccMul {
				continue
			}
			fs := &FusedSums{Loop: i, Cols: []FusedCol{{Out: "dgamma", V: op.Args[0]}}}
			if shift {
				fs.Cols = append(fs.Cols, FusedCol{Out: "dbeta", V: lp.Ops[op.Args[0]].Args[0]})
			}
			return fs
		}
		return nil
	}
	return nil
}

// backwardRows is the input-gradient kernel. With u = g*dy (g the
// effective scale) and xhat = (s - mean)*rstd:
//
//	ds = rstd*(u - mean(u) - xhat*mean(u*xhat))   (variance)
//	ds = rstd*(u - xhat*mean(u*xhat))             (rms)
//	ds = rstd*(u - xhat*sum(u*xhat))              (l2)
//	ds = u                                        (none)
//	ds += dsum (store_sum);  dx = alpha*ds;  df = ds
//
// and per row dgain = sum(dy*xhat), dbias = sum(dy). Both sums of the
// first pass follow the blocked summation policy; a row whose float32
// sums leave float32's range (or are NaN) goes to the float64 path.
// fused: the first loop computes dy*xhat, dgamma's term (FusedSums), and
// the row sum of u*xhat as (dy*xhat)*gamma.
func backwardRows(k spec.Kernel, layout ir.Layout, suffix string, fused bool) (*ir.Kernel, error) {
	b := ir.NewBuilder(k.Name+"Backward"+suffix, backwardFormula(k))
	b.SetLayout(layout)
	stat := k.Stat()
	normalize := stat != "none"
	residual := k.Residual != nil
	dx := b.Array("dx", ir.RowOut, "the gradient of x")
	df := -1
	if residual {
		df = b.Array("df", ir.RowOut, "the gradient of f")
	}
	dgain, dbias := -1, -1
	if k.AffinePerRow && k.Scale {
		dgain = b.Array("dgain", ir.RowScalarOut, "each row's gain gradient")
	}
	if k.AffinePerRow && k.Shift {
		dbias = b.Array("dbias", ir.RowScalarOut, "each row's bias gradient")
	}
	dy := b.Array("dy", ir.RowIn, "the output gradient")
	dsum := -1
	if residual && k.Residual.StoreSum {
		dsum = b.Array("dsum", ir.RowIn, "the gradient arriving through sum")
	}
	t := &backwardTerms{b: b, mean: -1, rstd: -1, f: -1, alpha: -1, perRowStats: true}
	t.inputs(k)
	if k.Mean {
		t.mean = b.Array("mean", ir.RowScalarIn, "each row's saved mean")
	}
	if normalize {
		t.rstd = b.Array("rstd", ir.RowScalarIn, "each row's saved rstd")
	}
	gamma := -1
	switch {
	case k.Scale && k.AffinePerRow:
		gamma = b.Array("gain", ir.RowScalarIn, "each row's scale")
	case k.Scale:
		gamma = b.Array("gamma", ir.Param, "the per-element scale")
	}
	if err := setRowElems(b, k, dx, df, dy, dsum, t.x, t.f); err != nil {
		return nil, err
	}

	var alpha ir.S = -1
	if residual && k.Residual.Alpha != 1 {
		alpha = b.Const(float32(k.Residual.Alpha))
		if t.f >= 0 {
			t.alpha = alpha
		}
	}
	if t.mean >= 0 {
		t.mu = b.LoadRow(t.mean)
	}
	if t.rstd >= 0 {
		t.r = b.LoadRow(t.rstd)
	}
	var offset, gain ir.S = -1, -1
	if k.Scale && k.ScaleOffset != 0 {
		offset = b.Const(float32(k.ScaleOffset))
	}
	if k.Scale && k.AffinePerRow {
		gain = b.LoadRow(gamma)
		if offset >= 0 {
			gain = b.Add(gain, offset)
		}
	}
	u := func(l *ir.LoopBuilder, d ir.V) ir.V {
		switch {
		case gain >= 0:
			return l.Mul(d, l.Splat(gain))
		case gamma >= 0:
			g := l.Load(gamma)
			if offset >= 0 {
				g = l.Add(g, l.Splat(offset))
			}
			return l.Mul(d, g)
		}
		return d
	}

	// With a scale per row (or none), u is dy times one scalar g of the
	// row: sum(u) = g*sum(dy) and sum(u*xhat) = g*sum(dy*xhat), two
	// accumulators rather than four (which would not fit AVX2's sixteen
	// registers in the Segments layout).
	fold := gamma < 0 || gain >= 0
	accU, accUX, accG, accD := -1, -1, -1, -1
	if k.Mean && !fold {
		accU = b.NewAcc()
	}
	if normalize && !fold {
		accUX = b.NewAcc()
	}
	if dgain >= 0 || (fold && normalize) {
		accG = b.NewAcc()
	}
	if dbias >= 0 || (fold && k.Mean) {
		accD = b.NewAcc()
	}
	var meanU, meanUX, sumG, sumD ir.S = -1, -1, -1, -1
	if accU >= 0 || accUX >= 0 || accG >= 0 || accD >= 0 {
		b.Loop(func(l *ir.LoopBuilder) {
			d := l.Load(dy)
			var uv, xh, g ir.V = -1, -1, -1
			switch {
			case accU >= 0 && accUX >= 0 && fused:
				// gamma loaded once for u and u*xhat.
				g = l.Load(gamma)
				uv = l.Mul(d, g)
			case accU >= 0 || (accUX >= 0 && !fused):
				uv = u(l, d)
			}
			if accUX >= 0 || accG >= 0 {
				xh = t.xhat(l)
			}
			if accU >= 0 {
				l.Acc(accU, uv)
			}
			switch {
			case accUX >= 0 && fused:
				// u*xhat as (dy*xhat)*gamma: dy*xhat is dgamma's term (FusedSums).
				dxh := l.Mul(d, xh)
				if g < 0 {
					g = l.Load(gamma)
				}
				l.AccMul(accUX, dxh, g)
			case accUX >= 0:
				l.AccMul(accUX, uv, xh)
			}
			if accG >= 0 {
				l.AccMul(accG, d, xh)
			}
			if accD >= 0 {
				l.Acc(accD, d)
			}
		})
		var invLen ir.S = -1
		average := func(sum ir.S) ir.S {
			if stat == "l2" {
				return sum
			}
			if invLen < 0 {
				invLen = b.InvLen()
			}
			return b.Mul(sum, invLen)
		}
		// Sums beyond float32's range, or NaN, send the row to the
		// float64 path, before anything of it is stored.
		guard := func(s ir.S) ir.S {
			b.Guard(s, -math.MaxFloat32, math.MaxFloat32)
			return s
		}
		scaled := func(s ir.S) ir.S {
			if gain >= 0 {
				return guard(b.Mul(gain, s))
			}
			return s
		}
		if accU >= 0 {
			meanU = guard(average(b.Sum(accU)))
		}
		if accUX >= 0 {
			meanUX = guard(average(b.Sum(accUX)))
		}
		if accG >= 0 {
			sumG = guard(b.Sum(accG))
			if fold && normalize {
				meanUX = scaled(average(sumG))
			}
		}
		if accD >= 0 {
			sumD = guard(b.Sum(accD))
			if fold && k.Mean {
				meanU = scaled(average(sumD))
			}
		}
	}
	// The write pass takes xhat*(-meanUX) as (s - mean)*negUXR, one
	// per-row negUXR = -meanUX*rstd: one multiplication fewer per element.
	// negUXR beyond float32's range sends the row to the float64 path.
	var negUXR ir.S = -1
	if meanUX >= 0 {
		negUXR = b.Mul(b.Sub(b.Const(0), meanUX), t.r)
		b.Guard(negUXR, -math.MaxFloat32, math.MaxFloat32)
	}
	if dgain < 0 {
		sumG = -1
	}
	if dbias < 0 {
		sumD = -1
	}
	if sumG >= 0 {
		b.StoreRow(dgain, sumG)
	}
	if sumD >= 0 {
		b.StoreRow(dbias, sumD)
	}
	b.Loop(func(l *ir.LoopBuilder) {
		v := u(l, l.Load(dy))
		if meanU >= 0 {
			v = l.Sub(v, l.Splat(meanU))
		}
		if negUXR >= 0 {
			v = l.FMA(t.centered(l), l.Splat(negUXR), v)
		}
		if t.rstd >= 0 {
			v = l.Mul(v, l.Splat(t.r))
		}
		if dsum >= 0 {
			v = l.Add(v, l.Load(dsum))
		}
		if df >= 0 {
			l.Store(df, v)
		}
		if alpha >= 0 {
			v = l.Mul(l.Splat(alpha), v)
		}
		l.Store(dx, v)
	})
	return b.Kernel()
}

// backwardParams is the parameter-gradient kernel in the Columns layout:
// IR row i is column i of the call, its elements the call's rows, so
//
//	dgamma[i] = sum_r dy[r,i]*xhat[r,i],  dbeta[i] = sum_r dy[r,i]
//
// are per-row scalar outputs. It has no guard: an abandoned column would
// shift the lowering's blocks, and the results must not depend on how
// the columns are split; a NaN spoils its own column's sums.
//
// Over tensors the layout is the axis's (see NewBackward); the saved
// statistics stay Param arrays, broadcast per segment (groups) or read per
// element (channels: one per position).
func backwardParams(k spec.Kernel, layout ir.Layout) (*ir.Kernel, error) {
	b := ir.NewBuilder(k.Name+"BackwardParams", "dgamma = sum over rows of dy*xhat; dbeta = sum over rows of dy")
	b.SetLayout(layout)
	dgamma, dbeta := -1, -1
	if k.Scale {
		dgamma = b.Array("dgamma", ir.RowScalarOut, "the gradient of gamma")
	}
	if k.Shift {
		dbeta = b.Array("dbeta", ir.RowScalarOut, "the gradient of beta")
	}
	dy := b.Array("dy", ir.RowIn, "the output gradient")
	t := &backwardTerms{b: b, mean: -1, rstd: -1, f: -1, alpha: -1}
	t.inputs(k)
	if k.Mean {
		t.mean = b.Array("mean", ir.Param, "each row's saved mean")
	}
	if k.Stat() != "none" {
		t.rstd = b.Array("rstd", ir.Param, "each row's saved rstd")
	}
	if t.f >= 0 && k.Residual.Alpha != 1 {
		t.alpha = b.Const(float32(k.Residual.Alpha))
	}
	if err := setRowElems(b, k, dy, t.x, t.f); err != nil {
		return nil, err
	}
	accG, accD := -1, -1
	if dgamma >= 0 {
		accG = b.NewAcc()
	}
	if dbeta >= 0 {
		accD = b.NewAcc()
	}
	b.Loop(func(l *ir.LoopBuilder) {
		d := l.Load(dy)
		if accG >= 0 {
			l.AccMul(accG, d, t.xhat(l))
		}
		if accD >= 0 {
			l.Acc(accD, d)
		}
	})
	if accG >= 0 {
		b.StoreRow(dgamma, b.Sum(accG))
	}
	if accD >= 0 {
		b.StoreRow(dbeta, b.Sum(accD))
	}
	return b.Kernel()
}

// columnSums adds, per channel (a row of the Columns layout), the
// per-image parameter gradients that Params wrote as an [N, C] matrix:
// the second level of a blocked sum over the images and positions.
func columnSums(k spec.Kernel) (*ir.Kernel, error) {
	b := ir.NewBuilder(k.Name+"BackwardSums", "dgamma = sum over images of each image's dgamma; dbeta likewise")
	b.SetLayout(ir.Columns)
	var names []string
	if k.Scale {
		names = append(names, "gamma")
	}
	if k.Shift {
		names = append(names, "beta")
	}
	outs, ins, accs := make([]int, len(names)), make([]int, len(names)), make([]int, len(names))
	for i, n := range names {
		outs[i] = b.Array("d"+n, ir.RowScalarOut, "the sum over the images")
	}
	for i, n := range names {
		ins[i] = b.Array("part"+n, ir.RowIn, "each image's sums, [N, C]")
		accs[i] = b.NewAcc()
	}
	b.Loop(func(l *ir.LoopBuilder) {
		for i := range names {
			l.Acc(accs[i], l.Load(ins[i]))
		}
	})
	for i := range names {
		b.StoreRow(outs[i], b.Sum(accs[i]))
	}
	return b.Kernel()
}

// backwardFormula writes the backward's math for the documentation.
func backwardFormula(k spec.Kernel) string {
	var sb strings.Builder
	g := "dy"
	switch {
	case k.Scale && k.AffinePerRow && k.ScaleOffset != 0:
		g = fmt.Sprintf("(%g + gain[row])*dy", k.ScaleOffset)
	case k.Scale && k.AffinePerRow:
		g = "gain[row]*dy"
	case k.Scale && k.ScaleOffset != 0:
		g = fmt.Sprintf("(%g + gamma)*dy", k.ScaleOffset)
	case k.Scale:
		g = "gamma*dy"
	}
	s := "x"
	if k.Residual != nil {
		s = "s"
	}
	fmt.Fprintf(&sb, "u = %s; ", g)
	switch k.Stat() {
	case "variance":
		fmt.Fprintf(&sb, "xhat = (%s-mean)*rstd; ds = rstd*(u - mean(u) - xhat*mean(u*xhat))", s)
	case "rms":
		fmt.Fprintf(&sb, "xhat = %s*rstd; ds = rstd*(u - xhat*mean(u*xhat))", s)
	case "l2":
		fmt.Fprintf(&sb, "xhat = %s*rstd; ds = rstd*(u - xhat*sum(u*xhat))", s)
	default:
		fmt.Fprintf(&sb, "xhat = %s; ds = u", s)
	}
	if r := k.Residual; r != nil {
		if r.StoreSum {
			sb.WriteString(" + dsum")
		}
		if r.Alpha != 1 {
			fmt.Fprintf(&sb, "; dx = %g*ds; df = ds", float32(r.Alpha))
		} else {
			sb.WriteString("; dx = df = ds")
		}
	} else {
		sb.WriteString("; dx = ds")
	}
	if k.Scale {
		if k.AffinePerRow {
			sb.WriteString("; dgain = sum(dy*xhat) per row")
		} else {
			sb.WriteString("; dgamma = sum over rows of dy*xhat")
		}
	}
	if k.Shift {
		if k.AffinePerRow {
			sb.WriteString("; dbias = sum(dy) per row")
		} else {
			sb.WriteString("; dbeta = sum over rows of dy")
		}
	}
	return sb.String()
}
