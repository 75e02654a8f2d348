package serving

import (
	"fmt"
	"math"

	"github.com/partbench/partbench/sim"
)

// Routers: how requests are spread over data-parallel replicas.
const (
	RouterRoundRobin = "round-robin"
	// RouterLeastOutstanding sends a request to the replica with the fewest
	// requests sent and not finished (the lowest index on a tie).
	RouterLeastOutstanding = "least-outstanding"
)

// Coster prices one iteration of a replica (sim.IterationModel does).
type Coster interface {
	TimeS(sim.IterationShape) (float64, error)
}

// StageCoster also prices each pipeline stage of an iteration (the stage's
// ops and its link onward). With Stages() > 1 a replica runs one virtual
// engine per stage, as vLLM does under pipeline parallelism: each has its
// own scheduler and an equal share of the KV blocks, and their iterations
// overlap, each stage serving one iteration at a time in the order they
// started.
type StageCoster interface {
	Coster
	Stages() int
	StageTimesS(sh sim.IterationShape, dst []float64) ([]float64, error)
}

// Config is a serving deployment and its client.
type Config struct {
	Scheduler SchedulerConfig
	Replicas  int
	Router    string
	// MaxConcurrency caps the requests sent and not finished, as
	// benchmark_serving's --max-concurrency (0: no cap). A request held back
	// is sent when one finishes; its latencies count from when it is sent.
	MaxConcurrency int
}

// Validate names the flag and the allowed values of a wrong field.
func (c Config) Validate() error {
	if err := c.Scheduler.Validate(); err != nil {
		return err
	}
	if c.Replicas < 1 || c.Replicas > 1<<16 {
		return fmt.Errorf("replicas: must be in [1, %d] (got %d)", 1<<16, c.Replicas)
	}
	if c.Router != RouterRoundRobin && c.Router != RouterLeastOutstanding {
		return fmt.Errorf("--router: must be one of round-robin, least-outstanding (got %q)", c.Router)
	}
	if c.MaxConcurrency < 0 {
		return fmt.Errorf("--max-concurrency: must be ≥ 0, 0 for no cap (got %d)", c.MaxConcurrency)
	}
	return nil
}

// RequestResult is one request's timeline, in seconds from the start of
// the run. A failed request has Error set and no token times.
type RequestResult struct {
	ID          int     `json:"id"`
	InputLen    int     `json:"input_len"`
	OutputLen   int     `json:"output_len"`
	ArrivalS    float64 `json:"arrival_s"`
	SentS       float64 `json:"sent_s"`
	FirstTokenS float64 `json:"first_token_s"`
	EndS        float64 `json:"end_s"`
	Replica     int     `json:"replica"`
	Preemptions int     `json:"preemptions"`
	Swaps       int     `json:"swaps"`
	Error       string  `json:"error,omitempty"`
}

// Result is a simulated run: every request's timeline, the inter-token
// latencies (each Weight tokens of one iteration share a Value), and the
// counts Little's law is checked with.
type Result struct {
	Requests    []RequestResult
	ITL         Weighted
	Preemptions int
	// Swaps is the preemptions that swapped out (of Preemptions).
	Swaps      int
	Iterations int
	// SeqSteps is Σ over iterations of the sequences in the batch: the
	// simulator's work.
	SeqSteps int64
	// InSystemS is ∫ N(t) dt over the run, N the requests sent and not
	// finished, integrated event by event (independently of the per-request
	// times), for Little's law: InSystemS / DurationS = throughput × mean E2EL.
	InSystemS float64
	// DurationS runs from the first request's arrival to the last event.
	DurationS float64
}

// Weighted is a sample whose Value[i] occurs Weight[i] times.
type Weighted struct {
	Value, Weight []float64
}

func (w *Weighted) add(v, n float64) {
	w.Value = append(w.Value, v)
	w.Weight = append(w.Weight, n)
}

// engine is one scheduler: a replica's, or one of its virtual engines
// under pipeline parallelism.
type engine struct {
	sched   *Scheduler
	replica int
	busy    bool
	startS  float64
	endS    float64
	out     int // outstanding requests routed here
	shape   sim.IterationShape
}

type replica struct {
	out       int
	engines   []int     // indices into run.engines
	stageFree []float64 // when each pipeline stage is next free
}

// run is one simulation's state.
type run struct {
	cfg      Config
	cost     Coster
	staged   StageCoster // nil: one engine per replica, priced whole
	stageBuf []float64
	engines  []engine
	reps     []replica
	seqs     []Seq
	res      *Result
	lastTok  []float64
	rr       int
	inSys    int
	lastT    float64
	held     []int // requests held back by MaxConcurrency, FIFO
	heldHead int
}

