package partition

import (
	"fmt"
	"slices"
	"sync"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/model"
)

// Kind is what an op does.
type Kind string

const (
	// Input makes the stage-0 hidden states x from token ids: an embedding
	// lookup (vocab-sharded under TP), or seeded synthetic states when the
	// model has no embedding.
	Input     Kind = "input"
	Norm      Kind = "rmsnorm"
	LayerNorm Kind = "layernorm" // with bias (Op.Bias)
	// Position adds rows [past, past+QLen) of the learned position
	// embedding (Op.Tensor) to each sequence's rows of x.
	Position   Kind = "position"
	Gemm       Kind = "gemm"
	Attention  Kind = "attention" // rotary, KV-cache append and causal attention
	Activation Kind = "activation"
	Residual   Kind = "residual"
	Sample     Kind = "sample" // token ids from logits (argmax)
	AllReduce  Kind = "all_reduce"
	AllGather  Kind = "all_gather"
	Send       Kind = "send"
	Recv       Kind = "recv"
)

// Comm reports the communication op a kind is, if any.
func (k Kind) Comm() (commcount.Op, bool) {
	switch k {
	case AllReduce:
		return commcount.AllReduce, true
	case AllGather:
		return commcount.AllGather, true
	case Send:
		return commcount.Send, true
	case Recv:
		return commcount.Recv, true
	}
	return "", false
}

// Phase is prefill (the prompt) or decode (one new token per sequence).
type Phase string

const (
	Prefill Phase = "prefill"
	Decode  Phase = "decode"
)

// Payload kinds of point-to-point messages.
const (
	PayloadActivation = "activation" // hidden states across a stage boundary
	PayloadTokens     = "tokens"     // sampled token ids, last stage → first stage
)

