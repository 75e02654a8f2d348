package calib

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// NewCompute makes rank's compute backend for plan: the op times are
// measured through the exec.Compute interface, the calls a run makes.
type NewCompute func(plan *partition.Plan, rank int) (pexec.Compute, error)

// CPUCompute is the registered CPU backend's Compute (the default
// NewCompute).
func CPUCompute(plan *partition.Plan, rank int) (pexec.Compute, error) {
	return deviceCompute(configs.BackendCPU, 0, plan, rank)
}

// DefaultOpConfigs are the configs whose Programs' compute ops are timed
// into the op-time table: the test configs the CPU backend runs (every
// rank's prefill and decode Programs) — tp2 and pp2 among them, whose 2
// ranks are the placement at which a 2-core host's collectives are
// measured in place (inplace.go).
var DefaultOpConfigs = []string{
	"test/single-tiny", "test/tp2-tiny", "test/pp2-tiny", "test/tp4-tiny", "test/pp4-tiny", "test/tp2pp2-tiny", "test/tp2-dp2-tiny",
	"test/layerwise16-tiny", "test/gpt2-tiny",
}

// opPlans builds the plans of configs.
func opPlans(names []string) ([]*partition.Plan, error) {
	var out []*partition.Plan
	for _, name := range names {
		cfg, err := loadConfig(name)
		if err != nil {
			return nil, err
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, plan)
	}
	return out, nil
}

// opRankCount is how many (config, rank) pairs the plans have: the
// progress steps of one measureOpTimes.
func opRankCount(plans []*partition.Plan) int {
	n := 0
	for _, p := range plans {
		n += len(p.Ranks)
	}
	return n
}

// opPass is one pass whose compute ops are timed: a phase's Program at a
// cache length.
type opPass struct {
	phase partition.Phase
	past  func(op *partition.Op) int
}

// passesOf are the passes a run makes, in its order — the prefill, then
// every decode step — and one more decode step at the Program's
// representative cache length (Plan.DecodePast, what sim prices decode at).
func passesOf(plan *partition.Plan) []opPass {
	ps := []opPass{{partition.Prefill, pexec.Past(plan, partition.Prefill, 0)}}
	for s := 0; s < plan.Config.Workload.OutputTokens-1; s++ {
		ps = append(ps, opPass{partition.Decode, pexec.Past(plan, partition.Decode, s)})
	}
	rep := plan.DecodePast()
	return append(ps, opPass{partition.Decode, func(*partition.Op) int { return rep }})
}

// measureOpTimes times the compute ops of every rank's Programs of plans
// through exec/cpu **in sequence, as a run executes them** — each op timed
// in place between the ops around it, so its caches hold what they hold in
// a run — with n concurrent workers (each its own Compute of the rank, all
// running the passes at once, as n local ranks of a run share the host's
// cores). Every (config, rank) runs its passes (passesOf) iterations times
// after one warm-up; each op's time joins the samples of its key
// (sim.OpKey, with attention's context at the pass's cache length). An
// entry's time is the median over iterations of the iteration's mean (over
// occurrences in the Program and workers): a pass's time is the sum of its
// ops', and the mean of a sum is the sum of the means — on a host whose
// cores other ranks share, an op's time then includes its share of the
// waits for a core, which a median of single samples would drop (a short
// op is rarely the one preempted, and then for a whole time slice); the
// median over iterations keeps a burst of another job's load in a few
// iterations out. Ranks = n.
//
// A device's Compute (pexec.DeviceClock) is timed on its own clock: a mark
// on its queue before a pass and after each op, the pass queued without a
// wait between ops; hold, when set, first queues work that keeps the
// device busy for twice the host time the pass took to queue the last
// time (10 ms the first), so the ops then run back to back as in a
// captured graph and each op's time is the device's, not the host's
// launch rate.
func measureOpTimes(ctx context.Context, plans []*partition.Plan, n, iterations int, newCompute NewCompute, hold Hold, step func() error) ([]configs.OpTime, error) {
	return measureOpTimesBlocks(ctx, plans, n, iterations, blockOpts{}, newCompute, hold, step)
}

