package cuda

import (
	"fmt"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// The residual add and the norm after it as one kernel: a peephole over
// the rank's Programs, applied by this backend only (the Program, which
// sim and the other backends interpret, keeps its two ops).
//
// Where a Program has a residual op immediately followed by an RMSNorm or
// LayerNorm that reads the residual's output x row for row (the same
// micro-batch, rows and width: not the final norm of a prefill pass,
// which reads each sequence's last row), the residual launches
// pb_add_rmsnorm or pb_add_layernorm (fused.cu): x += y and the norm's
// output in one pass over the row, instead of pb_add, a re-read of x and
// pb_rmsnorm. The norm op then launches nothing. The fused kernels add,
// store and reduce in the same order as the two they replace, so the
// results are bit for bit those of the unfused path (fuse_emu_test.go).
//
// Fusing early is safe whatever order a caller runs ops in: the residual
// fuses only when the Program says the norm comes next, and marks it
// done; any other op run next clears the mark, so the norm, when it comes
// later, runs on its own (its output rewritten from the same x).

// fuseKey names an op of the rank's Programs: prefill and decode ops of
// one name differ in rows.
type fuseKey struct {
	name     string
	mb, rows int
	kind     partition.Kind
	in, out  model.Buf
}

func keyOf(op *partition.Op) fuseKey {
	return fuseKey{op.Name, op.Microbatch, op.Rows, op.Kind, op.In, op.Out}
}

// fuseState is the peephole's plan and the norm a fused residual ran.
type fuseState struct {
	// next maps a fusable residual to the norm it runs with.
	next map[fuseKey]partition.Op
	// done is the norm the last op ran, until the next op (nil: none),
	// and by is that op's name.
	done *fuseKey
	by   string
	// skipped is the norm that ran as part of the op before it, until the
	// next op, so its timing entry can say so.
	skipped *fuseKey
	why     string // why fusion is off ("": on)
}

// fusedNormSigs are the fused kernels' signatures, by the norm's kind.
var fusedNormSigs = map[partition.Kind]struct{ name, sig string }{
	partition.Norm:      {"pb_add_rmsnorm", addRMSNormSig},
	partition.LayerNorm: {"pb_add_layernorm", addLayerNormSig},
}

// initFuse looks up the fused kernels and plans the fusions of the rank's
// prefill and decode Programs. Without them (Options.Without fused-norm,
// or the second module not loaded) every residual and norm runs alone.
func (c *Compute) initFuse() {
	f := &c.fuse
	if c.without["fused-norm"] {
		f.why = "turned off (Options.Without)"
		return
	}
	for _, k := range fusedNormSigs {
		if err := c.extraKernel(k.name, k.sig); err != nil {
			f.why = err.Error()
			return
		}
	}
	f.next = planFusions(c.plan, c.rank.Rank)
}

// planFusions maps each fusable residual of rank's prefill and decode
// Programs to the norm it runs with (LaunchCounter counts the same).
func planFusions(plan *partition.Plan, rank int) map[fuseKey]partition.Op {
	next := map[fuseKey]partition.Op{}
	for _, phase := range []partition.Phase{partition.Prefill, partition.Decode} {
		prog := plan.Program(rank, phase)
		for i := 0; i+1 < len(prog.Ops); i++ {
			res, norm := &prog.Ops[i], &prog.Ops[i+1]
			if fusable(res, norm) {
				next[keyOf(res)] = *norm
			}
		}
	}
	return next
}

// fusable says whether norm, run right after res, reads res's output row
// for row, so one kernel can do both.
func fusable(res, norm *partition.Op) bool {
	if res.Kind != partition.Residual || (norm.Kind != partition.Norm && norm.Kind != partition.LayerNorm) {
		return false
	}
	return norm.In == res.Out && norm.Microbatch == res.Microbatch && norm.Rows == res.Rows && res.Rows > 0 &&
		norm.InWidth == res.OutWidth && norm.OutWidth == res.OutWidth && (norm.Kind == partition.Norm || norm.Bias != "")
}

// beforeOp clears the mark of a norm already run unless op is that norm.
func (c *Compute) beforeOp(op *partition.Op) {
	c.fuse.skipped = nil
	if d := c.fuse.done; d != nil && *d != keyOf(op) {
		c.fuse.done = nil
	}
}

// normDone says whether op is the norm the residual before it ran (and
// clears the mark).
func (c *Compute) normDone(op *partition.Op) bool {
	d := c.fuse.done
	c.fuse.done = nil
	if d == nil || *d != keyOf(op) {
		return false
	}
	c.fuse.skipped = d
	return true
}

// fusedResidual runs residual op with the norm after it as one kernel
// where the plan fuses them, and reports whether it did. y and x are the
// residual's buffers, resolved by exec.Frame.
func (c *Compute) fusedResidual(op *partition.Op, y, x dbuf) (bool, error) {
	norm, ok := c.fuse.next[keyOf(op)]
	if !ok {
		return false, nil
	}
	w, err := c.frame.Weight(&norm)
	if err != nil {
		return true, err
	}
	H := op.OutWidth
	if wk, wn := w.Shape(); wk != 1 || wn != H {
		return true, fmt.Errorf("norm weight %q is [%d, %d], op %s wants [1, %d]", norm.Tensor, wk, wn, norm.Name, H)
	}
	out, err := c.frame.Buffer(norm.Out, norm.Microbatch, norm.Rows*H)
	if err != nil {
		return true, err
	}
	k := fusedNormSigs[norm.Kind]
	a := c.newArgs().p(x.p).p(y.p).p(out.p).p(w.p)
	if norm.Kind == partition.LayerNorm {
		b, ok := c.frame.Weights[pexec.TensorKey{Layer: norm.Layer, Name: norm.Bias}]
		if !ok {
			return true, fmt.Errorf("rank %d holds no bias %q of layer %d", c.rank.Rank, norm.Bias, norm.Layer)
		}
		if bk, bn := b.Shape(); bk != 1 || bn != H {
			return true, fmt.Errorf("bias %q is [%d, %d], op %s wants [1, %d]", norm.Bias, bk, bn, norm.Name, H)
		}
		a.p(b.p)
	}
	a.i(H).f(float32(norm.Eps))
	if err := c.launchShared(k.name, cuda.D1(op.Rows), cuda.D1(rowThreads), 0, a); err != nil {
		return true, err
	}
	nk := keyOf(&norm)
	c.fuse.done, c.fuse.by = &nk, op.Name
	return true, nil
}

// fuseTag is what the timing entry of the op just run adds to its name:
// " [+L01.attn_norm]" on a residual that ran the norm after it,
// " [in L00.mlp_residual]" on the norm it ran.
func (c *Compute) fuseTag(op *partition.Op) string {
	f := &c.fuse
	switch op.Kind {
	case partition.Residual:
		if n, ok := f.next[keyOf(op)]; ok && f.done != nil && *f.done == keyOf(&n) && f.by == op.Name {
			return " [+" + n.Name + "]"
		}
	case partition.Norm, partition.LayerNorm:
		if f.skipped != nil && *f.skipped == keyOf(op) {
			return " [in " + f.by + "]"
		}
	}
	return c.biasActTag(op) + c.ltTag(op) // biasact.go, biasact_lt.go
}
