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
	outs := make([]rankOut, size)
	clocks := make([]stepClock, size)
	err := runRanksInProcess(ctx, plan, o.NewCompute, o.NewComms, func(ctx context.Context, r int, c Compute, comm Comm) (err error) {
		outs[r], err = runCheckRank(ctx, plan, r, steps, c, comm, &clocks[r])
		return err
	})
	if err != nil {
		return nil, err
	}
	run := &InProcessRun{}
	prev := clocks[0].ready
	for _, c := range clocks[1:] {
		if c.ready.Before(prev) {
			prev = c.ready
		}
	}
	for k := 0; k <= steps; k++ {
		last := clocks[0].ends[k]
		for r := 1; r < size; r++ {
			if clocks[r].ends[k].After(last) {
				last = clocks[r].ends[k]
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
			got, want = append(got, clocks[r].counted[k]), append(want, w)
			if d := commcount.Diff(w, clocks[r].counted[k]); len(d) > 0 {
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

// runRanksInProcess connects plan's ranks in this process (newComms),
// builds each rank's Compute (newCompute; it must implement Inspector) and
// runs rank for every rank as a goroutine, cancelling the others when one
// fails; it returns firstCause of the ranks' errors. The communicators and
// Computes are closed before it returns. Check, Generate and RunInProcess
// run their ranks through it.
func runRanksInProcess(ctx context.Context, plan *partition.Plan,
	newCompute func(*partition.Plan, int) (Compute, error), newComms func(int) []Comm,
	rank func(ctx context.Context, r int, c Compute, comm Comm) error) error {
	size := plan.Size()
	comms := newComms(size)
	if len(comms) != size {
		return fmt.Errorf("NewComms(%d) returned %d communicators", size, len(comms))
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
		c, err := newCompute(plan, r)
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		computes[r] = c
		if _, ok := c.(Inspector); !ok {
			return fmt.Errorf("rank %d: compute %T does not report outputs (Output, Sampled)", r, c)
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Go(func() {
			errs[r] = rank(ctx, r, computes[r], comms[r])
			if errs[r] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	return firstCause(errs)
}

// stepClock is what runCheckRank records of one rank for RunInProcess: the
// time it passed the barrier before the prefill, the end time of every
// step and the communication it counted during each.
type stepClock struct {
	ready   time.Time
	ends    []time.Time
	counted []commcount.Snapshot
	base    commcount.Snapshot
}