// blockOpts are measureOpTimesBlocks' options beyond measureOpTimes'.
type blockOpts struct {
	// minBlock: each iteration's passes run again until it lasts this
	// long (0: once).
	minBlock time.Duration
	// stretch, with one worker, is set to the measured blocks' wall time
	// over the process's CPU time in them: the stretch the measurement ran
	// at (1 with a core to itself; 0 where the host does not say).
	stretch *float64
	// onCore, with one worker, times each op by the lesser of its wall
	// time and its thread's CPU time (the worker held on its OS thread)
	// less the clock's own cost, where the host gives it: the op's time
	// on a core, without the waits for one — the wall time where the op
	// kept its core, as the single-rank table is timed, the CPU time where
	// it was descheduled (opprocs.go). Elsewhere, and without it, the wall
	// time.
	onCore bool
	// turn, when set, is called before each pass and done after it: the
	// pass runs while this process holds the turn (opprocs.go, taking
	// turns), its received buffers filled inside it as a run's receive
	// fills them.
	turn, done func() error
	// ranks, when set, are the ranks of a plan whose passes are timed
	// (nil: every rank).
	ranks func(*partition.Plan) []int
}

// stageRanks are a plan's first tensor-parallel rank of each pipeline
// stage in the first replica: the ranks whose compute ops stand for all
// (the other ranks of a stage, and every replica, compute the same shapes).
func stageRanks(plan *partition.Plan) []int {
	out := make([]int, plan.PP)
	for s := range out {
		out[s] = plan.RankOf(s, 0)
	}
	return out
}

