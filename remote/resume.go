package remote

import (
	"context"
	"encoding/binary"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/wire"
)

// Pause asks a stateful session to run its prefill over prompt (token ids,
// [sequence][position]) up to and including layer (1-based) and keep the
// hidden state.
func (s *Session) Pause(ctx context.Context, layer int, prompt []int32) (*StepResult, error) {
	d := make([]byte, 4*len(prompt))
	for i, id := range prompt {
		binary.LittleEndian.PutUint32(d[4*i:], uint32(id))
	}
	w := s.Plan.Config.Workload
	t := wire.Tensor{Name: partition.RemoteTokensIn, ElemBytes: partition.TokenIDBytes, Shape: []int64{int64(w.Batch), int64(w.PromptTokens())}, Data: d}
	return s.Step(ctx, wire.PhasePause, layer, []wire.Tensor{t})
}

// Resume asks the session to continue its prefill paused at layer with
// delta added to every row of the hidden state (nil: unmodified). The
// request's payload is exactly the delta's bytes.
func (s *Session) Resume(ctx context.Context, layer int, delta []float32) (*StepResult, error) {
	return s.Step(ctx, wire.PhaseResume, layer, wire.DeltaTensor(delta))
}
