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

func (p *Plan) weights(r Rank) (layers, embed int64) {
	layers = int64(len(r.Layers)) * p.layerWeightBytes()
	dt, h, vshard := int64(p.DTypeBytes), int64(p.Model.Hidden), int64(p.Shard(r.TPIndex).VocabSize)
	first, last := p.FirstStage(r.Stage), p.LastStage(r.Stage)
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
	return layers, embed
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

func (p *Plan) memory(r Rank, chunk int) Memory {
	var mem Memory
	mem.LayerWeightBytes, mem.EmbeddingBytes = p.weights(r)
	mem.WeightBytes = mem.LayerWeightBytes + mem.EmbeddingBytes
	w := p.Config.Workload
	mem.KVCacheBytes = int64(len(r.Layers)) * int64(w.Batch) * int64(w.Context) * p.KVTokenBytes(r.TPIndex)
	mbs := p.MicrobatchSize
	act := p.activationBytes(r, mbs) // decode: one token per sequence
	if w.HasPhase("prefill") {
		if a := p.activationBytes(r, mbs*chunk); a > act {
			act = a
		}
	}
	mem.ActivationBytes = act
	mem.TotalBytes = mem.WeightBytes + mem.KVCacheBytes + mem.ActivationBytes
	mem.CapacityBytes = p.System.GPU.UsableHBMBytes()
	return mem
}

// fitMemory picks the prefill chunk (the configured one, or the whole prompt
// halved until activations fit) and fills StageMemory. The TP ranks of a
// stage, and every replica, hold the same, so each stage is computed once
// (its replica-0, TP-index-0 rank stands for the others, and names the
// stage in a NoFitError).
func (p *Plan) fitMemory() error {
	prompt := p.Config.Workload.PromptTokens()
	chunk, fixed := p.Config.Parallel.PrefillChunk, p.Config.Parallel.PrefillChunk > 0
	if !fixed {
		chunk = prompt
	}
	p.StageMemory = make([]Memory, p.PP)
	stageRank := func(s int) Rank { return Rank{Rank: p.RankOf(s, 0), Stage: s, Layers: p.StageLayers[s]} }
	// A stage's memory depends on its layer count and on whether it is the
	// first or the last: compute each such shape once per chunk.
	type shape struct{ layers, first, last int }
	shapes := map[shape]Memory{}
	shapeOf := func(s int) shape {
		k := shape{layers: len(p.StageLayers[s])}
		if p.FirstStage(s) {
			k.first = 1
		}
		if p.LastStage(s) {
			k.last = 1
		}
		return k
	}
	for {
		worst := -1
		clear(shapes)
		for s := range p.StageMemory {
			k := shapeOf(s)
			mem, ok := shapes[k]
			if !ok {
				mem = p.memory(stageRank(s), chunk)
				shapes[k] = mem
			}
			p.StageMemory[s] = mem
			if mem.TotalBytes > mem.CapacityBytes && (worst < 0 || mem.TotalBytes > p.StageMemory[worst].TotalBytes) {
				worst = s
			}
		}
		if worst < 0 {
			p.PrefillChunk = chunk
			p.PrefillChunks = (prompt + chunk - 1) / chunk
			return nil
		}
		r := stageRank(worst)
		if fixed || chunk == 1 || p.memory(r, 1).TotalBytes > p.StageMemory[worst].CapacityBytes {
			return &NoFitError{Plan: p.Config.Name, Rank: r.Rank, Stage: r.Stage, TPIndex: r.TPIndex, Memory: p.StageMemory[worst], PrefillChunk: chunk}
		}
		chunk = (chunk + 1) / 2
	}
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
