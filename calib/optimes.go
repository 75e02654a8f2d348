package calib

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// DefaultOpConfigs are the configs whose Programs' compute ops are timed
// into the op-time table: the test configs the CPU backend runs (every
// rank's prefill and decode Programs).
var DefaultOpConfigs = []string{
	"test/single-tiny", "test/tp4-tiny", "test/pp4-tiny", "test/tp2pp2-tiny", "test/tp2-dp2-tiny",
	"test/layerwise16-tiny", "test/gpt2-tiny",
}

// opCase is one entry of the op-time table to measure: the key (sim.OpKey,
// with attention's context at the cache length timed), and where an op of
// that key is found to run it.
type opCase struct {
	kind, shape   string
	size, context int64
	plan          *partition.Plan
	rank          int
	phase         partition.Phase
	index         int
	past          int
}

// opCases collects the distinct op-time keys of the compute ops of every
// rank's prefill and decode Programs of configs (communication is measured
// on the link, measureLink). Decode attention is timed at every cache
// length a run's decode steps see and at the Program's representative one
// (sim's), so the table covers each step.
func opCases(names []string) ([]opCase, error) {
	var out []opCase
	seen := map[[4]string]bool{}
	for _, name := range names {
		cfg, err := configs.Load(name)
		if err != nil {
			return nil, err
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for rank := range plan.Ranks {
			for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
				prog := plan.Program(rank, ph)
				for i := range prog.Ops {
					op := &prog.Ops[i]
					if _, comm := op.Kind.Comm(); comm || op.Kind == partition.Send || op.Kind == partition.Recv {
						continue
					}
					pasts := []int{pexec.Past(plan, ph, 0)(op)}
					if ph == partition.Decode && op.Kind == partition.Attention {
						pasts = []int{op.Past}
						for s := 0; s < cfg.Workload.OutputTokens-1; s++ {
							pasts = append(pasts, pexec.Past(plan, ph, s)(op))
						}
					}
					for _, past := range pasts {
						o := *op
						o.Past = past
						kind, shape, size, ctx := sim.OpKey(&o)
						k := [4]string{kind, shape, fmt.Sprint(size), fmt.Sprint(ctx)}
						if seen[k] {
							continue
						}
						seen[k] = true
						out = append(out, opCase{kind: kind, shape: shape, size: size, context: ctx, plan: plan, rank: rank, phase: ph, index: i, past: past})
					}
				}
			}
		}
	}
	return out, nil
}

// measureOpTimes times every case through exec/cpu with n concurrent
// workers (each its own Compute of the case's rank, all running the op at
// once, as n local ranks of a run share the host's cores), repeats times
// each, and returns the table entries (Ranks = n). One sample is the
// per-call time of a batch sized by a pilot to last minDur alone; the
// entry's time is the median over workers and repeats.
func measureOpTimes(ctx context.Context, cases []opCase, n, repeats int, minDur time.Duration, step func() error) ([]configs.OpTime, error) {
	type rankKey struct {
		plan *partition.Plan
		rank int
	}
	var order []rankKey
	byRank := map[rankKey][]opCase{}
	for _, c := range cases {
		k := rankKey{c.plan, c.rank}
		if byRank[k] == nil {
			order = append(order, k)
		}
		byRank[k] = append(byRank[k], c)
	}
	var out []configs.OpTime
	for _, k := range order {
		workers := make([]*cpu.Compute, n)
		for w := range workers {
			c, err := cpu.New(k.plan, k.rank)
			if err != nil {
				return nil, err
			}
			defer c.Close()
			workers[w] = c
		}
		primed := partition.Phase("")
		for _, c := range byRank[k] {
			prog := k.plan.Program(k.rank, c.phase)
			if c.phase != primed {
				// The phase's compute ops once in order: every micro-batch's pass
				// state (rows, end position) is what the op finds in a run.
				if err := primeOps(ctx, workers, k.plan, prog, c.phase); err != nil {
					return nil, fmt.Errorf("op times: %s rank %d %s: %w", k.plan.Config.Name, k.rank, c.phase, err)
				}
				primed = c.phase
			}
			op := &prog.Ops[c.index]
			ts, err := timeOpConcurrent(ctx, workers, op, c.past, repeats, minDur)
			if err != nil {
				return nil, fmt.Errorf("op times: %s rank %d %s %s: %w", k.plan.Config.Name, k.rank, c.phase, op.Name, err)
			}
			sp := spreadOf(ts)
			out = append(out, configs.OpTime{Kind: c.kind, Shape: c.shape, Size: c.size, Context: c.context,
				TimeS: sp.Median, TimeMinS: sp.Min, TimeMaxS: sp.Max, Samples: len(ts), Ranks: n})
		}
		for _, c := range workers {
			c.Close()
		}
		if err := step(); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Shape != b.Shape {
			return a.Shape < b.Shape
		}
		if a.Size != b.Size {
			return a.Size < b.Size
		}
		return a.Context < b.Context
	})
	return out, nil
}

