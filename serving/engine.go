package serving

import (
	"context"
	"fmt"
	pexec "github.com/partbench/partbench/exec"
	"math"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// This file is the measured side: an engine that runs the scheduler's
// iterations for real, on the CPU backend, with requests arriving on the
// wall clock, and the modeled twin that prices the iterations the way the
// engine runs them.

// Executor runs one scheduled iteration for real.
type Executor interface {
	Run(ctx context.Context, batch []Scheduled) error
	// Released frees what a sequence held (its KV slot).
	Released(seq *Seq)
}

// CPUExecutor runs each scheduled sequence's pass on exec/cpu: the
// engine's plan has one micro-batch of one sequence per slot, each with its
// own KV cache of the whole context; a sequence takes a slot when first
// scheduled and frees it when it finishes or is preempted by recompute.
// Each pass is partition.Plan.Pass at the sequence's own position.
type CPUExecutor struct {
	plan   *partition.Plan
	c      pexec.Compute
	free   []int
	slotOf map[*Seq]int
}

// EngineConfig is the config an engine of slots sequences runs: the
// model, hardware and run seed of cfg on one rank, with a KV cache of
// context tokens per slot and buffers for a pass over a whole sequence (a
// recompute after preemption prefills prompt and output at once). Every
// position below the context counts as prompt, so the seeded token schedule
// feeds each pass (token values do not change the work).
func EngineConfig(cfg *configs.Config, slots, context int) (*configs.Config, error) {
	if cfg.Parallel.Ranks() != 1 {
		return nil, fmt.Errorf("--measure: the engine runs one rank on this machine's CPU: config %s has tp × pp × dp = %d (use a single-rank config such as test/single-tiny)", cfg.Name, cfg.Parallel.Ranks())
	}
	n := *cfg
	n.Name = cfg.Name + "-engine"
	// The smallest output the workload takes (2) leaves a prompt of context
	// positions: every position a request reaches.
	n.Workload = configs.Workload{Batch: slots, Context: context + 2, OutputTokens: 2, Phases: []string{"prefill", "decode"}}
	n.Parallel = configs.Parallel{TP: 1, PP: 1, DP: 1, Microbatches: slots, Schedule: "fill-drain", PrefillChunk: context}
	return &n, nil
}

// NewCPUExecutor allocates the engine's model on the CPU backend, reached
// through the backend registry.
func NewCPUExecutor(plan *partition.Plan) (*CPUExecutor, error) {
	_, newCompute, err := backend.Default().DeviceCompute("cpu", launch.Env{Size: 1, LocalSize: 1})
	if err != nil {
		return nil, err
	}
	c, err := newCompute(plan, 0)
	if err != nil {
		return nil, err
	}
	e := &CPUExecutor{plan: plan, c: c, slotOf: map[*Seq]int{}}
	for i := plan.Microbatches - 1; i >= 0; i-- {
		e.free = append(e.free, i)
	}
	return e, nil
}

// Close frees the backend's memory.
func (e *CPUExecutor) Close() error { return e.c.Close() }

// Released returns a sequence's slot.
func (e *CPUExecutor) Released(seq *Seq) {
	if s, ok := e.slotOf[seq]; ok {
		delete(e.slotOf, seq)
		e.free = append(e.free, s)
	}
}

// Run executes the batch, one sequence's pass after another.
func (e *CPUExecutor) Run(ctx context.Context, batch []Scheduled) error {
	for _, b := range batch {
		slot, ok := e.slotOf[b.Seq]
		if !ok {
			if len(e.free) == 0 {
				return fmt.Errorf("serving engine: no KV slot free for request %d (%d slots)", b.Seq.Req.ID, e.plan.Microbatches)
			}
			slot = e.free[len(e.free)-1]
			e.free = e.free[:len(e.free)-1]
			e.slotOf[b.Seq] = slot
		}
		if limit := e.plan.Config.Workload.PromptTokens(); b.Past+b.Q > limit || b.Q > e.plan.PrefillChunk {
			return fmt.Errorf("serving engine: request %d: %d tokens after %d do not fit a slot of %d tokens and passes of %d",
				b.Seq.Req.ID, b.Q, b.Past, limit, e.plan.PrefillChunk)
		}
		phase := partition.Decode
		if b.Q > 1 {
			phase = partition.Prefill
		}
		ops := e.plan.Pass(0, phase, slot, 1, b.Q, b.Past, b.Sample)
		for i := range ops {
			if err := e.c.Exec(ctx, &ops[i], b.Past); err != nil {
				return fmt.Errorf("serving engine: request %d, %s: %w", b.Seq.Req.ID, ops[i].Name, err)
			}
		}
	}
	return e.c.Sync(ctx)
}

// Measure runs reqs through one scheduler whose iterations exec runs, on
// the wall clock: each request is sent at its arrival (or, under
// MaxConcurrency, when a request finishes), joins the scheduler at the next
// iteration boundary, and its tokens are timed when the iteration that
// makes them ends. A request the scheduler refuses, or still unfinished when
// ctx ends, is failed and counted.
func Measure(ctx context.Context, reqs []Request, cfg Config, ex Executor) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Replicas != 1 {
		return nil, fmt.Errorf("--measure: the engine is one replica (parallel.dp = 1)")
	}
	sched, err := NewScheduler(cfg.Scheduler)
	if err != nil {
		return nil, err
	}
	sched.Released = ex.Released
	res := &Result{Requests: make([]RequestResult, len(reqs))}
	seqs := make([]Seq, len(reqs))
	lastTok := make([]float64, len(reqs))
	for i, q := range reqs {
		seqs[i] = Seq{Req: q, Slot: i}
		res.Requests[i] = RequestResult{ID: q.ID, InputLen: q.InputLen, OutputLen: q.OutputLen, ArrivalS: q.ArrivalS}
	}
	start := time.Now()
	now := func() float64 { return time.Since(start).Seconds() }
	inSys, lastT := 0, 0.0
	account := func(t float64) {
		res.InSystemS += float64(inSys) * (t - lastT)
		lastT = t
	}
	next := 0
	var held []int
	send := func(i int, t float64) {
		account(t)
		rr := &res.Requests[i]
		rr.SentS = t
		if err := sched.Add(&seqs[i]); err != nil {
			rr.Error, rr.EndS = err.Error(), t
			return
		}
		inSys++
	}
	admit := func(t float64) {
		for ; next < len(reqs) && reqs[next].ArrivalS <= t; next++ {
			if cfg.MaxConcurrency > 0 && (len(held) > 0 || inSys >= cfg.MaxConcurrency) {
				held = append(held, next)
				continue
			}
			send(next, reqs[next].ArrivalS)
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			break
		}
		admit(now())
		if sched.Idle() && len(held) == 0 {
			if next >= len(reqs) {
				break
			}
			wait := time.Duration((reqs[next].ArrivalS - now()) * float64(time.Second))
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
				case <-t.C:
				}
				t.Stop()
			}
			continue
		}
		batch := sched.Schedule()
		if len(batch) == 0 {
			return nil, fmt.Errorf("serving engine: the scheduler holds %d waiting and %d running requests but schedules nothing", sched.Waiting(), sched.Running())
		}
		if err := ex.Run(ctx, batch); err != nil {
			if ctx.Err() != nil {
				break
			}
			return nil, err
		}
		res.Iterations++
		res.SeqSteps += int64(len(batch))
		t := now()
		account(t)
		sched.Complete(func(seq *Seq, done bool) {
			i := seq.Slot
			rr := &res.Requests[i]
			if seq.Generated == 1 {
				rr.FirstTokenS = t
			} else {
				res.ITL.add(t-lastTok[i], 1)
			}
			lastTok[i] = t
			if done {
				rr.EndS, rr.Preemptions = t, seq.Preemptions
				inSys--
			}
		})
		for len(held) > 0 && inSys < cfg.MaxConcurrency {
			i := held[0]
			held = held[1:]
			send(i, t)
		}
	}
	// What ctx cut short is failed, not dropped.
	t := now()
	account(t)
	for i := range res.Requests {
		rr := &res.Requests[i]
		if rr.Error == "" && !seqs[i].Done() {
			rr.Error = "not finished when the run ended: " + fmt.Sprint(context.Cause(ctx))
			if rr.EndS == 0 {
				rr.EndS = t
			}
		}
	}
	res.Preemptions = sched.Preemptions()
	if len(reqs) > 0 {
		res.DurationS = lastT - reqs[0].ArrivalS
	}
	return res, nil
}