// Op is one step of a rank's Program, with its shapes and costs on this
// rank: everything an interpreter needs, so none reads Model and TP to find
// a shape. In and Out are the micro-batch's buffers it reads and writes
// (model.Buf: "x" the residual stream, "h" normalized, "qkv", "ao" attention
// output, "y" a projection's output, "u" up/gate, "a" activated, "logits",
// "tokens"); Layer and Tensor are the weight it touches.
type Op struct {
	Kind       Kind      `json:"kind"`
	Name       string    `json:"name"`
	Layer      int       `json:"layer"` // −1 outside the transformer layers
	Tensor     string    `json:"tensor,omitempty"`
	Microbatch int       `json:"microbatch"`
	Chunk      int       `json:"chunk"`
	In         model.Buf `json:"in,omitempty"`
	Out        model.Buf `json:"out,omitempty"`

	// Rows is the number of token rows the op processes; N and K are a GEMM's
	// output and input features on this rank.
	Rows int `json:"rows"`
	N    int `json:"n,omitempty"`
	K    int `json:"k,omitempty"`
	// Input, attention and sample: sequences, query tokens per sequence,
	// tokens already cached.
	Seqs int `json:"seqs,omitempty"`
	QLen int `json:"qlen,omitempty"`
	Past int `json:"past,omitempty"`

	// Compute ops: elements per row of In and Out on this rank (a norm after
	// a prefill pass reads the last of several rows per sequence).
	InWidth  int `json:"in_width,omitempty"`
	OutWidth int `json:"out_width,omitempty"`
	// Attention: query heads, key/value heads and head dim on this rank.
	Heads   int `json:"heads,omitempty"`
	KVHeads int `json:"kv_heads,omitempty"`
	HeadDim int `json:"head_dim,omitempty"`
	// Activation: the MLP's activation.
	MLP model.MLP `json:"mlp,omitempty"`
	// Bias names the bias tensor (in Layer) a GEMM adds to its output or a
	// LayerNorm adds after scaling; empty: none.
	Bias string `json:"bias,omitempty"`
	// Norms: ε.
	Eps float64 `json:"eps,omitempty"`
	// Attention: the rotary base θ (0: no rotary embeddings), and whether
	// every query sees every position of the pass (encoder) instead of those
	// up to its own.
	RopeTheta     float64 `json:"rope_theta,omitempty"`
	Bidirectional bool    `json:"bidirectional,omitempty"`
	// Input and sample: token ids lie in [0, Vocab); the rank's embedding or
	// LM head shard holds padded-vocabulary rows [VocabOffset,
	// VocabOffset+VocabSize) of VocabShards equal shards.
	Vocab       int `json:"vocab,omitempty"`
	VocabOffset int `json:"vocab_offset,omitempty"`
	VocabSize   int `json:"vocab_size,omitempty"`
	VocabShards int `json:"vocab_shards,omitempty"`

	FLOPs        int64 `json:"flops"`
	WeightBytes  int64 `json:"weight_bytes"`
	ActBytes     int64 `json:"act_bytes"`
	KVReadBytes  int64 `json:"kv_read_bytes"`
	KVWriteBytes int64 `json:"kv_write_bytes"`

	// Communication: Group for collectives (global ranks, ascending), Peer for
	// send/recv; Elems and Bytes are the payload (all_gather: the output).
	Group   []int  `json:"group,omitempty"`
	Peer    int    `json:"peer"`
	Elems   int    `json:"elems,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
	Payload string `json:"payload,omitempty"`
}

// Program is one rank's ordered ops for one phase. A decode Program is one
// step; its attention ops carry the representative cache length the
// estimate uses (exec substitutes the real position of each step).
type Program struct {
	Rank  int   `json:"rank"`
	Phase Phase `json:"phase"`
	Ops   []Op  `json:"ops"`
}

// DecodePast is the cache length a representative decode step sees: the
// prompt plus half the output, the mean over the generated tokens.
func (p *Plan) DecodePast() int {
	w := p.Config.Workload
	return w.PromptTokens() + w.OutputTokens/2
}

// Program builds rank's ops for a phase.
func (p *Plan) Program(rank int, phase Phase) Program {
	r := p.RankAt(rank)
	b := builder{p: p, r: r, s: p.Shard(r.TPIndex), dt: int64(p.DTypeBytes)}
	passes := p.Microbatches
	if phase == Prefill {
		passes *= p.PrefillChunks
	}
	// 12 ops per layer and at most 10 around them in a pass (layer and
	// pass), built in a scratch array and copied to one of the exact
	// length: a stage of one layer has 14 ops a pass, not 22, and an Op is
	// large (a dry run of 1,000 stages builds 2,000 Programs).
	sp := opScratch.Get().(*[]Op)
	b.ops = slices.Grow((*sp)[:0], passes*(12*len(r.Layers)+10))
	if phase == Prefill {
		for c := 0; c < p.PrefillChunks; c++ {
			for mb := 0; mb < p.Microbatches; mb++ {
				b.chunkPass(mb, c)
			}
		}
	} else {
		for mb := 0; mb < p.Microbatches; mb++ {
			b.decodePass(mb)
		}
	}
	ops := slices.Clone(b.ops)
	clear(b.ops) // the scratch keeps no op's strings and groups alive
	*sp = b.ops[:0]
	opScratch.Put(sp)
	return Program{Rank: rank, Phase: phase, Ops: ops}
}

// opScratch holds the arrays Program builds ops in.
var opScratch = sync.Pool{New: func() any { return new([]Op) }}

// decodePass appends micro-batch mb's decode step: one token per sequence
// after DecodePast cached.
func (b *builder) decodePass(mb int) {
	b.pass(Decode, mb, 0, b.p.MicrobatchSize, 1, b.p.DecodePast(), true)
}

// PassAround is micro-batch mb's pass of prefill chunk c (phase Prefill) or
// its decode step (Decode) on rank without the stage's layers: the ops
// before them, ops[:at], and after them, ops[at:]. Every layer's ops are
// built alike, so an estimator that has one layer's ops of a pass shape
// (PrefillPass or Program of a one-layer stage) gets each other stage
// kind's pass from this without building the layer again.
func (p *Plan) PassAround(rank int, phase Phase, mb, c int) (ops []Op, at int) {
	r := p.RankAt(rank)
	r.Layers = nil
	b := builder{p: p, r: r, s: p.Shard(r.TPIndex), dt: int64(p.DTypeBytes)}
	b.ops = make([]Op, 0, 10)
	if phase == Prefill {
		b.chunkPass(mb, c)
	} else {
		b.decodePass(mb)
	}
	return b.ops, b.layersAt
}

// AppendPassAround is PassAround(rank, phase, mb, c) appended to dst: the
// pass's ops are ops[len(dst):], and at is where its layers go counted
// from the pass's first op, as PassAround counts it.
func (p *Plan) AppendPassAround(dst []Op, rank int, phase Phase, mb, c int) (ops []Op, at int) {
	r := p.RankAt(rank)
	r.Layers = nil
	b := builder{p: p, r: r, s: p.Shard(r.TPIndex), dt: int64(p.DTypeBytes), ops: dst}
	if phase == Prefill {
		b.chunkPass(mb, c)
	} else {
		b.decodePass(mb)
	}
	return b.ops, b.layersAt - len(dst)
}

// AppendDecodeStep is micro-batch mb's decode step on rank appended to
// dst: the ops its decode Program holds for that micro-batch (the whole
// Program of a plan of one micro-batch), built alone, in a slice the
// caller sizes.
func (p *Plan) AppendDecodeStep(dst []Op, rank, mb int) []Op {
	r := p.RankAt(rank)
	b := builder{p: p, r: r, s: p.Shard(r.TPIndex), dt: int64(p.DTypeBytes), ops: dst}
	b.decodePass(mb)
	return b.ops
}

// PrefillPass is micro-batch mb's pass of prefill chunk c on rank: the ops
// its prefill Program holds for that pass, built alone.
func (p *Plan) PrefillPass(rank, mb, c int) []Op {
	r := p.RankAt(rank)
	b := builder{p: p, r: r, s: p.Shard(r.TPIndex), dt: int64(p.DTypeBytes)}
	b.ops = make([]Op, 0, 12*len(r.Layers)+10)
	b.chunkPass(mb, c)
	return b.ops
}

// AppendPrefillPass is PrefillPass(rank, mb, c) appended to dst: the same
// ops, in a slice the caller sizes (a caller building many passes reuses
// one buffer and keeps copies of exactly the passes' lengths).
func (p *Plan) AppendPrefillPass(dst []Op, rank, mb, c int) []Op {
	r := p.RankAt(rank)
	b := builder{p: p, r: r, s: p.Shard(r.TPIndex), dt: int64(p.DTypeBytes), ops: dst}
	b.chunkPass(mb, c)
	return b.ops
}

// chunkPass appends micro-batch mb's pass of prefill chunk c: PrefillChunk
// tokens per sequence (the last chunk the rest of the prompt) after c
// chunks cached.
func (b *builder) chunkPass(mb, c int) {
	p := b.p
	past := c * p.PrefillChunk
	q := min(p.PrefillChunk, p.Config.Workload.PromptTokens()-past)
	b.pass(Prefill, mb, c, p.MicrobatchSize, q, past, c == p.PrefillChunks-1)
}

type builder struct {
	p   *Plan
	r   Rank
	s   model.Shard
	dt  int64
	ops []Op
	mb  int
	c   int
	// countOnly counts ops in n instead of keeping them (OpCount).
	countOnly bool
	n         int
	// layersAt is where the last pass's layers begin in ops (PassAround).
	layersAt int
}

func (b *builder) add(op Op) {
	if b.countOnly {
		b.n++
		return
	}
	op.Microbatch, op.Chunk = b.mb, b.c
	b.ops = append(b.ops, op)
}

// vocab fills an input or sample op's token range and vocabulary shard.
func (b *builder) vocab(op *Op) {
	op.Vocab = model.TokenVocab(b.p.Model)
	if b.p.VocabPadded > 0 {
		op.VocabOffset, op.VocabSize, op.VocabShards = b.s.VocabOffset, b.s.VocabSize, b.p.TP
	}
}

// pass appends one micro-batch's pass through this rank's stage: seqs
// sequences of q new tokens after past cached ones. last marks the pass
// that produces the next token (the last prefill chunk, every decode step).
func (b *builder) pass(phase Phase, mb, chunk, seqs, q, past int, last bool) {
	p, r := b.p, b.r
	b.mb, b.c = mb, chunk
	T := seqs * q
	H := p.Model.Hidden
	dt := b.dt
	if p.FirstStage(r.Stage) {
		if phase == Decode && p.PP > 1 {
			b.add(Op{Kind: Recv, Name: "tokens.recv", Layer: -1, Out: model.Tokens, Rows: seqs, Peer: p.RankIn(r.Replica, p.PP-1, r.TPIndex),
				Elems: seqs, Bytes: int64(seqs) * 4, Payload: PayloadTokens})
		}
		in := Op{Kind: Input, Name: "input", Layer: -1, In: model.Tokens, Out: model.X, Rows: T, Seqs: seqs, QLen: q,
			InWidth: 1, OutWidth: H, ActBytes: int64(T*H) * dt}
		b.vocab(&in)
		if p.Model.Embeddings {
			in.Name, in.Tensor, in.WeightBytes = "embed", model.Embed, int64(T*H)*dt
		}
		b.add(in)
		if p.Model.Embeddings && p.TP > 1 {
			b.allReduce("embed.ar", -1, model.X, T)
		}
		if p.Model.Embeddings && b.s.Arch.Positions == model.Learned {
			b.add(Op{Kind: Position, Name: "pos_embed", Layer: -1, Tensor: model.PosEmbed, In: model.X, Out: model.X,
				Rows: T, Seqs: seqs, QLen: q, InWidth: H, OutWidth: H,
				FLOPs: int64(T * H), WeightBytes: int64(T*H) * dt, ActBytes: int64(2*T*H) * dt})
		}
	} else {
		b.add(Op{Kind: Recv, Name: "x.recv", Layer: -1, Out: model.X, Rows: T, Peer: p.RankIn(r.Replica, r.Stage-1, r.TPIndex),
			Elems: T * H, Bytes: int64(T*H) * dt, Payload: PayloadActivation})
	}
	b.layersAt = len(b.ops)
	for _, l := range r.Layers {
		b.layer(l, T, seqs, q, past)
	}
	if !p.LastStage(r.Stage) {
		b.add(Op{Kind: Send, Name: "x.send", Layer: -1, In: model.X, Rows: T, Peer: p.RankIn(r.Replica, r.Stage+1, r.TPIndex),
			Elems: T * H, Bytes: int64(T*H) * dt, Payload: PayloadActivation})
		return
	}
	if !last {
		return
	}
	// The next token: logits of each sequence's last position. Without an
	// LM head, sample keeps the last position's hidden state of x.
	sample := Op{Kind: Sample, Name: "sample", Layer: -1, In: model.X, Out: model.Tokens, Rows: seqs, Seqs: seqs,
		InWidth: H, OutWidth: 1}
	b.vocab(&sample)
	if p.Model.LMHead {
		V := p.VocabPadded
		b.norm("final_norm", -1, model.FinalNorm, seqs)
		b.gemm("lm_head", -1, model.LMHead, "", model.H, model.Logits, seqs, b.s.VocabSize, H)
		sample.In, sample.InWidth = model.Logits, V
		if p.TP > 1 {
			b.add(Op{Kind: AllGather, Name: "logits.ag", Layer: -1, In: model.Logits, Out: model.Logits, Rows: seqs, Group: r.TPGroup,
				Elems: seqs * V, Bytes: int64(seqs*V) * dt})
			sample.In = model.Logits.Gathered()
		}
		sample.ActBytes, sample.FLOPs = int64(seqs*V)*dt, int64(seqs*V)
	}
	b.add(sample)
	if p.PP > 1 {
		b.add(Op{Kind: Send, Name: "tokens.send", Layer: -1, In: model.Tokens, Rows: seqs, Peer: p.RankIn(r.Replica, 0, r.TPIndex),
			Elems: seqs, Bytes: int64(seqs) * 4, Payload: PayloadTokens})
	}
}

// gemm appends out = in @ tensor (+ bias, a [1, n] tensor, when not "").
func (b *builder) gemm(name string, layer int, tensor, bias string, in, out model.Buf, rows, n, k int) {
	dt := b.dt
	op := Op{Kind: Gemm, Name: name, Layer: layer, Tensor: tensor, Bias: bias, In: in, Out: out, Rows: rows, N: n, K: k,
		InWidth: k, OutWidth: n,
		FLOPs: 2 * int64(rows) * int64(n) * int64(k), WeightBytes: int64(n) * int64(k) * dt,
		ActBytes: (int64(rows)*int64(k) + int64(rows)*int64(n)) * dt}
	if bias != "" {
		op.FLOPs += int64(rows) * int64(n)
		op.WeightBytes += int64(n) * dt
	}
	b.add(op)
}

// norm appends the norm of x into h (rows rows, or each sequence's last
// row of x when rows are sequences after a prefill pass): RMSNorm, about 4
// FLOPs per element; LayerNorm with bias, about 6 (mean, centre, square,
// scale, weight, bias), reading the weight and the bias.
func (b *builder) norm(name string, layer int, tensor string, rows int) {
	s, dt := b.s, b.dt
	H := s.Hidden
	op := Op{Kind: Norm, Name: name, Layer: layer, Tensor: tensor, In: model.X, Out: model.H, Rows: rows,
		InWidth: H, OutWidth: H, Eps: s.Arch.NormEps,
		FLOPs: int64(4 * rows * H), WeightBytes: int64(H) * dt, ActBytes: int64(2*rows*H) * dt}
	if s.Arch.Norm == model.LayerNorm {
		op.Kind, op.Bias = LayerNorm, s.NormBias(tensor)
		op.FLOPs, op.WeightBytes = int64(6*rows*H), int64(2*H)*dt
	}
	b.add(op)
}

func (b *builder) allReduce(name string, layer int, buf model.Buf, rows int) {
	H := b.p.Model.Hidden
	b.add(Op{Kind: AllReduce, Name: name, Layer: layer, In: buf, Out: buf, Rows: rows, Group: b.r.TPGroup,
		Elems: rows * H, Bytes: int64(rows*H) * b.dt})
}

func (b *builder) layer(l, T, seqs, q, past int) {
	p, s, dt := b.p, b.s, b.dt
	H := s.Hidden
	n := layerOpNamesOf(l)
	residual := func(name string) {
		b.add(Op{Kind: Residual, Name: name, Layer: l, In: model.Y, Out: model.X, Rows: T,
			InWidth: H, OutWidth: H, FLOPs: int64(T * H), ActBytes: int64(3*T*H) * dt})
	}
	ar := func(name string) {
		if p.TP > 1 {
			b.allReduce(name, l, model.Y, T)
		}
	}

	b.norm(n.attnNorm, l, model.AttnNorm, T)
	b.gemm(n.wqkv, l, model.WQKV, s.ColBias(model.BQKV), model.H, model.QKV, T, s.QKVWidth(), H)
	// FLOPs and KV read from the cached tokens: setPast.
	attn := Op{Kind: Attention, Name: n.attn, Layer: l, In: model.QKV, Out: model.AO, Rows: T, Seqs: seqs, QLen: q,
		InWidth: s.QKVWidth(), OutWidth: s.AttnWidth(), Heads: s.Heads, KVHeads: s.KVHeads, HeadDim: s.HeadDim,
		RopeTheta: s.Arch.RopeTheta, Bidirectional: s.Arch.Bidirectional,
		ActBytes: int64(T*(s.QKVWidth()+s.AttnWidth())) * dt, KVWriteBytes: int64(T) * b.p.KVTokenBytes(b.r.TPIndex)}
	attn.setPast(past)
	b.add(attn)
	b.gemm(n.wo, l, model.WO, s.RowBias(model.BO), model.AO, model.Y, T, H, s.AttnWidth())
	ar(n.attnAR)
	residual(n.attnResidual)
	b.norm(n.mlpNorm, l, model.MLPNorm, T)
	b.gemm(n.wUp, l, model.WUp, s.ColBias(model.BUp), model.H, model.U, T, s.UpWidth(), H)
	b.add(Op{Kind: Activation, Name: n.act, Layer: l, In: model.U, Out: model.A, Rows: T,
		InWidth: s.UpWidth(), OutWidth: s.ActWidth(), MLP: s.Arch.MLP,
		FLOPs: int64(5 * T * s.ActWidth()), ActBytes: int64(T*(s.UpWidth()+s.ActWidth())) * dt})
	b.gemm(n.wDown, l, model.WDown, s.RowBias(model.BDown), model.A, model.Y, T, H, s.ActWidth())
	ar(n.mlpAR)
	residual(n.mlpResidual)
}

// setPast sets an attention op's cached tokens and what follows from them:
// each query attends to the past tokens and to the pass's tokens up to
// itself, q·past + q(q+1)/2 (query, key) pairs per sequence, each costing
// 2·head_dim FLOPs for QKᵀ and 2·head_dim for PV; bidirectional, every
// query sees all q, q·(past + q) pairs. The KV cache read is past tokens
// of every sequence at the bytes per token the op writes.
func (op *Op) setPast(past int) {
	seqs, q := int64(op.Seqs), int64(op.QLen)
	pairs := seqs * (q*int64(past) + q*(q+1)/2)
	if op.Bidirectional {
		pairs = seqs * q * int64(past+op.QLen)
	}
	op.Past = past
	op.FLOPs = 4 * int64(op.OutWidth) * pairs
	op.KVReadBytes = 0
	if op.Rows > 0 {
		op.KVReadBytes = seqs * int64(past) * (op.KVWriteBytes / int64(op.Rows))
	}
}

// AtPast is an attention op of a pass moved behind past cached tokens:
// the op Program builds for the same pass shape at that position (Past,
// FLOPs and KV read follow the past length; its chunk index is not
// changed). The passes of a chunked prefill differ from the first only in
// their attention ops and chunk index, so an estimator can price them from
// the first pass's ops without building them all.
func (op Op) AtPast(past int) Op {
	op.setPast(past)
	return op
}

// SetPast is AtPast in place: op becomes the attention op of its pass
// shape behind past cached tokens, whatever past it had (Past, FLOPs and
// KV read follow from past and the fields it leaves alone). An estimator
// that prices one op at many pasts moves one copy instead of copying the
// op for each.
func (op *Op) SetPast(past int) { op.setPast(past) }

func layerName(l int) string { return fmt.Sprintf("L%02d.", l) }

// StageKind is what a stage's Programs are built from but for their labels
// (op names, layers, peers and TP group): whether it is the first or the
// last stage and how many layers it runs. Two ranks of one TP index whose
// stages are of one kind, neither first nor last, run the same ops on the
// same shapes (ProgramLike).
type StageKind struct {
	First, Last bool
	Layers      int
}

// StageKindOf is stage st's kind.
func (p *Plan) StageKindOf(st int) StageKind {
	return StageKind{First: p.FirstStage(st), Last: p.LastStage(st), Layers: len(p.StageLayers[st])}
}

// ProgramLike is p.Program(rank, tmpl.Phase) made from tmpl, the Program of
// that phase of another rank of the same TP index whose stage is of the same
// kind (StageKindOf) and neither the first nor the last: tmpl's ops copied,
// each with its own labels — a layer op's layer and name are the rank's
// layer in the same place of its stage's list, a recv's peer is the rank of
// its TP index one stage before, a send's one stage after, a collective's
// group the rank's TP group. ok is false where tmpl is not such a Program
// (another kind, TP index or phase layout, a peer or group not of that
// form): the caller builds the Program. A deep pipeline's middle stages are
// one or two kinds, so the builder runs once per kind, not per stage
// (TestProgramLikeIsProgram holds the copies to the built Programs).
func (p *Plan) ProgramLike(tmpl Program, rank int) (Program, bool) {
	return p.ProgramLikeIn(tmpl, rank, nil)
}

// ProgramLikeIn is ProgramLike with its ops in dst where dst has room for
// them (len(dst) ≥ len(tmpl.Ops): the Program's ops are dst's first ones),
// else in a new array: a caller making many Programs carves them from one.
func (p *Plan) ProgramLikeIn(tmpl Program, rank int, dst []Op) (Program, bool) {
	t, r := p.RankAt(tmpl.Rank), p.RankAt(rank)
	if t.TPIndex != r.TPIndex || len(t.Layers) != len(r.Layers) || p.FirstStage(t.Stage) || p.LastStage(t.Stage) ||
		p.FirstStage(r.Stage) || p.LastStage(r.Stage) || len(t.TPGroup) != len(r.TPGroup) {
		return Program{}, false
	}
	from, to := p.RankIn(t.Replica, t.Stage-1, t.TPIndex), p.RankIn(t.Replica, t.Stage+1, t.TPIndex)
	rFrom, rTo := p.RankIn(r.Replica, r.Stage-1, r.TPIndex), p.RankIn(r.Replica, r.Stage+1, r.TPIndex)
	// Layer l of tmpl's stage is its pos(l)-th: its stages' layers are
	// consecutive in the usual case (no search).
	pos := func(l int) int {
		if j := l - t.Layers[0]; j >= 0 && j < len(t.Layers) && t.Layers[j] == l {
			return j
		}
		return slices.Index(t.Layers, l)
	}
	var ops []Op
	if n := len(tmpl.Ops); len(dst) >= n {
		ops = dst[:n:n]
		copy(ops, tmpl.Ops)
	} else {
		ops = slices.Clone(tmpl.Ops)
	}
	var tn, rn *layerOpNames // the last layer's names, tmpl's and the rank's
	tl, rl := -1, -1
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case Send:
			if op.Peer != to {
				return Program{}, false
			}
			op.Peer = rTo
		case Recv:
			if op.Peer != from {
				return Program{}, false
			}
			op.Peer = rFrom
		}
		if op.Group != nil {
			if !slices.Equal(op.Group, t.TPGroup) {
				return Program{}, false
			}
			op.Group = r.TPGroup
		}
		if op.Layer < 0 {
			continue
		}
		if op.Layer != tl {
			j := pos(op.Layer)
			if j < 0 {
				return Program{}, false
			}
			tl, rl = op.Layer, r.Layers[j]
			tn, rn = layerOpNamesOf(tl), layerOpNamesOf(rl)
		}
		op.Layer = rl
		name, ok := nameLike(op.Name, tn, rn)
		if !ok {
			return Program{}, false
		}
		op.Name = name
	}
	return Program{Rank: rank, Phase: tmpl.Phase, Ops: ops}, true
}

// nameLike is the name in rn of the op named name in tn (the same op of
// another layer), and whether tn has it.
func nameLike(name string, tn, rn *layerOpNames) (string, bool) {
	switch name {
	case tn.attnNorm:
		return rn.attnNorm, true
	case tn.wqkv:
		return rn.wqkv, true
	case tn.attn:
		return rn.attn, true
	case tn.wo:
		return rn.wo, true
	case tn.attnAR:
		return rn.attnAR, true
	case tn.attnResidual:
		return rn.attnResidual, true
	case tn.mlpNorm:
		return rn.mlpNorm, true
	case tn.wUp:
		return rn.wUp, true
	case tn.act:
		return rn.act, true
	case tn.wDown:
		return rn.wDown, true
	case tn.mlpAR:
		return rn.mlpAR, true
	case tn.mlpResidual:
		return rn.mlpResidual, true
	}
	return "", false
}
