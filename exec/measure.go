package exec

import (
	"fmt"
	"math"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/hoststat"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/stats"
)

// RankResult is what one rank measured; ranks send it to rank 0 at the end.
type RankResult struct {
	Rank    int    `json:"rank"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Backend string `json:"backend"`
	// Device and DataPlane describe the hardware and communication library
	// the rank used (GPU name, driver, NCCL version; CPU model).
	Device    string `json:"device,omitempty"`
	DataPlane string `json:"data_plane,omitempty"`
	// GC is the note of the rank's collector pace (RunOptions.PaceGC; ""
	// without).
	GC      string `json:"gc,omitempty"`
	Stage   int    `json:"stage"`
	TPIndex int    `json:"tp_index"`
	// Replica is the rank's data-parallel replica (0 without dp).
	Replica   int  `json:"replica"`
	LastStage bool `json:"last_stage"`
	// AllocatedBytes is what the compute backend holds (weights, KV, buffers).
	AllocatedBytes int64 `json:"allocated_bytes"`
	// Per measured iteration: the rank's prefill time, and the times (from the
	// iteration's start) at which it finished each decode step.
	PrefillS []float64   `json:"prefill_s"`
	StepEndS [][]float64 `json:"step_end_s"`
	// StartS is, per measured iteration, when this rank started it (left
	// the barrier) on rank 0's clock, in seconds from an epoch rank 0 chose
	// at start-up: PrefillS and StepEndS are from this start. Absent in
	// results from before it was recorded.
	StartS []float64 `json:"start_s,omitempty"`
	// StartLagS is, per measured iteration, how long after the
	// iteration's start (the earliest rank's, TimeBase.OneStart) this rank
	// started it; Aggregate fills it where TTFT is timed from one start.
	// A rank that receives in its prefill (a later pipeline stage) waited
	// that long for its message beyond what its recv timer saw: the op
	// check counts it in the prefill recv (compare.OpCheck), as the model
	// times every rank from one start.
	StartLagS []float64 `json:"start_lag_s,omitempty"`
	// Clock is how StartS was put on rank 0's clock.
	Clock *ClockSync `json:"clock,omitempty"`
	// PrefillMeanS is PrefillS's mean (Aggregate fills it).
	PrefillMeanS float64 `json:"prefill_mean_s,omitempty"`
	// BusyS is the time spent in ops of each kind over all measured iterations.
	BusyS map[string]float64 `json:"busy_s"`
	// PhaseBusyS is BusyS per phase and measured iteration: [phase][kind][i]
	// is the time in ops of the kind in iteration i's prefill, or in all its
	// decode steps — for the op check of a run (compare.OpCheck).
	PhaseBusyS map[string]map[string][]float64 `json:"phase_busy_s,omitempty"`
	// Counts of the communication layer over the measured iterations, by phase.
	PrefillCounts commcount.Snapshot `json:"prefill_counts"`
	DecodeCounts  commcount.Snapshot `json:"decode_counts"`
	// WallS is the measured window's length on this rank.
	WallS float64 `json:"wall_s"`
	// HostState is the rank's host over the measured window: its load and
	// how its CPU time went (nil where the host has no /proc).
	HostState *hoststat.Window `json:"host_state,omitempty"`
	// LinkProbes are the rank's groups' collectives timed back to back
	// after the measured iterations (RunOptions.LinkProbeCalls; none
	// without).
	LinkProbes []LinkProbe `json:"link_probes,omitempty"`
	// Spans are the ops of the last iteration (when a trace was asked for),
	// timed from that iteration's start on this rank.
	Spans []Span `json:"spans,omitempty"`
	// SpanClock says how spans were timed: "device" (a DeviceClock's marks
	// around each op on its queue) or empty (host time around each call).
	SpanClock string `json:"span_clock,omitempty"`
	// OpSpans are, where the Compute runs decode steps as device graphs
	// (GraphLauncher), whose marks cannot tell the ops apart, the traced
	// decode steps once more with every op on its own and a device mark
	// around each: one more iteration after the measured ones, graphs
	// suspended, not measured. Spans keep the measured iteration, where an
	// op that launched a graph holds the graph's time (Span.Graph).
	OpSpans []Span `json:"op_spans,omitempty"`
	// Async says the rank's Compute queues its ops on a device
	// (DeviceClock): its host timers around each call (BusyS, PhaseBusyS)
	// measure the enqueue, not the op.
	Async bool `json:"async,omitempty"`
	// CheckSpans are, on an asynchronous device in a run without a trace,
	// the op check's device times: one more iteration after the measured
	// ones, not measured, graphs suspended, a device mark around every op of
	// its prefill and first CheckDecodeSteps decode steps, read after the
	// iteration (no host wait inside a step).
	CheckSpans []Span `json:"check_spans,omitempty"`
	// AllocatedByKind itemizes AllocatedBytes (exec.Alloc* kinds) when the
	// backend says (exec.AllocationItemizer).
	AllocatedByKind map[string]int64 `json:"allocated_by_kind,omitempty"`
	// DeviceMemory is the device memory in use at the run's points, where
	// the backend reads it from the driver (exec.DeviceMemory).
	DeviceMemory *MemoryMeasure `json:"device_memory,omitempty"`
}

// MemoryMeasure is device memory in use (total − free, as cuMemGetInfo
// reports it for the whole device) at the points of one rank's run.
type MemoryMeasure struct {
	// BeforeSetupBytes: when the Compute began (its context current,
	// nothing of its own allocated); AfterSetupBytes: when its setup ended.
	BeforeSetupBytes int64 `json:"before_setup_bytes"`
	AfterSetupBytes  int64 `json:"after_setup_bytes"`
	// AfterCommBytes: after the communicator and its groups were made.
	AfterCommBytes int64 `json:"after_comm_bytes"`
	// EndBytes: after the measured iterations.
	EndBytes int64 `json:"end_bytes"`
	// LibraryWorkspaceBytes is the part of AllocWorkspace that is a math
	// library's workspace (cuBLAS's).
	LibraryWorkspaceBytes int64 `json:"library_workspace_bytes"`
}

// Span is one op as a rank ran it.
type Span struct {
	Name       string  `json:"name"`
	Kind       string  `json:"kind"`
	Phase      string  `json:"phase"`
	Step       int     `json:"step"`
	Microbatch int     `json:"microbatch"`
	Chunk      int     `json:"chunk"`
	Peer       int     `json:"peer"`
	Bytes      int64   `json:"bytes"`
	StartS     float64 `json:"start_s"`
	DurS       float64 `json:"dur_s"`
	// Device is set when StartS and DurS are device times (from the
	// iteration's first device mark) rather than host times.
	Device bool `json:"device,omitempty"`
	// Graph n > 0: the op launched a device graph that ran it and the next
	// n−1 compute ops, and its span is the graph's; −1: a graph launched
	// by an earlier op ran it (its span holds nothing of its own).
	Graph int `json:"graph,omitempty"`
}

// Measurement is a run's results over all ranks.
type Measurement struct {
	Iterations  int `json:"iterations"`
	Warmup      int `json:"warmup"`
	DecodeSteps int `json:"decode_steps_per_iteration"`
	// TTFT per iteration: from the iteration's start — the earliest rank's
	// (TimeBase.OneStart), else each last-stage rank's own — to the last
	// stage's prefill end.
	TTFT stats.Summary `json:"ttft_s"`
	// TPOT per token interval on the last stage (first interval from the
	// prefill's token to decode step 0's).
	TPOT stats.Summary `json:"tpot_s"`
	// TTFTOwnStart is TTFT timed the other way, from each last-stage
	// rank's own start (the latest over last stages) where TTFT is timed
	// from one start: their difference is what a late start hides.
	TTFTOwnStart *stats.Summary `json:"ttft_own_start_s,omitempty"`
	// TTFTReplica, with data parallelism, is each replica's own TTFT
	// (from the same start to that replica's last stage's prefill end),
	// pooled over replicas and iterations: TTFT is the later replica's
	// each iteration, so their difference is the replicas' spread, which
	// a model of one replica does not price.
	TTFTReplica *stats.Summary `json:"ttft_replica_s,omitempty"`
	// TimeBase says from which start TTFT, TPOT and TPS were timed.
	TimeBase TimeBase `json:"time_base"`
	// TPS per iteration: batch × replicas × decode steps ÷ decode time
	// (the slowest replica's).
	TPS   stats.Summary `json:"tokens_per_s"`
	Ranks []RankResult  `json:"ranks"`
}

// Aggregate builds a Measurement from every rank's result (index = rank);
// batch is the sequences each replica serves. With data parallelism, a
// step ends when the last replica's last stage ends it, and every replica
// produces batch tokens per step.
//
// Where every rank recorded its iterations' starts on rank 0's clock
// (StartS), an iteration is timed from the earliest rank's start: TTFT is
// the last stage's prefill end on that clock minus it, so a last stage
// that left the barrier late does not leave out the first stages'
// prefill. Without starts (older results), each last-stage rank's times
// are from its own start.
func Aggregate(results []RankResult, batch, warmup int) (*Measurement, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("no rank results")
	}
	m := &Measurement{Warmup: warmup, Ranks: results}
	for i := range results {
		results[i].PrefillMeanS = stats.Summarize(results[i].PrefillS, stats.Positive).Mean
	}
	var ttft, ownTTFT, tpot, tps, spread, perReplica []float64
	replicas := map[int]bool{}
	for _, r := range results {
		replicas[r.Replica] = true
	}
	iters := len(results[0].PrefillS)
	m.Iterations = iters
	for j := range results {
		results[j].StartLagS = nil
	}
	oneStart := iters > 0
	for _, r := range results {
		oneStart = oneStart && len(r.StartS) == iters
	}
	for i := 0; i < iters; i++ {
		var first, own, prev float64
		var ends []float64
		byReplica := map[int]float64{} // each replica's own TTFT
		// start is the iteration's start on rank 0's clock (0: each rank's own).
		var start float64
		if oneStart {
			last := math.Inf(-1)
			start = math.Inf(1)
			for _, r := range results {
				start, last = math.Min(start, r.StartS[i]), math.Max(last, r.StartS[i])
			}
			spread = append(spread, last-start)
			for j := range results {
				if i == 0 {
					results[j].StartLagS = make([]float64, iters)
				}
				results[j].StartLagS[i] = results[j].StartS[i] - start
			}
		}
		for _, r := range results {
			if !r.LastStage {
				continue
			}
			if len(r.PrefillS) != iters || len(r.StepEndS) != iters {
				return nil, fmt.Errorf("rank %d measured %d iterations, rank 0 %d", r.Rank, len(r.PrefillS), iters)
			}
			// shift moves the rank's times from its own start to the iteration's.
			var shift float64
			if oneStart {
				shift = r.StartS[i] - start
			}
			first = math.Max(first, shift+r.PrefillS[i])
			own = math.Max(own, r.PrefillS[i])
			byReplica[r.Replica] = math.Max(byReplica[r.Replica], shift+r.PrefillS[i])
			if ends == nil {
				ends = make([]float64, len(r.StepEndS[i]))
			}
			for j, t := range r.StepEndS[i] {
				ends[j] = math.Max(ends[j], shift+t)
			}
		}
		ttft, ownTTFT = append(ttft, first), append(ownTTFT, own)
		if len(replicas) > 1 {
			for _, t := range byReplica {
				perReplica = append(perReplica, t)
			}
		}
		prev = first
		for _, t := range ends {
			tpot = append(tpot, t-prev)
			prev = t
		}
		m.DecodeSteps = len(ends)
		if len(ends) > 0 && prev > first {
			tps = append(tps, float64(batch*len(replicas)*len(ends))/(prev-first))
		}
	}
	// Times and rates are positive: their intervals are on the log scale.
	m.TTFT, m.TPOT, m.TPS = stats.Summarize(ttft, stats.Positive), stats.Summarize(tpot, stats.Positive), stats.Summarize(tps, stats.Positive)
	m.TimeBase = timeBase(results, oneStart, spread)
	if len(perReplica) > 0 {
		one := stats.Summarize(perReplica, stats.Positive)
		m.TTFTReplica = &one
	}
	if oneStart {
		own := stats.Summarize(ownTTFT, stats.Positive)
		m.TTFTOwnStart = &own
	}
	return m, nil
}

// TraceSum is one traced step of a rank: its ops' span durations summed,
// beside the step's time measured on the host in the same iteration.
type TraceSum struct {
	Rank  int    `json:"rank"`
	Phase string `json:"phase"`
	// Step is the decode step (−1 for the prefill).
	Step int `json:"step"`
	// OpSumS sums the traced iteration's spans of the step (device times
	// where the rank's SpanClock is "device"); OpByOpSumS the same step's
	// OpSpans (−1 without).
	OpSumS     float64 `json:"op_sum_s"`
	OpByOpSumS float64 `json:"op_by_op_sum_s"`
	// HostS is the step as the run measured it on the host in the traced
	// iteration: the prefill's end (TTFT on a last stage), or the interval
	// from the previous step's end (a TPOT sample).
	HostS float64 `json:"host_s"`
	// GraphOps are the step's ops that ran inside device graphs.
	GraphOps int `json:"graph_ops"`
}

// TraceSums are r's traced steps (the last measured iteration's) with
// their ops' summed durations; nil without a trace.
func TraceSums(r RankResult) []TraceSum {
	if len(r.Spans) == 0 || len(r.PrefillS) == 0 {
		return nil
	}
	last := len(r.PrefillS) - 1
	type key struct {
		phase string
		step  int
	}
	sums, byOp, graphed := map[key]float64{}, map[key]float64{}, map[key]int{}
	var order []key
	for _, s := range r.Spans {
		k := key{s.Phase, s.Step}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += s.DurS
		if s.Graph != 0 {
			graphed[k]++
		}
	}
	for _, s := range r.OpSpans {
		byOp[key{s.Phase, s.Step}] += s.DurS
	}
	var out []TraceSum
	for _, k := range order {
		host := r.PrefillS[last]
		if k.phase != string(partition.Prefill) {
			ends := r.StepEndS[last]
			if k.step < 0 || k.step >= len(ends) {
				continue
			}
			prev := r.PrefillS[last]
			if k.step > 0 {
				prev = ends[k.step-1]
			}
			host = ends[k.step] - prev
		}
		ts := TraceSum{Rank: r.Rank, Phase: k.phase, Step: k.step, OpSumS: sums[k], OpByOpSumS: -1, HostS: host, GraphOps: graphed[k]}
		if v, ok := byOp[k]; ok {
			ts.OpByOpSumS = v
		}
		out = append(out, ts)
	}
	return out
}

// TraceSummary is a rank's TraceSums in two lines: the prefill, and the
// median over the traced decode steps (−1 where there is none).
type TraceSummary struct {
	Rank         int     `json:"rank"`
	PrefillOpS   float64 `json:"prefill_op_sum_s"`
	PrefillHostS float64 `json:"prefill_host_s"`
	DecodeSteps  int     `json:"decode_steps"`
	DecodeOpS    float64 `json:"decode_op_sum_s"`
	DecodeHostS  float64 `json:"decode_host_s"`
	// DecodeOpByOpS is the median step of OpSpans (−1 without).
	DecodeOpByOpS float64 `json:"decode_op_by_op_sum_s"`
	// GraphOps are the traced decode ops that ran inside device graphs.
	GraphOps int `json:"graph_ops"`
	// Device says the spans are device times.
	Device bool `json:"device"`
}

// SummarizeTrace summarizes r's TraceSums; false without a trace.
func SummarizeTrace(r RankResult) (TraceSummary, bool) {
	sums := TraceSums(r)
	if len(sums) == 0 {
		return TraceSummary{}, false
	}
	t := TraceSummary{Rank: r.Rank, PrefillOpS: -1, PrefillHostS: -1, Device: r.SpanClock == "device"}
	var op, host, byOp []float64
	for _, s := range sums {
		if s.Phase == string(partition.Prefill) {
			t.PrefillOpS, t.PrefillHostS = s.OpSumS, s.HostS
			continue
		}
		op, host = append(op, s.OpSumS), append(host, s.HostS)
		if s.OpByOpSumS >= 0 {
			byOp = append(byOp, s.OpByOpSumS)
		}
		t.GraphOps += s.GraphOps
	}
	t.DecodeSteps = len(op)
	t.DecodeOpS, t.DecodeHostS, t.DecodeOpByOpS = median(op), median(host), median(byOp)
	return t, true
}

// CheckDecodeSteps is how many decode steps the op check's extra iteration
// times on an asynchronous device (RankResult.CheckSpans).
const CheckDecodeSteps = 4

// ClockEnqueue marks an op-check time an asynchronous device's host timers
// took: the enqueue alone, so the op check shows no measured time for it
// (compare.OpCheckRow.Clock).
const ClockEnqueue = "enqueue"
