package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/wire"
)

// ExecEngine runs the plan's Program on an exec backend: the real engine
// behind `partbench serve`. Every session holds one single-rank Compute;
// stateful sessions keep its seeded weights and KV cache between requests,
// kv sessions take the weights once (wire.PhaseLoad) and the KV cache with every
// request, naive sessions take both with every request and keep nothing a
// later request reads.
type ExecEngine struct {
	// Backend names the device in errors ("cpu", "cuda").
	Backend string
	// New makes rank 0's Compute of a single-rank plan; it must implement
	// exec.StateIO.
	New func(plan *partition.Plan) (pexec.Compute, error)
}

var _ wire.Engine = (*ExecEngine)(nil)

// NewCPUEngine is the engine over the CPU backend, reached through the
// backend registry like every other (BackendEngine("cpu"), which cannot
// fail: the CPU backend needs no library).
func NewCPUEngine() *ExecEngine {
	e, err := BackendEngine("cpu")
	if err != nil {
		panic("remote: the CPU backend is always registered: " + err.Error())
	}
	return e
}

// SessionBytes is the plan's memory for one session.
func (e *ExecEngine) SessionBytes(plan *partition.Plan, mode partition.RemoteMode) (int64, error) {
	return plan.RemoteSessionBytes(mode)
}

// OpenSession makes the session's Compute (its weights are the plan's seeded
// model; kv and naive sessions overwrite them from requests).
func (e *ExecEngine) OpenSession(plan *partition.Plan, mode partition.RemoteMode, opts partition.RemoteOptions) (wire.EngineSession, error) {
	if _, err := plan.RemoteWeights(); err != nil { // single rank
		return nil, err
	}
	if plan.DTypeBytes != 4 {
		return nil, fmt.Errorf("%s engine: config %s has dtype %s (%d B); the backend's state I/O is float32: set model.dtype = \"fp32\"",
			e.Backend, plan.Config.Name, plan.Model.DType, plan.DTypeBytes)
	}
	if !plan.Model.LMHead {
		return nil, fmt.Errorf("%s engine: model %s of config %s has no LM head (model.lm_head = false): a remote generation returns sampled tokens",
			e.Backend, plan.Model.Name, plan.Config.Name)
	}
	for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
		for _, op := range plan.Program(0, ph).Ops {
			switch op.Kind {
			case partition.AllReduce, partition.AllGather, partition.Send, partition.Recv:
				return nil, fmt.Errorf("%s engine: %s op %s communicates; a single-rank plan must not", e.Backend, ph, op.Name)
			}
		}
	}
	c, err := e.New(plan)
	if err != nil {
		return nil, fmt.Errorf("%s engine: %w", e.Backend, err)
	}
	io, ok := c.(pexec.StateIO)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("%s engine: the backend's Compute (%T) does not implement exec.StateIO (weights and KV cache import/export)", e.Backend, c)
	}
	row, _ := mode.Row()
	s := &execSession{e: e, plan: plan, mode: mode, row: row, opts: opts, c: c, io: io, next: -1}
	s.loaded = !row.ShipsWeightsAtOpen() // naive imports weights with every request
	return s, nil
}

type execSession struct {
	e      *ExecEngine
	plan   *partition.Plan
	mode   partition.RemoteMode
	row    partition.RemoteModeRow
	opts   partition.RemoteOptions
	c      pexec.Compute
	io     pexec.StateIO
	loaded bool
	closed atomic.Bool
	next   int                    // stateful: the position the next request must start at (−1: a prefill)
	paused *partition.ResumeSplit // stateful: the prefill paused by wire.PhasePause (resume.go)
}

// Close frees the session's Compute; a later Step is refused.
func (s *execSession) Close() {
	if s.closed.CompareAndSwap(false, true) {
		s.c.Close()
	}
}

var _ wire.RequestChecker = (*execSession)(nil)

