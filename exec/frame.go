package exec

import (
	"fmt"

	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// View is a backend's handle on a buffer that can be cut to its first n
// elements (exec.F32 on the host, a device pointer and length on a GPU).
type View[B any] interface {
	Len() int
	Prefix(n int) B
}

// Shaped is a backend's weight shard, row-major [k][n].
type Shaped interface {
	Shape() (k, n int)
}

// TensorKey names a weight shard: Name in Layer (−1 outside the layers).
type TensorKey struct {
	Layer int
	Name  string
}

// Pass is one micro-batch's buffers and the host's view of its last pass.
type Pass[B any] struct {
	Bufs map[model.Buf]B
	// Rows of x in the current pass; End is the position after its last token.
	Rows, End int
}

// Kernels are a backend's arithmetic over its buffers B and weight shards
// W. Frame.Exec checks every op's shapes and positions and resolves its
// buffers and weights before it calls one, so a kernel only computes.
type Kernels[B, W any] interface {
	// Input makes x (op.Rows × op.OutWidth) from token ids: for positions
	// inside the prompt it first writes the prompt's tokens to tokens, else
	// tokens holds the ids fed back by Sample. emb is the embedding shard
	// when op.Tensor names one, else the synthetic inputs are used.
	Input(op *partition.Op, past int, tokens, x B, emb W) error
	// Norm writes op.Rows normalized rows to out from in, reading the last
	// of every stride rows (stride 1: every row): RMSNorm (op.Kind Norm) or
	// LayerNorm plus bias (LayerNorm; bias is [1, op.OutWidth]), ε op.Eps.
	Norm(op *partition.Op, in, out B, w, bias W, stride int) error
	// Gemm is out[rows, N] = in[rows, K] @ w[K, N], plus bias [1, N] on
	// every row when op.Bias names one (else bias is the zero W).
	Gemm(op *partition.Op, in, out B, w, bias W) error
	// Position adds row past + j of pos to row j of each of op.Seqs
	// sequences' op.QLen rows of x.
	Position(op *partition.Op, x B, pos W, past int) error
	// Attention rotates q and k (θ op.RopeTheta; 0: no rotation), appends k
	// and v to layer op.Layer's cache at [past, past+op.QLen), and writes
	// attention to ao: causal, or over every position of the pass when
	// op.Bidirectional.
	Attention(op *partition.Op, qkv, ao B, past int) error
	// Activation writes a from u (op.MLP).
	Activation(op *partition.Op, u, a B) error
	// Residual adds y to x.
	Residual(op *partition.Op, y, x B) error
	// Sample writes the teacher-forced tokens of position p.End and keeps the
	// pass's result: from is the logits (op.In) or, without an LM head, x,
	// whose last of every stride rows is each sequence's last position.
	Sample(op *partition.Op, p *Pass[B], past int, tokens, from B, stride int) error
}

// Frame is what every backend keeps the same way: its micro-batches'
// buffers and pass positions, its weight shards, and the checks that turn a
// Program op into a kernel call.
type Frame[B View[B], W Shaped] struct {
	Backend string // "cpu", "cuda": prefixes errors of ops it cannot run
	Rank    int
	// Context is the positions the KV cache holds; Prompt the prompt tokens.
	Context, Prompt int
	Weights         map[TensorKey]W
	Passes          []*Pass[B]
}

// NewFrame makes the frame of rank: each micro-batch's buffers
// (plan.BufferElems), those that share storage (partition.StorageOf) as one
// allocation made by alloc (plan.BufferAllocs), and an empty weight map.
// The micro-batches share one allocation of every storage but the
// plan.PassPrivate ones (the token ids; every buffer with
// parallel.pass_buffers = "per-microbatch"), which each allocates: the
// plan's memory counts the same.
func NewFrame[B View[B], W Shaped](backend string, plan *partition.Plan, rank int, alloc func(b model.Buf, elems int) (B, error)) (*Frame[B, W], error) {
	w := plan.Config.Workload
	f := &Frame[B, W]{Backend: backend, Rank: rank, Context: w.Context, Prompt: w.PromptTokens(), Weights: map[TensorKey]W{}}
	sizes := plan.BufferElems(rank)
	regions := plan.BufferAllocs(rank)
	bufs := append(model.Buffers(), model.Logits.Gathered())
	shared := map[model.Buf]B{} // the micro-batches' one allocation of each storage
	for range plan.Microbatches {
		p := &Pass[B]{Bufs: map[model.Buf]B{}}
		for _, b := range bufs { // the storages first: a buffer that shares one takes its view
			n, ok := regions[b]
			if !ok {
				continue
			}
			if v, ok := shared[b]; ok {
				p.Bufs[b] = v
				continue
			}
			v, err := alloc(b, n)
			if err != nil {
				return nil, err
			}
			p.Bufs[b] = v
			if !plan.PassPrivate(b) {
				shared[b] = v
			}
		}
		for _, b := range bufs {
			if s := partition.StorageOf(b); s != b && sizes[b] > 0 {
				p.Bufs[b] = p.Bufs[s]
			}
		}
		f.Passes = append(f.Passes, p)
	}
	return f, nil
}

// Pass is micro-batch mb's state.
func (f *Frame[B, W]) Pass(mb int) (*Pass[B], error) {
	if mb < 0 || mb >= len(f.Passes) {
		return nil, fmt.Errorf("micro-batch %d outside [0, %d)", mb, len(f.Passes))
	}
	return f.Passes[mb], nil
}

// Buffer is micro-batch mb's buffer b as its first elems elements.
func (f *Frame[B, W]) Buffer(b model.Buf, mb, elems int) (B, error) {
	var zero B
	p, err := f.Pass(mb)
	if err != nil {
		return zero, err
	}
	return f.buf(p, b, mb, elems)
}

func (f *Frame[B, W]) buf(p *Pass[B], b model.Buf, mb, elems int) (B, error) {
	v, ok := p.Bufs[b]
	if !ok {
		var zero B
		return zero, fmt.Errorf("rank %d has no buffer %q", f.Rank, b)
	}
	if elems < 0 || elems > v.Len() {
		var zero B
		return zero, fmt.Errorf("buffer %q of micro-batch %d holds %d elements, %d requested", b, mb, v.Len(), elems)
	}
	return v.Prefix(elems), nil
}

// Weight is the shard op touches.
func (f *Frame[B, W]) Weight(op *partition.Op) (W, error) {
	w, ok := f.Weights[TensorKey{op.Layer, op.Tensor}]
	if !ok {
		return w, fmt.Errorf("rank %d holds no tensor %q of layer %d", f.Rank, op.Tensor, op.Layer)
	}
	return w, nil
}

// Exec checks op against the rank's buffers, weights and positions and runs
// it with k; past is the number of tokens of its sequences already cached.
func (f *Frame[B, W]) Exec(k Kernels[B, W], op *partition.Op, past int) error {
	p, err := f.Pass(op.Microbatch)
	if err != nil {
		return err
	}
	if op.Layer >= 0 {
		p.Rows = op.Rows
	}
	switch op.Kind {
	case partition.Input:
		return f.input(k, op, p, past)
	case partition.Norm, partition.LayerNorm:
		w, err := f.Weight(op)
		if err != nil {
			return err
		}
		if wk, wn := w.Shape(); wk != 1 || wn != op.OutWidth {
			return fmt.Errorf("norm weight %q is [%d, %d], op wants [1, %d]", op.Tensor, wk, wn, op.OutWidth)
		}
		var bias W
		if op.Kind == partition.LayerNorm {
			if op.Bias == "" {
				return fmt.Errorf("layer norm %q names no bias", op.Tensor)
			}
			if bias, err = f.bias(op, op.OutWidth); err != nil {
				return err
			}
		}
		rows := max(p.Rows, op.Rows)
		if op.Rows == 0 || rows%op.Rows != 0 {
			return fmt.Errorf("%d rows of %q do not split into %d sequences", rows, op.In, op.Rows)
		}
		i, o, err := f.io(p, op, rows)
		if err != nil {
			return err
		}
		return k.Norm(op, i, o, w, bias, rows/op.Rows)
	case partition.Gemm:
		w, err := f.Weight(op)
		if err != nil {
			return err
		}
		if wk, wn := w.Shape(); wk != op.K || wn != op.N {
			return fmt.Errorf("weight %q is [%d, %d], op wants [%d, %d]", op.Tensor, wk, wn, op.K, op.N)
		}
		var bias W
		if op.Bias != "" {
			if bias, err = f.bias(op, op.N); err != nil {
				return err
			}
		}
		i, o, err := f.io(p, op, op.Rows)
		if err != nil {
			return err
		}
		return k.Gemm(op, i, o, w, bias)
	case partition.Position:
		w, err := f.Weight(op)
		if err != nil {
			return err
		}
		if op.Seqs*op.QLen != op.Rows {
			return fmt.Errorf("%d sequences × %d tokens do not make the op's %d rows", op.Seqs, op.QLen, op.Rows)
		}
		if wk, wn := w.Shape(); wn != op.OutWidth || past < 0 || past+op.QLen > wk {
			return fmt.Errorf("positions [%d, %d) of width %d are beyond position embedding %q of [%d, %d]", past, past+op.QLen, op.OutWidth, op.Tensor, wk, wn)
		}
		x, err := f.buf(p, op.Out, op.Microbatch, op.Rows*op.OutWidth)
		if err != nil {
			return err
		}
		return k.Position(op, x, w, past)
	case partition.Attention:
		if op.Seqs*op.QLen != op.Rows {
			return fmt.Errorf("%d sequences × %d tokens do not make the op's %d rows", op.Seqs, op.QLen, op.Rows)
		}
		if past < 0 || past+op.QLen > f.Context {
			return fmt.Errorf("positions [%d, %d) exceed the KV cache of %d", past, past+op.QLen, f.Context)
		}
		i, o, err := f.io(p, op, op.Rows)
		if err != nil {
			return err
		}
		if err := k.Attention(op, i, o, past); err != nil {
			return err
		}
		p.End = past + op.QLen
		return nil
	case partition.Activation, partition.Residual:
		i, o, err := f.io(p, op, op.Rows)
		if err != nil {
			return err
		}
		if op.Kind == partition.Activation {
			return k.Activation(op, i, o)
		}
		return k.Residual(op, i, o)
	case partition.Sample:
		return f.sample(k, op, p, past)
	}
	return fmt.Errorf("%s: op kind %q is not a compute op", f.Backend, op.Kind)
}

// bias is op's bias tensor, checked to be [1, n].
func (f *Frame[B, W]) bias(op *partition.Op, n int) (W, error) {
	b, ok := f.Weights[TensorKey{op.Layer, op.Bias}]
	if !ok {
		return b, fmt.Errorf("rank %d holds no bias %q of layer %d", f.Rank, op.Bias, op.Layer)
	}
	if bk, bn := b.Shape(); bk != 1 || bn != n {
		return b, fmt.Errorf("bias %q is [%d, %d], op wants [1, %d]", op.Bias, bk, bn, n)
	}
	return b, nil
}

// io is op's input (inRows rows of op.InWidth) and output (op.Rows rows of
// op.OutWidth) buffers.
func (f *Frame[B, W]) io(p *Pass[B], op *partition.Op, inRows int) (in, out B, err error) {
	if in, err = f.buf(p, op.In, op.Microbatch, inRows*op.InWidth); err != nil {
		return in, out, err
	}
	out, err = f.buf(p, op.Out, op.Microbatch, op.Rows*op.OutWidth)
	return in, out, err
}

// input checks an input pass's positions against the context and the
// prompt, and runs k.Input.
func (f *Frame[B, W]) input(k Kernels[B, W], op *partition.Op, p *Pass[B], past int) error {
	seqs := op.Seqs
	if seqs <= 0 || op.Rows%seqs != 0 {
		return fmt.Errorf("%d rows are not a whole number of tokens for %d sequences", op.Rows, seqs)
	}
	q := op.Rows / seqs
	if past+q > f.Context {
		return fmt.Errorf("positions [%d, %d) exceed the context of %d", past, past+q, f.Context)
	}
	if past < f.Prompt && past+q > f.Prompt {
		return fmt.Errorf("pass over positions [%d, %d) crosses the end of the prompt (%d)", past, past+q, f.Prompt)
	}
	tokens, err := f.buf(p, op.In, op.Microbatch, op.Rows)
	if err != nil {
		return err
	}
	x, err := f.buf(p, op.Out, op.Microbatch, op.Rows*op.OutWidth)
	if err != nil {
		return err
	}
	var emb W
	if op.Tensor != "" {
		if emb, err = f.Weight(op); err != nil {
			return err
		}
	}
	if err := k.Input(op, past, tokens, x, emb); err != nil {
		return err
	}
	p.Rows, p.End = op.Rows, past+q
	return nil
}

// sample resolves the tokens the step feeds back and what the pass
// produced: the logits, or without an LM head x's rows.
func (f *Frame[B, W]) sample(k Kernels[B, W], op *partition.Op, p *Pass[B], past int) error {
	seqs := op.Rows
	tokens, err := f.buf(p, op.Out, op.Microbatch, seqs)
	if err != nil {
		return err
	}
	if p.End-past < 1 {
		return fmt.Errorf("sample at position %d after a pass that ended at %d", past, p.End)
	}
	rows, stride := seqs, 1
	if op.In == model.X {
		if p.Rows == 0 || p.Rows%seqs != 0 {
			return fmt.Errorf("%d rows of x do not split into %d sequences", p.Rows, seqs)
		}
		rows, stride = p.Rows, p.Rows/seqs
	}
	from, err := f.buf(p, op.In, op.Microbatch, rows*op.InWidth)
	if err != nil {
		return err
	}
	return k.Sample(op, p, past, tokens, from, stride)
}