// measureOpTimesBlocks is measureOpTimes with each of the iterations a
// block (bo.minBlock) and an entry's time the median over blocks of the
// block's mean; bo.stretch and bo.onCore as blockOpts says.
func measureOpTimesBlocks(ctx context.Context, plans []*partition.Plan, n, iterations int, bo blockOpts, newCompute NewCompute, hold Hold, step func() error) ([]configs.OpTime, error) {
	minBlock, stretch := bo.minBlock, bo.stretch
	onCore := bo.onCore && n == 1
	if onCore {
		if _, ok := threadCPU(); !ok {
			onCore = false
		}
	}
	var wallSum, cpuSum time.Duration
	cpuOK := stretch != nil && n == 1
	if stretch != nil {
		*stretch = 0
		defer func() {
			if cpuOK && cpuSum > 0 {
				*stretch = wallSum.Seconds() / cpuSum.Seconds()
			}
		}()
	}
	if newCompute == nil {
		newCompute = CPUCompute
	}
	type key struct {
		kind, shape   string
		size, context int64
	}
	samples := map[key][]float64{}
	sums := map[key][]float64{} // per iteration: the samples' sum and count
	counts := map[key][]int{}
	var order []key
	ranksOf := bo.ranks
	if ranksOf == nil {
		ranksOf = func(p *partition.Plan) []int { return everyRank(len(p.Ranks)) }
	}
	for _, plan := range plans {
		passes := passesOf(plan)
		for _, rank := range ranksOf(plan) {
			progs := map[partition.Phase]partition.Program{
				partition.Prefill: plan.Program(rank, partition.Prefill),
				partition.Decode:  plan.Program(rank, partition.Decode),
			}
			workers := make([][]key, n)   // keys of the ops timed, per worker, in order
			times := make([][]float64, n) // and their times
			iters := make([][]int, n)     // and their iterations
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := 0; w < n; w++ {
				c, err := newCompute(plan, rank)
				if err != nil {
					return nil, err
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer c.Close()
					<-start
					// A device's Compute (pexec.DeviceClock) is timed by its
					// own marks on its queue, one after each op, the pass
					// queued without a wait between ops as a run queues it;
					// any other by the host clock around Exec and Sync.
					clock, _ := c.(pexec.DeviceClock)
					var clockCost time.Duration // a threadCPU reading's own CPU time
					if onCore && clock == nil {
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						clockCost = threadClockCost()
					}
					queued := make([]time.Duration, len(passes)) // host time to queue each pass, the last time
					for it := 0; it <= iterations; it++ {        // iteration 0 warms up
						cpu0, _ := processCPU()
						for blockStart := time.Now(); ; {
							for pi, ps := range passes {
								prog := progs[ps.phase]
								if bo.turn != nil {
									if err := bo.turn(); err != nil {
										errs[w] = fmt.Errorf("%s rank %d %s: await the turn: %w", plan.Config.Name, rank, ps.phase, err)
										return
									}
								}
								if err := fillReceived(c, prog); err != nil {
									errs[w] = fmt.Errorf("%s rank %d %s: %w", plan.Config.Name, rank, ps.phase, err)
									return
								}
								var passKeys []key
								if clock != nil && hold != nil {
									d := 10 * time.Millisecond
									if queued[pi] > 0 {
										d = 2 * queued[pi]
									}
									if err := hold(c, d); err != nil {
										errs[w] = fmt.Errorf("%s rank %d %s: hold the device: %w", plan.Config.Name, rank, ps.phase, err)
										return
									}
								}
								passStart := time.Now()
								if clock != nil {
									if err := clock.Mark(); err != nil {
										errs[w] = fmt.Errorf("%s rank %d %s: %w", plan.Config.Name, rank, ps.phase, err)
										return
									}
								}
								for i := range prog.Ops {
									op := &prog.Ops[i]
									if _, comm := op.Kind.Comm(); comm {
										continue
									}
									past := ps.past(op)
									o := *op
									o.Past = past
									k := key{}
									k.kind, k.shape, k.size, k.context = sim.OpKey(&o)
									var c0 time.Duration
									if onCore {
										c0, _ = threadCPU()
									}
									t0 := time.Now()
									err := c.Exec(ctx, op, past)
									switch {
									case err == nil && clock != nil:
										err = clock.Mark()
									case err == nil:
										err = c.Sync(ctx) // a device's queued op done (a no-op on the CPU)
									}
									if err != nil {
										errs[w] = fmt.Errorf("%s rank %d %s %s: %w", plan.Config.Name, rank, ps.phase, op.Name, err)
										return
									}
									wall := time.Since(t0)
									d := wall.Seconds()
									if onCore && clock == nil {
										// The wall time where the op kept its
										// core (as the single-rank table
										// times it), its CPU time where it
										// waited for one.
										c1, _ := threadCPU()
										d = min(wall, max(c1-c0-clockCost, time.Nanosecond)).Seconds()
									}
									if clock != nil {
										passKeys = append(passKeys, k)
										continue
									}
									if it == 0 {
										continue
									}
									workers[w] = append(workers[w], k)
									times[w] = append(times[w], d)
									iters[w] = append(iters[w], it-1)
								}
								if bo.done != nil {
									if err := bo.done(); err != nil {
										errs[w] = fmt.Errorf("%s rank %d %s: hand the turn on: %w", plan.Config.Name, rank, ps.phase, err)
										return
									}
								}
								if clock == nil {
									continue
								}
								queued[pi] = time.Since(passStart)
								ds, err := markDurations(clock, len(passKeys))
								if err == nil {
									err = c.Sync(ctx) // a device-side fault of the pass
								}
								if err != nil {
									errs[w] = fmt.Errorf("%s rank %d %s: %w", plan.Config.Name, rank, ps.phase, err)
									return
								}
								if it == 0 {
									continue
								}
								for i, k := range passKeys {
									workers[w] = append(workers[w], k)
									times[w] = append(times[w], ds[i])
									iters[w] = append(iters[w], it-1)
								}
							}
							if it == 0 || minBlock <= 0 || time.Since(blockStart) >= minBlock {
								if cpuOK {
									if cpu1, ok := processCPU(); !ok {
										cpuOK = false
									} else if it > 0 {
										wallSum += time.Since(blockStart)
										cpuSum += cpu1 - cpu0
									}
								}
								break
							} // else the block runs the passes again until it lasts minBlock
						}
					}
				}()
			}
			close(start)
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return nil, fmt.Errorf("op times: %w", err)
				}
			}
			for w := range workers {
				for i, k := range workers[w] {
					if samples[k] == nil {
						order = append(order, k)
					}
					samples[k] = append(samples[k], times[w][i])
					if sums[k] == nil {
						sums[k], counts[k] = make([]float64, iterations), make([]int, iterations)
					}
					sums[k][iters[w][i]] += times[w][i]
					counts[k][iters[w][i]]++
				}
			}
			if err := step(); err != nil {
				return nil, err
			}
		}
	}
	out := make([]configs.OpTime, 0, len(order))
	for _, k := range order {
		sp := spreadOf(samples[k])
		var means []float64 // one per iteration
		for it, c := range counts[k] {
			if c > 0 {
				means = append(means, sums[k][it]/float64(c))
			}
		}
		t := medianOf(means)
		if !(t > 0) {
			continue // queued nothing the clock could see: the roofline prices it
		}
		out = append(out, configs.OpTime{Kind: k.kind, Shape: k.shape, Size: k.size, Context: k.context,
			TimeS: t, TimeMinS: min(sp.Min, t), TimeMaxS: max(sp.Max, t), Samples: sp.N, Ranks: n})
	}
	sortOpTimes(out)
	return out, nil
}

