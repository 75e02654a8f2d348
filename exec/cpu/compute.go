package cpu

import (
	"context"
	"fmt"
	"math"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// Buffer names of a micro-batch (partition.Op In/Out), plus the region the
// logits all-gather writes to (pexec.GatheredBuffer("logits")).
const (
	bufX      = "x"
	bufH      = "h"
	bufQKV    = "qkv"
	bufAO     = "ao"
	bufY      = "y"
	bufU      = "u"
	bufA      = "a"
	bufLogits = "logits"
	bufTokens = "tokens"
)

// Compute is one rank's float32 CPU backend.
type Compute struct {
	plan     *partition.Plan
	rank     partition.Rank
	sh       shard
	seed     int64
	vocabTok int
	prompt   int
	context  int

	layers map[int]map[string]*tensor
	global map[string]*tensor // embed, lm_head, final_norm
	kv     map[int]*kvCache
	mbs    []*mbState

	allocated int64
}

var _ pexec.Compute = (*Compute)(nil)

// mbState is one micro-batch's buffers and the position of its last pass.
type mbState struct {
	bufs map[string][]float32
	// rows of x in the current pass; end is the position after its last token.
	rows, end int
	sampled   []int
	output    []float32
}

// New allocates rank's weight shards, KV cache and per-micro-batch buffers
// and generates its weights (seed plan.Config.Run.Seed).
func New(plan *partition.Plan, rank int) (*Compute, error) {
	if rank < 0 || rank >= len(plan.Ranks) {
		return nil, fmt.Errorf("cpu: rank %d outside the plan's %d ranks", rank, len(plan.Ranks))
	}
	r := plan.Ranks[rank]
	m := plan.Model
	w := plan.Config.Workload
	vp := plan.VocabPadded
	if vp == 0 {
		vp = plan.TP
	}
	c := &Compute{
		plan: plan, rank: r,
		sh:       shard{m: m, seed: plan.Config.Run.Seed, t: r.TPIndex, T: plan.TP, vp: vp},
		seed:     plan.Config.Run.Seed,
		vocabTok: TokenVocab(m),
		prompt:   w.PromptTokens(),
		context:  w.Context,
		layers:   map[int]map[string]*tensor{},
		global:   map[string]*tensor{},
		kv:       map[int]*kvCache{},
	}
	if err := c.sh.check(); err != nil {
		return nil, fmt.Errorf("cpu: rank %d: %w", rank, err)
	}
	add := func(t *tensor) *tensor { c.allocated += int64(4 * len(t.data)); return t }
	s := c.sh
	kvWidth := s.kvHeads() * m.HeadDim
	for _, l := range r.Layers {
		c.layers[l] = map[string]*tensor{
			"attn_norm": add(s.norm(l, tAttnNorm)),
			"wqkv":      add(s.wqkv(l)),
			"wo":        add(s.wo(l)),
			"mlp_norm":  add(s.norm(l, tMLPNorm)),
			"w_up":      add(s.wUp(l)),
			"w_down":    add(s.wDown(l)),
		}
		kv := newKVCache(w.Batch, w.Context, kvWidth)
		c.allocated += int64(4 * (len(kv.k) + len(kv.v)))
		c.kv[l] = kv
	}
	first, last := plan.FirstStage(r.Stage), plan.LastStage(r.Stage)
	if m.Embeddings && first {
		c.global["embed"] = add(s.embed())
	}
	if m.LMHead && last {
		c.global["final_norm"] = add(s.norm(-1, tFinalNorm))
		c.global["lm_head"] = add(s.lmHead())
	}

	// Buffers sized for the largest pass: a prefill chunk of every sequence
	// of the micro-batch, or one decode token.
	mbs := plan.MicrobatchSize
	rows := mbs * max(plan.PrefillChunk, 1)
	H, hd := m.Hidden, m.HeadDim
	up := s.ffn()
	if m.GatedMLP {
		up *= 2
	}
	sizes := map[string]int{
		bufX: rows * H, bufH: rows * H, bufY: rows * H,
		bufQKV: rows * (s.heads() + 2*s.kvHeads()) * hd, bufAO: rows * s.heads() * hd,
		bufU: rows * up, bufA: rows * s.ffn(), bufTokens: rows,
	}
	if m.LMHead && last {
		sizes[bufLogits] = mbs * vp / plan.TP
		if plan.TP > 1 {
			sizes[pexec.GatheredBuffer(bufLogits)] = mbs * vp
		}
	}
	for range plan.Microbatches {
		st := &mbState{bufs: map[string][]float32{}}
		for name, n := range sizes {
			st.bufs[name] = make([]float32, n)
			c.allocated += int64(4 * n)
		}
		c.mbs = append(c.mbs, st)
	}
	return c, nil
}

// Weight is the rank's shard of a tensor (row-major [k][n]; op.Tensor names:
// wqkv, wo, w_up, w_down, attn_norm, mlp_norm in layers ≥ 0; embed, lm_head,
// final_norm in layer −1), or nil when the rank does not hold it. The slice
// is the backend's own storage: tests read it and corrupt it on purpose.
func (c *Compute) Weight(layer int, tensorName string) []float32 {
	var t *tensor
	if layer < 0 {
		t = c.global[tensorName]
	} else if lw := c.layers[layer]; lw != nil {
		t = lw[tensorName]
	}
	if t == nil {
		return nil
	}
	return t.data
}

func (c *Compute) weight(op *partition.Op) (*tensor, error) {
	var t *tensor
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

func (c *Compute) state(mb int) (*mbState, error) {
	if mb < 0 || mb >= len(c.mbs) {
		return nil, fmt.Errorf("micro-batch %d outside [0, %d)", mb, len(c.mbs))
	}
	return c.mbs[mb], nil
}

func (c *Compute) buf(st *mbState, mb int, name string, elems int) ([]float32, error) {
	b, ok := st.bufs[name]
	if !ok {
		return nil, fmt.Errorf("rank %d has no buffer %q", c.rank.Rank, name)
	}
	if elems < 0 || elems > len(b) {
		return nil, fmt.Errorf("buffer %q of micro-batch %d holds %d elements, %d requested", name, mb, len(b), elems)
	}
	return b[:elems], nil
}

// Buffer returns micro-batch mb's buffer name as its first elems elements.
// Names are the Program's ("x", "y", "logits", "tokens", …) and
// "logits.gathered", where the logits all-gather writes.
func (c *Compute) Buffer(name string, mb, elems int) (pexec.Buffer, error) {
	st, err := c.state(mb)
	if err != nil {
		return nil, err
	}
	b, err := c.buf(st, mb, name, elems)
	if err != nil {
		return nil, err
	}
	return pexec.F32(b), nil
}

// Exec runs one compute op for micro-batch op.Microbatch; past is the number
// of tokens of its sequences already in the KV cache.
func (c *Compute) Exec(ctx context.Context, op *partition.Op, past int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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
		gemm(in, t, out, op.Rows)
		return nil
	case partition.Attention:
		return c.attention(op, st, past)
	case partition.Activation:
		fl := c.sh.ffn()
		up := fl
		if c.plan.Model.GatedMLP {
			up *= 2
		}
		u, err := c.buf(st, op.Microbatch, op.In, op.Rows*up)
		if err != nil {
			return err
		}
		a, err := c.buf(st, op.Microbatch, op.Out, op.Rows*fl)
		if err != nil {
			return err
		}
		activate(u, a, op.Rows, fl, c.plan.Model.GatedMLP)
		return nil
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
		for i, v := range y {
			x[i] += v
		}
		return nil
	case partition.Sample:
		return c.sample(op, st)
	}
	return fmt.Errorf("cpu: op kind %q is not a compute op", op.Kind)
}

// input makes x from token ids: the prompt's tokens for positions below the
// prompt length, else the ids in the tokens buffer (fed back by sample).
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
	if past < c.prompt {
		if past+q > c.prompt {
			return fmt.Errorf("pass over positions [%d, %d) crosses the end of the prompt (%d)", past, past+q, c.prompt)
		}
		for i := 0; i < seqs; i++ {
			for j := 0; j < q; j++ {
				tokens[i*q+j] = float32(PromptToken(c.seed, mb*seqs+i, past+j, c.vocabTok))
			}
		}
	}
	H := c.plan.Model.Hidden
	x, err := c.buf(st, mb, op.Out, op.Rows*H)
	if err != nil {
		return err
	}
	emb := c.global["embed"]
	for r := 0; r < op.Rows; r++ {
		id := int(tokens[r])
		if float32(id) != tokens[r] || id < 0 || id >= c.vocabTok {
			return fmt.Errorf("token %v of row %d is not an id in [0, %d)", tokens[r], r, c.vocabTok)
		}
		xr := x[r*H : (r+1)*H]
		if !c.plan.Model.Embeddings {
			synthetic(c.seed, id, xr)
			continue
		}
		if local := id - c.sh.t*emb.k; local >= 0 && local < emb.k {
			copy(xr, emb.data[local*H:(local+1)*H])
		} else {
			clear(xr)
		}
	}
	st.rows, st.end = op.Rows, past+q
	return nil
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
	if q := rows / op.Rows; q > 1 {
		for i := 0; i < op.Rows; i++ {
			src := (i*q + q - 1) * H
			rmsNorm(in[src:src+H], out[i*H:(i+1)*H], t.data, 1)
		}
		return nil
	}
	rmsNorm(in, out, t.data, op.Rows)
	return nil
}

