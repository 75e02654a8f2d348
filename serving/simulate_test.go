package serving

import (
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// constCost prices every iteration at s seconds, whatever its shape, and
// checks the scheduler's limits on every shape it is handed.
type constCost struct {
	t      *testing.T
	s      float64
	cfg    SchedulerConfig
	shapes int
}

func (c *constCost) TimeS(sh sim.IterationShape) (float64, error) {
	c.shapes++
	if sh.Seqs > c.cfg.MaxNumSeqs {
		c.t.Errorf("iteration of %d sequences, --max-num-seqs %d", sh.Seqs, c.cfg.MaxNumSeqs)
	}
	if c.cfg.Policy == PolicyChunked && sh.Tokens > c.cfg.MaxNumBatchedTokens {
		c.t.Errorf("chunked iteration of %d tokens, budget %d", sh.Tokens, c.cfg.MaxNumBatchedTokens)
	}
	return c.s, nil
}

// littleTol is the relative tolerance of Little's law on a run (Simulate
// also holds every run to it, LittleTolerance).
const littleTol = LittleTolerance

// checkRun asserts Little's law (mean requests in system = throughput ×
// mean E2EL) and that every request either finished or failed.
func checkRun(t *testing.T, res *Result) Metrics {
	t.Helper()
	m := Summarize(res, []float64{99}, Goodput{})
	if m.Completed+m.Failed != len(res.Requests) {
		t.Fatalf("%d completed + %d failed of %d requests", m.Completed, m.Failed, len(res.Requests))
	}
	if m.Failed == 0 && m.Completed > 0 {
		l := m.RequestThroughput * m.E2EL.MeanMs / 1e3
		if math.Abs(m.MeanInSystem-l) > littleTol*l {
			t.Errorf("Little's law: mean in system %.12g, throughput × mean E2EL %.12g", m.MeanInSystem, l)
		}
	}
	for _, r := range res.Requests {
		if r.Error == "" && !(r.SentS >= r.ArrivalS && r.FirstTokenS > r.SentS && r.EndS >= r.FirstTokenS) {
			t.Fatalf("request %d: arrival %g, sent %g, first token %g, end %g", r.ID, r.ArrivalS, r.SentS, r.FirstTokenS, r.EndS)
		}
	}
	return m
}

func cfgOf(policy string, seqs, tokens, blocks int) Config {
	return Config{Scheduler: SchedulerConfig{Policy: policy, MaxNumSeqs: seqs, MaxNumBatchedTokens: tokens, BlockSize: 16, NumBlocks: blocks},
		Replicas: 1, Router: RouterRoundRobin}
}

func mustGenerate(t *testing.T, s Spec) []Request {
	t.Helper()
	r, err := Generate(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// M/D/1: Poisson arrivals at λ, one request at a time, each served in a
// fixed D (a static batch of one, one output token: one iteration). The
// Pollaczek–Khinchine mean wait is Wq = ρ/(2μ(1−ρ)) with μ = 1/D, ρ = λD;
// at D = 1 s, λ = 0.5/s: Wq = 0.5/(2·1·0.5) = 0.5 s, so mean TTFT = Wq + D
// = 1.5 s. Tolerance: the mean of 100,000 correlated waits at ρ = 0.5 has a
// standard error near 1 % (waits' sd 0.76 s; the queue's relaxation time of
// ≈ 12 services inflates the variance about tenfold; seeds 1–8 gave errors
// of 0.1–1.7 %); 4 % is four of them.
func TestMD1MeanWait(t *testing.T) {
	const D, lambda, n = 1.0, 0.5, 100_000
	cfg := cfgOf(PolicyStatic, 1, 1<<20, 1<<20)
	reqs := mustGenerate(t, Spec{NumPrompts: n, Arrivals: Arrivals{Process: ArrivalPoisson, RequestRate: lambda}, Lengths: Lengths{InputLen: 10, OutputLen: 1}, Seed: 1})
	res, err := Simulate(reqs, cfg, &constCost{t: t, s: D, cfg: cfg.Scheduler})
	if err != nil {
		t.Fatal(err)
	}
	m := checkRun(t, res)
	rho := lambda * D
	want := rho / (2 * (1 / D) * (1 - rho))
	got := m.TTFT.MeanMs/1e3 - D
	if math.Abs(got-want) > 0.04*want {
		t.Errorf("M/D/1 mean wait %.4f s, Pollaczek–Khinchine %.4f s", got, want)
	}
	if res.Iterations != n {
		t.Errorf("%d iterations for %d one-token requests served one at a time", res.Iterations, n)
	}
}

// Past the knee the queue grows without bound: at twice the highest
// throughput the replica reaches (measured with every request sent at
// once), the median TTFT of 1,600 requests is several times that of 400 —
// in a queue that grows linearly the median wait grows in proportion to
// the number of requests (×4 here); below the knee it would not grow.
func TestSaturationTTFTGrows(t *testing.T) {
	p := loadPlan(t, "testdata/llama2-7b-h100.toml")
	im, err := sim.NewIterationModel(p, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := cfgOf(PolicyContinuous, 256, 8192, 1<<20)
	lens := Lengths{InputLen: 512, OutputLen: 128}
	inf := mustGenerate(t, Spec{NumPrompts: 400, Arrivals: Arrivals{Process: ArrivalPoisson, RequestRate: math.Inf(1)}, Lengths: lens, Seed: 3})
	res, err := Simulate(inf, cfg, im)
	if err != nil {
		t.Fatal(err)
	}
	knee := checkRun(t, res).RequestThroughput
	median := func(n int, rate float64) float64 {
		reqs := mustGenerate(t, Spec{NumPrompts: n, Arrivals: Arrivals{Process: ArrivalPoisson, RequestRate: rate}, Lengths: lens, Seed: 3})
		res, err := Simulate(reqs, cfg, im)
		if err != nil {
			t.Fatal(err)
		}
		return checkRun(t, res).TTFT.MedianMs
	}
	small, large := median(400, 2*knee), median(1600, 2*knee)
	if !(large > 2.5*small) {
		t.Errorf("at 2 × knee (%.1f req/s) median TTFT %.0f ms with 400 requests, %.0f ms with 1,600: not growing with the queue", 2*knee, small, large)
	}
	lowSmall, lowLarge := median(400, knee/2), median(1600, knee/2)
	if lowLarge > 2*lowSmall {
		t.Errorf("at knee/2 median TTFT %.0f ms with 400 requests, %.0f ms with 1,600: grows below the knee", lowSmall, lowLarge)
	}
}

func loadPlan(t *testing.T, name string) *partition.Plan {
	t.Helper()
	p, err := partitionPlan(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func partitionPlan(name string) (*partition.Plan, error) { return partition.LoadPlan(name) }

// KV exhaustion: four requests of 100 prompt + 200 output tokens, all at
// once, blocks of 16. Each needs ⌈300/16⌉ = 19 blocks at its end, 76 in all.
// With 76 blocks nothing is preempted; with 40 the decodes run out (the
// four prompts take 4 × ⌈100/16⌉ = 28, and each sequence grows past 10
// blocks), so sequences are preempted, counted per request and in total,
// and every request still finishes.
func TestKVExhaustionPreempts(t *testing.T) {
	reqs := make([]Request, 4)
	for i := range reqs {
		reqs[i] = Request{ID: i, InputLen: 100, OutputLen: 200}
	}
	for _, policy := range []string{PolicyContinuous, PolicyChunked} {
		for _, tc := range []struct {
			blocks  int
			preempt bool
		}{{76, false}, {40, true}} {
			cfg := cfgOf(policy, 8, 512, tc.blocks)
			res, err := Simulate(reqs, cfg, &constCost{t: t, s: 0.01, cfg: cfg.Scheduler})
			if err != nil {
				t.Fatal(err)
			}
			m := checkRun(t, res)
			sum := 0
			for _, r := range res.Requests {
				sum += r.Preemptions
			}
			if m.Completed != 4 || sum != res.Preemptions || (res.Preemptions > 0) != tc.preempt {
				t.Errorf("%s, %d blocks: %d completed, %d preemptions (per request sum %d), want preemptions: %v",
					policy, tc.blocks, m.Completed, res.Preemptions, sum, tc.preempt)
			}
		}
	}
}

// A request whose context can never fit is failed and counted, not dropped.
func TestTooLongRequestFails(t *testing.T) {
	reqs := []Request{{ID: 0, InputLen: 10, OutputLen: 10}, {ID: 1, InputLen: 1000, OutputLen: 10}}
	cfg := cfgOf(PolicyContinuous, 8, 2048, 10) // 160 tokens
	res, err := Simulate(reqs, cfg, &constCost{t: t, s: 0.01, cfg: cfg.Scheduler})
	if err != nil {
		t.Fatal(err)
	}
	m := checkRun(t, res)
	if m.Completed != 1 || m.Failed != 1 || res.Requests[1].Error == "" {
		t.Errorf("completed %d, failed %d, error %q", m.Completed, m.Failed, res.Requests[1].Error)
	}
}

// The same seed gives the same run, bit for bit; another seed another one.
func TestDeterministicWithSeed(t *testing.T) {
	p := loadPlan(t, "testdata/llama2-7b-h100.toml")
	im, err := sim.NewIterationModel(p, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := cfgOf(PolicyChunked, 64, 512, 2000)
	run := func(seed uint64) Metrics {
		reqs := mustGenerate(t, Spec{NumPrompts: 300, Arrivals: Arrivals{Process: ArrivalGamma, RequestRate: 20, Burstiness: 0.5},
			Lengths: Lengths{InputLen: 300, OutputLen: 100, RangeRatio: 0.5}, Seed: seed})
		res, err := Simulate(reqs, cfg, im)
		if err != nil {
			t.Fatal(err)
		}
		return checkRun(t, res)
	}
	a, b, c := run(5), run(5), run(6)
	if a.DurationS != b.DurationS || a.TTFT.MeanMs != b.TTFT.MeanMs || a.TTFT.Percentiles[0] != b.TTFT.Percentiles[0] || a.ITL.MeanMs != b.ITL.MeanMs || a.Preemptions != b.Preemptions {
		t.Errorf("seed 5 twice: %+v vs %+v", a, b)
	}
	if a.DurationS == c.DurationS {
		t.Errorf("seeds 5 and 6 gave the same duration %g", a.DurationS)
	}
}

// Continuous batching: two requests at once, 3-token prompts, 3 outputs,
// 1 s per iteration. Iteration 1 prefills both (first tokens at t = 1),
// iterations 2 and 3 decode both (tokens at 2 and 3). TTFT 1 s, E2EL 3 s,
// TPOT (3−1)/2 = 1 s, four ITLs of 1 s, duration 3 s.
func TestContinuousHandWorked(t *testing.T) {
	reqs := []Request{{ID: 0, InputLen: 3, OutputLen: 3}, {ID: 1, InputLen: 3, OutputLen: 3}}
	cfg := cfgOf(PolicyContinuous, 8, 64, 100)
	res, err := Simulate(reqs, cfg, &constCost{t: t, s: 1, cfg: cfg.Scheduler})
	if err != nil {
		t.Fatal(err)
	}
	m := checkRun(t, res)
	if m.TTFT.MeanMs != 1000 || m.E2EL.MeanMs != 3000 || m.TPOT.MeanMs != 1000 || m.DurationS != 3 || res.Iterations != 3 {
		t.Errorf("TTFT %g ms, E2EL %g ms, TPOT %g ms, duration %g s, %d iterations", m.TTFT.MeanMs, m.E2EL.MeanMs, m.TPOT.MeanMs, m.DurationS, res.Iterations)
	}
	var n float64
	for i, w := range res.ITL.Weight {
		n += w
		if res.ITL.Value[i] != 1 {
			t.Errorf("ITL %g s, want 1", res.ITL.Value[i])
		}
	}
	if n != 4 {
		t.Errorf("%g ITL samples, want 4", n)
	}
}

// Chunked prefill with a budget of 4 tokens: one request of a 10-token
// prompt and 2 outputs at 1 s per iteration takes chunks 4, 4, 2 (the
// first token at t = 3) and one decode (t = 4).
func TestChunkedHandWorked(t *testing.T) {
	reqs := []Request{{ID: 0, InputLen: 10, OutputLen: 2}}
	cfg := cfgOf(PolicyChunked, 8, 4, 100)
	res, err := Simulate(reqs, cfg, &constCost{t: t, s: 1, cfg: cfg.Scheduler})
	if err != nil {
		t.Fatal(err)
	}
	m := checkRun(t, res)
	if m.TTFT.MeanMs != 3000 || m.E2EL.MeanMs != 4000 || res.Iterations != 4 {
		t.Errorf("TTFT %g ms, E2EL %g ms, %d iterations; want 3000, 4000, 4", m.TTFT.MeanMs, m.E2EL.MeanMs, res.Iterations)
	}
}

// Routers: round-robin alternates; least-outstanding sends the third
// request to the replica that finished its first.
func TestRouters(t *testing.T) {
	reqs := []Request{{ID: 0, InputLen: 4, OutputLen: 1}, {ID: 1, InputLen: 4, OutputLen: 50}, {ID: 2, ArrivalS: 5, InputLen: 4, OutputLen: 1},
		{ID: 3, ArrivalS: 6, InputLen: 4, OutputLen: 1}}
	for _, tc := range []struct {
		router string
		want   []int
	}{{RouterRoundRobin, []int{0, 1, 0, 1}}, {RouterLeastOutstanding, []int{0, 1, 0, 0}}} {
		cfg := cfgOf(PolicyContinuous, 8, 64, 100)
		cfg.Replicas, cfg.Router = 2, tc.router
		res, err := Simulate(reqs, cfg, &constCost{t: t, s: 1, cfg: cfg.Scheduler})
		if err != nil {
			t.Fatal(err)
		}
		checkRun(t, res)
		for i, r := range res.Requests {
			if r.Replica != tc.want[i] {
				t.Errorf("%s: request %d on replica %d, want %d", tc.router, i, r.Replica, tc.want[i])
			}
		}
	}
}

// --max-concurrency 1 serializes: three requests at once, each one
// iteration of 1 s; each is sent when the previous finishes, so every TTFT
// is 1 s and the run lasts 3 s.
func TestMaxConcurrency(t *testing.T) {
	reqs := []Request{{ID: 0, InputLen: 4, OutputLen: 1}, {ID: 1, InputLen: 4, OutputLen: 1}, {ID: 2, InputLen: 4, OutputLen: 1}}
	cfg := cfgOf(PolicyContinuous, 8, 64, 100)
	cfg.MaxConcurrency = 1
	res, err := Simulate(reqs, cfg, &constCost{t: t, s: 1, cfg: cfg.Scheduler})
	if err != nil {
		t.Fatal(err)
	}
	m := checkRun(t, res)
	if m.TTFT.MeanMs != 1000 || m.DurationS != 3 || res.Requests[2].SentS != 2 {
		t.Errorf("mean TTFT %g ms, duration %g s, third sent at %g s", m.TTFT.MeanMs, m.DurationS, res.Requests[2].SentS)
	}
}

// stagedCost prices every iteration at s seconds on each of n stages.
type stagedCost struct {
	s float64
	n int
}

func (c stagedCost) TimeS(sim.IterationShape) (float64, error) { return c.s * float64(c.n), nil }
func (c stagedCost) Stages() int                               { return c.n }
func (c stagedCost) StageTimesS(_ sim.IterationShape, dst []float64) ([]float64, error) {
	for i := 0; i < c.n; i++ {
		dst = append(dst, c.s)
	}
	return dst, nil
}

// Pipeline parallelism: two stages of 1 s run two virtual engines, each
// with half the KV blocks. Two one-token requests at t = 0 go one to each
// engine. Engine 0 takes stage 0 in [0, 1] and stage 1 in [1, 2]; engine 1
// waits for stage 0 until 1 and for stage 1 until 2: [1, 2] then [2, 3].
// TTFTs 2 s and 3 s. A third request at t = 0.5 joins engine 0 (its
// iteration ends at 2, then [2, 3] on stage 0 and [3, 4] on stage 1).
func TestPipelineVirtualEngines(t *testing.T) {
	reqs := []Request{{ID: 0, InputLen: 4, OutputLen: 1}, {ID: 1, InputLen: 4, OutputLen: 1}, {ID: 2, ArrivalS: 0.5, InputLen: 4, OutputLen: 1}}
	cfg := cfgOf(PolicyContinuous, 8, 64, 100)
	res, err := Simulate(reqs, cfg, stagedCost{s: 1, n: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkRun(t, res)
	for i, want := range []float64{2, 3, 4} {
		if got := res.Requests[i].FirstTokenS; got != want {
			t.Errorf("request %d: first token at %g s, want %g", i, got, want)
		}
	}
	// One block cannot be split between two engines.
	cfg.Scheduler.NumBlocks = 1
	if _, err := Simulate(reqs, cfg, stagedCost{s: 1, n: 2}); err == nil || !strings.Contains(err.Error(), "pipeline stages") {
		t.Errorf("1 block over 2 stages: %v", err)
	}
}

// A trace that starts late: duration runs from the first arrival (10 s),
// not from 0. One request of one 1 s iteration: duration 1 s.
func TestDurationFromFirstArrival(t *testing.T) {
	cfg := cfgOf(PolicyContinuous, 8, 64, 100)
	res, err := Simulate([]Request{{ID: 0, ArrivalS: 10, InputLen: 4, OutputLen: 1}}, cfg, &constCost{t: t, s: 1, cfg: cfg.Scheduler})
	if err != nil {
		t.Fatal(err)
	}
	if m := checkRun(t, res); m.DurationS != 1 || m.RequestThroughput != 1 {
		t.Errorf("duration %g s, throughput %g req/s; want 1, 1", m.DurationS, m.RequestThroughput)
	}
}

// Little's law is held on every simulated run: a result whose integral of
// requests in the system disagrees with the requests' own times is an
// error. Two requests in the system for 1 s and 3 s: ∫N dt must be 4 s.
func TestLittleCheckCatchesBookkeeping(t *testing.T) {
	res := &Result{Requests: []RequestResult{{SentS: 0, EndS: 1}, {SentS: 1, EndS: 4}, {SentS: 2, EndS: 2, Error: "refused"}}}
	res.InSystemS = 4
	if err := res.checkLittle(); err != nil {
		t.Errorf("∫N dt = 4 s: %v", err)
	}
	res.InSystemS = 4.001
	if err := res.checkLittle(); err == nil {
		t.Error("∫N dt = 4.001 s against 4 s of requests passed")
	}
}
