package partition

import (
	"fmt"

	"github.com/partbench/partbench/arch"
)

// Memory is one rank's device memory need. Activation is one micro-batch's
// buffers for its largest pass as the executors allocate them: the residual
// stream, its normalized and projected copies, the attention's and the MLP's
// pairs in shared storage (StorageOf), the token ids and, on the last stage,
// the logits (docs/costmodel.md).
type Memory struct {
	LayerWeightBytes int64 `json:"layer_weights_bytes"`
	// EmbeddingBytes covers the embedding shard (first stage), the final norm
	// and the LM head shard (last stage).
	EmbeddingBytes  int64 `json:"embedding_bytes"`
	WeightBytes     int64 `json:"weights_bytes"`
	KVCacheBytes    int64 `json:"kv_cache_bytes"`
	ActivationBytes int64 `json:"activation_bytes"`
	TotalBytes      int64 `json:"total_bytes"`
	CapacityBytes   int64 `json:"capacity_bytes"`
}

// layerWeightBytes is one layer's shard on TP index 0: the matrices split
// TP ways, the norm vectors replicated, column biases split, row biases on
// TP index 0 (the elements of the shards it holds).
func (p *Plan) layerWeightBytes() int64 {
	s := p.Shard(0)
	var n int64
	for _, name := range s.LayerTensors() {
		k, c, _ := s.TensorShape(name)
		n += int64(k) * int64(c)
	}
	return n * int64(p.DTypeBytes)
}

// embedBytes is the weight bytes outside the layers of a stage that is the
// first and/or the last: the embedding shard (and learned positions), the
// final norm and the LM head shard.
func (p *Plan) embedBytes(first, last bool) (embed int64) {
	dt, h, vshard := int64(p.DTypeBytes), int64(p.Model.Hidden), int64(p.Shard(0).VocabSize)
	if p.Model.Embeddings && first {
		embed += vshard * h * dt
		if p.Model.Features().Positions == arch.Learned {
			embed += int64(p.Model.MaxPositions) * h * dt
		}
	}
	if p.Model.LMHead && last {
		embed += finalNormParams(p.Model) * dt
		// A tied LM head on the embedding's own stage reads the embedding.
		if !p.Model.Tied() || !first {
			embed += h * vshard * dt
		}
	}
	return embed
}

// memParts are the parts of a TP-index-0 rank's memory that depend on the
// plan's TP degree and not on its pipeline depth, its stage's layers or the
// prefill chunk: one
// layer's weight bytes (layerWeightBytes), the embedding-side bytes of a
// stage by whether it is the first and the last (weights), a token's KV
// bytes per layer, whether there is a prefill, and the usable HBM.
type memParts struct {
	layerBytes, kvTokenBytes, capacity int64
	embed                              [2][2]int64 // [first][last]
	prefill                            bool
}