func (c *Compute) attention(op *partition.Op, st *mbState, past int) error {
	cache := c.kv[op.Layer]
	if cache == nil {
		return fmt.Errorf("rank %d holds no KV cache of layer %d", c.rank.Rank, op.Layer)
	}
	s := attnShape{seq0: op.Microbatch * c.plan.MicrobatchSize, seqs: op.Seqs, q: op.QLen, past: past,
		hl: c.sh.heads(), kvl: c.sh.kvHeads(), hd: c.plan.Model.HeadDim}
	if s.seqs*s.q != op.Rows || s.seqs != c.plan.MicrobatchSize {
		return fmt.Errorf("%d sequences × %d tokens do not make the op's %d rows", s.seqs, s.q, op.Rows)
	}
	if past < 0 || past+s.q > c.context {
		return fmt.Errorf("positions [%d, %d) exceed the KV cache of %d", past, past+s.q, c.context)
	}
	qkv, err := c.buf(st, op.Microbatch, op.In, op.Rows*(s.hl+2*s.kvl)*s.hd)
	if err != nil {
		return err
	}
	ao, err := c.buf(st, op.Microbatch, op.Out, op.Rows*s.hl*s.hd)
	if err != nil {
		return err
	}
	attention(qkv, ao, cache, s)
	st.end = past + s.q
	return nil
}

