package remote

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/wire"
)

// Call is one request of a generation as the client saw it.
type Call struct {
	Phase  partition.Phase
	Step   int
	Result *StepResult
	// Serialize is the client's time assembling and encoding the request's
	// tensors; Deserialize its time taking the reply apart (tokens, the KV
	// cache kept for the next request).
	Serialize, Deserialize time.Duration
}

// Generation is a whole generation: the tokens each request produced
// ([request][sequence]) and every call.
type Generation struct {
	Tokens [][]uint32
	Open   commcount.TransferSnapshot // kv mode's weight upload
	Load   *Call                      // kv mode's weight upload request (nil otherwise)
	Calls  []Call
}

// SeededPrompt is a deterministic prompt of the plan's workload,
// [batch × prompt tokens] token ids below the vocabulary.
func SeededPrompt(plan *partition.Plan) []uint32 {
	w := plan.Config.Workload
	out := make([]uint32, w.Batch*w.PromptTokens())
	for i := range out {
		out[i] = uint32((i*7919 + 13) % plan.Model.Vocab)
	}
	return out
}

func tokensTensor(batch int, ids []uint32) wire.Tensor {
	d := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(d[4*i:], id)
	}
	return wire.Tensor{Name: partition.RemoteTokensIn, ElemBytes: partition.TokenIDBytes, Shape: []int64{int64(batch), int64(len(ids) / batch)}, Data: d}
}

func tokensOf(ts []wire.Tensor) ([]uint32, error) {
	for _, t := range ts {
		if t.Name == partition.RemoteTokensOut {
			out := make([]uint32, len(t.Data)/4)
			for i := range out {
				out[i] = binary.LittleEndian.Uint32(t.Data[4*i:])
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("reply has no %s tensor", partition.RemoteTokensOut)
}

// Generate runs the plan's prefill and every decode step through a session,
// building each request from partition's RemotePayloadOf: weights (naive,
// from weights), the KV cache the previous reply returned (naive, kv), and
// the token ids. A kv session first uploads weights.
func Generate(ctx context.Context, s *Session, weights []wire.Tensor, prompt []uint32) (*Generation, error) {
	if s.Logits {
		return nil, fmt.Errorf("generate: the session returns logits; generation needs sampled tokens")
	}
	g := &Generation{}
	if r, _ := s.Mode.Row(); r.ShipsWeightsAtOpen() {
		r, err := s.Step(ctx, wire.PhaseLoad, 0, weights)
		if err != nil {
			return nil, fmt.Errorf("load weights: %w", err)
		}
		g.Open = r.Bytes
		g.Load = &Call{Phase: wire.PhaseLoad, Result: r}
	}
	byName := map[string]wire.Tensor{}
	for _, w := range weights {
		byName[w.Name] = w
	}
	plan := s.Plan
	batch := plan.Config.Workload.Batch
	ids := prompt
	reqs := []partition.RemoteRequest{{Phase: partition.Prefill}}
	for k := 0; k < plan.DecodeSteps(); k++ {
		reqs = append(reqs, partition.RemoteRequest{Phase: partition.Decode, Step: k})
	}
	for _, req := range reqs {
		pl, err := plan.RemotePayloadOf(s.Mode, req, partition.RemoteOptions{})
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		var in []wire.Tensor
		for _, want := range pl.Up {
			var t wire.Tensor
			if want.Name == partition.RemoteTokensIn {
				t = tokensTensor(batch, ids)
			} else {
				t = byName[want.Name]
			}
			if int64(len(t.Data)) != want.Bytes {
				return nil, fmt.Errorf("%s step %d: %s holds %d B, the payload needs %d B", req.Phase, req.Step, want.Name, len(t.Data), want.Bytes)
			}
			in = append(in, t)
		}
		ser := time.Since(t0)
		r, err := s.Step(ctx, req.Phase, req.Step, in)
		if err != nil {
			return nil, fmt.Errorf("%s step %d: %w", req.Phase, req.Step, err)
		}
		t1 := time.Now()
		for _, t := range r.Tensors {
			byName[t.Name] = t // the updated KV cache travels back next time
		}
		if ids, err = tokensOf(r.Tensors); err != nil {
			return nil, err
		}
		g.Tokens = append(g.Tokens, ids)
		g.Calls = append(g.Calls, Call{Phase: req.Phase, Step: req.Step, Result: r, Serialize: ser, Deserialize: time.Since(t1)})
	}
	return g, nil
}

// GenerateLocal runs the same generation in the client's own process
// (local mode): no transport, no bytes.
func GenerateLocal(ctx context.Context, eng wire.Engine, plan *partition.Plan, prompt []uint32) (*Generation, error) {
	es, err := eng.OpenSession(plan, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		return nil, err
	}
	defer es.Close()
	g := &Generation{}
	ids := prompt
	batch := plan.Config.Workload.Batch
	for k := -1; k < plan.DecodeSteps(); k++ {
		in := &wire.StepInput{Phase: partition.Decode, Step: k, Tensors: []wire.Tensor{tokensTensor(batch, ids)}}
		if k < 0 {
			in.Phase, in.Step = partition.Prefill, 0
		}
		t0, stop := time.Now(), wire.CPUBusy{}.Start()
		out, err := es.Step(ctx, in)
		if err != nil {
			return nil, err
		}
		wall, util := time.Since(t0), stop()
		if ids, err = tokensOf(out.Tensors); err != nil {
			return nil, err
		}
		g.Tokens = append(g.Tokens, ids)
		g.Calls = append(g.Calls, Call{Phase: in.Phase, Step: in.Step, Result: &StepResult{Execute: out.Execute, Import: out.Import, Serialize: out.Serialize, Wall: wall, Span: wall, Util: util}})
	}
	return g, nil
}
