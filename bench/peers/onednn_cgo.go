//go:build cgo && onednn

package peers

/*
#cgo LDFLAGS: -ldnnl -lgomp
#include <stdlib.h>
#include <stdio.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

static dnnl_engine_t nb_engine;
static dnnl_stream_t nb_stream;

// nb_init creates the CPU engine and stream, with one OpenMP thread.
static int nb_init(void) {
	omp_set_num_threads(1);
	if (dnnl_engine_create(&nb_engine, dnnl_cpu, 0) != dnnl_success) return 1;
	if (dnnl_stream_create(&nb_stream, nb_engine, dnnl_stream_default_flags) != dnnl_success) return 2;
	return 0;
}

static const char *nb_version(int details) {
	static char buf[96];
	const dnnl_version_t *v = dnnl_version();
	if (!details) {
		snprintf(buf, sizeof buf, "%d.%d.%d", v->major, v->minor, v->patch);
		return buf;
	}
	snprintf(buf, sizeof buf, "%d.%d.%d (cpu runtime %s, OpenMP max threads %d)", v->major, v->minor, v->patch,
		v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential" : "other",
		omp_get_max_threads());
	return buf;
}

typedef struct {
	dnnl_primitive_t prim;
	dnnl_memory_t src, dst, scale, shift, mean, var;
	void *stats; // C memory for mean and variance when the primitive wants them
	size_t ms;   // bytes of the mean, the variance follows
	char impl[64];
} nb_lnorm;

// nb_lnorm_create makes a layer normalization (batch = 0: forward inference,
// statistics per row) or a batch normalization (batch = 1: forward training,
// statistics per column, over the rows) of rows x h float32 values, with
// scale (gamma) and, when shift is set, shift (beta); batch = 2 is batch
// normalization of rows x h x spatial values, channels first (NCHW, h
// channels, H = spatial, W = 1).
// dt is the data's type (scale and shift stay f32).
static int nb_lnorm_create(nb_lnorm *p, long long rows, long long h, long long spatial, float eps, int shift, int batch, dnnl_data_type_t dt) {
	dnnl_memory_desc_t data_md, w_md;
	dnnl_dims_t dims = {rows, h, batch == 2 ? spatial : 1, 1}, wdims = {h};
	// Batch normalization: N x C as N x C x 1 x 1 in NHWC, the same bytes,
	// described the way oneDNN's optimized batch normalization wants them
	// (plain 2D "nc" gets a far slower implementation).
	dnnl_format_tag_t tag = batch == 2 ? dnnl_nchw : batch ? dnnl_nhwc : dnnl_ab;
	if (dnnl_memory_desc_init_by_tag(&data_md, batch ? 4 : 2, dims, dt, tag) != dnnl_success) return 1;
	if (dnnl_memory_desc_init_by_tag(&w_md, 1, wdims, dnnl_f32, dnnl_a) != dnnl_success) return 2;
	unsigned flags = dnnl_use_scale | (shift ? dnnl_use_shift : 0);
	dnnl_primitive_desc_t pd;
	if (batch) {
		dnnl_batch_normalization_desc_t d;
		if (dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_training, &data_md, eps, flags) != dnnl_success) return 3;
		if (dnnl_primitive_desc_create(&pd, &d, NULL, nb_engine, NULL) != dnnl_success) return 4;
	} else {
		dnnl_layer_normalization_desc_t d;
		if (dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &data_md, NULL, eps, flags) != dnnl_success) return 3;
		if (dnnl_primitive_desc_create(&pd, &d, NULL, nb_engine, NULL) != dnnl_success) return 4;
	}
	const char *impl = NULL;
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	snprintf(p->impl, sizeof p->impl, "%s", impl ? impl : "?");
	if (dnnl_primitive_create(&p->prim, pd) != dnnl_success) { dnnl_primitive_desc_destroy(pd); return 5; }
	const dnnl_memory_desc_t *mmd = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_MEAN);
	const dnnl_memory_desc_t *vmd = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_VARIANCE);
	size_t ms = mmd ? dnnl_memory_desc_get_size(mmd) : 0, vs = vmd ? dnnl_memory_desc_get_size(vmd) : 0;
	p->stats = NULL; p->mean = NULL; p->var = NULL; p->ms = ms;
	if (ms > 0 && vs > 0) {
		p->stats = malloc(ms + vs);
		dnnl_memory_create(&p->mean, mmd, nb_engine, p->stats);
		dnnl_memory_create(&p->var, vmd, nb_engine, (char *)p->stats + ms);
	}
	dnnl_primitive_desc_destroy(pd);
	if (dnnl_memory_create(&p->src, &data_md, nb_engine, DNNL_MEMORY_NONE) != dnnl_success) return 6;
	if (dnnl_memory_create(&p->dst, &data_md, nb_engine, DNNL_MEMORY_NONE) != dnnl_success) return 7;
	if (dnnl_memory_create(&p->scale, &w_md, nb_engine, DNNL_MEMORY_NONE) != dnnl_success) return 8;
	if (dnnl_memory_create(&p->shift, &w_md, nb_engine, DNNL_MEMORY_NONE) != dnnl_success) return 9;
	return 0;
}

// nb_lnorm_exec runs it on Go memory: the handles are set for the call and
// cleared before returning, so that no Go pointer outlives the call in C.
static int nb_lnorm_exec(nb_lnorm *p, void *src, void *dst, float *scale, float *shift) {
	dnnl_exec_arg_t args[6];
	int n = 0;
	dnnl_memory_set_data_handle(p->src, src);
	dnnl_memory_set_data_handle(p->dst, dst);
	dnnl_memory_set_data_handle(p->scale, scale);
	args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, p->src};
	args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DST, p->dst};
	args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCALE, p->scale};
	if (shift) {
		dnnl_memory_set_data_handle(p->shift, shift);
		args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SHIFT, p->shift};
	}
	if (p->mean) {
		args[n++] = (dnnl_exec_arg_t){DNNL_ARG_MEAN, p->mean};
		args[n++] = (dnnl_exec_arg_t){DNNL_ARG_VARIANCE, p->var};
	}
	int rc = dnnl_primitive_execute(p->prim, nb_stream, n, args) != dnnl_success;
	if (!rc) rc = dnnl_stream_wait(nb_stream) != dnnl_success;
	dnnl_memory_set_data_handle(p->src, DNNL_MEMORY_NONE);
	dnnl_memory_set_data_handle(p->dst, DNNL_MEMORY_NONE);
	dnnl_memory_set_data_handle(p->scale, DNNL_MEMORY_NONE);
	dnnl_memory_set_data_handle(p->shift, DNNL_MEMORY_NONE);
	return rc;
}

typedef struct {
	dnnl_primitive_t prim;
	dnnl_memory_t src, diff_dst, diff_src, mean, var, scale, shift, diff_scale, diff_shift;
	char impl[64];
} nb_bwd;

// nb_bwd_create makes the backward (dnnl_backward: data, scale and shift
// gradients) of layer normalization (batch = 0, rows x h) or batch
// normalization (batch = 1: x[rows, h] as NHWC; batch = 2: x[rows, h,
// spatial] as NCHW), with the forward-training primitive as its hint.
static int nb_bwd_create(nb_bwd *p, long long rows, long long h, long long spatial, float eps, int batch) {
	dnnl_memory_desc_t data_md, w_md;
	dnnl_dims_t dims = {rows, h, batch == 2 ? spatial : 1, 1}, wdims = {h};
	dnnl_format_tag_t tag = batch == 2 ? dnnl_nchw : batch ? dnnl_nhwc : dnnl_ab;
	if (dnnl_memory_desc_init_by_tag(&data_md, batch ? 4 : 2, dims, dnnl_f32, tag) != dnnl_success) return 1;
	if (dnnl_memory_desc_init_by_tag(&w_md, 1, wdims, dnnl_f32, dnnl_a) != dnnl_success) return 2;
	unsigned flags = dnnl_use_scale | dnnl_use_shift;
	dnnl_primitive_desc_t fwd, pd;
	if (batch) {
		dnnl_batch_normalization_desc_t f, d;
		if (dnnl_batch_normalization_forward_desc_init(&f, dnnl_forward_training, &data_md, eps, flags) != dnnl_success) return 3;
		if (dnnl_primitive_desc_create(&fwd, &f, NULL, nb_engine, NULL) != dnnl_success) return 4;
		if (dnnl_batch_normalization_backward_desc_init(&d, dnnl_backward, &data_md, &data_md, eps, flags) != dnnl_success) return 5;
		if (dnnl_primitive_desc_create(&pd, &d, NULL, nb_engine, fwd) != dnnl_success) return 6;
	} else {
		dnnl_layer_normalization_desc_t f, d;
		if (dnnl_layer_normalization_forward_desc_init(&f, dnnl_forward_training, &data_md, NULL, eps, flags) != dnnl_success) return 3;
		if (dnnl_primitive_desc_create(&fwd, &f, NULL, nb_engine, NULL) != dnnl_success) return 4;
		if (dnnl_layer_normalization_backward_desc_init(&d, dnnl_backward, &data_md, &data_md, NULL, eps, flags) != dnnl_success) return 5;
		if (dnnl_primitive_desc_create(&pd, &d, NULL, nb_engine, fwd) != dnnl_success) return 6;
	}
	dnnl_primitive_desc_destroy(fwd);
	const char *impl = NULL;
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	snprintf(p->impl, sizeof p->impl, "%s", impl ? impl : "?");
	if (dnnl_primitive_create(&p->prim, pd) != dnnl_success) { dnnl_primitive_desc_destroy(pd); return 7; }
	const dnnl_memory_desc_t *mmd = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_MEAN);
	const dnnl_memory_desc_t *vmd = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_VARIANCE);
	int rc = 0;
	if (!mmd || !vmd || dnnl_memory_create(&p->mean, mmd, nb_engine, DNNL_MEMORY_NONE) != dnnl_success ||
		dnnl_memory_create(&p->var, vmd, nb_engine, DNNL_MEMORY_NONE) != dnnl_success) rc = 8;
	dnnl_primitive_desc_destroy(pd);
	if (rc) return rc;
	dnnl_memory_t *mems[] = {&p->src, &p->diff_dst, &p->diff_src};
	for (int i = 0; i < 3; i++)
		if (dnnl_memory_create(mems[i], &data_md, nb_engine, DNNL_MEMORY_NONE) != dnnl_success) return 9;
	dnnl_memory_t *ws[] = {&p->scale, &p->shift, &p->diff_scale, &p->diff_shift};
	for (int i = 0; i < 4; i++)
		if (dnnl_memory_create(ws[i], &w_md, nb_engine, DNNL_MEMORY_NONE) != dnnl_success) return 10;
	return 0;
}

// nb_bwd_exec runs it on Go memory, the handles cleared before returning.
// The shift is an argument too (this oneDNN refuses the call without it),
// though the gradients do not depend on it.
static int nb_bwd_exec(nb_bwd *p, float *dx, float *dgamma, float *dbeta, float *dy, float *x, float *mean, float *var, float *gamma, float *beta) {
	dnnl_memory_t m[9] = {p->diff_src, p->diff_scale, p->diff_shift, p->diff_dst, p->src, p->mean, p->var, p->scale, p->shift};
	float *h[9] = {dx, dgamma, dbeta, dy, x, mean, var, gamma, beta};
	int id[9] = {DNNL_ARG_DIFF_SRC, DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT, DNNL_ARG_DIFF_DST, DNNL_ARG_SRC, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
	dnnl_exec_arg_t args[9];
	for (int i = 0; i < 9; i++) {
		dnnl_memory_set_data_handle(m[i], h[i]);
		args[i] = (dnnl_exec_arg_t){id[i], m[i]};
	}
	int rc = dnnl_primitive_execute(p->prim, nb_stream, 9, args);
	if (rc == dnnl_success) rc = dnnl_stream_wait(nb_stream);
	for (int i = 0; i < 9; i++) dnnl_memory_set_data_handle(m[i], DNNL_MEMORY_NONE);
	return rc;
}
*/
import "C"

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"unsafe"

	"github.com/normgen/normgen/benchkit"
)

