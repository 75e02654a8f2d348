package exec

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/partition"
)

// InProcessOptions configures RunInProcess.
type InProcessOptions struct {
	// DecodeSteps after the prefill (0 for an encoder's one forward pass).
	DecodeSteps int
	// NewCompute builds rank's Compute (feeding the prompts it was made
	// with); it must implement Inspector.
	NewCompute func(plan *partition.Plan, rank int) (Compute, error)
	// NewComms connects size in-process ranks (exec/localcomm.Comms).
	NewComms func(size int) []Comm
}

// InProcessRun is one timed, counted run of every rank of a plan in this
// process: the prefill (step 0) and DecodeSteps decode steps.
type InProcessRun struct {
	// StepS[0] is the prefill (time to first token): from the moment every
	// rank has set up its groups and passed a barrier to the moment the last
	// rank finished its prefill Program; StepS[k] is decode step k, from the
	// last rank finishing step k−1 to the last rank finishing step k. Ranks
	// are not synchronised between steps (the Programs' sends and receives
	// order them), so the steps add up to the generation.
	StepS []float64
	// Tokens[step][seq] are the last stage's argmax tokens after each step
	// (nil without an LM head).
	Tokens [][]int
	// Counted[step][rank] is what rank's communicator counted during step;
	// Want[step][rank] is plan.Counts of the Program it ran.
	Counted, Want [][]commcount.Snapshot
	// CountDiffs name every step and rank whose counted communication
	// differs from its Program's (commcount.Diff lines).
	CountDiffs []string
	// Failures are the last stage's TP ranks disagreeing on an output.
	Failures []string
}

// WireBytes sums the wire bytes every rank sent to its peers in snaps.
func WireBytes(snaps []commcount.Snapshot) int64 {
	var n int64
	for _, s := range snaps {
		for _, p := range s.Peers {
			n += p.WireBytes
		}
	}
	return n
}

// RunInProcess runs plan's ranks as goroutines of this process (the
// partitioning Generate and Check run, with every step timed and every
// rank's communication counted per step). A counted communication that
// differs from the Program's is reported in CountDiffs, not as an error;
// errors are failures to run.
func RunInProcess(ctx context.Context, plan *partition.Plan, o InProcessOptions) (*InProcessRun, error) {
	if o.NewCompute == nil || o.NewComms == nil {
		return nil, fmt.Errorf("run in process: NewCompute and NewComms are required")
	}
	if o.DecodeSteps < 0 {
		return nil, fmt.Errorf("run in process: decode steps must be ≥ 0 (got %d)", o.DecodeSteps)
	}
	size, steps := plan.Size(), o.DecodeSteps
	comms := o.NewComms(size)
	if len(comms) != size {
		return nil, fmt.Errorf("NewComms(%d) returned %d communicators", size, len(comms))
	}
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	computes := make([]Compute, size)
	defer func() {
		for _, c := range computes {
			if c != nil {
				c.Close()
			}
		}
	}()
	for r := range computes {
		c, err := o.NewCompute(plan, r)
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
		computes[r] = c
		if _, ok := c.(Inspector); !ok {
			return nil, fmt.Errorf("rank %d: compute %T does not report outputs (Output, Sampled)", r, c)
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	outs := make([]rankOut, size)
	errs := make([]error, size)
	ready := make([]time.Time, size)
	ends := make([][]time.Time, size)
	counted := make([][]commcount.Snapshot, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Go(func() {
			outs[r], ready[r], ends[r], counted[r], errs[r] = timedRank(ctx, plan, r, steps, computes[r], comms[r])
			if errs[r] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	if err := firstCause(errs); err != nil {
		return nil, err
	}
	run := &InProcessRun{}
	prev := ready[0]
	for _, t := range ready[1:] {
		if t.Before(prev) {
			prev = t
		}
	}
	for k := 0; k <= steps; k++ {
		last := ends[0][k]
		for r := 1; r < size; r++ {
			if ends[r][k].After(last) {
				last = ends[r][k]
			}
		}
		run.StepS = append(run.StepS, last.Sub(prev).Seconds())
		prev = last
		phase := partition.Prefill
		if k > 0 {
			phase = partition.Decode
		}
		var got, want []commcount.Snapshot
		for r := range size {
			w := plan.Counts(plan.Program(r, phase))
			got, want = append(got, counted[r][k]), append(want, w)
			if d := commcount.Diff(w, counted[r][k]); len(d) > 0 {
				run.CountDiffs = append(run.CountDiffs, fmt.Sprintf("%s step %d rank %d: %s", phase, k, r, strings.Join(d, ", ")))
			}
		}
		run.Counted, run.Want = append(run.Counted, got), append(run.Want, want)
	}
	cr, err := assembleCheckRun(plan, steps, outs, nil)
	if err != nil {
		return nil, err
	}
	run.Tokens, run.Failures = cr.tokens, cr.failures
	return run, nil
}

// timedRank is runCheckRank with a barrier before the prefill and the end
// time and counted communication of every step.
func timedRank(ctx context.Context, plan *partition.Plan, rank, steps int, c Compute, comm Comm) (out rankOut, ready time.Time, ends []time.Time, counted []commcount.Snapshot, err error) {
	groups, err := NewGroups(ctx, comm, plan, rank)
	if err != nil {
		return
	}
	progs := map[partition.Phase]partition.Program{
		partition.Prefill: plan.Program(rank, partition.Prefill),
		partition.Decode:  plan.Program(rank, partition.Decode),
	}
	insp := c.(Inspector)
	lastStage := plan.LastStage(plan.Ranks[rank].Stage)
	if err = comm.Barrier(ctx); err != nil {
		return
	}
	base := comm.Counter().Snapshot()
	ready = time.Now()
	for step := 0; step <= steps; step++ {
		phase, past := partition.Prefill, Past(plan, partition.Prefill, 0)
		if step > 0 {
			phase, past = partition.Decode, Past(plan, partition.Decode, step-1)
		}
		if err = RunProgram(ctx, progs[phase], c, comm, groups, past); err != nil {
			return
		}
		if err = comm.Flush(ctx); err != nil {
			err = fmt.Errorf("rank %d: flush: %w", rank, err)
			return
		}
		ends = append(ends, time.Now())
		snap := comm.Counter().Snapshot()
		counted = append(counted, snap.Sub(base))
		base = snap
		if !lastStage {
			continue
		}
		o, s := make([][]float32, plan.Microbatches), make([][]int, plan.Microbatches)
		for mb := range o {
			o[mb], s[mb] = insp.Output(mb), insp.Sampled(mb)
		}
		out.out, out.sampled = append(out.out, o), append(out.sampled, s)
	}
	return
}
