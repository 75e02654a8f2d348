package cuda

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// Exec queues one compute op for micro-batch op.Microbatch on the rank's
// stream; past is the number of tokens of its sequences already in the KV
// cache. It returns once the work is queued (Sync waits for it). With
// Options.Graphs, the ops of a decode segment that has been captured only
// update the host's bookkeeping: the segment's first op launches its graph.
func (c *Compute) Exec(ctx context.Context, op *partition.Op, past int) error {
	unpin, err := c.enter(ctx)
	if err != nil {
		return err
	}
	defer unpin()
	start := time.Now()
	err = c.run(op, past)
	c.stats.Ops++
	c.stats.HostS += time.Since(start).Seconds()
	return err
}

// op runs one op: exec.Frame's checks and bookkeeping, and its launches
// (none while replaying).
func (c *Compute) op(op *partition.Op, past int) error {
	c.beforeOp(op)                           // fuse.go
	if err := c.settleBias(op); err != nil { // biasact.go: a bias left pending reaches u first
		return err
	}
	return c.frame.Exec(kernels{c}, op, past)
}

// kernels are the GPU's launches on the Frame's resolved buffers.
type kernels struct{ c *Compute }

var _ pexec.Kernels[dbuf, *dtensor] = kernels{}

func flatBlocks(n int) int { return max(1, min(maxFlatBlocks, (n+flatThreads-1)/flatThreads)) }

func (c *Compute) newArgs() *args {
	c.argBuf.n = 0
	return &c.argBuf
}

// launch queues a kernel (nothing while replaying a graph).
func (c *Compute) launch(name string, grid, block cuda.Dim3, a *args) error {
	if c.replay {
		return nil
	}
	k, ok := c.k[name]
	if !ok {
		return fmt.Errorf("cuda: kernel %s is not loaded", name)
	}
	if err := k.check(a); err != nil {
		return err
	}
	if err := checkLaunchBound(name, int(block.X*block.Y*block.Z), 0); err != nil {
		return err
	}
	c.stats.Launches++
	return k.fn.Launch(grid, block, 0, c.stream, a.vals[:a.n]...)
}

// setPos makes the device's position of micro-batch st's pass past. Inside
// a captured or replayed segment it was set before the graph.
func (c *Compute) setPos(st *mbState, past int) error {
	if st.posHost == past {
		return nil
	}
	if c.replay || c.capturing {
		return fmt.Errorf("cuda: position %d set inside a graph segment that began at %d", past, st.posHost)
	}
	if err := c.stream.MemsetD32Async(st.pos, uint32(past), 1); err != nil {
		return err
	}
	c.stats.Launches++
	st.posHost = past
	return nil
}

// Input makes x from token ids: the prompt's tokens for positions below
// the prompt length (pb_prompt_tokens, or SetPrompt's ids copied on the
// device), else the ids in the tokens buffer
// (fed back by sample), through the vocabulary-sharded embedding or the
// synthetic inputs.
func (k kernels) Input(op *partition.Op, past int, tokens, x dbuf, emb *dtensor) error {
	c := k.c
	mb, seqs, q := op.Microbatch, op.Seqs, op.Rows/op.Seqs
	st := c.mbs[mb]
	if err := c.setPos(st, past); err != nil {
		return err
	}
	if past < c.frame.Prompt && c.promptSet {
		if !c.replay {
			if err := c.promptTokens(tokens, seqs, q, mb*seqs, past); err != nil {
				return err
			}
		}
	} else if past < c.frame.Prompt {
		a := c.newArgs().p(tokens.p).p(st.pos).i(seqs).i(q).i(mb * seqs).i(c.frame.Prompt).i(op.Vocab).u(c.promptBase)
		if err := c.launch("pb_prompt_tokens", cuda.D1(flatBlocks(op.Rows)), cuda.D1(flatThreads), a); err != nil {
			return err
		}
	}
	H := op.OutWidth
	c.flagDirty = true
	if emb == nil {
		a := c.newArgs().p(tokens.p).p(x.p).i(H).i(op.Vocab).u(c.synthBase).p(c.errFlag)
		return c.launch("pb_synthetic", cuda.D1(op.Rows), cuda.D1(rowThreads), a)
	}
	a := c.newArgs().p(tokens.p).p(x.p).p(emb.p).i(H).i(op.VocabOffset).i(emb.k).i(op.Vocab).p(c.errFlag)
	return c.launch("pb_embed", cuda.D1(op.Rows), cuda.D1(rowThreads), a)
}