// Hold queues on c's device work that keeps it busy for d and returns at
// once (measureOpTimes).
type Hold func(c pexec.Compute, d time.Duration) error

// commOpTimes turns the link samples into op-time entries: all_reduce by
// group size and bytes, sendrecv's one-way time as a send of that many
// bytes between two ranks, measured with ranks ranks on the host.
func commOpTimes(samples []configs.CommSample, ranks, repeats int) []configs.OpTime {
	var out []configs.OpTime
	for _, s := range samples {
		kind := s.Op
		switch s.Op {
		case opSendRecv:
			kind = string(partition.Send)
		case opAllReducePairs: // a pair's all_reduce, every pair at once
			kind = opAllReduce
		case opAllGatherPairs: // a pair's all_gather, every pair at once
			kind = opAllGather
		}
		out = append(out, configs.OpTime{Kind: kind, Shape: fmt.Sprintf("ranks=%d", s.Ranks), Size: s.Bytes,
			TimeS: s.TimeMedianS, TimeMinS: s.TimeMinS, TimeMaxS: s.TimeMaxS, Samples: repeats, Ranks: ranks})
	}
	return out
}

// fillReceived writes values into every activation buffer prog's recv ops
// fill in a run (measureOpTimes runs no communication): left at zero,
// a GEMM reading them would be timed too fast — gonum's sgemm skips the
// zero elements of its left operand. Values are a fixed pattern in
// (−1, 1), none zero, written before every pass (the residual adds of a pass grow
// them otherwise).
func fillReceived(c pexec.Compute, prog partition.Program) error {
	for i := range prog.Ops {
		op := &prog.Ops[i]
		if op.Kind != partition.Recv || op.Payload == partition.PayloadTokens {
			continue // token ids stay ids (0)
		}
		b, err := c.Buffer(op.Out, op.Microbatch, op.Elems)
		if err != nil {
			return fmt.Errorf("%s: %w", op.Name, err)
		}
		f, ok := b.(pexec.F32)
		if !ok {
			continue // a device's buffer: its GEMM does not skip zeros
		}
		for j := range f {
			f[j] = (float32((j*7919)%2000)+0.5)/1000 - 1 // never 0
		}
	}
	return nil
}

// markDurations reads a pass's marks from clock — one before its first op
// and one after each of its n ops — and returns each op's device time, the
// difference of the marks around it.
func markDurations(clock pexec.DeviceClock, n int) ([]float64, error) {
	ts, err := clock.Marks()
	if err != nil {
		return nil, err
	}
	if len(ts) != n+1 {
		return nil, fmt.Errorf("device clock: %d marks for %d ops (want %d)", len(ts), n, n+1)
	}
	out := make([]float64, n)
	for i := range out {
		d := ts[i+1] - ts[i]
		if math.IsNaN(d) || d < 0 {
			return nil, fmt.Errorf("device clock: op %d of the pass has no device time (marks %g, %g)", i, ts[i], ts[i+1])
		}
		out[i] = d
	}
	return out, nil
}

// threadClockCost is the CPU time one threadCPU reading adds to the
// difference of two (the median of 200 back-to-back pairs), taken off
// every op timed on the core.
func threadClockCost() time.Duration {
	ds := make([]float64, 200)
	for i := range ds {
		a, _ := threadCPU()
		b, _ := threadCPU()
		ds[i] = float64(b - a)
	}
	return time.Duration(medianOf(ds))
}

// sortOpTimes orders op-time entries by kind, shape, size and context,
// the order a profile lists them in.
func sortOpTimes(out []configs.OpTime) {
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
}
