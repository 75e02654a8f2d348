package exec

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/stats"
)

// Emulation is what one device measured while playing every rank in turn.
type Emulation struct {
	// Ops are the median compute-op times over the measured iterations
	// (communication ops are −1: they stay modeled).
	Ops OpTimes `json:"ops_s"`
	// Steps are each rank's median time of a whole Program's compute ops:
	// the prefill, and one decode step (first mark to last on a device
	// queue; the sum of the ops' times on the host clock).
	Steps StepTimes `json:"steps_s"`
	// Clock is how the ops were timed: ClockDevice or ClockHost.
	Clock string `json:"clock"`
	// GraphOps is, per rank, how many decode ops ran inside a device graph
	// in the measured iterations; their times are the graph's, split (see
	// Emulate).
	GraphOps []int `json:"graph_ops"`
	// HostQueue is, on a device clock, each rank's median host time to
	// queue a step's ops (from the mark before its first op to the mark
	// after its last, before the wait): where it is about the step's
	// device time, the step ran at the host's pace.
	HostQueue StepTimes `json:"host_queue_s,omitzero"`
	// AllocatedBytes is each rank's memory as the backend allocated it.
	AllocatedBytes []int64 `json:"allocated_bytes"`
	// AllocatedByKind itemizes AllocatedBytes per rank when the backend
	// says (AllocationItemizer); nil entries where it does not.
	AllocatedByKind []map[string]int64 `json:"allocated_by_kind,omitempty"`
}

// Emulation clocks.
const (
	// ClockDevice: marks on the device queue between ops, read after the
	// step; no wait inside a step, graphs launched as a run launches them.
	ClockDevice = "device"
	// ClockHost: the host clock around each op, waiting for it (Sync).
	ClockHost = "host"
)

// OpTimes are per-op times in seconds, indexed [rank][op index in the
// rank's Program of that phase]; −1 marks an op that was not measured.
type OpTimes struct {
	Prefill [][]float64 `json:"prefill"`
	Decode  [][]float64 `json:"decode"`
}

// StepTimes are per-rank times in seconds of a phase's compute ops.
type StepTimes struct {
	Prefill []float64 `json:"prefill"`
	Decode  []float64 `json:"decode"`
}

// TimingNote says in one line how the emulation timed the ops, for the
// report's notes.
func (em *Emulation) TimingNote() string {
	if em.Clock != ClockDevice {
		return "compute ops timed on the host clock, each to its completion"
	}
	graphs := 0
	for _, n := range em.GraphOps {
		graphs += n
	}
	s := "compute ops timed on the device: an event recorded on the stream between consecutive ops, read after the step, with no host wait inside a step (as the run executes it)"
	if graphs > 0 {
		s += fmt.Sprintf("; %d decode ops (over all ranks) ran inside CUDA graphs as the run launches them: each graph's event time is split over its ops in proportion to their op-by-op event times before the capture", graphs)
	}
	var pre, dec float64
	for r := range em.Steps.Prefill {
		pre = max(pre, em.Steps.Prefill[r])
		dec = max(dec, em.Steps.Decode[r])
	}
	if pre > 0 && dec > 0 {
		s += fmt.Sprintf("; the device's median steps, slowest rank: prefill %.3f ms, decode step %.3f ms", pre*1e3, dec*1e3)
	}
	return s
}