// Norm is RMSNorm, or LayerNorm with bias, of op.Rows rows, of every
// stride rows' last, with ε op.Eps.
// A norm that the residual before it ran (fuse.go) launches nothing.
func (k kernels) Norm(op *partition.Op, in, out dbuf, w, bias *dtensor, stride int) error {
	if k.c.normDone(op) {
		return nil
	}
	if op.Kind == partition.LayerNorm {
		a := k.c.newArgs().p(in.p).p(out.p).p(w.p).p(bias.p).i(stride).i(op.OutWidth).f(float32(op.Eps))
		return k.c.launch("pb_layernorm", cuda.D1(op.Rows), cuda.D1(rowThreads), a)
	}
	a := k.c.newArgs().p(in.p).p(out.p).p(w.p).i(stride).i(op.OutWidth).f(float32(op.Eps))
	return k.c.launch("pb_rmsnorm", cuda.D1(op.Rows), cuda.D1(rowThreads), a)
}

// Position adds the learned position embedding's rows [past, past+QLen) to
// each sequence's rows of x (pb_pos_add reads past from the device's pos).
func (k kernels) Position(op *partition.Op, x dbuf, pos *dtensor, past int) error {
	c := k.c
	st := c.mbs[op.Microbatch]
	if err := c.setPos(st, past); err != nil {
		return err
	}
	a := c.newArgs().p(x.p).p(pos.p).p(st.pos).i(op.QLen).i(op.OutWidth)
	return c.launch("pb_pos_add", cuda.D1(op.Rows), cuda.D1(rowThreads), a)
}

// gemm is out[rows, n] = in[rows, k] @ w[k, n] with cublasGemmEx (element
// type in and out, fp32 accumulation), row-major through
// cuda.RowMajorGemm.
// With op.Bias, pb_bias adds the bias to every row after the GEMM, unless
// cuBLASLt runs the GEMM with the bias as its epilogue (biasact_lt.go) or
// pb_bias_act adds it with the activation after it (biasact.go).
func (k kernels) Gemm(op *partition.Op, in, out dbuf, w, bias *dtensor) error {
	c := k.c
	if op.Rows == 0 {
		return nil
	}
	if op.Bias != "" {
		if ok, err := c.ltBiasGemm(op, in, out, w, bias); ok { // biasact_lt.go: the bias as cuBLASLt's epilogue
			return err
		}
	}
	if ok, err := c.gemvGemm(op, in, out, w); err != nil { // gemv.go: small M where the setup chose the GEMV
		return err
	} else if !ok && !c.replay {
		c.stats.Launches++
		if err := c.handle.GemmEx(cuda.RowMajorGemm(op.Rows, op.N, op.K, in.p, w.p, out.p, c.dt.blas)); err != nil {
			return err
		}
	}
	if op.Bias == "" {
		return nil
	}
	if c.deferBias(op, out, bias) { // biasact.go: pb_bias_act adds it with the activation after it
		return nil
	}
	n := op.Rows * op.N
	return c.launch("pb_bias", cuda.D1(flatBlocks(n)), cuda.D1(flatThreads), c.newArgs().p(out.p).p(bias.p).i(op.Rows).i(op.N))
}

