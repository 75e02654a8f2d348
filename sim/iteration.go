package sim

import (
	"fmt"
	"math"

	"github.com/partbench/partbench/partition"
)

// This file prices one iteration of a serving engine: a batch whose
// sequences each bring some new tokens (a prefill chunk, or one decode
// token) after some cached ones. The ops are the plan's own: one decode pass
// of every stage, taken from the Program, is the template, and each op is
// rescaled to the iteration's rows — FLOPs, activation bytes, KV bytes and
// message bytes are linear in the rows of an op (partition builds them as
// rows × a per-row figure), weights of a GEMM or norm are not. Attention is
// priced over each sequence's own context (the (query, key) pairs and the
// cached tokens it reads, summed over sequences). Everything that depends
// only on the token count (GEMMs, norms, collectives, sends) is cached per
// token count, so the cost of one call does not grow with how many
// iterations came before.

// IterationShape is the mixed prefill/decode shape of one iteration. Build
// it with Add, one call per scheduled sequence.
type IterationShape struct {
	// Tokens is the new tokens of every sequence (the rows of every GEMM).
	Tokens int
	// Seqs is the number of sequences in the batch.
	Seqs int
	// Samples is the sequences that produce a token this iteration (the rows
	// of the LM head and the sampler): decodes and last prefill chunks.
	Samples int
	// Pairs is Σ over sequences of the causal (query, key) pairs
	// q·past + q(q+1)/2; Past is Σ past (cached tokens read).
	Pairs int64
	Past  int64
	// Prefill: some sequence brings more than one token (the iteration runs
	// ungraphed, as vLLM runs mixed batches).
	Prefill bool
	// SwapTokens is the KV entries (per sequence token, all layers) moved
	// between device and host memory before the iteration: preemptions by
	// swap and their return.
	SwapTokens int64
}

// Add puts one sequence in the shape: q new tokens after past cached ones;
// sample when the pass produces its next token.
func (s *IterationShape) Add(q, past int, sample bool) {
	s.Tokens += q
	s.Seqs++
	if sample {
		s.Samples++
	}
	s.Pairs += causalPairs(q, past)
	s.Past += int64(past)
	if q > 1 {
		s.Prefill = true
	}
}

// causalPairs is the (query, key) pairs of q queries after past cached keys,
// each query seeing the keys up to itself (as partition counts attention).
func causalPairs(q, past int) int64 {
	return int64(q)*int64(past) + int64(q)*int64(q+1)/2
}

// iterStage is one pipeline stage's template pass.
type iterStage struct {
	rank             int
	pre, layer, post []partition.Op
	layers           float64
	res              float64 // L2 residency of reused weights
}

type iterKey struct {
	rows    int
	prefill bool
}

// IterationModel prices iterations of one replica of a plan. Not safe for
// concurrent use (it caches).
type IterationModel struct {
	plan    *partition.Plan
	opts    CollectiveOptions
	stages  []iterStage
	rowsS   map[iterKey][]float64 // per stage: token-count-dependent time, with the link to the next stage
	sampS   map[iterKey][]float64 // per stage: sample-count-dependent time (LM head, sampler, token return)
	attn    []*partition.Op       // per stage: the layer's attention template
	scratch []float64
}

