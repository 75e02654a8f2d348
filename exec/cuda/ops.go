package cuda

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/partition"
)

// Exec queues one compute op for micro-batch op.Microbatch on the rank's
// stream; past is the number of tokens of its sequences already in the KV
// cache. It returns once the work is queued (Sync waits for it). With
// Options.Graphs, the ops of a decode segment that has been captured only
// update the host's bookkeeping: the segment's first op launches its graph.
func (c *Compute) Exec(ctx context.Context, op *partition.Op, past int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.fault != nil {
		return c.fault
	}
	unpin, err := c.pin()
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

// op runs one op: checks, host bookkeeping, and its launches (none while
// replaying). It mirrors exec/cpu's Exec op for op.
func (c *Compute) op(op *partition.Op, past int) error {
	st, err := c.state(op.Microbatch)
	if err != nil {
		return err
	}
	if op.Layer >= 0 {
		st.rows = op.Rows
	}
	switch op.Kind {
	case partition.Input:
		return c.input(op, st, past)
	case partition.Norm:
		return c.norm(op, st)
	case partition.Gemm:
		return c.gemm(op, st)
	case partition.Attention:
		return c.attention(op, st, past)
	case partition.Activation:
		return c.activation(op, st)
	case partition.Residual:
		n := op.Rows * c.plan.Model.Hidden
		y, err := c.buf(st, op.Microbatch, op.In, n)
		if err != nil {
			return err
		}
		x, err := c.buf(st, op.Microbatch, op.Out, n)
		if err != nil {
			return err
		}
		return c.launch("pb_add", cuda.D1(flatBlocks(n)), cuda.D1(flatThreads), c.newArgs().p(x.p).p(y.p).i(n))
	case partition.Sample:
		return c.sample(op, st, past)
	}
	return fmt.Errorf("cuda: op kind %q is not a compute op", op.Kind)
}

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

// input makes x from token ids: the prompt's tokens for positions below the
// prompt length (pb_prompt_tokens), else the ids in the tokens buffer
// (fed back by sample), through the vocabulary-sharded embedding or the
// synthetic inputs.
func (c *Compute) input(op *partition.Op, st *mbState, past int) error {
	mb, seqs := op.Microbatch, c.plan.MicrobatchSize
	if op.Rows%seqs != 0 {
		return fmt.Errorf("%d rows are not a whole number of tokens for %d sequences", op.Rows, seqs)
	}
	q := op.Rows / seqs
	if past+q > c.context {
		return fmt.Errorf("positions [%d, %d) exceed the context of %d", past, past+q, c.context)
	}
	tokens, err := c.buf(st, mb, bufTokens, op.Rows)
	if err != nil {
		return err
	}
	if err := c.setPos(st, past); err != nil {
		return err
	}
	if past < c.prompt {
		if past+q > c.prompt {
			return fmt.Errorf("pass over positions [%d, %d) crosses the end of the prompt (%d)", past, past+q, c.prompt)
		}
		a := c.newArgs().p(tokens.p).p(st.pos).i(seqs).i(q).i(mb * seqs).i(c.prompt).i(c.vocabTok).u(c.promptBase)
		if err := c.launch("pb_prompt_tokens", cuda.D1(flatBlocks(op.Rows)), cuda.D1(flatThreads), a); err != nil {
			return err
		}
	}
	H := c.plan.Model.Hidden
	x, err := c.buf(st, mb, op.Out, op.Rows*H)
	if err != nil {
		return err
	}
	c.flagDirty = true
	if !c.plan.Model.Embeddings {
		a := c.newArgs().p(tokens.p).p(x.p).i(H).i(c.vocabTok).u(c.synthBase).p(c.errFlag)
		if err := c.launch("pb_synthetic", cuda.D1(op.Rows), cuda.D1(rowThreads), a); err != nil {
			return err
		}
	} else {
		emb := c.global["embed"]
		if emb == nil {
			return fmt.Errorf("rank %d holds no embedding", c.rank.Rank)
		}
		a := c.newArgs().p(tokens.p).p(x.p).p(emb.p).i(H).i(c.rank.TPIndex * emb.k).i(emb.k).i(c.vocabTok).p(c.errFlag)
		if err := c.launch("pb_embed", cuda.D1(op.Rows), cuda.D1(rowThreads), a); err != nil {
			return err
		}
	}
	st.rows, st.end = op.Rows, past+q
	return nil
}

func (c *Compute) weight(op *partition.Op) (*dtensor, error) {
	var t *dtensor
	if op.Layer < 0 {
		t = c.global[op.Tensor]
	} else if lw := c.layers[op.Layer]; lw != nil {
		t = lw[op.Tensor]
	}
	if t == nil {
		return nil, fmt.Errorf("rank %d holds no tensor %q of layer %d", c.rank.Rank, op.Tensor, op.Layer)
	}
	return t, nil
}

// norm is RMSNorm of op.Rows rows; when x holds more rows than the op (the
// final norm after a prefill pass) it takes each sequence's last position.
func (c *Compute) norm(op *partition.Op, st *mbState) error {
	t, err := c.weight(op)
	if err != nil {
		return err
	}
	H := c.plan.Model.Hidden
	rows := max(st.rows, op.Rows)
	if op.Rows == 0 || rows%op.Rows != 0 {
		return fmt.Errorf("%d rows of %q do not split into %d sequences", rows, op.In, op.Rows)
	}
	in, err := c.buf(st, op.Microbatch, op.In, rows*H)
	if err != nil {
		return err
	}
	out, err := c.buf(st, op.Microbatch, op.Out, op.Rows*H)
	if err != nil {
		return err
	}
	a := c.newArgs().p(in.p).p(out.p).p(t.p).i(rows / op.Rows).i(H).f(cpu.NormEps)
	return c.launch("pb_rmsnorm", cuda.D1(op.Rows), cuda.D1(rowThreads), a)
}

// gemm is out[rows, n] = in[rows, k] @ w[k, n] with cublasGemmEx (element
// type in and out, fp32 accumulation), row-major through
// cuda.RowMajorGemm.
func (c *Compute) gemm(op *partition.Op, st *mbState) error {
	t, err := c.weight(op)
	if err != nil {
		return err
	}
	if t.k != op.K || t.n != op.N {
		return fmt.Errorf("weight %q is [%d, %d], op wants [%d, %d]", op.Tensor, t.k, t.n, op.K, op.N)
	}
	in, err := c.buf(st, op.Microbatch, op.In, op.Rows*op.K)
	if err != nil {
		return err
	}
	out, err := c.buf(st, op.Microbatch, op.Out, op.Rows*op.N)
	if err != nil {
		return err
	}
	if op.Rows == 0 || c.replay {
		return nil
	}
	c.stats.Launches++
	return c.handle.GemmEx(cuda.RowMajorGemm(op.Rows, op.N, op.K, in.p, t.p, out.p, c.dt.blas))
}

// attention applies rotary embeddings to q and k, appends k and v to the
// cache at [past, past+q) (pb_rope_kv), and writes causal grouped-query
// attention over the cache to ao (pb_attention_vV).
func (c *Compute) attention(op *partition.Op, st *mbState, past int) error {
	cache := c.kv[op.Layer]
	if cache == nil {
		return fmt.Errorf("rank %d holds no KV cache of layer %d", c.rank.Rank, op.Layer)
	}
	m := c.plan.Model
	hl, kvl, hd := m.Heads/c.plan.TP, m.KVHeads/c.plan.TP, m.HeadDim
	seqs, q := op.Seqs, op.QLen
	if seqs*q != op.Rows || seqs != c.plan.MicrobatchSize {
		return fmt.Errorf("%d sequences × %d tokens do not make the op's %d rows", seqs, q, op.Rows)
	}
	if past < 0 || past+q > c.context {
		return fmt.Errorf("positions [%d, %d) exceed the KV cache of %d", past, past+q, c.context)
	}
	qkv, err := c.buf(st, op.Microbatch, op.In, op.Rows*(hl+2*kvl)*hd)
	if err != nil {
		return err
	}
	ao, err := c.buf(st, op.Microbatch, op.Out, op.Rows*hl*hd)
	if err != nil {
		return err
	}
	if err := c.setPos(st, past); err != nil {
		return err
	}
	seq0 := op.Microbatch * c.plan.MicrobatchSize
	a := c.newArgs().p(qkv.p).p(cache.k).p(cache.v).p(st.pos).i(seq0).i(q).i(hl).i(kvl).i(hd).i(c.context)
	if err := c.launch("pb_rope_kv", cuda.D1(op.Rows), cuda.D1(rowThreads), a); err != nil {
		return err
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	a = c.newArgs().p(qkv.p).p(ao.p).p(cache.k).p(cache.v).p(st.pos).i(seq0).i(q).i(hl).i(kvl).i(hd).i(c.context).f(scale)
	name := fmt.Sprintf("pb_attention_v%d", c.attnV)
	if err := c.launch(name, cuda.D2(op.Rows, hl), cuda.D1(attnThreads), a); err != nil {
		return err
	}
	st.end = past + q
	return nil
}

func (c *Compute) activation(op *partition.Op, st *mbState) error {
	m := c.plan.Model
	fl := m.FFN / c.plan.TP
	up, gated := fl, 0
	if m.GatedMLP {
		up, gated = 2*fl, 1
	}
	u, err := c.buf(st, op.Microbatch, op.In, op.Rows*up)
	if err != nil {
		return err
	}
	a, err := c.buf(st, op.Microbatch, op.Out, op.Rows*fl)
	if err != nil {
		return err
	}
	return c.launch("pb_act", cuda.D1(flatBlocks(op.Rows*fl)), cuda.D1(flatThreads),
		c.newArgs().p(u.p).p(a.p).i(op.Rows).i(fl).i(gated))
}

// sample writes the tokens fed to the next step, teacher-forced: the prompt
// schedule's token at the position after the pass (pb_teacher). With an LM
// head it also keeps the logits and their argmax over the real vocabulary
// (pb_argmax on the gathered layout); without, the last position's hidden
// state of each sequence.
func (c *Compute) sample(op *partition.Op, st *mbState, past int) error {
	mb, seqs := op.Microbatch, op.Rows
	if seqs != c.plan.MicrobatchSize {
		return fmt.Errorf("sample of %d sequences, the micro-batch has %d", seqs, c.plan.MicrobatchSize)
	}
	if st.out == 0 {
		return fmt.Errorf("rank %d is not on the last stage and cannot sample", c.rank.Rank)
	}
	tokens, err := c.buf(st, mb, op.Out, seqs)
	if err != nil {
		return err
	}
	qlen := st.end - past
	if qlen < 1 {
		return fmt.Errorf("sample at position %d after a pass that ended at %d", past, st.end)
	}
	if err := c.setPos(st, past); err != nil {
		return err
	}
	seq0 := mb * c.plan.MicrobatchSize
	a := c.newArgs().p(tokens.p).p(st.pos).i(qlen).i(seqs).i(seq0).i(c.vocabTok).u(c.promptBase)
	if err := c.launch("pb_teacher", cuda.D1((seqs+flatThreads-1)/flatThreads), cuda.D1(flatThreads), a); err != nil {
		return err
	}
	m := c.plan.Model
	if !m.LMHead {
		H := m.Hidden
		if st.rows == 0 || st.rows%seqs != 0 {
			return fmt.Errorf("%d rows of x do not split into %d sequences", st.rows, seqs)
		}
		x, err := c.buf(st, mb, bufX, st.rows*H)
		if err != nil {
			return err
		}
		if err := c.launch("pb_last_rows", cuda.D1(seqs), cuda.D1(rowThreads), c.newArgs().p(x.p).p(st.out).i(st.rows/seqs).i(H)); err != nil {
			return err
		}
		st.hasOut, st.hasSample = true, false
		return nil
	}
	name := op.In
	if c.plan.TP > 1 {
		name = pexec.GatheredBuffer(op.In)
	}
	logits, err := c.buf(st, mb, name, seqs*c.vp)
	if err != nil {
		return err
	}
	if !c.replay {
		if err := c.stream.CopyDtoDAsync(st.out, logits.p, int64(seqs*c.vp*c.dt.bytes)); err != nil {
			return err
		}
		c.stats.Launches++
	}
	a = c.newArgs().p(logits.p).p(st.sampled).i(seqs).i(c.vp / c.plan.TP).i(m.Vocab)
	if err := c.launch("pb_argmax", cuda.D1(seqs), cuda.D1(argmaxThreads), a); err != nil {
		return err
	}
	st.hasOut, st.hasSample = true, true
	return nil
}
