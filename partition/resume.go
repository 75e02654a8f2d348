package partition

import (
	"fmt"

	"github.com/partbench/partbench/model"
)

// Resume strategies (seed 002): how a prefill pass paused after layer N
// continues from layer N+1.
const (
	// ResumeRecompute discards the paused state and runs layers 1..N again
	// from the input before continuing.
	ResumeRecompute = "recompute"
	// ResumeOffload copies the hidden state to host memory at the pause and
	// back to the device at the resume.
	ResumeOffload = "offload"
	// ResumeStateful keeps the hidden state on the server's device; the
	// resume is one request carrying the modification.
	ResumeStateful = "stateful"
)

// ResumeStrategies lists the strategies in report order.
var ResumeStrategies = []string{ResumeRecompute, ResumeOffload, ResumeStateful}

// ResumeSplit is a prefill Program cut after layer N (1-based): Head runs the
// input and layers 1..N, Tail layers N+1.. and the output. The hidden state
// between them is x, ActivationElems elements of the plan's dtype.
type ResumeSplit struct {
	Layer           int  `json:"layer"`
	Head            []Op `json:"-"`
	Tail            []Op `json:"-"`
	HeadLayerOps    int  `json:"head_layer_ops"` // ops of layers 1..N (the recompute's repeated work besides the input)
	Rows            int  `json:"rows"`           // token rows of x (batch × prompt)
	Hidden          int  `json:"hidden"`
	ActivationElems int  `json:"activation_elems"`
	// ActivationBytes is what an offload moves each way: rows × hidden × dtype.
	ActivationBytes int64 `json:"activation_bytes"`
}

// CheckResumable says why the plan's prefill cannot be paused between
// layers: a pause point is a layer boundary of one pass, so the plan must be
// one rank (no communication inside the pass), one micro-batch and one
// prefill chunk.
func (p *Plan) CheckResumable() error {
	switch {
	case p.Size() != 1:
		return fmt.Errorf("resume: config %s has %d ranks (tp %d × pp %d): a pause at a layer needs a single-rank plan (tp = pp = 1)", p.Config.Name, p.Size(), p.TP, p.PP)
	case p.Microbatches != 1:
		return fmt.Errorf("resume: config %s has %d micro-batches: a pause needs parallel.microbatches = 1", p.Config.Name, p.Microbatches)
	case p.PrefillChunks != 1:
		return fmt.Errorf("resume: config %s splits the prompt into %d prefill chunks: a pause needs one prefill pass (raise the memory or shorten the prompt)", p.Config.Name, p.PrefillChunks)
	}
	return nil
}

// SplitPrefill cuts the single-rank prefill Program after layer n, 1 ≤ n ≤
// layers.
func (p *Plan) SplitPrefill(n int) (*ResumeSplit, error) {
	if err := p.CheckResumable(); err != nil {
		return nil, err
	}
	L := p.Model.Layers
	if n < 1 || n > L {
		return nil, fmt.Errorf("resume: layer %d: must be in [1, %d] (model %s has %d layers; the pause is after layer n)", n, L, p.Model.Name, L)
	}
	prog := p.Program(0, Prefill)
	cut, headLayer := -1, 0
	for i, op := range prog.Ops {
		if op.Layer >= 0 && op.Layer < n {
			cut = i + 1
			headLayer++
		}
	}
	if cut < 0 {
		return nil, fmt.Errorf("resume: the prefill Program of %s has no op of layer %d", p.Config.Name, n)
	}
	for _, op := range prog.Ops[:cut] {
		if op.Layer >= n {
			return nil, fmt.Errorf("resume: op %s of layer %d comes before the end of layer %d", op.Name, op.Layer+1, n)
		}
	}
	for _, op := range prog.Ops[cut:] {
		if op.Layer >= 0 && op.Layer < n {
			return nil, fmt.Errorf("resume: op %s of layer %d comes after the end of layer %d", op.Name, op.Layer+1, n)
		}
	}
	rows := p.MicrobatchSize * p.Config.Workload.PromptTokens()
	H := p.Model.Hidden
	return &ResumeSplit{Layer: n, Head: prog.Ops[:cut], Tail: prog.Ops[cut:], HeadLayerOps: headLayer,
		Rows: rows, Hidden: H, ActivationElems: rows * H, ActivationBytes: int64(rows*H) * int64(p.DTypeBytes)}, nil
}

// ResumeX is the buffer a pause hands over: the residual stream.
const ResumeX = model.X
