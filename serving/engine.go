package serving

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/partbench/partbench/sim"
)

// This file is the measured side: an engine that runs the scheduler's
// iterations for real, on the CPU backend, with requests arriving on the
// wall clock, and the modeled twin that prices the iterations the way the
// engine runs them.

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

// PerSequenceCost prices an iteration as PassExecutor runs it per sequence: one pass
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
	if !math.IsNaN(modeled.RequestGoodput) && !math.IsNaN(measured.RequestGoodput) {
		add("request_goodput", modeled.RequestGoodput, measured.RequestGoodput)
	}
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
