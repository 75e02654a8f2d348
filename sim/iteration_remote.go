package sim

import (
	"fmt"

	"github.com/partbench/partbench/partition"
)

// RemoteIterationModel prices a serving iteration run on a remote server
// driven by a client over a link, as PriceRemote prices one request: the
// iteration's compute (IterationModel) plus its payload over the link, one
// link latency each way and the request overhead. The batch of an
// iteration travels as one request. Payload per iteration, per mode:
//
//	naive:    every weight + the KV cache of Σ past tokens up, the KV cache
//	          of Σ (past + new) tokens down
//	kv:       the KV caches as naive, no weights (sent once at session open)
//	stateful: token ids up (Σ new), sampled tokens (or logits) down
//
// plus the token ids and outputs in every mode: the mode table's rule
// (partition.RemoteModeRow.IterationBytes) on partition's unit sizes
// (RemoteUnitBytes), not derived here.
type RemoteIterationModel struct {
	inner *IterationModel
	mode  partition.RemoteMode
	opts  RemoteOptions
	// unit is partition's payload sizes (weights, KV per token, token id,
	// output per sampled sequence).
	unit partition.RemoteUnitBytes
}

// NewRemoteIterationModel builds the model for a single-rank plan.
func NewRemoteIterationModel(plan *partition.Plan, mode partition.RemoteMode, opts RemoteOptions, simOpts Options) (*RemoteIterationModel, error) {
	if err := opts.Link.Validate("remote link " + opts.Link.Name); err != nil {
		return nil, err
	}
	if !(opts.RequestOverheadS >= 0) || opts.RequestOverheadS > 1 {
		return nil, fmt.Errorf("remote request overhead: must be in [0, 1] seconds (got %g)", opts.RequestOverheadS)
	}
	inner, err := NewIterationModel(plan, simOpts)
	if err != nil {
		return nil, err
	}
	m := &RemoteIterationModel{inner: inner, mode: mode, opts: opts}
	if !mode.Served() {
		return m, nil
	}
	if m.unit, err = plan.RemoteUnitBytes(partition.RemoteOptions{Logits: opts.Logits}); err != nil {
		return nil, err
	}
	return m, nil
}

// Bytes is one iteration's payload up (client → server) and down.
func (m *RemoteIterationModel) Bytes(sh IterationShape) (up, down int64) {
	row, _ := m.mode.Row()
	return row.IterationBytes(m.unit, sh.Past, int64(sh.Tokens), int64(sh.Samples))
}

// TimeS is the iteration's compute plus, off the local mode, its payload
// over the link, two link latencies and the request overhead.
func (m *RemoteIterationModel) TimeS(sh IterationShape) (float64, error) {
	t, err := m.inner.TimeS(sh)
	if err != nil || !m.mode.Served() {
		return t, err
	}
	up, down := m.Bytes(sh)
	return t + float64(up+down)/m.opts.Link.BytesPerS + 2*m.opts.Link.LatencyS + m.opts.RequestOverheadS, nil
}
