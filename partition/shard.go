package partition

import (
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/model"
)

// Shard is TP index tpIndex's share of the model: every width a TP rank
// holds, divided by TP here and nowhere else (configs.Validate checks that
// TP divides heads, kv_heads and ffn; the vocabulary is padded to a multiple).
func (p *Plan) Shard(tpIndex int) model.Shard {
	m := p.Model
	vl := p.VocabPadded / p.TP
	return model.Shard{
		Arch: m.Features(), Index: tpIndex,
		Hidden: m.Hidden, HeadDim: m.HeadDim,
		Heads: m.Heads / p.TP, KVHeads: KVHeadsPerRank(m, p.TP), FFN: m.FFN / p.TP,
		Vocab: m.Vocab, VocabOffset: tpIndex * vl, VocabSize: vl,
	}
}

// Generator makes rank's weight shards of the seeded model (run.seed).
func (p *Plan) Generator(rank int) model.Generator {
	return model.Generator{Seed: p.Config.Run.Seed, Model: p.Model, Shard: p.Shard(p.RankAt(rank).TPIndex)}
}

// TensorShard is one weight shard a rank holds: [K][N] of Name in Layer
// (−1 outside the transformer layers).
type TensorShard struct {
	Layer int
	Name  string
	K, N  int
}

// Tensors lists the weight shards rank holds: each of its layers'
// Shard.LayerTensors, the embedding (and learned positions) on the first stage, the final norm and
// the LM head on the last.
func (p *Plan) Tensors(rank int) []TensorShard {
	r := p.RankAt(rank)
	s := p.Shard(r.TPIndex)
	var out []TensorShard
	add := func(layer int, name string) {
		k, n, _ := s.TensorShape(name)
		out = append(out, TensorShard{Layer: layer, Name: name, K: k, N: n})
	}
	for _, l := range r.Layers {
		for _, name := range s.LayerTensors() {
			add(l, name)
		}
	}
	if p.Model.Embeddings && p.FirstStage(r.Stage) {
		add(-1, model.Embed)
		if s.Arch.Positions == model.Learned {
			add(-1, model.PosEmbed)
		}
	}
	if p.Model.LMHead && p.LastStage(r.Stage) {
		add(-1, model.FinalNorm)
		if b := s.NormBias(model.FinalNorm); b != "" {
			add(-1, b)
		}
		add(-1, model.LMHead)
	}
	return out
}

// KVElems is the elements of one layer's key (or value) cache on rank:
// every sequence of the batch at every position of the context.
func (p *Plan) KVElems(rank int) int {
	w := p.Config.Workload
	return w.Batch * w.Context * p.Shard(p.RankAt(rank).TPIndex).KVWidth()
}

// BufferElems is the elements of each of rank's per-micro-batch buffers,
// sized for the largest pass (a prefill chunk of every sequence of the
// micro-batch, or one decode token); the last stage with an LM head adds
// the logits shard and, under TP, the region the logits all-gather fills.
func (p *Plan) BufferElems(rank int) map[model.Buf]int {
	return p.bufferElems(p.RankAt(rank), p.MicrobatchSize*max(p.PrefillChunk, 1))
}

// passSizes are the elements of a pass's buffers, one slot per model.Buf
// (X … Tokens at their own value) and one for the gathered logits; 0: the
// rank has no such buffer. An array, not a map: memory is fitted for every
// candidate of a search.
type passSizes [gatheredSlot + 1]int

const gatheredSlot = int(model.Tokens) + 1

func slotBuf(i int) model.Buf {
	if i == gatheredSlot {
		return model.Logits.Gathered()
	}
	return model.Buf(i)
}

// bufferElems is BufferElems for a pass of rows rows.
func (p *Plan) bufferElems(r Rank, rows int) map[model.Buf]int {
	sizes := p.passSizes(r, rows)
	out := make(map[model.Buf]int, len(sizes))
	for i, n := range sizes {
		if n > 0 {
			out[slotBuf(i)] = n
		}
	}
	return out
}