// memParts computes p's memParts.
func (p *Plan) memParts() memParts {
	mp := memParts{layerBytes: p.layerWeightBytes(), kvTokenBytes: p.KVTokenBytes(0), capacity: p.System.GPU.UsableHBMBytes(),
		prefill: p.Config.Workload.HasPhase("prefill")}
	for _, first := range []bool{false, true} {
		for _, last := range []bool{false, true} {
			mp.embed[b2i(first)][b2i(last)] = p.embedBytes(first, last)
		}
	}
	return mp
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// activationBytes is rank r's buffers for passes of tokens rows, as an
// executor allocates them (exec.NewFrame): BufferAllocs at that size, once
// for every micro-batch, and the PassPrivate ones once per micro-batch.
func (p *Plan) activationBytes(r Rank, tokens int) int64 {
	var b int64
	for i, n := range allocSizes(p.passSizes(r, tokens)) {
		bytes := p.BufferBytes(slotBuf(i), n)
		if p.PassPrivate(slotBuf(i)) {
			bytes *= int64(p.Microbatches)
		}
		b += bytes
	}
	return b
}

// memSource gives the memory fit a TP-index-0 rank's memory in two steps:
// base, the parts that do not depend on the prefill chunk — its weights,
// KV cache, the decode step's activations (one token per sequence) and the
// usable HBM —, once per stage shape; then at, its memory at a prefill
// chunk from that base: the larger of the decode and the prefill
// activations, and the total. at(base(r), r, chunk) is the rank's whole
// memory at chunk, the same sums in the same order for every chunk the fit
// tries (TestFitLoopIsMemoryAtEveryChunk).
type memSource struct {
	mp *memParts
	// act, when not nil, remembers activation bytes across plans (a
	// Planner's, for the plan's pass_buffers, TP degree and micro-batch
	// size: actRows); else they are the plan's own activationBytes.
	act *actRows
	// stageMem, when not nil, is the buffer a fitting plan's StageMemory
	// is written into (Planner.ReuseStageMemory); else it is made.
	stageMem *[]Memory
	// mems, when not nil, is the buffer fitLoop writes each shape's memory
	// into (a Planner's, grown when too short), which fitResult reads
	// before the next fit: it copies them into StageMemory or the
	// NoFitError and keeps no slice of them. Else fitLoop makes the list.
	mems *[]Memory
}

// activation is rank r's activationBytes for passes of rows rows.
func (m *memSource) activation(p *Plan, r *Rank, rows int) int64 {
	if m.act == nil {
		return p.activationBytes(*r, rows)
	}
	seen := &m.act[b2i(p.LastStage(r.Stage))]
	for _, e := range *seen {
		if e.rows == rows {
			return e.bytes
		}
	}
	b := p.activationBytes(*r, rows)
	*seen = append(*seen, actEntry{rows: rows, bytes: b})
	return b
}

// base is rank r's memory but for the prefill: ActivationBytes holds the
// decode step's, TotalBytes is left 0 (at sets it).
func (m *memSource) base(p *Plan, r *Rank) Memory {
	var mem Memory
	mem.LayerWeightBytes = int64(len(r.Layers)) * m.mp.layerBytes
	mem.EmbeddingBytes = m.mp.embed[b2i(p.FirstStage(r.Stage))][b2i(p.LastStage(r.Stage))]
	mem.WeightBytes = mem.LayerWeightBytes + mem.EmbeddingBytes
	w := p.Config.Workload
	mem.KVCacheBytes = int64(len(r.Layers)) * int64(w.Batch) * int64(w.Context) * m.mp.kvTokenBytes
	mem.ActivationBytes = m.activation(p, r, p.MicrobatchSize) // decode: one token per sequence
	mem.CapacityBytes = m.mp.capacity
	return mem
}

// at is rank r's memory at a prefill chunk from its base.
func (m *memSource) at(p *Plan, r *Rank, base Memory, chunk int) Memory {
	var a int64
	if m.mp.prefill {
		a = m.activation(p, r, p.MicrobatchSize*chunk)
	}
	return m.withPrefill(base, a)
}

// totalWith is withPrefill(*base, a).TotalBytes, without the Memory.
func (m *memSource) totalWith(base *Memory, a int64) int64 {
	act := base.ActivationBytes
	if m.mp.prefill && a > act {
		act = a
	}
	return base.WeightBytes + base.KVCacheBytes + act
}

// withPrefill is at's memory from base and the prefill activations a
// (rank r's activation at the chunk's rows; 0 without a prefill).
func (m *memSource) withPrefill(base Memory, a int64) Memory {
	mem := base
	if m.mp.prefill && a > mem.ActivationBytes {
		mem.ActivationBytes = a
	}
	mem.TotalBytes = mem.WeightBytes + mem.KVCacheBytes + mem.ActivationBytes
	return mem
}

// fitMemory picks the prefill chunk (the configured one, or the whole prompt
// halved until activations fit) and fills StageMemory. The TP ranks of a
// stage, and every replica, hold the same, so each stage is computed once
// (its replica-0, TP-index-0 rank stands for the others, and names the
// stage in a NoFitError).
func (p *Plan) fitMemory() error {
	mp := p.memParts()
	return p.fitMemoryWith(&memSource{mp: &mp})
}

// stageRank is stage s's replica-0, TP-index-0 rank, as the memory fit sees it.
func (p *Plan) stageRank(s int) Rank {
	return Rank{Rank: p.RankOf(s, 0), Stage: s, Layers: p.StageLayers[s]}
}

// fitMemoryWith is fitMemory with src giving each stage's memory. A
// stage's memory depends on its layer count and on whether it is the first
// or the last, so src is asked once per such shape (and chunk), for the
// shape's first stage.
func (p *Plan) fitMemoryWith(src *memSource) error {
	reps, shapeOf := p.stageShapes()
	return p.fitMemoryShapes(reps, shapeOf, src)
}

// fitMemoryShapes is fitMemoryWith with the plan's stageShapes given (a
// Planner remembers them with the stage layer lists they come from).
func (p *Plan) fitMemoryShapes(reps, shapeOf []int, src *memSource) error {
	chunk, worst, mems := p.fitLoop(reps, src)
	return p.fitResult(reps, shapeOf, chunk, worst, mems, src.stageMem)
}

// fitStart is the first prefill chunk the memory fit tries, and whether it
// is the configured one (fixed: never halved).
func (p *Plan) fitStart() (chunk int, fixed bool) {
	chunk, fixed = p.Config.Parallel.PrefillChunk, p.Config.Parallel.PrefillChunk > 0
	if !fixed {
		chunk = p.Config.Workload.PromptTokens()
	}
	return chunk, fixed
}

// fitLoop is the memory fit over the stage shapes whose first stages are
// reps: from fitStart's chunk, halved (rounding up) while some shape does
// not fit and the one needing the most would fit at chunk 1. It returns
// the last chunk tried, the index in reps of the shape that does not fit
// (−1 when every one fits), and every shape's memory at that chunk. Each
// shape's base (memSource) is taken once, not at every chunk, and at each
// chunk only its total (withPrefill's TotalBytes, the same sum) is worked
// out: its whole Memory is made once, at the chunk the fit ends at — a
// plan that fits halves the chunk up to a dozen times. The memories are
// written into src.mems when it is set (a Planner's list, reused from plan
// to plan), else into a list of their own.
func (p *Plan) fitLoop(reps []int, src *memSource) (chunk, worst int, mems []Memory) {
	chunk, fixed := p.fitStart()
	var small [4]Memory // the bases of a pipeline's shapes (first, last, two middle layer counts)
	bases := small[:0]
	if len(reps) > len(small) {
		bases = make([]Memory, 0, len(reps))
	}
	var smallR [4]Rank // each shape's first stage's rank, made once
	ranks := smallR[:0]
	if len(reps) > len(smallR) {
		ranks = make([]Rank, 0, len(reps))
	}
	bases, ranks = bases[:len(reps)], ranks[:len(reps)]
	for i, s := range reps {
		ranks[i] = p.stageRank(s)
		bases[i] = src.base(p, &ranks[i])
	}
	// one[i] is shape i's total at chunk 1, once asked for (oneOK bit i):
	// the loop asks it of the shape not fitting at every chunk it halves
	// from, mostly the same shape.
	var one [4]int64
	var oneOK uint8
	// A rank's prefill activations depend on the chunk and on whether its
	// stage is the last (passSizes: the logits), not on its layers: at
	// each chunk they are asked once per such class (act, actOK bit
	// last), not once per shape — a deep pipeline has up to four shapes,
	// and a plan that fits halves the chunk up to a dozen times.
	last := func(i int) int { return b2i(p.LastStage(ranks[i].Stage)) }
	var act [2]int64 // the last chunk's prefill activations per class (0 without a prefill)
	for {
		var actOK uint8
		act = [2]int64{}
		// worst is the shape needing the most among those that do not fit;
		// on a tie the one whose first stage comes first, so its first stage
		// is the first stage needing the most.
		worst = -1
		var worstT int64
		for i := range reps {
			var a int64
			if src.mp.prefill {
				if l := last(i); actOK&(1<<l) != 0 {
					a = act[l]
				} else {
					a = src.activation(p, &ranks[i], p.MicrobatchSize*chunk)
					act[l], actOK = a, actOK|1<<l
				}
			}
			if t := src.totalWith(&bases[i], a); t > bases[i].CapacityBytes && (worst < 0 || t > worstT) {
				worst, worstT = i, t
			}
		}
		if worst < 0 || fixed || chunk == 1 {
			break
		}
		var at1 int64
		if worst < len(one) && oneOK&(1<<worst) != 0 {
			at1 = one[worst]
		} else {
			at1 = src.at(p, &ranks[worst], bases[worst], 1).TotalBytes
			if worst < len(one) {
				one[worst], oneOK = at1, oneOK|1<<worst
			}
		}
		if at1 > bases[worst].CapacityBytes {
			break
		}
		chunk = (chunk + 1) / 2
	}
	if src.mems != nil {
		if cap(*src.mems) < len(reps) {
			*src.mems = make([]Memory, len(reps))
		}
		mems = (*src.mems)[:len(reps):len(reps)]
	} else {
		mems = make([]Memory, len(reps))
	}
	for i := range reps {
		mems[i] = src.withPrefill(bases[i], act[last(i)])
	}
	return chunk, worst, mems
}

// fitResult records fitLoop's outcome in p (StageMemory in buf when not
// nil: setFit), or returns the NoFitError that names the worst shape's
// first stage.
func (p *Plan) fitResult(reps, shapeOf []int, chunk, worst int, mems []Memory, buf *[]Memory) error {
	if worst < 0 {
		p.setFit(chunk, shapeOf, mems, buf)
		return nil
	}
	r := p.stageRank(reps[worst])
	return &NoFitError{Plan: p.Config.Name, Rank: r.Rank, Stage: r.Stage, TPIndex: r.TPIndex, Memory: mems[worst], PrefillChunk: chunk}
}

// stageShapes groups the stages by what their memory depends on (layer
// count, first, last): reps holds the first stage of each shape in stage
// order, shapeOf[s] the index of stage s's shape in reps.
func (p *Plan) stageShapes() (reps, shapeOf []int) {
	type shape struct {
		layers      int
		first, last bool
	}
	var shapes []shape
	shapeOf = make([]int, p.PP)
	for s := range shapeOf {
		k := shape{layers: len(p.StageLayers[s]), first: p.FirstStage(s), last: p.LastStage(s)}
		i := 0
		for i < len(shapes) && shapes[i] != k {
			i++
		}
		if i == len(shapes) {
			shapes, reps = append(shapes, k), append(reps, s)
		}
		shapeOf[s] = i
	}
	return reps, shapeOf
}

// setFit records the fit: the prefill chunk and each stage's memory, its
// shape's (mems[shapeOf[s]]), in a list of its own or, when buf is not
// nil, in *buf (grown when too short), whose first PP entries it then is.
func (p *Plan) setFit(chunk int, shapeOf []int, mems []Memory, buf *[]Memory) {
	if buf == nil {
		p.StageMemory = make([]Memory, p.PP)
	} else {
		if cap(*buf) < p.PP {
			*buf = make([]Memory, p.PP)
		}
		p.StageMemory = (*buf)[:p.PP:p.PP]
	}
	for s, i := range shapeOf {
		p.StageMemory[s] = mems[i]
	}
	prompt := p.Config.Workload.PromptTokens()
	p.PrefillChunk = chunk
	p.PrefillChunks = (prompt + chunk - 1) / chunk
}

func gb(b int64) float64 { return float64(b) / 1e9 }

// NoFitError says a plan does not fit in memory: the rank that needs the
// most, what it needs at the smallest prefill chunk tried, and its capacity.
// NewPlan returns it (match with errors.As); any other error is not about
// memory.
type NoFitError struct {
	Plan         string
	Rank         int
	Stage        int
	TPIndex      int
	Memory       Memory
	PrefillChunk int
}

func (e *NoFitError) Error() string {
	m := e.Memory
	return fmt.Sprintf("plan %s does not fit: rank %d (stage %d, tp %d) needs %.2f GB (weights %.2f + KV cache %.2f + activations %.2f at prefill chunk %d), usable HBM is %.2f GB (hardware.hbm_bytes − hardware.hbm_reserved_bytes)",
		e.Plan, e.Rank, e.Stage, e.TPIndex, gb(m.TotalBytes), gb(m.WeightBytes), gb(m.KVCacheBytes), gb(m.ActivationBytes), e.PrefillChunk, gb(m.CapacityBytes))
}

// Reason names what keeps the plan out of memory: the weights alone, the
// weights with the KV cache, or else the activations at the smallest chunk.
func (e *NoFitError) Reason() string {
	m := e.Memory
	switch {
	case m.WeightBytes > m.CapacityBytes:
		return "weights exceed usable HBM"
	case m.WeightBytes+m.KVCacheBytes > m.CapacityBytes:
		return "weights + KV cache exceed usable HBM"
	}
	return "activations do not fit even at the smallest prefill chunk"
}
