package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/wire"
)

// ArithEngine is a deterministic stand-in for a model: it does arithmetic on
// the payloads that a real engine would ship, with the sizes it derives on
// its own from the model config, so transport tests check correctness and
// byte counts without a backend. A KV entry is a hash of (weights, layer,
// sequence, position, token); a sampled token is a hash of the sequence's
// whole cache. Every mode therefore yields the same tokens only when the
// weights and KV caches travel intact.
type ArithEngine struct {
	// Delay is added to every step's execution (drain tests).
	Delay time.Duration
}

var _ wire.Engine = (*ArithEngine)(nil)

// SessionBytes is the plan's memory for the session.
func (e *ArithEngine) SessionBytes(plan *partition.Plan, mode partition.RemoteMode) (int64, error) {
	return plan.RemoteSessionBytes(mode)
}

// OpenSession starts a session; stateful sessions make their own weights.
func (e *ArithEngine) OpenSession(plan *partition.Plan, mode partition.RemoteMode, opts partition.RemoteOptions) (wire.EngineSession, error) {
	row, _ := mode.Row()
	s := &arithSession{e: e, plan: plan, mode: mode, row: row, opts: opts, kv: map[string][]byte{}}
	if row.Weights == partition.WeightsOnServer {
		ws, err := SeededWeights(plan)
		if err != nil {
			return nil, err
		}
		s.sum = weightSum(ws)
		s.loaded = true
	}
	return s, nil
}

// SeededWeights are the deterministic weights of the arithmetic engine, in
// partition's weight order.
func SeededWeights(plan *partition.Plan) ([]wire.Tensor, error) {
	ws, err := plan.RemoteWeights()
	if err != nil {
		return nil, err
	}
	out := make([]wire.Tensor, len(ws))
	for i, w := range ws {
		d := make([]byte, w.Bytes)
		x := uint64(i+1) * 0x9E3779B97F4A7C15
		for j := range d {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			d[j] = byte(x)
		}
		out[i] = wire.Tensor{Name: w.Name, ElemBytes: w.ElemBytes, Shape: w.Shape, Data: d}
	}
	return out, nil
}

func weightSum(ws []wire.Tensor) uint64 {
	h := fnv.New64a()
	for _, w := range ws {
		h.Write([]byte(w.Name))
		h.Write(w.Data)
	}
	return h.Sum64()
}

type arithSession struct {
	e      *ArithEngine
	plan   *partition.Plan
	mode   partition.RemoteMode
	row    partition.RemoteModeRow
	opts   partition.RemoteOptions
	mu     sync.Mutex
	sum    uint64
	loaded bool
	kv     map[string][]byte // stateful: each layer's cache, [batch, tokens, width]
}

func (s *arithSession) Close() {}

func mix(vals ...uint64) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, v := range vals {
		h ^= v
		h *= 0x100000001b3
		h ^= h >> 29
	}
	return h
}

func (s *arithSession) Step(ctx context.Context, in *wire.StepInput) (*wire.StepOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t0 := time.Now()
	if s.e.Delay > 0 {
		select {
		case <-time.After(s.e.Delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	m := s.plan.Model
	elem := partition.DTypeBytes(m.DType)
	width := partition.KVBytesPerToken(m) // one rank (TP = 1): every KV head
	batch := int64(s.plan.Config.Workload.Batch)
	byName := map[string]wire.Tensor{}
	for _, t := range in.Tensors {
		byName[t.Name] = t
	}
	if in.Phase == wire.PhaseLoad {
		if !s.row.ShipsWeightsAtOpen() {
			return nil, fmt.Errorf("load: only a kv-mode session takes weights (this one is %s)", s.mode)
		}
		s.sum, s.loaded = weightSum(in.Tensors), true
		return &wire.StepOutput{Execute: time.Since(t0)}, nil
	}
	sum := s.sum
	if s.row.ShipsWeightsEachRequest() {
		var ws []wire.Tensor
		for _, t := range in.Tensors {
			if t.Name != partition.RemoteTokensIn && !isKV(t.Name) {
				ws = append(ws, t)
			}
		}
		sum = weightSum(ws)
	} else if !s.loaded {
		return nil, fmt.Errorf("%s step before the weights were loaded", s.mode)
	}
	tok, ok := byName[partition.RemoteTokensIn]
	if !ok || len(tok.Shape) != 2 || tok.Shape[0] != batch {
		return nil, fmt.Errorf("step: need tokens [%d, q], got %v", batch, tok.Shape)
	}
	q := tok.Shape[1]
	past := int64(0)
	if in.Phase == partition.Decode {
		past = int64(s.plan.Config.Workload.PromptTokens() + in.Step)
	}
	out := &wire.StepOutput{}
	seqHash := make([]uint64, batch)
	for l := 0; l < m.Layers; l++ {
		name := partition.RemoteKVName(l)
		var old []byte
		if !s.row.ShipsKV() {
			old = s.kv[name]
		} else if past > 0 {
			old = byName[name].Data
		}
		if int64(len(old)) != batch*past*width {
			return nil, fmt.Errorf("%s: KV cache of %d B, want %d seqs × %d tokens × %d B", name, len(old), batch, past, width)
		}
		next := make([]byte, batch*(past+q)*width)
		for b := int64(0); b < batch; b++ {
			copy(next[b*(past+q)*width:], old[b*past*width:(b+1)*past*width])
			for i := int64(0); i < q; i++ {
				t := binary.LittleEndian.Uint32(tok.Data[(b*q+i)*4:])
				x := mix(sum, uint64(l), uint64(b), uint64(past+i), uint64(t))
				e := next[(b*(past+q)+past+i)*width : (b*(past+q)+past+i+1)*width]
				for j := range e {
					x = x*6364136223846793005 + 1442695040888963407
					e[j] = byte(x >> 56)
				}
			}
			h := fnv.New64a()
			h.Write(next[b*(past+q)*width : (b+1)*(past+q)*width])
			seqHash[b] = mix(seqHash[b], h.Sum64())
		}
		if !s.row.ShipsKV() {
			s.kv[name] = next
		} else {
			out.Tensors = append(out.Tensors, wire.Tensor{Name: name, ElemBytes: elem, Shape: []int64{batch, past + q, width / int64(elem)}, Data: next})
		}
	}
	vocab := uint64(m.Vocab)
	if s.opts.Logits {
		v := int64(s.plan.VocabPadded)
		d := make([]byte, batch*v*int64(elem))
		for b := int64(0); b < batch; b++ {
			x := seqHash[b]
			for j := b * v * int64(elem); j < (b+1)*v*int64(elem); j++ {
				x = x*6364136223846793005 + 1442695040888963407
				d[j] = byte(x >> 56)
			}
		}
		out.Tensors = append(out.Tensors, wire.Tensor{Name: partition.RemoteLogits, ElemBytes: elem, Shape: []int64{batch, v}, Data: d})
	} else {
		d := make([]byte, batch*4)
		for b := int64(0); b < batch; b++ {
			binary.LittleEndian.PutUint32(d[b*4:], uint32(seqHash[b]%vocab))
		}
		out.Tensors = append(out.Tensors, wire.Tensor{Name: partition.RemoteTokensOut, ElemBytes: 4, Shape: []int64{batch}, Data: d})
	}
	out.Execute = time.Since(t0)
	return out, nil
}

func isKV(name string) bool { return len(name) > 3 && name[len(name)-3:] == ".kv" }