// CheckRequest compares a request's declared tensors with the payload its
// phase must carry (partition.RemotePayloadOf; every weight for a load)
// before any of its data is received. Pause and resume are checked by
// pauseResume once their few bytes have arrived.
func (s *execSession) CheckRequest(in *wire.StepInput, declared []*pb.TensorInfo) error {
	if s.closed.Load() {
		return errSessionClosed
	}
	var want []partition.RemoteTensor
	switch in.Phase {
	case wire.PhasePause, wire.PhaseResume:
		return nil
	case wire.PhaseLoad:
		if !s.row.ShipsWeightsAtOpen() {
			return fmt.Errorf("load: only kv sessions load weights (this session is %s)", s.mode)
		}
		ws, err := s.plan.RemoteWeights()
		if err != nil {
			return err
		}
		byName := map[string]partition.RemoteTensor{}
		for _, w := range ws {
			byName[w.Name] = w
		}
		if len(declared) != len(ws) {
			return fmt.Errorf("load: %d tensors declared, the model has %d weights", len(declared), len(ws))
		}
		for _, d := range declared {
			w, ok := byName[d.Name]
			if !ok || d.Bytes != w.Bytes || int(d.ElemBytes) != w.ElemBytes {
				return fmt.Errorf("load: tensor %q of %d B (%d B elements) is no weight of the model (want %d B of %d B elements)", d.Name, d.Bytes, d.ElemBytes, w.Bytes, w.ElemBytes)
			}
		}
		return nil
	default:
		pl, err := s.plan.RemotePayloadOf(s.mode, partition.RemoteRequest{Phase: in.Phase, Step: in.Step}, s.opts)
		if err != nil {
			return err
		}
		want = pl.Up
	}
	if len(declared) != len(want) {
		return fmt.Errorf("%s step %d of a %s session: %d tensors declared, the payload is %d", in.Phase, in.Step, s.mode, len(declared), len(want))
	}
	for i, w := range want {
		d := declared[i]
		if d.Name != w.Name || d.Bytes != w.Bytes || int(d.ElemBytes) != w.ElemBytes {
			return fmt.Errorf("%s step %d: tensor %d is declared %q (%d B of %d B elements), the payload's is %q (%d B of %d B elements)",
				in.Phase, in.Step, i, d.Name, d.Bytes, d.ElemBytes, w.Name, w.Bytes, w.ElemBytes)
		}
	}
	return nil
}

// errSessionClosed is a step on a closed session.
var errSessionClosed = errors.New("session closed: it was ended (by its client, the idle timeout or the server's shutdown) before this request ran")

// importWeights installs every weight of the plan from ts (by name).
func (s *execSession) importWeights(ts map[string]wire.Tensor) error {
	ws, err := s.plan.RemoteWeights()
	if err != nil {
		return err
	}
	for _, w := range ws {
		t, ok := ts[w.Name]
		if !ok {
			return fmt.Errorf("request carries no weight %q", w.Name)
		}
		layer, name := wire.WeightKey(w)
		if err := s.io.ImportWeight(layer, name, t.Data); err != nil {
			return err
		}
		if layer < 0 && name == model.Embed && s.plan.RemoteTiedHead() {
			// A tied LM head is the shipped embedding transposed.
			head := transposeBytes(t.Data, int(w.Shape[0]), int(w.Shape[1]), w.ElemBytes)
			if err := s.io.ImportWeight(-1, model.LMHead, head); err != nil {
				return fmt.Errorf("tied LM head: %w", err)
			}
		}
	}
	return nil
}

// transposeBytes is the row-major [rows][cols] matrix of elem-byte
// elements in src as [cols][rows].
func transposeBytes(src []byte, rows, cols, elem int) []byte {
	out := make([]byte, len(src))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			copy(out[(c*rows+r)*elem:(c*rows+r+1)*elem], src[(r*cols+c)*elem:])
		}
	}
	return out
}

func int32s(d []byte) []int32 {
	out := make([]int32, len(d)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(d[4*i:]))
	}
	return out
}