// Emulate runs every rank's Programs in turn on one device with its real
// shapes and memory footprint, moving no data between ranks (a received
// buffer keeps whatever it held), and measures each compute op. The
// timeline of the whole system then comes from sim with these times and
// modeled communication (package compare assembles it).
//
// On a DeviceClock (a GPU stream) each step runs as exec.Run runs it: its
// ops queued back to back, with a mark between consecutive compute ops and
// no wait until the step's last op is queued; an op's time is the device
// time between its two marks, so a step's op times sum to the step. Where
// the Compute launches a run of ops as one graph (GraphLauncher), the
// marks see the graph as a whole: its time is split over its ops in
// proportion to their op-by-op times from the runs before its capture
// (each op's first such run left out when there are more), or kept on its
// first op where those are missing. A step being captured into a graph
// is not timed. Elsewhere (the CPU) each op is timed on the host clock to
// its completion.
func Emulate(ctx context.Context, plan *partition.Plan, newCompute func(*partition.Plan, int) (Compute, error), warmup, iterations int) (*Emulation, error) {
	if iterations < 1 {
		return nil, fmt.Errorf("emulate: iterations must be at least 1 (got %d)", iterations)
	}
	em := &Emulation{Clock: ClockHost}
	steps := plan.Config.Workload.OutputTokens - 1
	for r := range plan.Ranks {
		c, err := newCompute(plan, r)
		if err != nil {
			return nil, fmt.Errorf("emulate rank %d: %w", r, err)
		}
		clock, _ := c.(DeviceClock)
		if clock != nil {
			em.Clock = ClockDevice
		}
		pre, dec := plan.Program(r, partition.Prefill), plan.Program(r, partition.Decode)
		preT, decT := newPhaseTimes(pre), newPhaseTimes(dec)
		for it := 0; it < warmup+iterations; it++ {
			keep := it >= warmup
			if err := timeStep(ctx, c, clock, plan, partition.Prefill, 0, preT, keep); err != nil {
				return nil, err
			}
			for s := 0; s < steps; s++ {
				if err := timeStep(ctx, c, clock, plan, partition.Decode, s, decT, keep); err != nil {
					return nil, err
				}
			}
		}
		em.Ops.Prefill = append(em.Ops.Prefill, preT.finish())
		decOps := decT.finish()
		em.Ops.Decode = append(em.Ops.Decode, decOps)
		em.Steps.Prefill = append(em.Steps.Prefill, median(preT.steps))
		em.Steps.Decode = append(em.Steps.Decode, median(decT.steps))
		if clock != nil {
			em.HostQueue.Prefill = append(em.HostQueue.Prefill, median(preT.queued))
			em.HostQueue.Decode = append(em.HostQueue.Decode, median(decT.queued))
		}
		em.GraphOps = append(em.GraphOps, decT.graphed+preT.graphed)
		em.AllocatedBytes = append(em.AllocatedBytes, c.AllocatedBytes())
		var byKind map[string]int64
		if it, ok := c.(AllocationItemizer); ok {
			byKind = it.AllocatedByKind()
		}
		em.AllocatedByKind = append(em.AllocatedByKind, byKind)
		if err := c.Close(); err != nil {
			return nil, err
		}
	}
	return em, nil
}

// phaseTimes collects one rank's samples of one phase's Program.
type phaseTimes struct {
	prog partition.Program
	// compute are the indices of the compute ops, in Program order.
	compute []int
	// ops are the kept samples per op index; eager every op-by-op device
	// sample, warm-up included (the weights that split a graph's time).
	ops, eager [][]float64
	// graphs are the kept graph launches; steps the kept step times;
	// queued the kept host times to queue a step (a device clock's).
	graphs        []graphRun
	steps, queued []float64
	// graphed counts the ops that ran inside a kept graph launch.
	graphed int
}

// graphRun is one graph launched at compute op number at (an index into
// phaseTimes.compute) running n compute ops, for s seconds.
type graphRun struct {
	at, n int
	s     float64
}

func newPhaseTimes(prog partition.Program) *phaseTimes {
	p := &phaseTimes{prog: prog, ops: samples(len(prog.Ops)), eager: samples(len(prog.Ops))}
	for i := range prog.Ops {
		if _, isComm := prog.Ops[i].Kind.Comm(); !isComm {
			p.compute = append(p.compute, i)
		}
	}
	return p
}

// timeStep runs one step (a phase's Program once) and adds its samples.
func timeStep(ctx context.Context, c Compute, clock DeviceClock, plan *partition.Plan, phase partition.Phase, step int, into *phaseTimes, keep bool) error {
	past := Past(plan, phase, step)
	if clock == nil {
		return hostStep(ctx, c, past, into, keep)
	}
	return deviceStep(ctx, c, clock, past, into, keep)
}

// hostStep runs a Program's compute ops one by one, each timed to its
// completion (Sync); communication ops are skipped (they stay modeled).
func hostStep(ctx context.Context, c Compute, past func(*partition.Op) int, into *phaseTimes, keep bool) error {
	var total float64
	for _, i := range into.compute {
		op := &into.prog.Ops[i]
		start := time.Now()
		if err := c.Exec(ctx, op, past(op)); err != nil {
			return opErr(into.prog, op, err)
		}
		if err := c.Sync(ctx); err != nil {
			return opErr(into.prog, op, err)
		}
		d := time.Since(start).Seconds()
		total += d
		if keep {
			into.ops[i] = append(into.ops[i], d)
		}
	}
	if keep {
		into.steps = append(into.steps, total)
	}
	return nil
}

