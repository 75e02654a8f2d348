package sim

import (
	"fmt"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// Gen5HostLink is the host ↔ GPU path of an H100 SXM: PCIe Gen5 x16 per
// direction (topology.PCIeBytesPerS), one PCIe latency (topology.PCIeLatencyS).
func Gen5HostLink() topology.Link {
	return topology.Link{Class: topology.PCIe, Name: "PCIe Gen5 x16 host link", BytesPerS: topology.PCIeBytesPerS(5, 16), LatencyS: topology.PCIeLatencyS}
}

// ResumeOptions price a pause at layer N and its resume (seed 002).
type ResumeOptions struct {
	// Layers are the pause points (1-based) to report.
	Layers []int
	// HostLink is the offload's path (default Gen5HostLink).
	HostLink topology.Link
	// Client is the stateful resume's client ↔ server link.
	Client topology.ClientLink
	// RequestOverheadS is one request's RPC framework cost (as RemoteOptions).
	RequestOverheadS float64
	// DeltaBytes is the modification a stateful resume sends (default one
	// row of the hidden state: hidden × dtype bytes).
	DeltaBytes int64
	// NoDelta prices a resume that changes nothing (DeltaBytes is then 0):
	// a stateful resume sends only its request.
	NoDelta bool
}

// ResumePoint is the modeled cost of resuming at one layer. ResumeS is the
// resume latency (the call to the resumed forward starting layer N+1);
// every strategy then runs the same tail, TailS, to the output.
type ResumePoint struct {
	Layer      int     `json:"layer"`
	RecomputeS float64 `json:"recompute_s"`
	OffloadS   float64 `json:"offload_s"`
	StatefulS  float64 `json:"stateful_s"`
	TailS      float64 `json:"tail_s"`
	// ComputeFloorS is the FLOPs of layers 1..N at the GPU's dense peak: no
	// recompute can be faster.
	ComputeFloorS float64 `json:"compute_floor_s"`
}

// ResumeEstimate is the modeled pause and resume of a plan's prefill.
type ResumeEstimate struct {
	Config          string              `json:"config"`
	Hardware        string              `json:"hardware"`
	Layers          int                 `json:"model_layers"`
	ActivationBytes int64               `json:"activation_bytes"`
	DeltaBytes      int64               `json:"delta_bytes"`
	HostLink        topology.Link       `json:"host_link"`
	Client          topology.ClientLink `json:"client_link"`
	// PCIeFloorS is the activation's bytes at the host link's peak: no
	// offload resume can be faster.
	PCIeFloorS float64 `json:"pcie_floor_s"`
	// Stateful's parts: the request's transfer and latency, the framework,
	// the restore (the modification added to x in HBM) and one launch.
	StatefulTransferS float64       `json:"stateful_transfer_s"`
	StatefulOverheadS float64       `json:"stateful_overhead_s"`
	RestoreS          float64       `json:"restore_s"`
	LaunchS           float64       `json:"launch_s"`
	PrefillS          float64       `json:"prefill_s"`
	Points            []ResumePoint `json:"points"`
	// Crossover is, per O(1) strategy, the first layer whose recompute takes
	// longer than that strategy's resume (0: recompute never does).
	Crossover map[string]int `json:"crossover_layer"`
}

// EstimateResume prices recompute (the prefill ops of layers 1..N on the
// timeline), offload (the activation over the host link plus its latency)
// and stateful (the modification over the client link, the framework, the
// restore and a launch) at every layer of the plan.
func EstimateResume(plan *partition.Plan, opts ResumeOptions, simOpts Options) (*ResumeEstimate, error) {
	if err := plan.CheckResumable(); err != nil {
		return nil, err
	}
	if opts.HostLink.BytesPerS == 0 {
		opts.HostLink = Gen5HostLink()
	}
	if err := opts.HostLink.Validate("resume host link"); err != nil {
		return nil, err
	}
	if err := opts.Client.Validate("resume client link " + opts.Client.Name); err != nil {
		return nil, err
	}
	if !(opts.RequestOverheadS >= 0) || opts.RequestOverheadS > 1 {
		return nil, fmt.Errorf("resume request overhead: must be in [0, 1] seconds (got %g)", opts.RequestOverheadS)
	}
	L := plan.Model.Layers
	if opts.NoDelta && opts.DeltaBytes != 0 {
		return nil, fmt.Errorf("resume: NoDelta with %d delta bytes: give one or the other", opts.DeltaBytes)
	}
	if opts.DeltaBytes == 0 && !opts.NoDelta {
		opts.DeltaBytes = int64(plan.Model.Hidden * plan.DTypeBytes)
	}
	if opts.DeltaBytes < 0 {
		return nil, fmt.Errorf("resume delta bytes: must not be negative (got %d)", opts.DeltaBytes)
	}
	for _, n := range opts.Layers {
		if n < 1 || n > L {
			return nil, fmt.Errorf("--resume-layers: layer %d: must be in [1, %d] (model %s has %d layers)", n, L, plan.Model.Name, L)
		}
	}
	e, err := EstimatePlan(plan, simOpts)
	if err != nil {
		return nil, err
	}
	// Modeled busy time and FLOPs of each prefill op of rank 0 by layer;
	// index 0 holds the ops before the layers (the input), L+1 those after.
	busy := make([]float64, L+2)
	flops := make([]float64, L+2)
	for _, sl := range e.Timeline.All() {
		if sl.Rank != 0 || sl.Phase != partition.Prefill {
			continue
		}
		i := sl.Op.Layer + 1
		if sl.Op.Layer < 0 && sl.Op.Kind != partition.Input && sl.Op.Kind != partition.Position {
			i = L + 1
		}
		busy[i] += sl.EndS - sl.StartS - sl.WaitS
		flops[i] += float64(sl.Op.FLOPs)
	}
	g := plan.System.GPU
	peak := g.PeakFLOPsPerS(plan.Model.DType)
	split, err := plan.SplitPrefill(1)
	if err != nil {
		return nil, err
	}
	act := split.ActivationBytes
	out := &ResumeEstimate{Config: plan.Config.Name, Hardware: g.Name, Layers: L, ActivationBytes: act, DeltaBytes: opts.DeltaBytes,
		HostLink: opts.HostLink, Client: opts.Client, PCIeFloorS: float64(act) / opts.HostLink.BytesPerS,
		StatefulTransferS: float64(opts.DeltaBytes)/opts.Client.BytesPerS + opts.Client.LatencyS,
		StatefulOverheadS: opts.RequestOverheadS,
		// Restore: read and write x once in HBM, one kernel.
		RestoreS: 2*float64(act)/(g.HBMBytesPerS*g.HBMEfficiency) + g.KernelLaunchS,
		LaunchS:  g.KernelLaunchS, PrefillS: e.Prefill.TTFTS, Crossover: map[string]int{}}
	offload := out.PCIeFloorS + opts.HostLink.LatencyS
	stateful := out.StatefulTransferS + out.StatefulOverheadS + out.RestoreS + out.LaunchS
	var total float64
	for _, b := range busy {
		total += b
	}
	head, headFLOPs := busy[0], flops[0]
	want := map[int]bool{}
	for _, n := range opts.Layers {
		want[n] = true
	}
	for n := 1; n <= L; n++ {
		head += busy[n]
		headFLOPs += flops[n]
		p := ResumePoint{Layer: n, RecomputeS: head, OffloadS: offload, StatefulS: stateful, TailS: total - head, ComputeFloorS: headFLOPs / peak}
		for st, v := range map[string]float64{partition.ResumeOffload: offload, partition.ResumeStateful: stateful} {
			if out.Crossover[st] == 0 && p.RecomputeS > v {
				out.Crossover[st] = n
			}
		}
		if want[n] {
			out.Points = append(out.Points, p)
		}
	}
	for _, st := range []string{partition.ResumeOffload, partition.ResumeStateful} {
		if _, ok := out.Crossover[st]; !ok {
			out.Crossover[st] = 0
		}
	}
	return out, checkFinite(out)
}