func (p *Plan) passSizes(r Rank, rows int) passSizes {
	s := p.Shard(r.TPIndex)
	mbs := p.MicrobatchSize
	H := s.Hidden
	var z passSizes
	z[model.X], z[model.H], z[model.Y] = rows*H, rows*H, rows*H
	z[model.QKV], z[model.AO] = rows*s.QKVWidth(), rows*s.AttnWidth()
	z[model.U], z[model.A], z[model.Tokens] = rows*s.UpWidth(), rows*s.ActWidth(), rows
	if p.Model.LMHead && p.LastStage(r.Stage) {
		z[model.Logits] = mbs * s.VocabSize
		if p.TP > 1 {
			z[gatheredSlot] = mbs * p.VocabPadded
		}
	}
	return z
}

// allocSizes merges the buffers that share storage (StorageOf) into their
// storage's slot, each storage sized for its largest buffer.
func allocSizes(z passSizes) passSizes {
	var out passSizes
	for i, n := range z {
		st := int(StorageOf(slotBuf(i)))
		if i == gatheredSlot {
			st = gatheredSlot
		}
		out[st] = max(out[st], n)
	}
	return out
}

// StorageOf is the buffer whose allocation b uses: the MLP's u and a are
// first written (w_up, the activation) after the attention's qkv and ao are
// last read (the attention, wo), so each pair lives in one region sized for
// the larger of the two (TestSharedStorageIsDeadWhenReused walks every
// Program). Every other buffer is its own.
func StorageOf(b model.Buf) model.Buf {
	switch b {
	case model.U:
		return model.QKV
	case model.A:
		return model.AO
	}
	return b
}

// PassPrivate says whether each micro-batch needs its own allocation of
// buffer b. A rank runs its passes one after another (one stream on a
// GPU), and every buffer but the token ids is written before it is read
// within a pass, so the micro-batches share one allocation of it; the
// token ids are written by a pass's sample (or its tokens.recv) and read by
// the same micro-batch's next pass, so each keeps its own. With
// parallel.pass_buffers = "per-microbatch" (the serving engine, which
// copies rows between micro-batches) every buffer is private.
func (p *Plan) PassPrivate(b model.Buf) bool {
	return b == model.Tokens || p.Config.Parallel.PassBuffers == configs.PassBuffersPerMicrobatch
}

// BufferAllocs is the elements of each allocation behind rank's
// buffers of one pass: BufferElems with the buffers that share storage
// (StorageOf) in one region, keyed by the storage's buffer. The
// micro-batches share them, except the PassPrivate ones, which each
// micro-batch allocates.
func (p *Plan) BufferAllocs(rank int) map[model.Buf]int {
	z := allocSizes(p.passSizes(p.RankAt(rank), p.MicrobatchSize*max(p.PrefillChunk, 1)))
	out := map[model.Buf]int{}
	for i, n := range z {
		if n > 0 {
			out[slotBuf(i)] = n
		}
	}
	return out
}

// BufferBytes is the bytes of the elements n of buffer b: token ids are
// float32, everything else the model's element type.
func (p *Plan) BufferBytes(b model.Buf, n int) int64 {
	if b == model.Tokens {
		return int64(n) * 4
	}
	return int64(n) * int64(p.DTypeBytes)
}

// OutputElems is the elements of the last stage's result of one
// micro-batch's sampling pass: logits over the padded vocabulary with an LM
// head, else each sequence's last hidden state; 0 on other stages.
func (p *Plan) OutputElems(rank int) int {
	if !p.LastStage(p.RankAt(rank).Stage) {
		return 0
	}
	if p.Model.LMHead {
		return p.MicrobatchSize * p.VocabPadded
	}
	return p.MicrobatchSize * p.Model.Hidden
}

// KVTokenBytes is the K and V cache of one token in one layer on a rank of
// TP index tpIndex: KVBytesPerToken's share for the rank's KV heads
// (Plan.Shard, KVHeadsPerRank). Memory, the attention op's bytes, the
// remote modes' payloads and the backends' state copies are all built from
// it.
func (p *Plan) KVTokenBytes(tpIndex int) int64 {
	m := p.Model
	if m.KVHeads <= 0 {
		return 0
	}
	return KVBytesPerToken(m) / int64(m.KVHeads) * int64(p.Shard(tpIndex).KVHeads)
}