var (
	dnnlOnce sync.Once
	dnnlErr  error
	dnnlImpl = map[string]bool{}
)

func dnnlInit() error {
	dnnlOnce.Do(func() {
		if rc := C.nb_init(); rc != 0 {
			dnnlErr = fmt.Errorf("oneDNN engine/stream creation failed (%d)", rc)
		}
	})
	return dnnlErr
}

// OneDNN is oneDNN's layer normalization primitive (forward inference,
// scale and shift), called through cgo on one thread.
var OneDNN = benchkit.Impl{
	Name:  "onednn",
	About: "oneDNN (Debian libdnnl-dev) through cgo, one OpenMP thread, src and dst handles set per call: the layer normalization primitive (forward inference, scale and shift) and the batch normalization primitive (forward training, scale and shift: it computes the batch statistics and writes each channel's mean and biased variance; oneDNN keeps no running statistics), NHWC for [N, C], NCHW for [N, C, L]. This oneDNN has no RMS normalization.",
	Prepare: func(s benchkit.Shape) (benchkit.Func, string) {
		op, h, rows, eps := s.Op, s.H, s.Rows, s.Epsilon()
		if op == benchkit.RMSNorm {
			return nil, "oneDNN " + OneDNNVersion() + " has no RMS normalization"
		}
		batch, c, l := C.int(0), h, 1
		if op == benchkit.BatchNorm {
			batch, c = 1, h
			if cc, ll, ok := NCL(s); ok {
				batch, c, l = 2, cc, ll
			}
		}
		if err := dnnlInit(); err != nil {
			return nil, err.Error()
		}
		p := (*C.nb_lnorm)(C.calloc(1, C.size_t(unsafe.Sizeof(C.nb_lnorm{}))))
		if rc := C.nb_lnorm_create(p, C.longlong(rows), C.longlong(c), C.longlong(l), C.float(eps), 1, batch, C.dnnl_f32); rc != 0 {
			return nil, fmt.Sprintf("primitive creation failed (step %d)", rc)
		}
		dnnlImpl[C.GoString(&p.impl[0])] = true
		n := rows * h
		f := func(dst, x, gamma, beta []float32) {
			if len(x) < n || len(dst) < n || len(gamma) < c || len(beta) < c {
				panic("onednn: short slice")
			}
			if C.nb_lnorm_exec(p, unsafe.Pointer(&x[0]), unsafe.Pointer(&dst[0]), (*C.float)(&gamma[0]), (*C.float)(&beta[0])) != 0 {
				panic("onednn: execution failed")
			}
		}
		if batch == 0 {
			return f, ""
		}
		// Training: oneDNN writes each channel's mean and biased variance
		// (to C memory of its own): checked on the first call.
		if p.stats == nil || p.ms != C.size_t(4*c) {
			return nil, "batch normalization without saved mean and variance of C floats"
		}
		stats := func() (mean, rstd, variance []float32) {
			return unsafe.Slice((*float32)(p.stats), c), nil, unsafe.Slice((*float32)(unsafe.Add(p.stats, 4*c)), c)
		}
		return StatsCheckedOnce(f, c, l, eps, stats), ""
	},
}