// Simulate runs reqs (sorted by arrival) through cfg's replicas, each
// iteration priced by cost. It fails only on bad input or a cost error;
// requests no replica can ever hold are failed and counted.
func Simulate(reqs []Request, cfg Config, cost Coster) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for i := 1; i < len(reqs); i++ {
		if reqs[i].ArrivalS < reqs[i-1].ArrivalS {
			return nil, fmt.Errorf("serving: request %d arrives before request %d", reqs[i].ID, reqs[i-1].ID)
		}
	}
	r := &run{cfg: cfg, cost: cost, reps: make([]replica, cfg.Replicas), seqs: make([]Seq, len(reqs)),
		res: &Result{Requests: make([]RequestResult, len(reqs))}, lastTok: make([]float64, len(reqs))}
	stages := 1
	if sc, ok := cost.(StageCoster); ok && sc.Stages() > 1 {
		r.staged, stages = sc, sc.Stages()
	}
	sc := cfg.Scheduler
	sc.NumBlocks /= stages
	if sc.NumBlocks < 1 {
		return nil, fmt.Errorf("KV cache: %d blocks cannot be shared by %d pipeline stages' virtual engines (--num-gpu-blocks-override)", cfg.Scheduler.NumBlocks, stages)
	}
	for i := range r.reps {
		r.reps[i].stageFree = make([]float64, stages)
		for v := 0; v < stages; v++ {
			s, err := NewScheduler(sc)
			if err != nil {
				return nil, err
			}
			r.reps[i].engines = append(r.reps[i].engines, len(r.engines))
			r.engines = append(r.engines, engine{sched: s, replica: i})
		}
	}
	for i, q := range reqs {
		r.seqs[i] = Seq{Req: q, Slot: i}
		r.res.Requests[i] = RequestResult{ID: q.ID, InputLen: q.InputLen, OutputLen: q.OutputLen, ArrivalS: q.ArrivalS}
	}
	next := 0
	for {
		// The earliest event: an iteration ending (first on a tie: it may
		// free a slot for the arrival) or an arrival.
		ri, tc := -1, math.Inf(1)
		for i := range r.engines {
			if r.engines[i].busy && r.engines[i].endS < tc {
				ri, tc = i, r.engines[i].endS
			}
		}
		ta := math.Inf(1)
		if next < len(reqs) {
			ta = reqs[next].ArrivalS
		}
		if ri < 0 && next >= len(reqs) {
			break
		}
		if ri >= 0 && tc <= ta {
			if err := r.finishIteration(ri, tc); err != nil {
				return nil, err
			}
			continue
		}
		// Every request arriving at ta is queued before an idle replica
		// schedules, so simultaneous arrivals share an iteration.
		for ; next < len(reqs) && reqs[next].ArrivalS == ta; next++ {
			if r.cfg.MaxConcurrency > 0 && r.inSys >= r.cfg.MaxConcurrency {
				r.held = append(r.held, next)
			} else {
				r.send(next, ta)
			}
		}
		if err := r.startIdle(ta); err != nil {
			return nil, err
		}
	}
	for _, rep := range r.engines {
		r.res.Preemptions += rep.sched.Preemptions()
		r.res.Swaps += rep.sched.Swaps()
		if !rep.sched.Idle() {
			return nil, fmt.Errorf("serving: internal error: a replica stopped with %d waiting and %d running requests", rep.sched.Waiting(), rep.sched.Running())
		}
	}
	if len(reqs) > 0 {
		r.res.DurationS = r.lastT - reqs[0].ArrivalS
	}
	if err := r.res.checkLittle(); err != nil {
		return nil, err
	}
	return r.res, nil
}

// account integrates N(t) up to t and moves the clock.
func (r *run) account(t float64) {
	r.res.InSystemS += float64(r.inSys) * (t - r.lastT)
	r.lastT = t
}

// route picks a replica by the router, then its virtual engine with the
// fewest outstanding requests (the lowest on a tie), as vLLM does.
func (r *run) route() (rep, eng int) {
	if r.cfg.Router == RouterRoundRobin {
		rep = r.rr
		r.rr = (r.rr + 1) % len(r.reps)
	} else {
		for i := range r.reps {
			if r.reps[i].out < r.reps[rep].out {
				rep = i
			}
		}
	}
	es := r.reps[rep].engines
	eng = es[0]
	for _, e := range es[1:] {
		if r.engines[e].out < r.engines[eng].out {
			eng = e
		}
	}
	return rep, eng
}

