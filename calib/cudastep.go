package calib

import (
	"context"
	"fmt"
	"math"
	"time"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// stepIterations is how many times measureGraphSteps runs the whole
// request (after one warm-up), as a run's measured iterations.
const stepIterations = 3

// graphSteps is what measureGraphSteps found on one op config, one value
// per measured iteration (each the median over the iteration's decode
// steps).
type graphSteps struct {
	// over is the host's share of a step: its wall time less its ops as
	// the graph runs them and the graph launch sim charges.
	over []float64
	// saved is the device time per op the graph saved against the table:
	// (the step's ops' table times − the graph's device time) / its ops
	// in the table. Empty where c has no device clock.
	saved []float64
	// ops is a decode step's ops with a table time; missing those without
	// (their device time read 0: they count 0, as sim prices them by the
	// roofline).
	ops, missing int
	// hostOp is the host's time to queue one compute op of the prefill,
	// which runs eagerly: the pass's queue time (from its first Exec to
	// its last's return, before the Sync) over its compute ops.
	hostOp []float64
}

// measureGraphSteps runs plan's one rank as exec.Run runs it — the prefill
// Program, then every decode step, each pass followed by Sync — through c
// (a GPU Compute with decode graphs, as a run makes it): one warm-up
// (which captures the graphs) and iterations measured iterations, each
// run twice over.
//
// First each decode step is timed on the device: hold (when set) keeps the
// device busy while the step is queued, as the op-time table's passes are
// held, and a mark before and after the step (c's pexec.DeviceClock) gives
// the graph's device time G, its kernels back to back. The step's ops'
// times in table, Σt, were timed one op at a time with a mark after each;
// (Σt − G) / n over the step's n ops in the table is what the graph saves
// per op (graphSteps.saved): the marks and the stream's gaps between
// launches that the table's timing holds and a graph does not.
//
// Then the request runs again as a run runs it, neither held nor marked:
// each decode step's wall time on now (between the returns of the Syncs
// around it) less the step's ops as the graph runs them (G, or Σt where c
// has no device clock) and less graphS (the graph launch sim charges a
// decode step) is the host's share of the step (graphSteps.over): what the
// executor spends between steps besides its ops. That request's prefill,
// queued eagerly op by op through the executor's own loop
// (pexec.RunProgramObserved) with a run's bookkeeping of each op's time
// (runObserver), gives the host's time to queue one op (graphSteps.hostOp).
func measureGraphSteps(ctx context.Context, plan *partition.Plan, c pexec.Compute, table *sim.OpTable, graphS float64, iterations int, hold Hold,
	now func() time.Duration) (graphSteps, error) {
	var out graphSteps
	if len(plan.Ranks) != 1 {
		return out, fmt.Errorf("decode graph steps: %s has %d ranks, want one", plan.Config.Name, len(plan.Ranks))
	}
	prefill, decode := plan.Program(0, partition.Prefill), plan.Program(0, partition.Decode)
	steps := plan.Config.Workload.OutputTokens - 1
	// The device time of each decode step's ops, from the table.
	opsS := make([]float64, steps)
	for s := range opsS {
		past := pexec.Past(plan, partition.Decode, s)
		for i := range decode.Ops {
			o := decode.Ops[i]
			if _, comm := o.Kind.Comm(); comm {
				continue
			}
			o.Past = past(&o)
			t, ok := table.Time(&o)
			if s == 0 {
				if ok {
					out.ops++
				} else {
					out.missing++
				}
			}
			opsS[s] += t
		}
	}
	clock, _ := c.(pexec.DeviceClock)
	var queuedS float64 // the last pass's host time to queue its ops
	obs := newRunObserver()
	pass := func(prog partition.Program, past func(*partition.Op) int) error {
		obs.next()
		start := now()
		// The executor's own loop and a run's bookkeeping of each op's
		// time (its host's time per op beside the launches).
		if err := pexec.RunProgramObserved(ctx, prog, c, nil, nil, past, obs.observe); err != nil {
			return fmt.Errorf("decode graph steps: %w", err)
		}
		queuedS = (now() - start).Seconds()
		return c.Sync(ctx)
	}
	prefillOps := 0 // compute ops (the one-rank Program has no communication)
	for i := range prefill.Ops {
		if _, comm := prefill.Ops[i].Kind.Comm(); !comm {
			prefillOps++
		}
	}
	// timed runs decode step s held and between two marks, and returns its
	// device time (NaN where a mark was untimed: inside a capture).
	queued := make([]time.Duration, steps) // host time to queue each step, the last time
	timed := func(s int) (float64, error) {
		if hold != nil {
			d := 10 * time.Millisecond
			if queued[s] > 0 {
				d = 2 * queued[s]
			}
			if err := hold(c, d); err != nil {
				return 0, fmt.Errorf("decode graph steps: hold the device: %w", err)
			}
		}
		start := time.Now()
		if err := clock.Mark(); err != nil {
			return 0, err
		}
		past := pexec.Past(plan, partition.Decode, s)
		for i := range decode.Ops {
			op := &decode.Ops[i]
			if err := c.Exec(ctx, op, past(op)); err != nil {
				return 0, fmt.Errorf("decode graph steps: %s %s: %w", decode.Phase, op.Name, err)
			}
		}
		if err := clock.Mark(); err != nil {
			return 0, err
		}
		queued[s] = time.Since(start)
		ms, err := clock.Marks()
		if err == nil {
			err = c.Sync(ctx)
		}
		if err != nil {
			return 0, fmt.Errorf("decode graph steps: %w", err)
		}
		if len(ms) != 2 {
			return 0, fmt.Errorf("decode graph steps: device clock: %d marks around a step (want 2)", len(ms))
		}
		return ms[1] - ms[0], nil
	}
	for it := 0; it <= iterations; it++ { // iteration 0 warms up (and captures the graphs)
		graph := append([]float64(nil), opsS...) // each step's ops as the graph runs them
		if clock != nil {
			if err := pass(prefill, pexec.Past(plan, partition.Prefill, 0)); err != nil {
				return out, err
			}
			saved := make([]float64, 0, steps)
			for s := range steps {
				g, err := timed(s)
				if err != nil {
					return out, err
				}
				if it == 0 || math.IsNaN(g) {
					continue
				}
				graph[s] = g
				if out.ops > 0 {
					saved = append(saved, (opsS[s]-g)/float64(out.ops))
				}
			}
			if len(saved) > 0 {
				out.saved = append(out.saved, medianOf(saved))
			}
		}
		if err := pass(prefill, pexec.Past(plan, partition.Prefill, 0)); err != nil {
			return out, err
		}
		if it > 0 && prefillOps > 0 {
			out.hostOp = append(out.hostOp, queuedS/float64(prefillOps))
		}
		last := now()
		stepOver := make([]float64, steps)
		for s := range steps {
			if err := pass(decode, pexec.Past(plan, partition.Decode, s)); err != nil {
				return out, err
			}
			t := now()
			stepOver[s] = (t - last).Seconds() - graph[s] - graphS
			last = t
		}
		if it > 0 && steps > 0 {
			out.over = append(out.over, medianOf(stepOver))
		}
	}
	return out, nil
}

// runObserver keeps each op's time by kind and by iteration, as a run's
// observer does in its measured iterations (exec.Run): a pass through
// pexec.RunProgramObserved with it costs the host what a run's pass does
// beside its ops.
type runObserver struct {
	busy     map[string]float64
	byIter   map[string][]float64
	iter     int
	observed float64 // the ops' time since the last reset
}

func newRunObserver() *runObserver {
	return &runObserver{busy: map[string]float64{}, byIter: map[string][]float64{}}
}

// next moves to the next iteration (a bounded slice per kind, as a run's
// measured iterations are).
func (o *runObserver) next() { o.iter = (o.iter + 1) % 64 }

func (o *runObserver) observe(op *partition.Op, start, end time.Time) {
	d := end.Sub(start).Seconds()
	o.observed += d
	o.busy[string(op.Kind)] += d
	v := o.byIter[string(op.Kind)]
	for len(v) <= o.iter {
		v = append(v, 0)
	}
	v[o.iter] += d
	o.byIter[string(op.Kind)] = v
}
