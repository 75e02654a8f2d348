package remote

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// PhasePause runs a stateful session's prefill up to and including layer
// Step (1-based) and keeps the hidden state x on the device; its request is
// the prefill's (the prompt's token ids), its reply carries nothing.
const PhasePause partition.Phase = "pause"

// PhaseResume adds the request's modification to the kept hidden state and
// runs the rest of the paused prefill; its reply is the prefill's.
const PhaseResume partition.Phase = "resume"

// ResumeDelta names a resume request's modification: float32 [hidden],
// added to every row of the paused hidden state. A resume without it
// continues unmodified.
const ResumeDelta = "resume.delta"

// DeltaTensor is the request tensor of a modification (nil: none).
func DeltaTensor(delta []float32) []Tensor {
	if len(delta) == 0 {
		return nil
	}
	d := make([]byte, 4*len(delta))
	for i, v := range delta {
		binary.LittleEndian.PutUint32(d[4*i:], math.Float32bits(v))
	}
	return []Tensor{{Name: ResumeDelta, ElemBytes: 4, Shape: []int64{int64(len(delta))}, Data: d}}
}

func float32s(d []byte) []float32 {
	out := make([]float32, len(d)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
	}
	return out
}

// Pause asks a stateful session to run its prefill over prompt (token ids,
// [sequence][position]) up to and including layer (1-based) and keep the
// hidden state.
func (s *Session) Pause(ctx context.Context, layer int, prompt []int32) (*StepResult, error) {
	d := make([]byte, 4*len(prompt))
	for i, id := range prompt {
		binary.LittleEndian.PutUint32(d[4*i:], uint32(id))
	}
	w := s.Plan.Config.Workload
	t := Tensor{Name: partition.RemoteTokensIn, ElemBytes: partition.TokenIDBytes, Shape: []int64{int64(w.Batch), int64(w.PromptTokens())}, Data: d}
	return s.Step(ctx, PhasePause, layer, []Tensor{t})
}

// Resume asks the session to continue its prefill paused at layer with
// delta added to every row of the hidden state (nil: unmodified). The
// request's payload is exactly the delta's bytes.
func (s *Session) Resume(ctx context.Context, layer int, delta []float32) (*StepResult, error) {
	return s.Step(ctx, PhaseResume, layer, DeltaTensor(delta))
}

// pauseResume serves PhasePause and PhaseResume for a stateful session.
func (s *execSession) pauseResume(ctx context.Context, in *StepInput) (*StepOutput, error) {
	if s.row.KV != partition.KVOnServer {
		return nil, fmt.Errorf("%s: only stateful sessions keep a paused state (this session is %s)", in.Phase, s.mode)
	}
	t0 := time.Now()
	if in.Phase == PhasePause {
		split, err := s.plan.SplitPrefill(in.Step)
		if err != nil {
			return nil, err
		}
		pl, err := s.plan.RemotePayloadOf(s.mode, partition.RemoteRequest{Phase: partition.Prefill}, s.opts)
		if err != nil {
			return nil, err
		}
		want := pl.Up[len(pl.Up)-1]
		if len(in.Tensors) != 1 || in.Tensors[0].Name != want.Name || int64(len(in.Tensors[0].Data)) != want.Bytes {
			return nil, fmt.Errorf("pause at layer %d: the request must carry exactly the prompt %q of %d B", in.Step, want.Name, want.Bytes)
		}
		if err := s.io.SetPrompt(int32s(in.Tensors[0].Data)); err != nil {
			return nil, err
		}
		s.paused = nil
		t1 := time.Now()
		if err := s.run(ctx, split.Head); err != nil {
			return nil, err
		}
		s.paused = split
		return &StepOutput{Import: t1.Sub(t0), Execute: time.Since(t1)}, nil
	}
	split := s.paused
	if split == nil || split.Layer != in.Step {
		held := "no paused prefill"
		if split != nil {
			held = fmt.Sprintf("a prefill paused at layer %d", split.Layer)
		}
		return nil, fmt.Errorf("resume at layer %d: the session holds %s", in.Step, held)
	}
	var delta []float32
	switch {
	case len(in.Tensors) == 0:
	case len(in.Tensors) == 1 && in.Tensors[0].Name == ResumeDelta && in.Tensors[0].ElemBytes == 4 && len(in.Tensors[0].Data) == 4*split.Hidden:
		delta = float32s(in.Tensors[0].Data)
	default:
		return nil, fmt.Errorf("resume at layer %d: the request carries nothing or one float32 tensor %q of %d B (hidden %d)", in.Step, ResumeDelta, 4*split.Hidden, split.Hidden)
	}
	if err := pexec.AddRowsX(s.c, split.ActivationElems, delta); err != nil {
		return nil, fmt.Errorf("%s engine: %w", s.e.Backend, err)
	}
	s.paused = nil // a resumed pass is consumed: a second resume must pause again
	t1 := time.Now()
	if err := s.run(ctx, split.Tail); err != nil {
		return nil, err
	}
	t2 := time.Now()
	s.next = s.plan.Config.Workload.PromptTokens()
	out := &StepOutput{Import: t1.Sub(t0), Execute: t2.Sub(t1)}
	pl, err := s.plan.RemotePayloadOf(s.mode, partition.RemoteRequest{Phase: partition.Prefill}, s.opts)
	if err != nil {
		return nil, err
	}
	// A stateful session's reply carries no KV cache (it stays on the device).
	if out.Tensors, err = s.reply(pl.Down, s.next); err != nil {
		return nil, err
	}
	out.Serialize = time.Since(t2)
	return out, nil
}

// run executes ops of the session's prefill Program and waits for them.
func (s *execSession) run(ctx context.Context, ops []partition.Op) error {
	prog := partition.Program{Rank: 0, Phase: partition.Prefill, Ops: ops}
	if err := pexec.RunProgram(ctx, prog, s.c, nil, nil, pexec.Past(s.plan, partition.Prefill, 0)); err != nil {
		return err
	}
	return s.c.Sync(ctx)
}