// OneDNNVersion is the version of the oneDNN library loaded.
func OneDNNVersion() string { return C.GoString(C.nb_version(0)) }

func oneDNNNotes() []string {
	var impls []string
	for k := range dnnlImpl {
		impls = append(impls, k)
	}
	sort.Strings(impls)
	isa := os.Getenv("ONEDNN_MAX_CPU_ISA")
	if isa == "" {
		isa = "(not set: the best the CPU has)"
	}
	return []string{
		"oneDNN: " + C.GoString(C.nb_version(1)),
		fmt.Sprintf("oneDNN kernels: %v; ONEDNN_MAX_CPU_ISA %s", impls, isa),
	}
}

// oneDNNBackward is oneDNN's layer and batch normalization backward
// (dnnl_backward, scale and shift), given the variance where normgen's
// forward saves rstd: var = 1/rstd^2 - eps, converted once, on the first
// call (every buffer set holds the same statistics), outside timing.
func oneDNNBackward(s benchkit.Shape) (benchkit.KernelFunc, string) {
	if s.Kernel == RMSNormBackward {
		return nil, "oneDNN " + OneDNNVersion() + " has no RMS normalization"
	}
	batch, rows, c, l := C.int(0), s.Rows, s.H, 1
	if s.Kernel == BatchNormBackward {
		batch = 1
		c, l = bnDims(s)
		if s.Channels > 0 {
			batch = 2
		}
	}
	if err := dnnlInit(); err != nil {
		return nil, err.Error()
	}
	p := (*C.nb_bwd)(C.calloc(1, C.size_t(unsafe.Sizeof(C.nb_bwd{}))))
	if rc := C.nb_bwd_create(p, C.longlong(rows), C.longlong(c), C.longlong(l), C.float(s.Epsilon()), batch); rc != 0 {
		return nil, fmt.Sprintf("backward primitive creation failed (step %d)", rc)
	}
	dnnlImpl[C.GoString(&p.impl[0])] = true
	var variance []float32
	eps := s.Epsilon()
	return func(a *benchkit.Args) {
		mean, rstd := a.StatIn[0], a.StatIn[1]
		if variance == nil {
			variance = make([]float32, len(rstd))
			for i, r := range rstd {
				variance[i] = 1/(r*r) - eps
			}
		}
		f := func(v []float32) *C.float { return (*C.float)(&v[0]) }
		if rc := C.nb_bwd_exec(p, f(a.Out[0]), f(a.Stats[0]), f(a.Stats[1]), f(a.In[0]), f(a.In[1]), f(mean), f(variance), f(a.Gamma), f(a.Beta)); rc != 0 {
			panic(fmt.Sprintf("onednn: backward execution failed (dnnl status %d)", rc))
		}
	}, ""
}