// attention applies rotary embeddings to q and k, appends k and v to the
// cache at [past, past+q) (pb_rope_kv), and writes causal grouped-query
// attention over the cache to ao (pb_attention_vV).
func (k kernels) Attention(op *partition.Op, qkv, ao dbuf, past int) error {
	c := k.c
	cache := c.kv[op.Layer]
	if cache == nil {
		return fmt.Errorf("rank %d holds no KV cache of layer %d", c.rank.Rank, op.Layer)
	}
	hl, kvl, hd, q := op.Heads, op.KVHeads, op.HeadDim, op.QLen
	st := c.mbs[op.Microbatch]
	if err := c.setPos(st, past); err != nil {
		return err
	}
	seq0 := op.Microbatch * op.Seqs
	if err := c.ropeKV(op, qkv, cache, st, seq0); err != nil { // extra.go: from the rotary table where it is loaded
		return err
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	bidir := 0
	if op.Bidirectional {
		bidir = 1
	}
	// flash.go: prefill on tensor cores where attentionKernel picks it;
	// splitkv.go: decode split over the cache where splits picks S > 1.
	if ok, err := c.flashAttention(op, qkv, ao, cache, st, seq0); ok {
		return err
	}
	if ok, err := c.splitKVAttention(op, qkv, ao, cache, st, seq0); ok {
		return err
	}
	if ok, err := c.blasAttention(op, qkv, ao, cache, st, seq0, past); ok { // attnblas.go
		return err
	}
	a := c.newArgs().p(qkv.p).p(ao.p).p(cache.k).p(cache.v).p(st.pos).i(seq0).i(q).i(hl).i(kvl).i(hd).i(c.frame.Context).f(scale).i(bidir)
	return c.launch(c.attnName, cuda.D2(op.Rows, hl), cuda.D1(attnThreads), a)
}

func (k kernels) Activation(op *partition.Op, u, a dbuf) error {
	if ok, err := k.c.biasActivation(op, u, a); ok || err != nil { // biasact.go: with the bias the GEMM before it left
		return err
	}
	fl, gated := op.OutWidth, 0
	if op.MLP.Gated() {
		gated = 1
	}
	return k.c.launch("pb_act", cuda.D1(flatBlocks(op.Rows*fl)), cuda.D1(flatThreads),
		k.c.newArgs().p(u.p).p(a.p).i(op.Rows).i(fl).i(gated))
}

// Residual adds y to x (pb_add), or runs pb_add_rmsnorm/pb_add_layernorm
// where the norm after it is fused in (fuse.go).
func (k kernels) Residual(op *partition.Op, y, x dbuf) error {
	if ok, err := k.c.fusedResidual(op, y, x); ok {
		return err
	}
	n := op.Rows * op.OutWidth
	return k.c.launch("pb_add", cuda.D1(flatBlocks(n)), cuda.D1(flatThreads), k.c.newArgs().p(x.p).p(y.p).i(n))
}

// sample writes the tokens fed to the next step, teacher-forced: the prompt
// schedule's token at the position after the pass (pb_teacher). With an LM
// head it also keeps the logits and their argmax over the real vocabulary
// (pb_argmax on the gathered layout); without, the last position's hidden
// state of each sequence.
func (k kernels) Sample(op *partition.Op, p *pexec.Pass[dbuf], past int, tokens, from dbuf, stride int) error {
	c := k.c
	mb, seqs := op.Microbatch, op.Rows
	st := c.mbs[mb]
	if st.out == 0 {
		return fmt.Errorf("rank %d is not on the last stage and cannot sample", c.rank.Rank)
	}
	if err := c.setPos(st, past); err != nil {
		return err
	}
	seq0 := mb * op.Seqs
	a := c.newArgs().p(tokens.p).p(st.pos).i(p.End - past).i(seqs).i(seq0).i(op.Vocab).u(c.promptBase)
	if err := c.launch("pb_teacher", cuda.D1((seqs+flatThreads-1)/flatThreads), cuda.D1(flatThreads), a); err != nil {
		return err
	}
	if op.In == model.X {
		a := c.newArgs().p(from.p).p(st.out).i(stride).i(op.InWidth)
		if err := c.launch("pb_last_rows", cuda.D1(seqs), cuda.D1(rowThreads), a); err != nil {
			return err
		}
		st.hasOut, st.hasSample, st.layout = true, false, outLayout{}
		return nil
	}
	vp := op.InWidth
	if !c.replay {
		if err := c.stream.CopyDtoDAsync(st.out, from.p, int64(seqs*vp*c.dt.bytes)); err != nil {
			return err
		}
		c.stats.Launches++
	}
	a = c.newArgs().p(from.p).p(st.sampled).i(seqs).i(op.VocabSize).i(op.Vocab)
	if err := c.launch("pb_argmax", cuda.D1(seqs), cuda.D1(argmaxThreads), a); err != nil {
		return err
	}
	st.hasOut, st.hasSample = true, true
	st.layout = outLayout{seqs: seqs, padded: vp, vocab: op.Vocab, shards: op.VocabShards}
	if c.opts.Inputs != nil {
		return c.feedInputs(st, tokens, seqs, seq0, p.End, op.Vocab) // checkpoint.go
	}
	return nil
}
