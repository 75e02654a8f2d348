package resume

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
)

// Perturb is a seeded modification: hidden values uniform in [−scale,
// scale), added to every row of the paused hidden state.
func Perturb(seed uint64, hidden int, scale float32) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x5eed0002))
	d := make([]float32, hidden)
	for i := range d {
		d[i] = scale * (2*r.Float32() - 1)
	}
	return d
}

// Output is what a (resumed) prefill produced: each sequence's sampled
// token and its logits.
type Output struct {
	Sampled []int     `json:"sampled"`
	Logits  []float32 `json:"-"`
}

// Equal reports whether two outputs are bit-identical.
func (o *Output) Equal(p *Output) bool {
	if !slices.Equal(o.Sampled, p.Sampled) || len(o.Logits) != len(p.Logits) {
		return false
	}
	for i := range o.Logits {
		if math.Float32bits(o.Logits[i]) != math.Float32bits(p.Logits[i]) {
			return false
		}
	}
	return true
}

// Outcome is one pause and resume.
type Outcome struct {
	Strategy string `json:"strategy"`
	Layer    int    `json:"layer"`
	// ResumeLatency: from the resume call to the resumed forward starting
	// layer N+1; TimeToOutput: from the resume call to the pass's output.
	ResumeLatency time.Duration `json:"resume_latency_ns"`
	TimeToOutput  time.Duration `json:"time_to_output_ns"`
	// Offload: bytes copied device → host at the pause and host → device at
	// the resume.
	ToHostBytes, ToDeviceBytes int64
	// Stateful: request and reply payload bytes of the resume.
	NetUpBytes, NetDownBytes int64
	// Recompute: layer ops executed again by the resume.
	ReplayedLayerOps int
	// Stateful: the server's restore (modification applied) and tail compute.
	Restore, Compute time.Duration
	Output           *Output
}

// Local runs the recompute and offload strategies, and the uninterrupted
// reference, on a Compute in this process.
type Local struct {
	plan *partition.Plan
	c    pexec.Compute
	io   pexec.StateIO
	// x is the paused hidden state: the backend's own (exec.HiddenState:
	// pinned memory and async copies on a GPU), else hostState.
	x pexec.HiddenState
}

// hostState is exec.HiddenState for a backend whose x is host memory
// (exec.HostX): the offload's host buffer is allocated once.
type hostState struct {
	c    pexec.Compute
	host []float32
}

func (h *hostState) OffloadX(elems int) (int64, error) {
	x, err := pexec.HostX(h.c, elems)
	if err != nil {
		return 0, err
	}
	if len(h.host) != len(x) {
		h.host = make([]float32, len(x))
	}
	return int64(4 * copy(h.host, x)), nil
}

func (h *hostState) RestoreX(elems int, delta []float32) (int64, error) {
	x, err := pexec.HostX(h.c, elems)
	if err != nil {
		return 0, err
	}
	if len(h.host) != len(x) {
		return 0, fmt.Errorf("resume: restore of %d values: the host copy holds %d", len(x), len(h.host))
	}
	if err := pexec.AddRows(h.host, delta); err != nil {
		return 0, err
	}
	return int64(4 * copy(x, h.host)), nil
}

func (h *hostState) AddRowsX(elems int, delta []float32) error {
	x, err := pexec.HostX(h.c, elems)
	if err != nil {
		return err
	}
	return pexec.AddRows(x, delta)
}

func (h *hostState) ClobberX(elems int) error {
	x, err := pexec.HostX(h.c, elems)
	if err != nil {
		return err
	}
	nan := float32(math.NaN())
	for i := range x {
		x[i] = nan
	}
	return nil
}

// NewLocal prepares c (rank 0 of a single-rank plan, implementing
// exec.StateIO) with the seeded prompt. The paused state goes through c's
// exec.HiddenState where it has one (the GPU backend), else through
// exec.HostX (the CPU backend).
func NewLocal(plan *partition.Plan, c pexec.Compute) (*Local, error) {
	if err := plan.CheckResumable(); err != nil {
		return nil, err
	}
	io, ok := c.(pexec.StateIO)
	if !ok {
		return nil, fmt.Errorf("resume: the backend's Compute (%T) does not implement exec.StateIO", c)
	}
	if !plan.Model.LMHead {
		return nil, fmt.Errorf("resume: model %s of config %s has no LM head (model.lm_head = false): a resumed pass is checked by its logits", plan.Model.Name, plan.Config.Name)
	}
	if err := io.SetPrompt(Prompt(plan)); err != nil {
		return nil, err
	}
	x, ok := c.(pexec.HiddenState)
	if !ok {
		x = &hostState{c: c}
	}
	return &Local{plan: plan, c: c, io: io, x: x}, nil
}