// NewIterationModel builds the templates of a plan's replica 0. Encoder
// (bidirectional) models are refused: they do not decode.
func NewIterationModel(plan *partition.Plan, opts Options) (*IterationModel, error) {
	if err := opts.Collectives.Validate(); err != nil {
		return nil, err
	}
	m := &IterationModel{plan: plan, opts: opts.Collectives, rowsS: map[iterKey][]float64{}, sampS: map[iterKey][]float64{}}
	g := plan.System.GPU
	for s := 0; s < plan.PP; s++ {
		rank := plan.RankOf(s, 0)
		prog := plan.Program(rank, partition.Decode)
		var ops []partition.Op
		for _, op := range prog.Ops {
			if op.Microbatch == 0 {
				ops = append(ops, op)
			}
		}
		st := iterStage{rank: rank, layers: float64(len(plan.StageLayers[s])), res: 1}
		if ws := workingSet(prog); ws > 0 {
			st.res = math.Min(1, float64(g.UsableL2Bytes())/float64(ws))
		}
		// One layer's ops: the first layer of the stage (every layer's are alike).
		l0 := -1
		for _, op := range ops {
			switch {
			case op.Layer < 0 && l0 < 0:
				st.pre = append(st.pre, op)
			case op.Layer >= 0 && (l0 < 0 || op.Layer == l0):
				l0 = op.Layer
				st.layer = append(st.layer, op)
			case op.Layer < 0:
				st.post = append(st.post, op)
			}
		}
		var attn *partition.Op
		for i := range st.layer {
			if st.layer[i].Kind == partition.Attention {
				attn = &st.layer[i]
			}
		}
		if attn == nil || attn.Bidirectional {
			return nil, fmt.Errorf("sim: serving config %s: stage %d has no causal attention to decode with", plan.Config.Name, s)
		}
		m.attn = append(m.attn, attn)
		m.stages = append(m.stages, st)
	}
	return m, nil
}

// scaled is op with rows rows instead of its own: every per-row figure
// scales, a GEMM's or norm's weights do not (an embedding lookup reads one
// row per token, so it scales).
func scaled(op *partition.Op, rows int) partition.Op {
	o := *op
	r0 := int64(op.Rows)
	if r0 == 0 || rows == op.Rows {
		return o
	}
	r := int64(rows)
	o.Rows = rows
	o.FLOPs = op.FLOPs / r0 * r
	o.ActBytes = op.ActBytes / r0 * r
	o.KVWriteBytes = op.KVWriteBytes / r0 * r
	o.Elems = op.Elems / op.Rows * rows
	o.Bytes = op.Bytes / r0 * r
	if !reusable(op) {
		o.WeightBytes = op.WeightBytes / r0 * r
	}
	if op.Seqs > 0 {
		o.Seqs = rows
	}
	return o
}

// opS is the busy time of one op as the timeline charges it: compute by
// roofline, a collective by Collective plus a launch, a send its launch
// (the transfer is charged as a link), a recv nothing.
func (m *IterationModel) opS(op *partition.Op, res float64, phase partition.Phase) (float64, error) {
	g := &m.plan.System.GPU
	switch op.Kind {
	case partition.Recv:
		return 0, nil
	case partition.Send:
		return launchS(g, phase), nil
	case partition.AllReduce, partition.AllGather:
		if op.Bytes == 0 {
			return 0, nil
		}
		cop, _ := op.Kind.Comm()
		est, err := Collective(m.plan.System, cop, op.Group, op.Bytes, m.opts)
		if err != nil {
			return 0, fmt.Errorf("sim: %s on ranks %s: %w", op.Name, groupName(op.Group), err)
		}
		return est.TimeS + launchS(g, phase), nil
	}
	return computeCost(g, m.plan.Model.DType, op, res, false, phase).TimeS, nil
}

// rowsTime is everything of an iteration that depends on its token count:
// the ops before and of each layer but attention, times the stage's layers,
// and the activation transfers between stages.
func (m *IterationModel) rowsTime(k iterKey) ([]float64, error) {
	if t, ok := m.rowsS[k]; ok {
		return t, nil
	}
	phase := phaseOf(k.prefill)
	ts := make([]float64, len(m.stages))
	for si := range m.stages {
		st := &m.stages[si]
		t := &ts[si]
		for i := range st.pre {
			if st.pre[i].Payload == partition.PayloadTokens {
				continue // the token ids: priced per sample
			}
			o := scaled(&st.pre[i], k.rows)
			x, err := m.opS(&o, st.res, phase)
			if err != nil {
				return nil, err
			}
			*t += x
		}
		for i := range st.layer {
			if st.layer[i].Kind == partition.Attention {
				continue
			}
			o := scaled(&st.layer[i], k.rows)
			x, err := m.opS(&o, st.res, phase)
			if err != nil {
				return nil, err
			}
			*t += st.layers * x
		}
		for i := range st.post {
			op := &st.post[i]
			if op.Kind == partition.Send && op.Payload == partition.PayloadActivation {
				o := scaled(op, k.rows)
				x, err := m.opS(&o, st.res, phase)
				if err != nil {
					return nil, err
				}
				*t += x + P2P(m.plan.System, st.rank, op.Peer, o.Bytes).TimeS
			}
		}
	}
	m.rowsS[k] = ts
	return ts, nil
}

