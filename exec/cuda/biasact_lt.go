package cuda

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/partition"
)

// A GEMM with a bias as one cuBLASLt call, the bias added in the GEMM's
// own epilogue (CUBLASLT_EPILOGUE_BIAS) instead of by pb_bias (or
// pb_bias_act) after it: one launch and one write of the output, no
// re-read. Used wherever cuBLASLt loads (cgo/cuda's binding, found as
// libcublasLt beside libcublas) and its heuristic returns an algorithm
// for the op's product; every other GEMM with a bias runs as before
// (cublasGemmEx, then pb_bias, or pb_bias_act with the activation after
// it). Options.Without cublaslt turns it off.
//
// Only the bias epilogue: cuBLASLt's header names its GELU epilogues
// "GELU" without saying which GELU they compute, and GPT-2's is the tanh
// approximation, so the activation stays pb_act (which the fakes prove);
// TestRealGPULtBiasGEMM measures CUBLASLT_EPILOGUE_GELU_BIAS against both
// forms on a device.
//
// The numerics match cublasGemmEx + pb_bias but for one rounding: the
// epilogue adds the bias to the fp32 accumulator and rounds once, where
// the GEMM rounds its output to the storage type and pb_bias rounds the
// sum again.

// ltState is cuBLASLt for the rank's biased GEMMs.
type ltState struct {
	lib    *cuda.BLASLt
	handle *cuda.LtHandle
	// plans are the planned products by op; skip the ops cuBLASLt
	// cannot run, with why.
	plans map[fuseKey]*cuda.LtPlan
	skip  map[fuseKey]string
	why   string // why cuBLASLt is off ("": on)
}

// ltLibs are the cuBLASLt bindings of the process, one per file (libs.go).
var ltLibs map[string]*cuda.BLASLt

func loadCUBLASLt() (*cuda.BLASLt, error) {
	return shared("cublaslt", cuda.CUBLASLtSpec(), &ltLibs, cuda.LoadCUBLASLtFrom)
}

// initLt loads cuBLASLt and makes its handle. A failure leaves every GEMM
// on cublasGemmEx and says why.
func (c *Compute) initLt() {
	l := &c.lt
	if c.without["cublaslt"] {
		l.why = "turned off (Options.Without)"
		return
	}
	lib, err := loadCUBLASLt()
	if err != nil {
		l.why = err.Error()
		return
	}
	h, err := lib.NewHandle()
	if err != nil {
		l.why = err.Error()
		return
	}
	l.lib, l.handle = lib, h
	l.plans, l.skip = map[fuseKey]*cuda.LtPlan{}, map[fuseKey]string{}
}

// closeLt releases the plans and the handle (the library stays loaded).
func (c *Compute) closeLt() error {
	l := &c.lt
	var errs []error
	for _, p := range l.plans {
		errs = append(errs, p.Destroy())
	}
	if l.handle != nil {
		errs = append(errs, l.handle.Destroy())
	}
	l.plans, l.handle = nil, nil
	return errors.Join(errs...)
}

// ltBiasGemm runs GEMM op with its bias as one cuBLASLt call where it can
// (planned on the op's first run) and reports whether it did. in, out, w
// and bias are the op's operands, resolved by exec.Frame.
func (c *Compute) ltBiasGemm(op *partition.Op, in, out dbuf, w, bias *dtensor) (bool, error) {
	l := &c.lt
	if l.handle == nil {
		return false, nil
	}
	key := keyOf(op)
	if _, skip := l.skip[key]; skip {
		return false, nil
	}
	g := cuda.RowMajorGemm(op.Rows, op.N, op.K, in.p, w.p, out.p, c.dt.blas)
	p := l.plans[key]
	if p == nil {
		var err error
		if p, err = l.handle.Plan(cuda.LtFromGemm(g, cuda.LtEpilogueBias, bias.p), c.ltWorkspace()); err != nil {
			l.skip[key] = err.Error()
			return false, nil
		}
		l.plans[key] = p
	}
	if c.replay {
		return true, nil
	}
	c.stats.Launches++
	return true, p.RunOn(g.A, g.B, g.C, c.blasWS, c.ltWorkspace(), c.stream)
}

// ltWorkspace is the workspace cuBLASLt may use: cuBLAS's, where it has
// one.
func (c *Compute) ltWorkspace() int64 {
	if c.blasWS == 0 {
		return 0
	}
	return cublasWorkspaceBytes
}

// ltTag is what the timing entry of a GEMM that ran through cuBLASLt adds
// to its name: " [cublasLt bias]".
func (c *Compute) ltTag(op *partition.Op) string {
	if op.Kind == partition.Gemm && c.lt.plans[keyOf(op)] != nil {
		return " [cublasLt bias]"
	}
	return ""
}

// describeBias is Describe's account of where the biases ran: cuBLASLt's
// epilogue (the library, and the ops it could not take with the first
// reason), pb_bias_act, or why neither.
func (c *Compute) describeBias() string {
	l := &c.lt
	var b strings.Builder
	switch {
	case l.handle == nil:
		fmt.Fprintf(&b, ", bias epilogue off (%s)", l.why)
	default:
		fmt.Fprintf(&b, ", bias epilogue cuBLASLt %d (%s) on %d GEMMs", l.lib.Version(), l.lib.Path(), len(l.plans))
		if len(l.skip) > 0 {
			var names []string
			for k := range l.skip {
				names = append(names, k.name)
			}
			sort.Strings(names)
			fmt.Fprintf(&b, ", not on %d (%s: %s)", len(l.skip), names[0], l.skip[keyOfName(l.skip, names[0])])
		}
	}
	if c.biasAct.why != "" {
		fmt.Fprintf(&b, ", bias+GELU kernel off (%s)", c.biasAct.why)
	} else {
		n := 0 // the planned fusions whose GEMM cuBLASLt did not take
		for k := range c.biasAct.next {
			if l.plans[k] == nil {
				n++
			}
		}
		fmt.Fprintf(&b, ", bias+GELU kernel pb_bias_act on %d of %d planned ops", n, len(c.biasAct.next))
	}
	return b.String()
}

// keyOfName is the first key of m named name.
func keyOfName(m map[fuseKey]string, name string) fuseKey {
	for k := range m {
		if k.name == name {
			return k
		}
	}
	return fuseKey{}
}
