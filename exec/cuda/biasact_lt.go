package cuda

import (
	"errors"
	"fmt"
	"math"
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
// cuBLASLt's header names its GELU epilogues "GELU" without saying which
// GELU they compute, and GPT-2's is the tanh approximation. So New runs
// CUBLASLT_EPILOGUE_GELU_BIAS once on 64 inputs in [−4, 3] where the tanh
// form and erf's differ by many units in the last place (x ≤ −1.5; in
// bf16 x ≤ −3.3) and names the form every such output is closer to
// (probeLtGELU). Only where
// that is the tanh form does an up projection followed by its tanh-GELU
// (biasActFusable) run as one cuBLASLt call writing the activation's
// output, GELU_BIAS; the activation then launches nothing, and u, which
// nothing reads, is not written (an op run between the two gets u filled
// first, as with pb_bias_act). Options.Without cublaslt-gelu keeps the
// bias epilogue and pb_act. TestRealGPULtBiasGEMM measures the epilogue
// against both forms on a device.
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
	// gelu is the GELU the GELU_BIAS epilogue computes here ("tanh",
	// "erf", "": not known, geluWhy says why); geluNext the biased GEMMs
	// followed by their tanh-GELU (planned where gelu is "tanh"), and
	// geluPlans, geluSkip their products as for plans and skip.
	gelu, geluWhy string
	geluNext      map[fuseKey]partition.Op
	geluPlans     map[fuseKey]*cuda.LtPlan
	geluSkip      map[fuseKey]string
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
	if !c.plan.Model.Features().Bias {
		l.why = "no linear of the model has a bias" // no library load, no GELU probe at start-up
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
	l.geluPlans, l.geluSkip = map[fuseKey]*cuda.LtPlan{}, map[fuseKey]string{}
	if c.without["cublaslt-gelu"] {
		l.geluWhy = "turned off (Options.Without)"
		return
	}
	l.gelu, l.geluWhy = c.probeLtGELU()
	if l.gelu != "tanh" {
		return
	}
	l.geluNext = c.biasActPairs() // biasact.go
}

// probeLtGELU runs CUBLASLT_EPILOGUE_GELU_BIAS once in the element type,
// D[8×8] = gelu(I·X + 0) for 64 values x of [−4, 3], in cuBLAS's
// workspace (nothing else uses it while New runs), and names the GELU the
// outputs follow: "tanh" or "erf" where every output at which the two
// forms differ by at least 16 units in the last place and 0.2 % (x ≤ −1.5
// in fp32 and fp16, x ≤ −3.3 in bf16) is the closer to that form and
// every output is within max(4u, 10⁻⁵)·max(1, |want|) of it (u the unit
// roundoff); else "" and why.
func (c *Compute) probeLtGELU() (form, why string) {
	if c.blasWS == 0 {
		return "", "not probed: no scratch (cuBLAS has no workspace)"
	}
	const n = 8
	x, id := make([]float32, n*n), make([]float32, n*n)
	for i := range x {
		x[i] = c.dt.round(float32(-4 + 7*float64(i)/float64(n*n-1)))
	}
	for i := 0; i < n; i++ {
		id[i*n+i] = 1
	}
	// A, B, D and the bias 256 bytes apart (64 fp32 elements at most each).
	A, B, D, bias := c.blasWS, c.blasWS+256, c.blasWS+512, c.blasWS+768
	for _, up := range []struct {
		p cuda.DevicePtr
		v []float32
	}{{A, id}, {B, x}, {bias, make([]float32, n)}, {D, make([]float32, n*n)}} {
		if err := c.stream.CopyHtoDAsync(up.p, c.dt.encode(up.v)); err != nil {
			return "", "not probed: " + err.Error()
		}
	}
	t := c.dt.blas
	p, err := c.lt.handle.Plan(cuda.LtMatmul{TransA: cuda.OpN, TransB: cuda.OpN, M: n, N: n, K: n, A: A, B: B, D: D,
		AType: t, BType: t, CType: t, LDA: n, LDB: n, LDC: n, Compute: cuda.Compute32F,
		Epilogue: cuda.LtEpilogueGELUBias, Bias: bias}, 0)
	if err != nil {
		return "", "not probed: " + err.Error()
	}
	defer p.Destroy() //nolint:errcheck // a probe's descriptors
	raw := make([]byte, n*n*c.dt.bytes)
	if err := p.Run(0, 0, c.stream); err != nil {
		return "", "not probed: " + err.Error()
	}
	if err := c.stream.CopyDtoHAsync(raw, D); err != nil {
		return "", "not probed: " + err.Error()
	}
	if err := c.stream.Synchronize(); err != nil {
		return "", "not probed: " + err.Error()
	}
	return geluFormOf(x, c.dt.decode(raw), unitRoundoff[c.dt.name])
}

// unitRoundoff is each element type's unit roundoff.
var unitRoundoff = map[string]float64{"fp32": 0x1p-24, "fp16": 0x1p-11, "bf16": 0x1p-8}

// geluFormOf names the GELU outputs got of inputs x follow (probeLtGELU's
// rule), for an element type of unit roundoff u.
func geluFormOf(x, got []float32, u float64) (form, why string) {
	// The bound on |got − want| / max(1, |want|) (the check's measure):
	// 4u, and 10⁻⁵ in fp32 (an fp32 tanh loses a few ulps, a tenth of the
	// check's tolerance), so an epilogue with a coarse tanh is taken for
	// fp16 and bf16, where the storage rounding hides it, and not for fp32.
	tol := max(4*u, 1e-5)
	tanhN, erfN, tanhBad, erfBad := 0, 0, 0, 0
	for i, xv := range x {
		v := float64(xv)
		t := 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
		e := 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
		g := float64(got[i])
		if math.Abs(g-t) > tol*max(1, math.Abs(t)) || math.IsNaN(g) {
			tanhBad++
		}
		if math.Abs(g-e) > tol*max(1, math.Abs(e)) || math.IsNaN(g) {
			erfBad++
		}
		if math.Abs(t-e) <= max(32*u, 2e-3)*math.Abs(e) {
			continue // not told apart: within 16 ulps of the element type, or 0.2 % (fp32 arithmetic)
		}
		if math.Abs(g-t) < math.Abs(g-e) {
			tanhN++
		} else {
			erfN++
		}
	}
	switch {
	case tanhN+erfN == 0:
		return "", "no output tells the forms apart"
	case erfN == 0 && tanhBad == 0:
		return "tanh", fmt.Sprintf("all %d outputs that tell the forms apart follow tanh-GELU", tanhN)
	case tanhN == 0 && erfBad == 0:
		return "erf", fmt.Sprintf("all %d outputs that tell the forms apart follow erf-GELU", erfN)
	}
	return "", fmt.Sprintf("outputs follow neither form within %.2g (%d closer to tanh, %d to erf; %d and %d of %d beyond the bound)",
		tol, tanhN, erfN, tanhBad, erfBad, len(x))
}

// closeLt releases the plans and the handle (the library stays loaded).
func (c *Compute) closeLt() error {
	l := &c.lt
	var errs []error
	for _, ps := range []map[fuseKey]*cuda.LtPlan{l.plans, l.geluPlans} {
		for _, p := range ps {
			errs = append(errs, p.Destroy())
		}
	}
	if l.handle != nil {
		errs = append(errs, l.handle.Destroy())
	}
	l.plans, l.geluPlans, l.handle = nil, nil, nil
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
	if act, ok := l.geluNext[key]; ok {
		if ok, err := c.ltGELUGemm(op, &act, g, bias); ok || err != nil {
			return true, err
		}
	}
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

// ltGELUGemm runs GEMM g of op (bias b) with the tanh-GELU of activation
// act as one cuBLASLt call writing act's output, where it can, and reports
// whether it did; the activation is then pending (biasact.go) with a
// fill that writes u as GemmEx + pb_bias would, should another op run
// first.
func (c *Compute) ltGELUGemm(op, act *partition.Op, g cuda.GemmEx, b *dtensor) (bool, error) {
	l := &c.lt
	key := keyOf(op)
	if _, skip := l.geluSkip[key]; skip {
		return false, nil
	}
	a, err := c.frame.Buffer(act.Out, act.Microbatch, act.Rows*act.OutWidth)
	if err != nil {
		return true, err
	}
	p := l.geluPlans[key]
	if p == nil {
		m := cuda.LtFromGemm(g, cuda.LtEpilogueGELUBias, b.p)
		m.D = a.p
		if p, err = l.handle.Plan(m, c.ltWorkspace()); err != nil {
			l.geluSkip[key] = err.Error()
			return false, nil
		}
		l.geluPlans[key] = p
	}
	rows, n := op.Rows, op.N
	c.biasAct.pending = &pendingBias{gemm: key, act: keyOf(act), gemmName: op.Name, actName: act.Name,
		u: g.C, bias: b.p, rows: rows, n: n, fill: func() error {
			if !c.replay {
				c.stats.Launches++
				if err := c.handle.GemmEx(g); err != nil {
					return err
				}
			}
			return c.launch("pb_bias", cuda.D1(flatBlocks(rows*n)), cuda.D1(flatThreads), c.newArgs().p(g.C).p(b.p).i(rows).i(n))
		}}
	if c.replay {
		return true, nil
	}
	c.stats.Launches++
	return true, p.RunOn(g.A, g.B, a.p, c.blasWS, c.ltWorkspace(), c.stream)
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
// to its name: " [cublasLt bias]", or " [cublasLt bias+GELU]" where the
// epilogue also ran the activation after it.
func (c *Compute) ltTag(op *partition.Op) string {
	switch {
	case op.Kind != partition.Gemm:
	case c.lt.geluPlans[keyOf(op)] != nil:
		return " [cublasLt bias+GELU]"
	case c.lt.plans[keyOf(op)] != nil:
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
		switch l.gelu {
		case "tanh":
			fmt.Fprintf(&b, "; GELU_BIAS epilogue computes tanh-GELU (%s): on %d GEMMs, not on %d", l.geluWhy, len(l.geluPlans), len(l.geluSkip))
		case "erf":
			fmt.Fprintf(&b, "; GELU_BIAS epilogue computes erf-GELU, not GPT-2's (%s): not used", l.geluWhy)
		default:
			fmt.Fprintf(&b, "; GELU_BIAS epilogue not used (%s)", l.geluWhy)
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