// PerSequenceCost prices an iteration as CPUExecutor runs it: one pass
// per scheduled sequence, each priced alone by the iteration model.
type PerSequenceCost struct {
	M *sim.IterationModel
}

// TimeS prices a shape as one pass (BatchTimeS is what Simulate calls).
func (c PerSequenceCost) TimeS(sh sim.IterationShape) (float64, error) { return c.M.TimeS(sh) }

// BatchTimeS is Σ over the batch of each sequence's pass alone.
func (c PerSequenceCost) BatchTimeS(batch []Scheduled) (float64, error) {
	var t float64
	for _, b := range batch {
		var sh sim.IterationShape
		sh.Add(b.Q, b.Past, b.Sample)
		x, err := c.M.TimeS(sh)
		if err != nil {
			return 0, err
		}
		t += x
	}
	return t, nil
}

// BatchCoster prices an iteration from its batch, sequence by sequence;
// Simulate prefers it to Coster.TimeS when the cost implements it.
type BatchCoster interface {
	BatchTimeS(batch []Scheduled) (float64, error)
}

// MetricError is one metric modeled beside measured.
type MetricError struct {
	Key      string  `json:"metric"`
	Modeled  float64 `json:"modeled"`
	Measured float64 `json:"measured"`
	// RelErr is (modeled − measured) / measured, partbench's one sign.
	RelErr float64 `json:"rel_err"`
}

// CompareMetrics lists the headline metrics of a modeled and a measured
// run with the error of each.
func CompareMetrics(modeled, measured Metrics) []MetricError {
	var out []MetricError
	add := func(k string, a, b float64) {
		e := math.NaN()
		if b != 0 {
			e = (a - b) / b
		}
		out = append(out, MetricError{Key: k, Modeled: a, Measured: b, RelErr: e})
	}
	add("duration", modeled.DurationS, measured.DurationS)
	add("request_throughput", modeled.RequestThroughput, measured.RequestThroughput)
	add("output_throughput", modeled.OutputThroughput, measured.OutputThroughput)
	for _, x := range []struct {
		k    string
		a, b Dist
	}{{"ttft", modeled.TTFT, measured.TTFT}, {"tpot", modeled.TPOT, measured.TPOT}, {"itl", modeled.ITL, measured.ITL}, {"e2el", modeled.E2EL, measured.E2EL}} {
		add("mean_"+x.k+"_ms", x.a.MeanMs, x.b.MeanMs)
		add("median_"+x.k+"_ms", x.a.MedianMs, x.b.MedianMs)
		for i, p := range modeled.Ps {
			if i < len(x.a.Percentiles) && i < len(x.b.Percentiles) {
				add("p"+fmt.Sprint(p)+"_"+x.k+"_ms", x.a.Percentiles[i], x.b.Percentiles[i])
			}
		}
	}
	return out
}
