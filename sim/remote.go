package sim

import (
	"fmt"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// RemoteOptions price the remote modes over a client↔server link.
type RemoteOptions struct {
	Link topology.ClientLink
	// RequestOverheadS is the fixed cost of one request besides the link and
	// the compute: serialization, the RPC framework, the server's
	// scheduling (calibrate measures it as total − execute − bytes/bandwidth
	// on loopback).
	RequestOverheadS float64
	// Logits returns logits instead of sampled tokens.
	Logits bool
}

// RemoteCompute is the device time of the single-rank Program per request.
type RemoteCompute struct {
	PrefillS    float64 `json:"prefill_s"`
	DecodeStepS float64 `json:"decode_step_s"`
}

// RemoteCost is one request over the link. TotalS = TransferS + LinkLatencyS
// + OverheadS + ComputeS, where TransferS = (up + down bytes) / bandwidth and
// LinkLatencyS is one link latency per message (one message each way).
type RemoteCost struct {
	Phase        partition.Phase       `json:"phase"`
	Step         int                   `json:"step"`
	Bytes        partition.RemoteBytes `json:"bytes"`
	UpBytes      int64                 `json:"up_bytes"`
	DownBytes    int64                 `json:"down_bytes"`
	TransferS    float64               `json:"transfer_s"`
	LinkLatencyS float64               `json:"link_latency_s"`
	OverheadS    float64               `json:"overhead_s"`
	ComputeS     float64               `json:"compute_s"`
	TotalS       float64               `json:"total_s"`
}

// RemoteModeEstimate is one mode's prefill, representative decode step, the
// one-time session open (weights for kv mode) and the whole generation.
type RemoteModeEstimate struct {
	Mode      partition.RemoteMode `json:"mode"`
	OpenBytes int64                `json:"open_bytes"`
	OpenS     float64              `json:"open_s"`
	Prefill   RemoteCost           `json:"prefill"`
	Decode    *RemoteCost          `json:"decode,omitempty"` // nil when output_tokens = 1
	// Generation covers open + prefill + every decode step at its own position.
	GenerationBytes int64   `json:"generation_bytes"`
	GenerationS     float64 `json:"generation_s"`
}

// RemoteEstimate prices every mode over one link.
type RemoteEstimate struct {
	Link             topology.ClientLink  `json:"link"`
	RequestOverheadS float64              `json:"request_overhead_s"`
	Compute          RemoteCompute        `json:"compute"`
	DecodeStep       int                  `json:"decode_step"` // the representative step priced
	Modes            []RemoteModeEstimate `json:"modes"`
	// GapBytesRatio and GapLatencyRatio are naive / stateful per decode step
	// (seed 000's "semantic gap ratio"); 0 without a decode step.
	GapBytesRatio   float64 `json:"gap_bytes_ratio"`
	GapLatencyRatio float64 `json:"gap_latency_ratio"`
}

// EstimateRemote prices the remote modes with the compute time sim models
// for the plan's single-rank Program (TTFT for the prefill, TPOT for a
// decode step).
func EstimateRemote(plan *partition.Plan, opts RemoteOptions, simOpts Options) (*RemoteEstimate, error) {
	if plan.Size() != 1 {
		return nil, fmt.Errorf("remote modes need a single-rank plan: config %s has %d ranks", plan.Config.Name, plan.Size())
	}
	e, err := EstimatePlan(plan, simOpts)
	if err != nil {
		return nil, err
	}
	return PriceRemote(plan, RemoteCompute{PrefillS: e.Prefill.TTFTS, DecodeStepS: e.Decode.TPOTS}, opts)
}

// PriceRemote prices the remote modes given the compute times.
func PriceRemote(plan *partition.Plan, compute RemoteCompute, opts RemoteOptions) (*RemoteEstimate, error) {
	if err := opts.Link.Validate("remote link " + opts.Link.Name); err != nil {
		return nil, err
	}
	if !(opts.RequestOverheadS >= 0) || opts.RequestOverheadS > 1 {
		return nil, fmt.Errorf("remote request overhead: must be in [0, 1] seconds (got %g)", opts.RequestOverheadS)
	}
	steps := plan.DecodeSteps()
	// The representative step: the mean cache length, as the decode Program.
	rep := min(plan.Config.Workload.OutputTokens/2, steps-1)
	out := &RemoteEstimate{Link: opts.Link, RequestOverheadS: opts.RequestOverheadS, Compute: compute, DecodeStep: rep}
	popts := partition.RemoteOptions{Logits: opts.Logits}
	cost := func(mode partition.RemoteMode, req partition.RemoteRequest) (RemoteCost, error) {
		b, err := plan.RemoteBytesOf(mode, req, popts)
		if err != nil {
			return RemoteCost{}, err
		}
		c := RemoteCost{Phase: req.Phase, Step: req.Step, Bytes: b, UpBytes: b.Up(), DownBytes: b.Down(), ComputeS: compute.DecodeStepS}
		if req.Phase == partition.Prefill {
			c.ComputeS = compute.PrefillS
		}
		if mode.Served() {
			c.TransferS = float64(b.Total()) / opts.Link.BytesPerS
			c.LinkLatencyS = 2 * opts.Link.LatencyS
			c.OverheadS = opts.RequestOverheadS
		}
		c.TotalS = c.TransferS + c.LinkLatencyS + c.OverheadS + c.ComputeS
		return c, nil
	}
	for _, mode := range partition.RemoteModes {
		me := RemoteModeEstimate{Mode: mode}
		open, err := plan.RemoteOpenBytes(mode)
		if err != nil {
			return nil, err
		}
		if open > 0 {
			me.OpenBytes = open
			me.OpenS = float64(open)/opts.Link.BytesPerS + opts.Link.LatencyS + opts.RequestOverheadS
		}
		me.GenerationBytes, me.GenerationS = me.OpenBytes, me.OpenS
		if me.Prefill, err = cost(mode, partition.RemoteRequest{Phase: partition.Prefill}); err != nil {
			return nil, err
		}
		me.GenerationBytes += me.Prefill.Bytes.Total()
		me.GenerationS += me.Prefill.TotalS
		for s := 0; s < steps; s++ {
			c, err := cost(mode, partition.RemoteRequest{Phase: partition.Decode, Step: s})
			if err != nil {
				return nil, err
			}
			me.GenerationBytes += c.Bytes.Total()
			me.GenerationS += c.TotalS
			if s == rep {
				me.Decode = &c
			}
		}
		out.Modes = append(out.Modes, me)
	}
	naive, stateful := out.Mode(partition.RemoteNaive), out.Mode(partition.RemoteStateful)
	if naive.Decode != nil {
		out.GapBytesRatio = float64(naive.Decode.Bytes.Total()) / float64(stateful.Decode.Bytes.Total())
		out.GapLatencyRatio = naive.Decode.TotalS / stateful.Decode.TotalS
	}
	return out, checkFinite(out)
}

// Mode returns one mode's estimate.
func (e *RemoteEstimate) Mode(m partition.RemoteMode) *RemoteModeEstimate {
	for i := range e.Modes {
		if e.Modes[i].Mode == m {
			return &e.Modes[i]
		}
	}
	return nil
}
