package serving

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

func tinyEngine(t *testing.T, slots, context int) (*partition.Plan, *PassExecutor) {
	t.Helper()
	return tinyEngineMode(t, slots, context, false)
}

// tinyEngineMode is tinyEngine, batched or per sequence.
func tinyEngineMode(t *testing.T, slots, context int, perSequence bool) (*partition.Plan, *PassExecutor) {
	t.Helper()
	plan := enginePlan(t, slots, context)
	ex, err := NewPassExecutor(plan, "cpu", perSequence)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Batched() == perSequence {
		t.Fatalf("asked per-sequence %v, got %s", perSequence, ex.Mode())
	}
	t.Cleanup(func() { ex.Close() })
	return plan, ex
}

// The engine runs the scheduler's iterations on the CPU backend: 30
// requests of the tiny model (8–16 prompt, 2–6 output tokens) at 500 req/s
// through chunked prefill with 4 slots and a budget of 8 tokens. Every
// request finishes with its tokens; the engine ran exactly the iterations
// the scheduler made; Little's law holds on the measured timeline as on a
// simulated one; and the iterations were real work (positive durations).
func TestMeasureOnCPU(t *testing.T) {
	_, ex := tinyEngine(t, 4, 24)
	cfg := Config{Scheduler: SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, NumBlocks: 4 * 24 / 4},
		Replicas: 1, Router: RouterRoundRobin}
	reqs := mustGenerate(t, Spec{NumPrompts: 30, Arrivals: Arrivals{Process: ArrivalPoisson, RequestRate: 500},
		Lengths: Lengths{InputLen: 12, OutputLen: 4, RangeRatio: 0.4}, Seed: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Measure(ctx, reqs, cfg, ex)
	if err != nil {
		t.Fatal(err)
	}
	m := checkRun(t, res)
	if m.Completed != 30 || m.Failed != 0 {
		t.Fatalf("%d completed, %d failed", m.Completed, m.Failed)
	}
	out := 0
	for _, r := range reqs {
		out += r.OutputLen
	}
	if m.TotalOutputTokens != out || !(m.TTFT.MeanMs > 0) || res.Iterations == 0 {
		t.Errorf("%d output tokens (want %d), mean TTFT %g ms, %d iterations", m.TotalOutputTokens, out, m.TTFT.MeanMs, res.Iterations)
	}
	if len(ex.slotOf) != 0 || len(ex.free) != 4 {
		t.Errorf("slots not all returned: %d held, %d free", len(ex.slotOf), len(ex.free))
	}
}

// A run cut short fails what it did not finish, and says so.
func TestMeasureCancelledCountsFailures(t *testing.T) {
	_, ex := tinyEngine(t, 2, 24)
	cfg := Config{Scheduler: SchedulerConfig{Policy: PolicyContinuous, MaxNumSeqs: 2, MaxNumBatchedTokens: 16, BlockSize: 4, NumBlocks: 12},
		Replicas: 1, Router: RouterRoundRobin}
	reqs := []Request{{ID: 0, InputLen: 8, OutputLen: 2}, {ID: 1, ArrivalS: 3600, InputLen: 8, OutputLen: 2}}
	// Long enough for request 0 on a busy CI machine; request 1 arrives an
	// hour later, so the run always ends here.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := Measure(ctx, reqs, cfg, ex)
	if err != nil {
		t.Fatal(err)
	}
	m := Summarize(res, []float64{99}, Goodput{})
	if m.Completed != 1 || m.Failed != 1 || res.Requests[1].Error == "" {
		t.Errorf("completed %d, failed %d, error %q", m.Completed, m.Failed, res.Requests[1].Error)
	}
}

// The modeled twin prices the engine's iterations as it runs them: a batch
// costs the sum of its sequences' passes, each priced alone.
func TestPerSequenceCost(t *testing.T) {
	plan, _ := tinyEngine(t, 2, 24)
	im, err := sim.NewIterationModel(plan, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := PerSequenceCost{M: im}
	one := func(q, past int) float64 {
		var sh sim.IterationShape
		sh.Add(q, past, true)
		x, err := im.TimeS(sh)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	got, err := c.BatchTimeS([]Scheduled{{Q: 8, Past: 0, Sample: true}, {Q: 1, Past: 10, Sample: true}})
	if err != nil {
		t.Fatal(err)
	}
	if want := one(8, 0) + one(1, 10); math.Abs(got-want) > 1e-15*want {
		t.Errorf("batch %g s, sum of passes %g s", got, want)
	}
}

// Continuous batching on the engine with a KV cache too small for every
// sequence at once: sequences are preempted by recompute (a prefill of
// prompt and generated tokens together, longer than the token budget) and
// still every request finishes, the slots all returned.
func TestMeasurePreemptsOnCPU(t *testing.T) {
	_, ex := tinyEngine(t, 4, 24)
	cfg := Config{Scheduler: SchedulerConfig{Policy: PolicyContinuous, MaxNumSeqs: 4, MaxNumBatchedTokens: 12, BlockSize: 1, NumBlocks: 40},
		Replicas: 1, Router: RouterRoundRobin}
	reqs := make([]Request, 4)
	for i := range reqs {
		reqs[i] = Request{ID: i, InputLen: 6, OutputLen: 12}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Measure(ctx, reqs, cfg, ex)
	if err != nil {
		t.Fatal(err)
	}
	m := checkRun(t, res)
	if m.Completed != 4 || res.Preemptions == 0 || len(ex.slotOf) != 0 {
		t.Errorf("%d completed, %d preemptions, %d slots held", m.Completed, res.Preemptions, len(ex.slotOf))
	}
}
