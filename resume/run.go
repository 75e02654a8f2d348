package resume

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/stats"
)

// Options say what Run measures.
type Options struct {
	Layers     []int
	Strategies []string
	// Trials are measured after Warmup unmeasured ones, per strategy and layer.
	Trials, Warmup int
	// Delta is the modification every resume applies (nil: none).
	Delta []float32
	// Local runs recompute and offload and the reference every output is
	// checked against; Session (stateful, with logits) runs stateful.
	Local   *Local
	Session *remote.Session
	// Addr is the server's host:port, for the raw-TCP round trip.
	Addr string
	// Backend names the Local's backend in the result ("": cpu).
	Backend string
}

// Row is one strategy at one pause layer.
type Row struct {
	Strategy      string        `json:"strategy"`
	Layer         int           `json:"layer"`
	ResumeLatency stats.Summary `json:"resume_latency"`
	TimeToOutput  stats.Summary `json:"time_to_output"`
	// Per resume (identical every trial).
	ToHostBytes      int64 `json:"to_host_bytes"`
	ToDeviceBytes    int64 `json:"to_device_bytes"`
	NetUpBytes       int64 `json:"net_up_bytes"`
	NetDownBytes     int64 `json:"net_down_bytes"`
	ReplayedLayerOps int   `json:"replayed_layer_ops"`
	// Stateful decomposition: the server's restore and compute, and the RPC
	// framework = call − raw-TCP round trip − restore − compute.
	Restore   *stats.Summary `json:"restore,omitempty"`
	Compute   *stats.Summary `json:"compute,omitempty"`
	Framework *stats.Summary `json:"framework,omitempty"`
	// Mismatches counts trials whose output differed from the uninterrupted
	// forward with the same modification (must be 0).
	Mismatches int `json:"mismatches"`
}

// Result is a whole measurement.
type Result struct {
	Config          string         `json:"config"`
	Backend         string         `json:"backend"`
	Layers          int            `json:"model_layers"`
	Rows            int            `json:"rows"`
	Hidden          int            `json:"hidden"`
	ActivationBytes int64          `json:"activation_bytes"`
	DeltaBytes      int64          `json:"delta_bytes"`
	Trials          int            `json:"trials"`
	Warmup          int            `json:"warmup"`
	RawTCPRTT       *stats.Summary `json:"raw_tcp_rtt,omitempty"`
	Results         []Row          `json:"results"`
	Notes           []string       `json:"notes,omitempty"`
}

// Mismatches is the number of trials whose output was wrong.
func (r *Result) Mismatches() int {
	n := 0
	for _, row := range r.Results {
		n += row.Mismatches
	}
	return n
}

// TCPRoundTrip times n TCP connects to addr: the kernel's SYN / SYN-ACK
// exchange, one network round trip without any framework on top.
func TCPRoundTrip(ctx context.Context, addr string, n int) (stats.Summary, error) {
	var xs []float64
	var d net.Dialer
	for i := 0; i < n; i++ {
		t0 := time.Now()
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return stats.Summary{}, fmt.Errorf("raw TCP round trip to %s: %w", addr, err)
		}
		xs = append(xs, time.Since(t0).Seconds())
		c.Close()
	}
	return stats.Summarize(xs, stats.Positive), nil
}

// Run measures every strategy at every layer.
func Run(ctx context.Context, plan *partition.Plan, o Options) (*Result, error) {
	if o.Local == nil {
		return nil, fmt.Errorf("resume: the local engine (the reference every output is checked against) is required")
	}
	if o.Trials < 1 || o.Warmup < 0 {
		return nil, fmt.Errorf("resume: trials %d must be ≥ 1 and warmup %d ≥ 0", o.Trials, o.Warmup)
	}
	first, err := plan.SplitPrefill(1)
	if err != nil {
		return nil, err
	}
	bk := o.Backend
	if bk == "" {
		bk = configs.BackendCPU
	}
	res := &Result{Config: plan.Config.Name, Backend: bk, Layers: plan.Model.Layers, Rows: first.Rows, Hidden: first.Hidden,
		ActivationBytes: first.ActivationBytes, DeltaBytes: int64(4 * len(o.Delta)), Trials: o.Trials, Warmup: o.Warmup}
	var rtt stats.Summary
	if slices.Contains(o.Strategies, partition.ResumeStateful) {
		if o.Session == nil {
			return nil, fmt.Errorf("resume: strategy stateful needs a server (--server HOST:PORT or --spawn-server)")
		}
		if rtt, err = TCPRoundTrip(ctx, o.Addr, max(20, 4*o.Trials)); err != nil {
			return nil, err
		}
		res.RawTCPRTT = &rtt
	}
	for _, st := range o.Strategies {
		if !slices.Contains(partition.ResumeStrategies, st) {
			return nil, fmt.Errorf("resume: strategy %q: must be one of recompute, offload, stateful", st)
		}
	}
	for _, layer := range o.Layers {
		want, err := o.Local.Reference(ctx, layer, o.Delta)
		if err != nil {
			return nil, err
		}
		for _, st := range o.Strategies {
			row := Row{Strategy: st, Layer: layer}
			var lat, tto, rest, comp, fw []float64
			for trial := -o.Warmup; trial < o.Trials; trial++ {
				var out *Outcome
				if st == partition.ResumeStateful {
					out, err = Stateful(ctx, o.Session, layer, o.Delta)
				} else {
					out, err = o.Local.PauseResume(ctx, st, layer, o.Delta)
				}
				if err != nil {
					return nil, fmt.Errorf("%s at layer %d, trial %d: %w", st, layer, trial, err)
				}
				if !out.Output.Equal(want) {
					row.Mismatches++
				}
				if trial < 0 {
					continue
				}
				row.ToHostBytes, row.ToDeviceBytes = out.ToHostBytes, out.ToDeviceBytes
				row.NetUpBytes, row.NetDownBytes, row.ReplayedLayerOps = out.NetUpBytes, out.NetDownBytes, out.ReplayedLayerOps
				lat = append(lat, out.ResumeLatency.Seconds())
				tto = append(tto, out.TimeToOutput.Seconds())
				if st == partition.ResumeStateful {
					rest = append(rest, out.Restore.Seconds())
					comp = append(comp, out.Compute.Seconds())
					fw = append(fw, (out.TimeToOutput-out.Restore-out.Compute).Seconds()-rtt.Mean)
				}
			}
			row.ResumeLatency, row.TimeToOutput = stats.Summarize(lat, stats.Positive), stats.Summarize(tto, stats.Positive)
			if st == partition.ResumeStateful {
				// The framework's share is a difference: it can be negative.
				r, c, f := stats.Summarize(rest, stats.Positive), stats.Summarize(comp, stats.Positive), stats.Summarize(fw, stats.Linear)
				row.Restore, row.Compute, row.Framework = &r, &c, &f
			}
			res.Results = append(res.Results, row)
		}
	}
	res.Notes = append(res.Notes,
		"CPU backend: the offload's host buffer is ordinary host memory and its copies are memcpy; on a GPU it would be cuMemHostAlloc pinned memory and cuMemcpy over PCIe (not built)",
		"while paused, the device's x is overwritten (NaN), as when its memory serves other work; the KV cache of layers 1..N stays on the device for every strategy",
		"stateful resume latency = the call − the server's tail compute, reply encoding and sending")
	return res, nil
}