// timeOpConcurrent runs op on every worker at once, repeats times, and
// returns every worker's per-call time of every repeat. A pilot on the
// first worker alone sizes the batch to last at least minDur.
func timeOpConcurrent(ctx context.Context, workers []*cpu.Compute, op *partition.Op, past, repeats int, minDur time.Duration) ([]float64, error) {
	var err error
	exec := func(c *cpu.Compute) {
		if e := c.Exec(ctx, op, past); e != nil && err == nil {
			err = e
		}
	}
	per := timePer(minDur, func() { exec(workers[0]) })
	if err != nil {
		return nil, err
	}
	batch := max(1, int(minDur.Seconds()/per))
	var out []float64
	for r := 0; r < repeats; r++ {
		times := make([]float64, len(workers))
		errs := make([]error, len(workers))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w, c := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				t0 := time.Now()
				for i := 0; i < batch; i++ {
					if e := c.Exec(ctx, op, past); e != nil {
						errs[w] = e
						return
					}
				}
				times[w] = time.Since(t0).Seconds() / float64(batch)
			}()
		}
		close(start)
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				return nil, e
			}
		}
		out = append(out, times...)
	}
	return out, nil
}

// commOpTimes turns the link samples into op-time entries: all_reduce by
// group size and bytes, sendrecv's one-way time as a send of that many
// bytes between two ranks, measured with ranks ranks on the host.
func commOpTimes(samples []configs.CommSample, ranks, repeats int) []configs.OpTime {
	var out []configs.OpTime
	for _, s := range samples {
		kind := s.Op
		if s.Op == opSendRecv {
			kind = string(partition.Send)
		}
		out = append(out, configs.OpTime{Kind: kind, Shape: fmt.Sprintf("ranks=%d", s.Ranks), Size: s.Bytes,
			TimeS: s.TimeMedianS, TimeMinS: s.TimeMinS, TimeMaxS: s.TimeMaxS, Samples: repeats, Ranks: ranks})
	}
	return out
}

// opRankCount is how many (config, rank) Computes the cases need: the
// progress steps of one measureOpTimes.
func opRankCount(cases []opCase) int {
	type k struct {
		plan *partition.Plan
		rank int
	}
	seen := map[k]bool{}
	for _, c := range cases {
		seen[k{c.plan, c.rank}] = true
	}
	return len(seen)
}

// primeOps runs prog's compute ops in order on every worker, at the cache
// length of the phase's first pass.
func primeOps(ctx context.Context, workers []*cpu.Compute, plan *partition.Plan, prog partition.Program, ph partition.Phase) error {
	past := pexec.Past(plan, ph, 0)
	for i := range prog.Ops {
		op := &prog.Ops[i]
		if _, comm := op.Kind.Comm(); comm || op.Kind == partition.Send || op.Kind == partition.Recv {
			continue
		}
		for _, c := range workers {
			if err := c.Exec(ctx, op, past(op)); err != nil {
				return fmt.Errorf("%s: %w", op.Name, err)
			}
		}
	}
	return nil
}
