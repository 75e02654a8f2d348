package partition

import (
	"fmt"
	"sort"

	"github.com/partbench/partbench/model"
)

// ParseRemoteMode checks a mode name.
func ParseRemoteMode(s string) (RemoteMode, error) {
	for _, m := range RemoteModes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", unknownRemoteMode(s)
}

// TokenIDBytes is the size of one token id on the wire: an int32, as the
// Program's token sends count them.
const TokenIDBytes = 4

// Names of the remote payload tensors that are not weights.
const (
	RemoteTokensIn  = "tokens"     // token ids sent to the server
	RemoteTokensOut = "tokens_out" // sampled token ids returned
	RemoteLogits    = "logits"     // logits of each sequence's last position returned
)

// RemoteKVName is the payload name of one layer's KV cache.
func RemoteKVName(layer int) string { return layerName(layer) + "kv" }

// RemoteTensor is one named payload of a remote request or reply, in the
// order it is sent. Bytes is exact; Shape is the element layout (the last
// dimension's elements are DTypeBytes wide, or TokenIDBytes for token ids).
type RemoteTensor struct {
	Name      string  `json:"name"`
	Layer     int     `json:"layer"` // −1 outside the transformer layers
	Bytes     int64   `json:"bytes"`
	ElemBytes int     `json:"elem_bytes"`
	Shape     []int64 `json:"shape"`
}

// RemotePayload is what one request carries each way.
type RemotePayload struct {
	Up   []RemoteTensor `json:"client_to_server"`
	Down []RemoteTensor `json:"server_to_client"`
}

// RemoteBytes is the payload bytes of one request, by kind. Payload is the
// tensor and token bytes only: session ids, headers and framing are wire
// bytes, counted by the transport.
type RemoteBytes struct {
	UpWeights   int64 `json:"up_weights_bytes"`
	UpKV        int64 `json:"up_kv_bytes"`
	UpTokens    int64 `json:"up_tokens_bytes"`
	DownKV      int64 `json:"down_kv_bytes"`
	DownOutputs int64 `json:"down_outputs_bytes"`
}

// Up is every byte client → server.
func (b RemoteBytes) Up() int64 { return b.UpWeights + b.UpKV + b.UpTokens }

// Down is every byte server → client.
func (b RemoteBytes) Down() int64 { return b.DownKV + b.DownOutputs }

// Total is both directions.
func (b RemoteBytes) Total() int64 { return b.Up() + b.Down() }

// RemoteOptions choose what a step returns.
type RemoteOptions struct {
	// Logits returns each sequence's last-position logits instead of the
	// sampled token ids (needs an LM head).
	Logits bool
}

// RemoteRequest names one request of a generation: the prefill (the whole
// prompt, Step ignored) or decode step Step (0-based: step s sees
// prompt + s cached tokens and makes generated token s + 2).
type RemoteRequest struct {
	Phase Phase
	Step  int
}

// DecodeSteps is the decode requests of one generation: the prefill makes
// the first output token, each decode step one more.
func (p *Plan) DecodeSteps() int { return p.Config.Workload.OutputTokens - 1 }