// sample writes the tokens fed to the next step: teacher-forced, the prompt
// schedule's token at the position after the pass (PromptToken at st.end).
// With an LM head it also keeps the argmax over the real vocabulary and the
// logits; without, it keeps the last position's hidden state of each sequence.
func (c *Compute) sample(op *partition.Op, st *mbState) error {
	mb, seqs := op.Microbatch, op.Rows
	tokens, err := c.buf(st, mb, op.Out, seqs)
	if err != nil {
		return err
	}
	seq0 := mb * c.plan.MicrobatchSize
	for i := range tokens {
		tokens[i] = float32(PromptToken(c.seed, seq0+i, st.end, c.vocabTok))
	}
	m := c.plan.Model
	if !m.LMHead {
		H := m.Hidden
		if st.rows == 0 || st.rows%seqs != 0 {
			return fmt.Errorf("%d rows of x do not split into %d sequences", st.rows, seqs)
		}
		q := st.rows / seqs
		x, err := c.buf(st, mb, bufX, st.rows*H)
		if err != nil {
			return err
		}
		out := make([]float32, seqs*H)
		for i := 0; i < seqs; i++ {
			src := (i*q + q - 1) * H
			copy(out[i*H:(i+1)*H], x[src:src+H])
		}
		st.output, st.sampled = out, nil
		return nil
	}
	name := op.In
	if c.plan.TP > 1 {
		name = pexec.GatheredBuffer(op.In)
	}
	vp, V, T := c.sh.vp, m.Vocab, c.plan.TP
	logits, err := c.buf(st, mb, name, seqs*vp)
	if err != nil {
		return err
	}
	out, sampled := LogitsByVocab(logits, seqs, vp, V, T), make([]int, seqs)
	for i := range sampled {
		sampled[i] = Argmax(out[i*V : (i+1)*V])
	}
	st.output, st.sampled = out, sampled
	return nil
}

// LogitsByVocab reorders gathered logits, laid out [T][seqs][vp/T] (the TP
// ranks' shards in rank order), to [seqs][vocab], dropping padded ids.
func LogitsByVocab(gathered []float32, seqs, vp, vocab, T int) []float32 {
	vl := vp / T
	out := make([]float32, seqs*vocab)
	for i := 0; i < seqs; i++ {
		for v := 0; v < vocab; v++ {
			t, j := v/vl, v%vl
			out[i*vocab+v] = gathered[(t*seqs+i)*vl+j]
		}
	}
	return out
}

// Argmax is the index of the largest element (the first on ties); NaN
// elements are never chosen.
func Argmax(v []float32) int {
	best, bv := -1, float32(math.Inf(-1))
	for i, x := range v {
		if x > bv || best < 0 && x == bv {
			best, bv = i, x
		}
	}
	return best
}

// Sampled is the argmax token of each sequence of micro-batch mb at its last
// pass (nil without an LM head, or on a rank that does not sample).
func (c *Compute) Sampled(mb int) []int {
	if mb < 0 || mb >= len(c.mbs) || c.mbs[mb].sampled == nil {
		return nil
	}
	return append([]int(nil), c.mbs[mb].sampled...)
}

// Output is the last stage's result of micro-batch mb's last pass: logits
// [seqs][vocab] with an LM head, else the final hidden state of each
// sequence's last position [seqs][hidden]; nil on other stages.
func (c *Compute) Output(mb int) []float32 {
	if mb < 0 || mb >= len(c.mbs) || c.mbs[mb].output == nil {
		return nil
	}
	return append([]float32(nil), c.mbs[mb].output...)
}

// Sync is a no-op: CPU ops complete before Exec returns.
func (c *Compute) Sync(ctx context.Context) error { return ctx.Err() }

// AllocatedBytes is the bytes of weights, KV cache and buffers allocated.
func (c *Compute) AllocatedBytes() int64 { return c.allocated }

// Close drops the rank's memory.
func (c *Compute) Close() error {
	c.layers, c.global, c.kv, c.mbs = nil, nil, nil, nil
	return nil
}
