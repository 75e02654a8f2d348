package cuda

import (
	_ "embed" // biasact.cu

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// A linear's bias and the activation after it as one kernel: a peephole
// over the rank's Programs, applied by this backend only (the Program,
// which sim and the other backends interpret, keeps its two ops).
//
// Where a Program has a GEMM with a bias immediately followed by an
// ungated tanh-GELU activation that reads the GEMM's output row for row
// (GPT-2's up projection: u = h·W_up + b_up, then a = gelu(u)), and
// nothing after the activation reads u before a GEMM writes it again, the
// GEMM leaves its bias out and the activation launches pb_bias_act
// (biasact.cu): a = gelu_tanh(u + b) in one read of u and one write of a,
// instead of pb_bias (a read and a write of u) then pb_act (a read of u
// and a write of a). u then holds the GEMM's output without the bias,
// which nothing reads.
//
// The bias a GEMM leaves out is pending until the activation it belongs
// to runs. Whatever order a caller runs ops in, the bias reaches u before
// anything else reads it: an op other than that activation, run while the
// bias is pending, first launches pb_bias on u (as the unfused path
// would have) and clears it. After the activation has run, the next other
// op clears it without a launch (the Program says u is dead there); the
// same activation run again adds the bias again (u still lacks it).
//
// Numerics: pb_bias_act keeps u + b in fp32 and rounds once to the
// storage type, after the activation; the unfused pair rounds u + b to the
// storage type, then the activation of that rounded value. In fp32 the
// two are equal bit for bit (rounding to fp32 is exact); in fp16 and bf16
// they differ by at most the rounding of u + b carried through GELU
// (docs/numerics.md).

// biasActSource is pb_bias_act (biasact.cu), in the backend's second
// module (extra.go).
//
//go:embed biasact.cu
var biasActSource string

// biasActSig is pb_bias_act's parameter list: u, bias, a, rows, n.
const biasActSig = "pppii"

// biasActState is the peephole's plan and the bias a GEMM left pending.
type biasActState struct {
	// next maps a fusable biased GEMM to the activation after it.
	next map[fuseKey]partition.Op
	// pending is the bias the last such GEMM left out (nil: none).
	pending *pendingBias
	why     string // why the fusion is off ("": on)
}

// pendingBias is a bias a GEMM left for the activation after it.
type pendingBias struct {
	gemm, act         fuseKey
	gemmName, actName string
	u, bias           cuda.DevicePtr
	rows, n           int
	ran               bool // the activation ran pb_bias_act with it
	// fill, where cuBLASLt's GELU_BIAS epilogue wrote the activation's
	// output and not u (biasact_lt.go), writes u as the unfused path
	// would: the activation then launches nothing, and another op run
	// before it gets u filled first.
	fill func() error
}

// initBiasAct looks up pb_bias_act and plans the fusions of the rank's
// prefill and decode Programs. Without it (Options.Without bias-act, or
// the second module not loaded) every bias runs as pb_bias.
func (c *Compute) initBiasAct() {
	b := &c.biasAct
	if c.without["bias-act"] {
		b.why = "turned off (Options.Without)"
		return
	}
	if err := c.extraKernel("pb_bias_act", biasActSig); err != nil {
		b.why = err.Error()
		return
	}
	b.next = c.biasActPairs()
}

// biasActPairs maps each GEMM of the rank's Programs whose bias and the
// tanh-GELU after it can run as one (biasActFusable) to that activation.
func (c *Compute) biasActPairs() map[fuseKey]partition.Op {
	next := map[fuseKey]partition.Op{}
	if !c.plan.Model.Features().Bias {
		return next // no linear has a bias
	}
	for _, phase := range []partition.Phase{partition.Prefill, partition.Decode} {
		ops := c.plan.Program(c.rank.Rank, phase).Ops
		for i := 0; i+1 < len(ops); i++ {
			if biasActFusable(ops, i) {
				next[keyOf(&ops[i])] = ops[i+1]
			}
		}
	}
	return next
}

// biasActFusable says whether ops[i] is a GEMM with a bias whose output
// the tanh-GELU activation ops[i+1] reads row for row, and which no later
// op of ops reads before a GEMM writes it again.
func biasActFusable(ops []partition.Op, i int) bool {
	g, act := &ops[i], &ops[i+1]
	if g.Kind != partition.Gemm || g.Bias == "" || g.Rows <= 0 || act.Kind != partition.Activation || act.MLP != model.GELUTanh {
		return false
	}
	if act.In != g.Out || act.Out == g.Out || act.Microbatch != g.Microbatch || act.Rows != g.Rows ||
		act.InWidth != g.N || act.OutWidth != g.N {
		return false
	}
	return deadAfter(ops[i+2:], g.Out, g.Microbatch)
}

// deadAfter says whether no op of rest reads buffer buf of micro-batch mb
// before a GEMM overwrites it (an op that names buf otherwise, as input or
// as an output it updates in place, reads it).
func deadAfter(rest []partition.Op, buf model.Buf, mb int) bool {
	for i := range rest {
		op := &rest[i]
		if op.Microbatch != mb || (op.In != buf && op.Out != buf) {
			continue
		}
		return op.In != buf && op.Kind == partition.Gemm
	}
	return true
}

// deferBias leaves the bias of GEMM op (already queued, output u) to the
// activation after it where the plan fuses them, and reports whether it
// did.
func (c *Compute) deferBias(op *partition.Op, u dbuf, bias *dtensor) bool {
	act, ok := c.biasAct.next[keyOf(op)]
	if !ok {
		return false
	}
	c.biasAct.pending = &pendingBias{gemm: keyOf(op), act: keyOf(&act), gemmName: op.Name, actName: act.Name,
		u: u.p, bias: bias.p, rows: op.Rows, n: op.N}
	return true
}

// settleBias runs before every op: a bias pending for another op than its
// activation is added to u now (pb_bias), or dropped where the activation
// has already consumed it.
func (c *Compute) settleBias(op *partition.Op) error {
	p := c.biasAct.pending
	if p == nil || keyOf(op) == p.act {
		return nil
	}
	c.biasAct.pending = nil
	if p.ran {
		return nil
	}
	if p.fill != nil {
		return p.fill()
	}
	n := p.rows * p.n
	return c.launch("pb_bias", cuda.D1(flatBlocks(n)), cuda.D1(flatThreads), c.newArgs().p(p.u).p(p.bias).i(p.rows).i(p.n))
}

// biasActivation runs activation op as pb_bias_act where the GEMM before
// it left its bias pending, and reports whether it did. u and a are the
// activation's buffers, resolved by exec.Frame.
func (c *Compute) biasActivation(op *partition.Op, u, a dbuf) (bool, error) {
	p := c.biasAct.pending
	if p == nil || p.act != keyOf(op) {
		return false, nil
	}
	if p.fill != nil { // the GEMM's epilogue wrote a
		p.ran = true
		return true, nil
	}
	if p.u != u.p { // not the u the GEMM wrote (the plan rules it out): the bias goes there first
		c.biasAct.pending = nil
		n := p.rows * p.n
		return false, c.launch("pb_bias", cuda.D1(flatBlocks(n)), cuda.D1(flatThreads), c.newArgs().p(p.u).p(p.bias).i(p.rows).i(p.n))
	}
	p.ran = true
	args := c.newArgs().p(u.p).p(p.bias).p(a.p).i(p.rows).i(p.n)
	return true, c.launchShared("pb_bias_act", cuda.D1(flatBlocks(p.rows*p.n)), cuda.D1(flatThreads), 0, args)
}

// biasActTag is what the timing entry of the op just run adds to its name:
// " [bias in L00.act]" on the GEMM that left its bias to the activation,
// " [+bias of L00.w_up]" on the activation that added it, " [in L00.w_up]"
// on an activation cuBLASLt's epilogue ran.
func (c *Compute) biasActTag(op *partition.Op) string {
	p := c.biasAct.pending
	switch {
	case p == nil:
		return ""
	case !p.ran && p.gemm == keyOf(op) && p.fill == nil:
		return " [bias in " + p.actName + "]"
	case p.ran && p.act == keyOf(op) && p.fill != nil:
		return " [in " + p.gemmName + "]"
	case p.ran && p.act == keyOf(op):
		return " [+bias of " + p.gemmName + "]"
	}
	return ""
}
