package cpu

import (
	"context"
	"fmt"
	"maps"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// Compute is one rank's float32 CPU backend.
type Compute struct {
	frame  *pexec.Frame[pexec.F32, *model.Tensor]
	rank   partition.Rank
	seed   int64
	inputs *model.Inputs
	kv     map[int]*kvCache
	out    []mbOut
	// rot is the rotary table, built at the first attention op with rotary
	// embeddings for every position of the KV cache.
	rot *ropeTable

	allocated int64
	byKind    map[string]int64
}

var _ pexec.Compute = (*Compute)(nil)

// mbOut is one micro-batch's result of its last sampling pass.
type mbOut struct {
	sampled []int
	output  []float32
}

// New allocates rank's weight shards, KV cache and per-micro-batch buffers
// and generates its weights (seed plan.Config.Run.Seed).
func New(plan *partition.Plan, rank int) (*Compute, error) {
	return NewWith(plan, rank, Options{})
}

// Options are where a rank's weights and token ids come from.
type Options struct {
	// Weights makes the rank's shards (nil: plan.Generator(rank), the
	// seeded model); it is given the rank's model.Shard.
	Weights func(s model.Shard) (model.Source, error)
	// Inputs are the token ids fed (nil: the seeded schedule).
	Inputs *model.Inputs
}

// NewWith is New with weights and token ids from opts.
func NewWith(plan *partition.Plan, rank int, opts Options) (*Compute, error) {
	if _, err := GEMM(); err != nil {
		return nil, err
	}
	if rank < 0 || rank >= len(plan.Ranks) {
		return nil, fmt.Errorf("cpu: rank %d outside the plan's %d ranks", rank, len(plan.Ranks))
	}
	r := plan.Ranks[rank]
	c := &Compute{rank: r, seed: plan.Config.Run.Seed, inputs: opts.Inputs, kv: map[int]*kvCache{}, out: make([]mbOut, plan.Microbatches)}
	f, err := pexec.NewFrame[pexec.F32, *model.Tensor]("cpu", plan, rank, func(_ model.Buf, n int) (pexec.F32, error) {
		c.count(pexec.AllocBuffers, int64(4*n))
		return make(pexec.F32, n), nil
	})
	if err != nil {
		return nil, err
	}
	c.frame = f
	var gen model.Source = plan.Generator(rank)
	tensors := plan.Tensors(rank)
	if opts.Weights != nil {
		if gen, err = opts.Weights(plan.Shard(r.TPIndex)); err != nil {
			return nil, fmt.Errorf("cpu: rank %d: %w", rank, err)
		}
		// A checkpoint's Source (checkpoint/shards) reads the rank's
		// whole list at once, then hands each tensor out.
		if p, ok := gen.(interface {
			Prefetch([]partition.TensorShard) error
		}); ok {
			if err := p.Prefetch(tensors); err != nil {
				return nil, fmt.Errorf("cpu: rank %d: %w", rank, err)
			}
		}
	}
	for _, ts := range tensors {
		t, err := gen.Tensor(ts.Layer, ts.Name)
		if err != nil {
			return nil, fmt.Errorf("cpu: rank %d: %w", rank, err)
		}
		if t.K != ts.K || t.N != ts.N {
			return nil, fmt.Errorf("cpu: rank %d: tensor %q of layer %d is [%d, %d], the shard is [%d, %d]", rank, ts.Name, ts.Layer, t.K, t.N, ts.K, ts.N)
		}
		c.frame.Weights[pexec.TensorKey{Layer: ts.Layer, Name: ts.Name}] = t
		c.count(pexec.AllocWeights, int64(4*len(t.Data)))
	}
	w := plan.Config.Workload
	kvWidth := plan.Shard(r.TPIndex).KVWidth()
	for _, l := range r.Layers {
		kv := newKVCache(w.Batch, w.Context, kvWidth)
		c.count(pexec.AllocKV, int64(4*(len(kv.k)+len(kv.v))))
		c.kv[l] = kv
	}
	return c, nil
}

// Weight is the rank's shard of a tensor (row-major [k][n]; op.Tensor names:
// wqkv, wo, w_up, w_down, attn_norm, mlp_norm in layers ≥ 0; embed, lm_head,
// final_norm in layer −1), or nil when the rank does not hold it. The slice
// is the backend's own storage: tests read it and corrupt it on purpose.
func (c *Compute) Weight(layer int, tensorName string) []float32 {
	if t := c.frame.Weights[pexec.TensorKey{Layer: layer, Name: tensorName}]; t != nil {
		return t.Data
	}
	return nil
}

// Buffer returns micro-batch mb's buffer b as its first elems elements
// (b is an op's In or Out, or model.Logits.Gathered(), where the logits
// all-gather writes).
func (c *Compute) Buffer(b model.Buf, mb, elems int) (pexec.Buffer, error) {
	v, err := c.frame.Buffer(b, mb, elems)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Exec runs one compute op for micro-batch op.Microbatch; past is the number
// of tokens of its sequences already in the KV cache.
func (c *Compute) Exec(ctx context.Context, op *partition.Op, past int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.frame.Exec(kernels{c}, op, past)
}

// kernels are the CPU's arithmetic on the Frame's resolved buffers.
type kernels struct{ c *Compute }

var _ pexec.Kernels[pexec.F32, *model.Tensor] = kernels{}

// Input writes the prompt's tokens for positions below the prompt length,
// then each row's embedding (the rank's vocabulary shard; zero for ids
// another rank holds) or synthetic input.
func (k kernels) Input(op *partition.Op, past int, tokens, x pexec.F32, emb *model.Tensor) error {
	seqs, q, mb := op.Seqs, op.Rows/op.Seqs, op.Microbatch
	if past < k.c.frame.Prompt {
		for i := 0; i < seqs; i++ {
			for j := 0; j < q; j++ {
				tokens[i*q+j] = float32(k.c.inputs.Token(k.c.seed, mb*seqs+i, past+j, op.Vocab, -1))
			}
		}
	}
	H := op.OutWidth
	for r := 0; r < op.Rows; r++ {
		id := int(tokens[r])
		if float32(id) != tokens[r] || id < 0 || id >= op.Vocab {
			return fmt.Errorf("token %v of row %d is not an id in [0, %d)", tokens[r], r, op.Vocab)
		}
		xr := x[r*H : (r+1)*H]
		if emb == nil {
			model.Synthetic(k.c.seed, id, xr)
			continue
		}
		if local := id - op.VocabOffset; local >= 0 && local < emb.K {
			copy(xr, emb.Data[local*H:(local+1)*H])
		} else {
			clear(xr)
		}
	}
	return nil
}

// Norm is RMSNorm or LayerNorm with bias; with stride > 1 (the final norm
// after a prefill pass) it takes each sequence's last position.
func (k kernels) Norm(op *partition.Op, in, out pexec.F32, w, bias *model.Tensor, stride int) error {
	H := op.OutWidth
	norm := func(x, o []float32, rows int) { rmsNorm(x, o, w.Data, rows, op.Eps) }
	if op.Kind == partition.LayerNorm {
		norm = func(x, o []float32, rows int) { layerNorm(x, o, w.Data, bias.Data, rows, op.Eps) }
	}
	if stride > 1 {
		for i := 0; i < op.Rows; i++ {
			src := (i*stride + stride - 1) * H
			norm(in[src:src+H], out[i*H:(i+1)*H], 1)
		}
		return nil
	}
	norm(in, out, op.Rows)
	return nil
}

func (k kernels) Gemm(op *partition.Op, in, out pexec.F32, w, bias *model.Tensor) error {
	gemm(in, w, out, op.Rows)
	if op.Bias != "" {
		addBias(out, bias.Data, op.Rows)
	}
	return nil
}

func (k kernels) Position(op *partition.Op, x pexec.F32, pos *model.Tensor, past int) error {
	H := op.OutWidth
	for i := 0; i < op.Seqs; i++ {
		for j := 0; j < op.QLen; j++ {
			xr, pr := x[(i*op.QLen+j)*H:(i*op.QLen+j+1)*H], pos.Data[(past+j)*H:(past+j+1)*H]
			for e := range xr {
				xr[e] += pr[e]
			}
		}
	}
	return nil
}

func (k kernels) Attention(op *partition.Op, qkv, ao pexec.F32, past int) error {
	cache := k.c.kv[op.Layer]
	if cache == nil {
		return fmt.Errorf("rank %d holds no KV cache of layer %d", k.c.rank.Rank, op.Layer)
	}
	if op.RopeTheta > 0 && !k.c.rot.fits(op.HeadDim, op.RopeTheta, cache.context) {
		k.c.rot = newRopeTable(cache.context, op.HeadDim, op.RopeTheta)
	}
	attention(qkv, ao, cache, attnShape{seq0: op.Microbatch * op.Seqs, seqs: op.Seqs, q: op.QLen, past: past,
		hl: op.Heads, kvl: op.KVHeads, hd: op.HeadDim, theta: op.RopeTheta, bidirectional: op.Bidirectional, rot: k.c.rot})
	return nil
}

func (k kernels) Activation(op *partition.Op, u, a pexec.F32) error {
	activate(u, a, op.Rows, op.OutWidth, op.MLP.Gated())
	return nil
}

func (k kernels) Residual(op *partition.Op, y, x pexec.F32) error {
	x = x[:len(y)]
	for i, v := range y {
		x[i] += v
	}
	return nil
}

// Sample writes the tokens fed to the next step, the token at the position
// after the pass (p.End): teacher-forced from the prompt schedule
// (PromptToken), or from Options.Inputs (its prompt ids, then the argmax
// when greedy). With an LM head it also keeps the argmax over the real
// vocabulary and the logits; without, it keeps the last position's hidden
// state of each sequence.
func (k kernels) Sample(op *partition.Op, p *pexec.Pass[pexec.F32], past int, tokens, from pexec.F32, stride int) error {
	mb, seqs := op.Microbatch, op.Rows
	seq0 := mb * op.Seqs
	res := &k.c.out[mb]
	if op.In == model.X {
		for i := range tokens {
			tokens[i] = float32(k.c.inputs.Token(k.c.seed, seq0+i, p.End, op.Vocab, -1))
		}
		H := op.InWidth
		out := reuse(res.output, seqs*H)
		for i := 0; i < seqs; i++ {
			src := (i*stride + stride - 1) * H
			copy(out[i*H:(i+1)*H], from[src:src+H])
		}
		res.output, res.sampled = out, nil
		return nil
	}
	// Every step writes the micro-batch's logits and tokens into the
	// buffers of its last (Output and Sampled hand out copies).
	V := op.Vocab
	out, sampled := reuse(res.output, seqs*V), reuse(res.sampled, seqs)
	model.LogitsByVocabInto(out, from, seqs, op.InWidth, V, op.VocabShards)
	for i := range sampled {
		sampled[i] = model.Argmax(out[i*V : (i+1)*V])
		tokens[i] = float32(k.c.inputs.Token(k.c.seed, seq0+i, p.End, V, sampled[i]))
	}
	res.output, res.sampled = out, sampled
	return nil
}

// reuse is s resliced to n elements where it holds them, else a new slice.
func reuse[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// Sampled is the argmax token of each sequence of micro-batch mb at its last
// pass (nil without an LM head, or on a rank that does not sample).
func (c *Compute) Sampled(mb int) []int {
	if mb < 0 || mb >= len(c.out) || c.out[mb].sampled == nil {
		return nil
	}
	return append([]int(nil), c.out[mb].sampled...)
}

// Output is the last stage's result of micro-batch mb's last pass: logits
// [seqs][vocab] with an LM head, else the final hidden state of each
// sequence's last position [seqs][hidden]; nil on other stages.
func (c *Compute) Output(mb int) []float32 {
	if mb < 0 || mb >= len(c.out) || c.out[mb].output == nil {
		return nil
	}
	return append([]float32(nil), c.out[mb].output...)
}

// Sync is a no-op: CPU ops complete before Exec returns.
func (c *Compute) Sync(ctx context.Context) error { return ctx.Err() }

// AllocatedBytes is the bytes of weights, KV cache and buffers allocated.
func (c *Compute) AllocatedBytes() int64 { return c.allocated }

// AllocatedByKind is AllocatedBytes by kind (exec.AllocationItemizer).
func (c *Compute) AllocatedByKind() map[string]int64 { return maps.Clone(c.byKind) }

func (c *Compute) count(kind string, bytes int64) {
	if c.byKind == nil {
		c.byKind = map[string]int64{}
	}
	c.byKind[kind] += bytes
	c.allocated += bytes
}

// Close drops the rank's memory.
func (c *Compute) Close() error {
	if c.frame != nil {
		c.frame.Weights, c.frame.Passes = nil, nil
	}
	c.kv, c.out = nil, nil
	return nil
}