// oneDNNHalf is oneDNN's layer normalization (forward inference) on bf16
// or f16 data, scale and shift in f32.
func oneDNNHalf(s benchkit.Shape) (benchkit.KernelFunc, string) {
	if s.Op != benchkit.LayerNorm {
		return nil, "oneDNN " + OneDNNVersion() + " has no RMS normalization"
	}
	dt := C.dnnl_data_type_t(C.dnnl_bf16)
	if s.Storage == benchkit.F16 {
		dt = C.dnnl_f16
	}
	if err := dnnlInit(); err != nil {
		return nil, err.Error()
	}
	p := (*C.nb_lnorm)(C.calloc(1, C.size_t(unsafe.Sizeof(C.nb_lnorm{}))))
	if rc := C.nb_lnorm_create(p, C.longlong(s.Rows), C.longlong(s.H), 1, C.float(s.Epsilon()), 1, 0, dt); rc != 0 {
		return nil, fmt.Sprintf("oneDNN %s has no %s layer normalization on this CPU (primitive creation failed, step %d)", OneDNNVersion(), s.Storage, rc)
	}
	dnnlImpl[C.GoString(&p.impl[0])] = true
	return func(a *benchkit.Args) {
		if C.nb_lnorm_exec(p, unsafe.Pointer(&a.In16[0][0]), unsafe.Pointer(&a.Out16[0][0]), (*C.float)(&a.Gamma[0]), (*C.float)(&a.Beta[0])) != 0 {
			panic("onednn: execution failed")
		}
	}, ""
}

func init() {
	im := Extend(OneDNN, oneDNNBackward, oneDNNHalf)
	im.About += " Backward ops: the layer and batch normalization backward primitives (dnnl_backward: diff_src, diff_scale, diff_shift; the forward-training primitive as hint), given the mean and the variance (1/rstd^2 - eps, converted once outside timing). Half ops: the layer normalization primitive (forward inference) on bf16 or f16 data, f32 scale and shift."
	oneDNNPeers = []benchkit.Impl{im}
	notes = append(notes, oneDNNNotes)
}