// sampleTime is what depends on the sequences that produce a token: the
// final norm, LM head, logits gather and sampler on the last stage, the
// token ids' trip back to stage 0; with no sample, the step's fixed host
// cost alone.
func (m *IterationModel) sampleTime(k iterKey) ([]float64, error) {
	if t, ok := m.sampS[k]; ok {
		return t, nil
	}
	phase := phaseOf(k.prefill)
	g := &m.plan.System.GPU
	ts := make([]float64, len(m.stages))
	for si := range m.stages {
		st := &m.stages[si]
		t := &ts[si]
		for i := range st.post {
			op := &st.post[i]
			if op.Payload == partition.PayloadActivation {
				continue // the activation send: priced per token
			}
			if k.rows == 0 {
				if op.Kind == partition.Sample {
					*t += stepFixedS(g, phase, op)
				}
				continue
			}
			o := scaled(op, k.rows)
			x, err := m.opS(&o, st.res, phase)
			if err != nil {
				return nil, err
			}
			*t += x
			if op.Kind == partition.Send {
				*t += P2P(m.plan.System, st.rank, op.Peer, o.Bytes).TimeS
			}
		}
	}
	m.sampS[k] = ts
	return ts, nil
}

func phaseOf(prefill bool) partition.Phase {
	if prefill {
		return partition.Prefill
	}
	return partition.Decode
}

// TimeS is the modeled time of one iteration of the replica: one pass of
// the batch through every stage in turn and the links between them
// (StageTimesS summed).
func (m *IterationModel) TimeS(sh IterationShape) (float64, error) {
	ts, err := m.StageTimesS(sh, m.scratch[:0])
	m.scratch = ts
	var t float64
	for _, x := range ts {
		t += x
	}
	return t, err
}

// Stages is the number of pipeline stages an iteration passes.
func (m *IterationModel) Stages() int { return len(m.stages) }

// StageTimesS is the busy time of each stage in one iteration, appended to
// dst: its ops, and the transfer to the next stage (the last stage: the
// token ids back to stage 0).
func (m *IterationModel) StageTimesS(sh IterationShape, dst []float64) ([]float64, error) {
	if sh.Tokens <= 0 || sh.Seqs <= 0 {
		return dst, fmt.Errorf("sim: an iteration needs tokens and sequences (got %d tokens, %d sequences)", sh.Tokens, sh.Seqs)
	}
	rt, err := m.rowsTime(iterKey{sh.Tokens, sh.Prefill})
	if err != nil {
		return dst, err
	}
	st, err := m.sampleTime(iterKey{sh.Samples, sh.Prefill})
	if err != nil {
		return dst, err
	}
	phase := phaseOf(sh.Prefill)
	g := &m.plan.System.GPU
	for si := range m.stages {
		a := m.attn[si]
		o := *a
		pairs0 := causalPairs(a.QLen, a.Past) * int64(a.Seqs)
		kvPerToken := a.KVWriteBytes / int64(a.Rows)
		o.Rows, o.Seqs = sh.Tokens, sh.Seqs
		o.FLOPs = a.FLOPs / pairs0 * sh.Pairs
		o.ActBytes = a.ActBytes / int64(a.Rows) * int64(sh.Tokens)
		o.KVWriteBytes = kvPerToken * int64(sh.Tokens)
		o.KVReadBytes = kvPerToken * sh.Past
		at := m.stages[si].layers * computeCost(g, m.plan.Model.DType, &o, m.stages[si].res, false, phase).TimeS
		if sh.SwapTokens > 0 {
			// Every GPU of the stage moves its own layers' entries over its
			// own host link.
			host := Gen5HostLink()
			at += float64(sh.SwapTokens)*m.stages[si].layers*float64(kvPerToken)/host.BytesPerS + host.LatencyS
		}
		dst = append(dst, rt[si]+st[si]+at)
	}
	return dst, nil
}