// Prompt is the seeded prompt the local and the remote runs share.
func Prompt(plan *partition.Plan) []int32 {
	p := remote.SeededPrompt(plan)
	out := make([]int32, len(p))
	for i, v := range p {
		out[i] = int32(v)
	}
	return out
}

// run executes ops and returns how many of them belong to a layer.
func (l *Local) run(ctx context.Context, ops []partition.Op) (int, error) {
	layerOps := 0
	prog := partition.Program{Rank: 0, Phase: partition.Prefill, Ops: ops}
	err := pexec.RunProgramObserved(ctx, prog, l.c, nil, nil, pexec.Past(l.plan, partition.Prefill, 0),
		func(op *partition.Op, _, _ time.Time) {
			if op.Layer >= 0 {
				layerOps++
			}
		})
	if err != nil {
		return layerOps, err
	}
	return layerOps, l.c.Sync(ctx)
}

// output is the pass's sampled tokens and its logits as [sequence][vocab]
// (columns of a padded vocabulary dropped), the layout Stateful reads.
func (l *Local) output() *Output {
	out, seqs, vocab := l.io.Output(0), l.plan.MicrobatchSize, l.plan.Model.Vocab
	o := &Output{Sampled: slices.Clone(l.io.Sampled(0))}
	if seqs == 0 || len(out)%seqs != 0 || len(out)/seqs < vocab {
		return o // no logits: Equal then fails against any real output
	}
	w := len(out) / seqs
	for s := 0; s < seqs; s++ {
		o.Logits = append(o.Logits, out[s*w:s*w+vocab]...)
	}
	return o
}

// clobber overwrites the device's x with NaN: while a pass is paused the
// device's memory serves other work, so a resume must not find x intact.
func (l *Local) clobber(split *partition.ResumeSplit) error {
	return l.x.ClobberX(split.ActivationElems)
}

// Reference is the uninterrupted prefill with delta added to the hidden
// state after layer: what every resume must reproduce.
func (l *Local) Reference(ctx context.Context, layer int, delta []float32) (*Output, error) {
	split, err := l.plan.SplitPrefill(layer)
	if err != nil {
		return nil, err
	}
	if _, err := l.run(ctx, split.Head); err != nil {
		return nil, err
	}
	if err := l.x.AddRowsX(split.ActivationElems, delta); err != nil {
		return nil, err
	}
	if _, err := l.run(ctx, split.Tail); err != nil {
		return nil, err
	}
	return l.output(), nil
}

// PauseResume pauses after layer, lets the device's x be overwritten, and
// resumes by strategy (recompute or offload) with delta.
func (l *Local) PauseResume(ctx context.Context, strategy string, layer int, delta []float32) (*Outcome, error) {
	split, err := l.plan.SplitPrefill(layer)
	if err != nil {
		return nil, err
	}
	if len(delta) != 0 && len(delta) != split.Hidden {
		return nil, fmt.Errorf("resume: a modification of %d elements; the hidden state's rows are %d", len(delta), split.Hidden)
	}
	if _, err := l.run(ctx, split.Head); err != nil {
		return nil, err
	}
	elems := split.ActivationElems
	o := &Outcome{Strategy: strategy, Layer: layer}
	switch strategy {
	case partition.ResumeRecompute:
		if err := l.clobber(split); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if o.ReplayedLayerOps, err = l.run(ctx, split.Head); err != nil {
			return nil, err
		}
		if err := l.x.AddRowsX(elems, delta); err != nil {
			return nil, err
		}
		o.ResumeLatency = time.Since(t0)
		if _, err := l.run(ctx, split.Tail); err != nil {
			return nil, err
		}
		o.TimeToOutput = time.Since(t0)
	case partition.ResumeOffload:
		if o.ToHostBytes, err = l.x.OffloadX(elems); err != nil {
			return nil, err
		}
		if err := l.clobber(split); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if o.ToDeviceBytes, err = l.x.RestoreX(elems, delta); err != nil {
			return nil, err
		}
		o.ResumeLatency = time.Since(t0)
		if _, err := l.run(ctx, split.Tail); err != nil {
			return nil, err
		}
		o.TimeToOutput = time.Since(t0)
	default:
		return nil, fmt.Errorf("resume: strategy %q runs locally only if it is %s or %s", strategy, partition.ResumeRecompute, partition.ResumeOffload)
	}
	o.Output = l.output()
	return o, nil
}
