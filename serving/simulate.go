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
	Error       string  `json:"error,omitempty"`
}

// Result is a simulated run: every request's timeline, the inter-token
// latencies (each Weight tokens of one iteration share a Value), and the
// counts Little's law is checked with.
type Result struct {
	Requests    []RequestResult
	ITL         Weighted
	Preemptions int
	Iterations  int
	// SeqSteps is Σ over iterations of the sequences in the batch: the
	// simulator's work.
	SeqSteps int64
	// InSystemS is ∫ N(t) dt over the run, N the requests sent and not
	// finished, integrated event by event (independently of the per-request
	// times), for Little's law: InSystemS / DurationS = throughput × mean E2EL.
	InSystemS float64
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

type replica struct {
	sched  *Scheduler
	busy   bool
	startS float64
	endS   float64
	out    int // outstanding requests routed here
	shape  sim.IterationShape
}

// run is one simulation's state.
type run struct {
	cfg      Config
	cost     Coster
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
	for i := range r.reps {
		s, err := NewScheduler(cfg.Scheduler)
		if err != nil {
			return nil, err
		}
		r.reps[i].sched = s
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
		for i := range r.reps {
			if r.reps[i].busy && r.reps[i].endS < tc {
				ri, tc = i, r.reps[i].endS
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
	for _, rep := range r.reps {
		r.res.Preemptions += rep.sched.Preemptions()
		if !rep.sched.Idle() {
			return nil, fmt.Errorf("serving: internal error: a replica stopped with %d waiting and %d running requests", rep.sched.Waiting(), rep.sched.Running())
		}
	}
	r.res.DurationS = r.lastT
	return r.res, nil
}

// account integrates N(t) up to t and moves the clock.
func (r *run) account(t float64) {
	r.res.InSystemS += float64(r.inSys) * (t - r.lastT)
	r.lastT = t
}

func (r *run) route() int {
	if r.cfg.Router == RouterRoundRobin {
		i := r.rr
		r.rr = (r.rr + 1) % len(r.reps)
		return i
	}
	best := 0
	for i := range r.reps {
		if r.reps[i].out < r.reps[best].out {
			best = i
		}
	}
	return best
}

// startIdle starts an iteration on every idle replica that has work.
func (r *run) startIdle(t float64) error {
	for i := range r.reps {
		if !r.reps[i].busy && !r.reps[i].sched.Idle() {
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
	ri := r.route()
	seq := &r.seqs[i]
	seq.Replica, rr.Replica = ri, ri
	rep := &r.reps[ri]
	if err := rep.sched.Add(seq); err != nil {
		rr.Error = err.Error()
		rr.EndS = t
		return
	}
	r.inSys++
	rep.out++
}

func (r *run) startIteration(ri int, t float64) error {
	rep := &r.reps[ri]
	batch := rep.sched.Schedule()
	if len(batch) == 0 {
		rep.busy = false
		if !rep.sched.Idle() {
			return fmt.Errorf("serving: internal error: replica %d schedules nothing with %d waiting and %d running", ri, rep.sched.Waiting(), rep.sched.Running())
		}
		return nil
	}
	rep.shape = sim.IterationShape{}
	for _, b := range batch {
		rep.shape.Add(b.Q, b.Past, b.Sample)
	}
	d, err := r.cost.TimeS(rep.shape)
	if err != nil {
		return err
	}
	if !(d > 0) || math.IsInf(d, 0) {
		return fmt.Errorf("serving: an iteration of %d tokens over %d sequences was priced %g s", rep.shape.Tokens, rep.shape.Seqs, d)
	}
	rep.busy, rep.startS, rep.endS = true, t, t+d
	r.res.Iterations++
	r.res.SeqSteps += int64(len(batch))
	return nil
}

func (r *run) finishIteration(ri int, t float64) error {
	r.account(t)
	rep := &r.reps[ri]
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
			rr.Preemptions = seq.Preemptions
			r.inSys--
			rep.out--
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