// Step checks the request against partition.RemotePayloadOf, installs its
// state, runs the phase's Program and returns the payload's reply tensors.
func (s *execSession) Step(ctx context.Context, in *wire.StepInput) (*wire.StepOutput, error) {
	if s.closed.Load() {
		return nil, errSessionClosed
	}
	if in.Phase == wire.PhasePause || in.Phase == wire.PhaseResume {
		return s.pauseResume(ctx, in)
	}
	s.paused = nil // any other step overwrites the device's buffers
	t0 := time.Now()
	byName := map[string]wire.Tensor{}
	for _, t := range in.Tensors {
		byName[t.Name] = t
	}
	if in.Phase == wire.PhaseLoad {
		if !s.row.ShipsWeightsAtOpen() {
			return nil, fmt.Errorf("load: only kv sessions load weights (this session is %s)", s.mode)
		}
		if err := s.importWeights(byName); err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		s.loaded = true
		return &wire.StepOutput{Import: time.Since(t0)}, nil
	}
	req := partition.RemoteRequest{Phase: in.Phase, Step: in.Step}
	pl, err := s.plan.RemotePayloadOf(s.mode, req, s.opts)
	if err != nil {
		return nil, err
	}
	if len(pl.Up) != len(in.Tensors) {
		return nil, fmt.Errorf("%s step %d of a %s session: %d tensors, the payload is %d", in.Phase, in.Step, s.mode, len(in.Tensors), len(pl.Up))
	}
	for i, want := range pl.Up {
		got := in.Tensors[i]
		if got.Name != want.Name || int64(len(got.Data)) != want.Bytes || got.ElemBytes != want.ElemBytes {
			return nil, fmt.Errorf("%s step %d: tensor %d is %q (%d B of %d B elements), the payload's is %q (%d B of %d B elements)",
				in.Phase, in.Step, i, got.Name, len(got.Data), got.ElemBytes, want.Name, want.Bytes, want.ElemBytes)
		}
	}
	if !s.loaded {
		return nil, fmt.Errorf("%s step %d: the kv session's weights were never loaded", in.Phase, in.Step)
	}
	w := s.plan.Config.Workload
	prompt := w.PromptTokens()
	past, q := 0, prompt
	if in.Phase == partition.Decode {
		past, q = prompt+in.Step, 1
	}
	if s.row.KeepsKV() {
		if in.Phase == partition.Decode && past != s.next {
			return nil, fmt.Errorf("%s step %d starts at position %d; the session's cache holds %d positions (run the prefill and every step in order)",
				in.Phase, in.Step, past, max(s.next, 0))
		}
	}
	if s.row.ShipsWeightsEachRequest() {
		if err := s.importWeights(byName); err != nil {
			return nil, err
		}
	}
	layers := kvLayers(pl.Down)
	if s.row.ShipsKV() {
		for _, l := range layers {
			var src []byte
			if past > 0 {
				src = byName[partition.RemoteKVName(l)].Data
			}
			if err := s.io.ImportKV(l, past, src); err != nil {
				return nil, err
			}
		}
	}
	ids := int32s(byName[partition.RemoteTokensIn].Data)
	mbs, per := s.plan.Microbatches, s.plan.MicrobatchSize
	if in.Phase == partition.Prefill {
		err = s.io.SetPrompt(ids)
	} else {
		for mb := 0; mb < mbs && err == nil; mb++ {
			err = s.io.WriteTokens(mb, ids[mb*per:(mb+1)*per])
		}
	}
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	prog := s.plan.Program(0, in.Phase)
	if err := pexec.RunProgram(ctx, prog, s.c, nil, nil, pexec.Past(s.plan, in.Phase, in.Step)); err != nil {
		return nil, err
	}
	if err := s.c.Sync(ctx); err != nil {
		return nil, err
	}
	t2 := time.Now()
	s.next = past + q
	out := &wire.StepOutput{Import: t1.Sub(t0), Execute: t2.Sub(t1)}
	if out.Tensors, err = s.reply(pl.Down, past+q); err != nil {
		return nil, err
	}
	out.Serialize = time.Since(t2)
	return out, nil
}

// reply reads the reply tensors down from the device: a layer's KV cache
// over positions [0, kvEnd), the sampled tokens or the logits.
func (s *execSession) reply(down []partition.RemoteTensor, kvEnd int) ([]wire.Tensor, error) {
	var out []wire.Tensor
	for _, want := range down {
		t := wire.Tensor{Name: want.Name, ElemBytes: want.ElemBytes, Shape: want.Shape, Data: make([]byte, want.Bytes)}
		var err error
		switch {
		case want.Layer >= 0:
			err = s.io.ExportKV(want.Layer, kvEnd, t.Data)
		case want.Name == partition.RemoteTokensOut:
			err = s.sampled(t.Data)
		case want.Name == partition.RemoteLogits:
			err = s.logits(t.Data, int(want.Shape[1]))
		default:
			err = fmt.Errorf("no reply tensor %q", want.Name)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func kvLayers(ts []partition.RemoteTensor) []int {
	var out []int
	for _, t := range ts {
		if t.Layer >= 0 {
			out = append(out, t.Layer)
		}
	}
	return out
}

// sampled writes every micro-batch's argmax tokens, int32 [batch].
func (s *execSession) sampled(dst []byte) error {
	i := 0
	for mb := 0; mb < s.plan.Microbatches; mb++ {
		ids := s.io.Sampled(mb)
		if len(ids) != s.plan.MicrobatchSize {
			return fmt.Errorf("micro-batch %d sampled %d tokens, want %d", mb, len(ids), s.plan.MicrobatchSize)
		}
		for _, id := range ids {
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(id))
			i++
		}
	}
	return nil
}

// logits writes each sequence's logits, float32 [batch][vocab padded]
// (columns past the vocabulary zero).
func (s *execSession) logits(dst []byte, padded int) error {
	seq := 0
	for mb := 0; mb < s.plan.Microbatches; mb++ {
		out := s.io.Output(mb)
		n := s.plan.MicrobatchSize
		if n == 0 || len(out)%n != 0 || len(out)/n > padded {
			return fmt.Errorf("micro-batch %d returned %d logits for %d sequences of %d columns", mb, len(out), n, padded)
		}
		v := len(out) / n
		for i := 0; i < n; i++ {
			for j := 0; j < v; j++ {
				binary.LittleEndian.PutUint32(dst[4*(seq*padded+j):], math.Float32bits(out[i*v+j]))
			}
			seq++
		}
	}
	return nil
}