// deviceStep queues a Program's compute ops with a device mark before the
// first and after each that queued work, waits once after the last (Marks,
// then Sync for the backend's own checks), and adds each op's device time.
// An op that an earlier op's graph ran (LastGraph −1) queued nothing and
// gets no mark: a mark after it would only follow the host's loop over the
// graph's other ops, and where that loop is slower than the graph the
// device waits for the marks, not for the graph (a run makes no such
// marks). A graph's time is from the mark before its launch to the one
// after it.
func deviceStep(ctx context.Context, c Compute, clock DeviceClock, past func(*partition.Op) int, into *phaseTimes, keep bool) error {
	prog := into.prog
	gl, _ := c.(GraphLauncher)
	graph := make([]int, len(into.compute))
	start := time.Now()
	if err := clock.Mark(); err != nil {
		return fmt.Errorf("rank %d %s: device mark: %w", prog.Rank, prog.Phase, err)
	}
	nMarks := 1
	for k, i := range into.compute {
		op := &prog.Ops[i]
		if err := c.Exec(ctx, op, past(op)); err != nil {
			return opErr(prog, op, err)
		}
		if gl != nil {
			graph[k] = gl.LastGraph()
		}
		if graph[k] < 0 {
			continue
		}
		if err := clock.Mark(); err != nil {
			return opErr(prog, op, fmt.Errorf("device mark: %w", err))
		}
		nMarks++
	}
	queued := time.Since(start).Seconds()
	marks, err := clock.Marks() // the step's one wait, after its last op
	if err != nil {
		return fmt.Errorf("rank %d %s: device marks: %w", prog.Rank, prog.Phase, err)
	}
	if err := c.Sync(ctx); err != nil {
		return fmt.Errorf("rank %d %s: %w", prog.Rank, prog.Phase, err)
	}
	if len(marks) != nMarks {
		return fmt.Errorf("rank %d %s: %d device marks for %d marked compute ops, want one more than the ops", prog.Rank, prog.Phase, len(marks), nMarks-1)
	}
	for _, m := range marks {
		if math.IsNaN(m) {
			return nil // a step being captured into a graph: its launches ran at its end
		}
	}
	m := 0 // the mark before op k: the ops a graph ran have none of their own
	for k := 0; k < len(into.compute); k++ {
		i := into.compute[k]
		if graph[k] < 0 {
			return fmt.Errorf("rank %d %s: op %s ran inside a graph that no earlier op of the step launched", prog.Rank, prog.Phase, prog.Ops[i].Name)
		}
		d := marks[m+1] - marks[m]
		m++
		switch n := graph[k]; {
		case n > 0:
			if k+n > len(into.compute) {
				return fmt.Errorf("rank %d %s: op %s launched a graph of %d ops, %d compute ops are left", prog.Rank, prog.Phase, prog.Ops[i].Name, n, len(into.compute)-k)
			}
			for j := k + 1; j < k+n; j++ {
				if graph[j] >= 0 {
					return fmt.Errorf("rank %d %s: op %s launched a graph of %d ops, but op %s after it queued work of its own", prog.Rank, prog.Phase, prog.Ops[i].Name, n, prog.Ops[into.compute[j]].Name)
				}
			}
			if keep {
				into.graphs = append(into.graphs, graphRun{at: k, n: n, s: d})
				into.graphed += n
			}
			k += n - 1 // the graph's other ops queued nothing
		default:
			into.eager[i] = append(into.eager[i], d)
			if keep {
				into.ops[i] = append(into.ops[i], d)
			}
		}
	}
	if keep {
		into.steps = append(into.steps, marks[len(marks)-1]-marks[0])
		into.queued = append(into.queued, queued)
	}
	return nil
}

// finish splits each kept graph launch over its ops and returns the
// per-op medians.
func (p *phaseTimes) finish() []float64 {
	for _, g := range p.graphs {
		idx := p.compute[g.at : g.at+g.n]
		w := make([]float64, len(idx))
		var sum float64
		ok := true
		for j, i := range idx {
			w[j] = eagerWeight(p.eager[i])
			if w[j] <= 0 {
				ok = false
			}
			sum += w[j]
		}
		for j, i := range idx {
			var share float64
			switch {
			case ok:
				share = w[j] / sum
			case j == 0:
				share = 1 // no op-by-op times to split by: the first op holds the graph
			}
			p.ops[i] = append(p.ops[i], g.s*share)
		}
	}
	return medians(p.ops)
}

// eagerWeight is an op's median op-by-op time, its first run (lazy module
// loading, library heuristics) left out when there are more; 0 without one.
func eagerWeight(xs []float64) float64 {
	if len(xs) > 1 {
		xs = xs[1:]
	}
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

func samples(n int) [][]float64 { return make([][]float64, n) }

// median is stats.Median, −1 without samples.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	return stats.Median(xs)
}

// medians are the median of each op's samples (stats.Median, the one
// definition runs use for p50 too); −1 where there is none.
func medians(s [][]float64) []float64 {
	out := make([]float64, len(s))
	for i, xs := range s {
		out[i] = median(xs)
	}
	return out
}
