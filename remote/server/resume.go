package server

import (
	"context"
	"fmt"
	"time"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/wire"
)

// pauseResume serves wire.PhasePause and wire.PhaseResume for a stateful session.
func (s *execSession) pauseResume(ctx context.Context, in *wire.StepInput) (*wire.StepOutput, error) {
	if s.row.KV != partition.KVOnServer {
		return nil, fmt.Errorf("%s: only stateful sessions keep a paused state (this session is %s)", in.Phase, s.mode)
	}
	t0 := time.Now()
	if in.Phase == wire.PhasePause {
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
		return &wire.StepOutput{Import: t1.Sub(t0), Execute: time.Since(t1)}, nil
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
	case len(in.Tensors) == 1 && in.Tensors[0].Name == wire.ResumeDelta && in.Tensors[0].ElemBytes == 4 && len(in.Tensors[0].Data) == 4*split.Hidden:
		delta = wire.Float32s(in.Tensors[0].Data)
	default:
		return nil, fmt.Errorf("resume at layer %d: the request carries nothing or one float32 tensor %q of %d B (hidden %d)", in.Step, wire.ResumeDelta, 4*split.Hidden, split.Hidden)
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
	out := &wire.StepOutput{Import: t1.Sub(t0), Execute: t2.Sub(t1)}
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
