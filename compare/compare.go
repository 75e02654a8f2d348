package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/stats"
	"github.com/partbench/partbench/topology"
)

// Row is one metric measured and modeled.
type Row struct {
	// Metric is a snake_case key scripts match on (ttft, tpot, tps, …);
	// Label says it in words for tables.
	Metric   string        `json:"metric"`
	Label    string        `json:"label"`
	Unit     string        `json:"unit"`
	Measured stats.Summary `json:"measured"`
	Modeled  float64       `json:"modeled"`
	// RelErr is stats.ModelError: (modeled − measured mean) / measured mean
	// (+Inf when nothing was measured but something was modeled).
	RelErr float64 `json:"rel_err"`
	// Exact rows (counts) must agree exactly; any difference is a bug.
	Exact bool `json:"exact"`
	// Flag is set when an exact row differs or a timed row is outside the tolerance.
	Flag string `json:"flag,omitempty"`
}

func row(metric, label, unit string, measured stats.Summary, modeled, tol float64, exact bool) Row {
	r := Row{Metric: metric, Label: label, Unit: unit, Measured: measured, Modeled: modeled, Exact: exact}
	var ok bool
	if r.RelErr, ok = stats.ModelError(modeled, measured.Mean); !ok {
		r.RelErr = math.Inf(1)
	}
	switch {
	case exact && measured.Mean != modeled:
		r.Flag = "MISMATCH: counts must agree exactly"
	case !exact && math.Abs(r.RelErr) > tol:
		r.Flag = fmt.Sprintf("outside ±%.0f %%", 100*tol)
	}
	return r
}

// value is an exact figure (a count) as a one-sample Summary.
func value(v float64) stats.Summary { return stats.Summarize([]float64{v}, stats.Linear) }

// Compare holds a measurement against the estimate of the same plan.
// tol is the relative tolerance of timed rows. The returned problems list
// every count that differs from the Program's (a bug, never noise).
func Compare(m *exec.Measurement, e *sim.Estimate, plan *partition.Plan, tol float64) (rows []Row, problems []string) {
	iters, steps := float64(m.Iterations), float64(m.DecodeSteps)
	rows = append(rows,
		row("ttft", "TTFT", "s", m.TTFT, e.Prefill.TTFTS, tol, false),
		row("tpot", "TPOT", "s", m.TPOT, e.Decode.TPOTS, tol, false),
		row("tps", "TPS", "tok/s", m.TPS, e.Decode.TokensPerS, tol, false))
	if m.TTFTReplica != nil {
		// One replica's modeled TTFT against each replica's own: the
		// model's error apart from the replicas' spread (TTFT is the later
		// replica's, priced from the profile's replica spread where it has
		// one).
		rows = append(rows, row("ttft_replica", "TTFT, one replica (each replica's own)", "s", *m.TTFTReplica, OneReplicaTTFT(e), tol, false))
	}

	// Counts: every rank's counted calls, bytes and messages against its Programs.
	var maxCalls, maxMsgs, collectives, sends float64
	linkBytes := map[topology.LinkClass]float64{}
	for _, r := range m.Ranks {
		for _, ph := range []struct {
			phase partition.Phase
			got   commcount.Snapshot
			times int
		}{{partition.Prefill, r.PrefillCounts, m.Iterations}, {partition.Decode, r.DecodeCounts, m.Iterations * m.DecodeSteps}} {
			want := plan.Counts(plan.Program(r.Rank, ph.phase)).Times(ph.times)
			for _, d := range commcount.Diff(want, ph.got) {
				problems = append(problems, fmt.Sprintf("rank %d %s: %s", r.Rank, ph.phase, d))
			}
		}
		d := r.DecodeCounts
		maxCalls = math.Max(maxCalls, float64(d.TotalCalls())/(iters*steps))
		maxMsgs = math.Max(maxMsgs, float64(d.Messages())/(iters*steps))
		collectives += float64(d.Calls[commcount.AllReduce] + d.Calls[commcount.AllGather])
		sends += float64(d.Calls[commcount.Send])
		for peer, pc := range d.Peers {
			linkBytes[plan.System.Topology.Path(r.Rank, peer).Class] += float64(pc.WireBytes) / (iters * steps)
		}
	}
	per := float64(plan.TP*plan.DP*plan.Microbatches) * iters * steps // every replica passes its micro-batches
	rows = append(rows,
		row("collective_calls_per_microbatch", "collective calls per micro-batch (logical)", "calls", value(collectives/per), float64(e.Comm.CollectiveCallsPerMicrobatch), tol, true),
		row("sends_per_microbatch", "sends per micro-batch (logical, activations + tokens)", "sends", value(sends/per), float64(e.Comm.P2PSendsPerMicrobatch+e.Comm.TokenSendsPerMicrobatch), tol, true),
		row("max_nccl_calls_per_rank_per_decode_step", "NCCL calls per rank per decode step (max)", "calls", value(maxCalls), float64(e.Comm.MaxCallsPerRankPerStep), tol, true),
		row("max_p2p_messages_per_rank_per_decode_step", "p2p messages per rank per decode step (max)", "messages", value(maxMsgs), float64(e.Comm.MaxMessagesPerRankPerStep), tol, true))
	for _, c := range topology.LinkClasses {
		rows = append(rows, row("decode_step_bytes_"+string(c), "bytes per decode step over "+string(c), "B", value(linkBytes[c]), float64(e.Decode.Comm.BytesByLink[c]), tol, true))
	}
	var maxAlloc float64
	var maxModel int64
	for _, r := range m.Ranks {
		maxAlloc = math.Max(maxAlloc, float64(r.AllocatedBytes))
	}
	for _, r := range e.Ranks.Kinds { // a kind's ranks hold the same
		maxModel = max(maxModel, r.TotalBytes)
	}
	rows = append(rows, row("max_memory_per_gpu", "memory per GPU (largest rank)", "B", value(maxAlloc), float64(maxModel), tol, false))
	for _, r := range rows {
		if r.Exact && r.Flag != "" {
			problems = append(problems, fmt.Sprintf("%s: measured %g, modeled %g", r.Metric, r.Measured.Mean, r.Modeled))
		}
	}
	return rows, problems
}

// Problems joins count problems into one error, or nil.
func Problems(ps []string) error {
	if len(ps) == 0 {
		return nil
	}
	return fmt.Errorf("communication counts differ from the Program (a bug, not noise):\n  %s", strings.Join(ps, "\n  "))
}

// MeasuredOnly drops the modeled side of the rows (a run printed without
// its estimate).
func MeasuredOnly(rows []Row) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = Row{Metric: r.Metric, Label: r.Label, Unit: r.Unit, Measured: r.Measured, Exact: r.Exact}
	}
	return out
}

// Outside lists the metrics whose rows are flagged (outside the tolerance,
// or a count that differs): what strict mode refuses.
func Outside(rows []Row) []string {
	var out []string
	for _, r := range rows {
		if r.Flag != "" {
			out = append(out, r.Metric)
		}
	}
	return out
}

// OneReplicaTTFT is e's TTFT of one data-parallel replica: the TTFT where
// no replica spread was priced (one replica, or a profile without it).
func OneReplicaTTFT(e *sim.Estimate) float64 {
	if e.Prefill.ReplicaTTFTS > 0 {
		return e.Prefill.ReplicaTTFTS
	}
	return e.Prefill.TTFTS
}