// startIdle starts an iteration on every idle replica that has work.
func (r *run) startIdle(t float64) error {
	for i := range r.engines {
		if !r.engines[i].busy && !r.engines[i].sched.Idle() {
			if err := r.startIteration(i, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// send hands request i to a replica at t; an idle replica starts when the
// caller calls startIdle.
func (r *run) send(i int, t float64) {
	r.account(t)
	rr := &r.res.Requests[i]
	rr.SentS = t
	ri, ei := r.route()
	seq := &r.seqs[i]
	seq.Replica, rr.Replica = ri, ri
	rep := &r.engines[ei]
	if err := rep.sched.Add(seq); err != nil {
		rr.Error = err.Error()
		rr.EndS = t
		return
	}
	r.inSys++
	rep.out++
	r.reps[ri].out++
}

func (r *run) startIteration(ri int, t float64) error {
	rep := &r.engines[ri]
	batch := rep.sched.Schedule()
	if len(batch) == 0 {
		rep.busy = false
		if !rep.sched.Idle() {
			return fmt.Errorf("serving: internal error: replica %d schedules nothing with %d waiting and %d running", ri, rep.sched.Waiting(), rep.sched.Running())
		}
		return nil
	}
	rep.shape = sim.IterationShape{SwapTokens: rep.sched.SwapTokens()}
	for _, b := range batch {
		rep.shape.Add(b.Q, b.Past, b.Sample)
	}
	end, err := r.price(rep, t)
	if err != nil {
		return err
	}
	rep.busy, rep.startS, rep.endS = true, t, end
	r.res.Iterations++
	r.res.SeqSteps += int64(len(batch))
	return nil
}

// price returns when an iteration started at t ends: t + its time, or,
// through a pipeline, each stage taken in turn as soon as both the
// iteration reaches it and the stage is free.
func (r *run) price(e *engine, t float64) (float64, error) {
	bad := func(d float64) error {
		return fmt.Errorf("serving: an iteration of %d tokens over %d sequences was priced %g s", e.shape.Tokens, e.shape.Seqs, d)
	}
	if bc, ok := r.cost.(BatchCoster); ok {
		d, err := bc.BatchTimeS(e.sched.batch)
		if err != nil {
			return 0, err
		}
		if !(d > 0) || math.IsInf(d, 0) {
			return 0, bad(d)
		}
		return t + d, nil
	}
	if r.staged == nil {
		d, err := r.cost.TimeS(e.shape)
		if err != nil {
			return 0, err
		}
		if !(d > 0) || math.IsInf(d, 0) {
			return 0, bad(d)
		}
		return t + d, nil
	}
	ts, err := r.staged.StageTimesS(e.shape, r.stageBuf[:0])
	r.stageBuf = ts
	if err != nil {
		return 0, err
	}
	free := r.reps[e.replica].stageFree
	cur := t
	for s, d := range ts {
		if !(d >= 0) || math.IsInf(d, 0) {
			return 0, bad(d)
		}
		cur = max(cur, free[s]) + d
		free[s] = cur
	}
	if !(cur > t) {
		return 0, bad(cur - t)
	}
	return cur, nil
}

func (r *run) finishIteration(ri int, t float64) error {
	r.account(t)
	rep := &r.engines[ri]
	consecutive := 0.0 // tokens whose previous token ended the previous iteration
	rep.sched.Complete(func(seq *Seq, done bool) {
		i := seq.Slot
		rr := &r.res.Requests[i]
		if seq.Generated == 1 {
			rr.FirstTokenS = t
		} else if r.lastTok[i] == rep.startS {
			consecutive++
		} else {
			r.res.ITL.add(t-r.lastTok[i], 1)
		}
		r.lastTok[i] = t
		if done {
			rr.EndS = t
			rr.Preemptions, rr.Swaps = seq.Preemptions, seq.Swaps
			r.inSys--
			rep.out--
			r.reps[rep.replica].out--
		}
	})
	if consecutive > 0 {
		r.res.ITL.add(t-rep.startS, consecutive)
	}
	rep.busy = false
	for r.heldHead < len(r.held) && r.inSys < r.cfg.MaxConcurrency {
		r.send(r.held[r.heldHead], t)
		r.heldHead++
	}
	return r.startIdle(t)
}

// LittleTolerance is the relative tolerance of Little's law on a run. Every
// request is sent and finishes (or fails) inside the run, so ∫N dt, summed
// event by event, equals Σ (end − sent) over the requests up to float
// rounding (about 1e-16 per event); 1e-9 leaves room for 10⁶ events.
const LittleTolerance = 1e-9

// checkLittle holds Little's law on every run: the time-average of the
// requests in the system (InSystemS, integrated as events happen) against
// throughput × mean time in system (Σ end − sent over the finished
// requests). A difference is a bookkeeping bug, reported as one.
func (res *Result) checkLittle() error {
	var sum float64
	for _, r := range res.Requests {
		if r.Error == "" {
			sum += r.EndS - r.SentS
		}
	}
	if d := math.Abs(res.InSystemS - sum); d > LittleTolerance*math.Max(sum, 1e-12) && d > 1e-12 {
		return fmt.Errorf("serving: internal error: Little's law: ∫N dt = %.12g s, Σ time in system = %.12g s", res.InSystemS, sum)
	}
	return nil
}