// RemoteWeights lists every weight tensor of a single-rank plan in Program
// order, one per (layer, tensor), each op's weight then its bias. Sizes are
// the shard's (model.Shard.TensorShape, the one definition the backends
// allocate from and partition's memory counts), not the bytes an op reads:
// the embedding and the learned position table are whole tables the ops
// read rows of. A tied LM head is the embedding transposed: it is not
// shipped (the server derives it), so the list sums to the plan's weight
// memory exactly.
func (p *Plan) RemoteWeights() ([]RemoteTensor, error) {
	if err := p.singleRank(); err != nil {
		return nil, err
	}
	s := p.Shard(0)
	type key struct {
		layer  int
		tensor string
	}
	seen := map[key]bool{}
	var out []RemoteTensor
	add := func(layer int, name string) error {
		k := key{layer, name}
		if name == "" || seen[k] {
			return nil
		}
		seen[k] = true
		if layer < 0 && name == model.LMHead && p.RemoteTiedHead() {
			return nil
		}
		rows, cols, ok := s.TensorShape(name)
		if !ok {
			return fmt.Errorf("remote weights: config %s: op tensor %q of layer %d has no shard shape", p.Config.Name, name, layer)
		}
		t := RemoteTensor{Name: name, Layer: layer, ElemBytes: p.DTypeBytes,
			Shape: []int64{int64(rows), int64(cols)}, Bytes: int64(rows) * int64(cols) * int64(p.DTypeBytes)}
		if rows == 1 { // vectors: norm weights and biases
			t.Shape = []int64{int64(cols)}
		}
		if layer >= 0 {
			t.Name = layerName(layer) + name
		}
		out = append(out, t)
		return nil
	}
	for _, op := range p.Program(0, Decode).Ops {
		if err := add(op.Layer, op.Tensor); err != nil {
			return nil, err
		}
		if err := add(op.Layer, op.Bias); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RemoteTiedHead says whether the plan's LM head is the embedding
// transposed, which a server installs from the shipped embedding.
func (p *Plan) RemoteTiedHead() bool { return p.Model.LMHead && p.Model.Tied() }

// kvPerToken is each layer's KV-cache bytes per token, read from the
// Program's attention ops (what one token writes).
func (p *Plan) kvPerToken() (layers []int, perToken map[int]int64) {
	perToken = map[int]int64{}
	for _, op := range p.Program(0, Decode).Ops {
		if op.Kind != Attention || op.Microbatch != 0 {
			continue
		}
		layers = append(layers, op.Layer)
		perToken[op.Layer] = op.KVWriteBytes / int64(op.Rows)
	}
	sort.Ints(layers)
	return layers, perToken
}

// remoteKV lists each layer's KV cache of the whole batch holding tokens
// tokens per sequence; width is elements per token.
func (p *Plan) remoteKV(tokens int) []RemoteTensor {
	layers, per := p.kvPerToken()
	batch := int64(p.Config.Workload.Batch)
	var out []RemoteTensor
	for _, l := range layers {
		out = append(out, RemoteTensor{Name: RemoteKVName(l), Layer: l, ElemBytes: p.DTypeBytes,
			Shape: []int64{batch, int64(tokens), per[l] / int64(p.DTypeBytes)},
			Bytes: batch * int64(tokens) * per[l]})
	}
	return out
}

func (p *Plan) singleRank() error {
	if p.TP != 1 || p.PP != 1 || p.DP > 1 {
		return fmt.Errorf("remote modes need a single-rank plan: config %s has tp %d × pp %d × dp %d (set parallel.tp, parallel.pp and parallel.dp to 1)",
			p.Config.Name, p.TP, p.PP, max(p.DP, 1))
	}
	return nil
}

// RemotePayloadOf lists the tensors one request of mode carries each way, in
// the order they are sent: weights (naive), the KV cache of every layer at
// the request's position (naive, kv), token ids; back: the updated KV cache
// (naive, kv) and the sampled tokens or logits. Local mode carries nothing.
func (p *Plan) RemotePayloadOf(mode RemoteMode, req RemoteRequest, opts RemoteOptions) (RemotePayload, error) {
	if err := p.singleRank(); err != nil {
		return RemotePayload{}, err
	}
	if _, err := ParseRemoteMode(string(mode)); err != nil {
		return RemotePayload{}, err
	}
	if opts.Logits && !p.Model.LMHead {
		return RemotePayload{}, fmt.Errorf("remote logits: model %s of config %s has no LM head (model.lm_head = false); ask for sampled tokens",
			p.Model.Name, p.Config.Name)
	}
	w := p.Config.Workload
	prompt := w.PromptTokens()
	var past, q int
	switch req.Phase {
	case Prefill:
		past, q = 0, prompt
	case Decode:
		if req.Step < 0 || req.Step >= p.DecodeSteps() {
			return RemotePayload{}, fmt.Errorf("remote decode step %d: must be in [0, %d) (workload.output_tokens − 1 of config %s)",
				req.Step, p.DecodeSteps(), p.Config.Name)
		}
		past, q = prompt+req.Step, 1
	default:
		return RemotePayload{}, fmt.Errorf("remote phase %q: must be prefill or decode", req.Phase)
	}
	var pl RemotePayload
	row := mode.row()
	if !row.Served {
		return pl, nil
	}
	batch := int64(w.Batch)
	if row.ShipsWeightsEachRequest() {
		ws, err := p.RemoteWeights()
		if err != nil {
			return pl, err
		}
		pl.Up = append(pl.Up, ws...)
	}
	if row.ShipsKV() {
		if past > 0 {
			pl.Up = append(pl.Up, p.remoteKV(past)...)
		}
		pl.Down = append(pl.Down, p.remoteKV(past+q)...)
	}
	pl.Up = append(pl.Up, RemoteTensor{Name: RemoteTokensIn, Layer: -1, ElemBytes: TokenIDBytes,
		Shape: []int64{batch, int64(q)}, Bytes: batch * int64(q) * TokenIDBytes})
	if opts.Logits {
		v := int64(p.VocabPadded)
		pl.Down = append(pl.Down, RemoteTensor{Name: RemoteLogits, Layer: -1, ElemBytes: p.DTypeBytes,
			Shape: []int64{batch, v}, Bytes: batch * v * int64(p.DTypeBytes)})
	} else {
		pl.Down = append(pl.Down, RemoteTensor{Name: RemoteTokensOut, Layer: -1, ElemBytes: TokenIDBytes,
			Shape: []int64{batch}, Bytes: batch * TokenIDBytes})
	}
	return pl, nil
}

// RemoteBytesOf sums RemotePayloadOf by kind.
func (p *Plan) RemoteBytesOf(mode RemoteMode, req RemoteRequest, opts RemoteOptions) (RemoteBytes, error) {
	pl, err := p.RemotePayloadOf(mode, req, opts)
	if err != nil {
		return RemoteBytes{}, err
	}
	var b RemoteBytes
	for _, t := range pl.Up {
		switch {
		case t.Name == RemoteTokensIn:
			b.UpTokens += t.Bytes
		case t.Layer >= 0 && t.Name == RemoteKVName(t.Layer):
			b.UpKV += t.Bytes
		default:
			b.UpWeights += t.Bytes
		}
	}
	for _, t := range pl.Down {
		if t.Layer >= 0 {
			b.DownKV += t.Bytes
		} else {
			b.DownOutputs += t.Bytes
		}
	}
	return b, nil
}

// RemoteOpenBytes is what opening a session of mode ships client → server
// once: the weights for kv mode (stateful loads them on the server itself;
// naive ships them on every request instead).
func (p *Plan) RemoteOpenBytes(mode RemoteMode) (int64, error) {
	if err := p.singleRank(); err != nil {
		return 0, err
	}
	if !mode.row().ShipsWeightsAtOpen() {
		return 0, nil
	}
	ws, err := p.RemoteWeights()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range ws {
		n += t.Bytes
	}
	return n, nil
}

// RemoteSessionBytes is the server memory a session of mode needs for its
// whole life, known before anything is allocated: the weights and the KV
// cache at full context (naive and kv hold them for the length of a
// request, stateful for the session), plus the activation peak.
func (p *Plan) RemoteSessionBytes(mode RemoteMode) (int64, error) {
	if err := p.singleRank(); err != nil {
		return 0, err
	}
	if !mode.Served() {
		return 0, nil
	}
	return p.StageMemory[0].TotalBytes, nil
}
