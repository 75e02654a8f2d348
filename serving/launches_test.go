package serving

import (
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// enginePlan is test/single-tiny's engine plan of slots slots of context
// tokens, on the hardware preset it names (h100-sxm: kernel_launch_s 6 µs).
func enginePlan(t *testing.T, slots, context int) *partition.Plan {
	t.Helper()
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	ec, err := EngineConfig(cfg, slots, context)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(ec)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// fixedCost prices every iteration at S seconds.
type fixedCost struct{ S float64 }

func (c fixedCost) TimeS(sim.IterationShape) (float64, error) { return c.S, nil }

// HostBoundCost is the larger of the device's time and launches × the
// host cost of one: 16 decodes of test/single-tiny's engine are 744
// launches (launches_fake_test.go derives it and holds the engine to it),
// 744 × 5 µs = 3.72 ms of host time.
func TestHostBoundCost(t *testing.T) {
	plan := enginePlan(t, 16, 64)
	n, err := NewEngineLaunches(plan)
	if err != nil {
		t.Fatal(err)
	}
	batch := decodeBatch(16, 32)
	for _, c := range []struct {
		device, want float64
	}{{1e-3, 744 * 5e-6}, {5e-3, 5e-3}} {
		cost := HostBoundCost{Device: fixedCost{c.device}, Launches: n, LaunchHostS: 5e-6, Batched: true}
		got, err := cost.BatchTimeS(batch)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-c.want) > 1e-15 {
			t.Errorf("device %g s: iteration %g s, want %g", c.device, got, c.want)
		}
	}
	// Per sequence the same 16 decodes are 16 × 80 launches (each a 1-row
	// pass that fuses its 16 norms: launches_fake_test.go): 6.4 ms.
	cost := HostBoundCost{Device: fixedCost{1e-3}, Launches: n, LaunchHostS: 5e-6}
	if got, err := cost.BatchTimeS(batch); err != nil || math.Abs(got-16*80*5e-6) > 1e-15 {
		t.Errorf("per sequence: %g s, %v; want %g", got, err, 16*80*5e-6)
	}
}

// EngineCost: the CPU engine is priced as before (the iteration model, or
// each sequence's pass alone); the GPU engine's device time is the same
// model on the hardware without CUDA graphs (its Compute captures none),
// and a launch costs the host launchHostS.
func TestEngineCost(t *testing.T) {
	plan := enginePlan(t, 16, 64)
	c, _, err := EngineCost(plan, configs.BackendCPU, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*sim.IterationModel); !ok {
		t.Errorf("the batched CPU engine is priced by %T, want *sim.IterationModel", c)
	}
	if c, _, _ = EngineCost(plan, configs.BackendCPU, false, 0); func() bool { _, ok := c.(PerSequenceCost); return !ok }() {
		t.Errorf("the per-sequence CPU engine is priced by %T, want PerSequenceCost", c)
	}
	if _, _, err := EngineCost(plan, configs.BackendCUDA, true, 0); err == nil {
		t.Errorf("a GPU engine with no host cost per launch was priced")
	}

	// Device-bound (a launch costing nothing): the device time is the
	// iteration model's on a copy of the plan without graphs, even where
	// the hardware has them.
	graphs := *plan
	graphs.System.GPU.CUDAGraphs = true
	eager := *plan
	eager.System.GPU.CUDAGraphs = false
	batch := decodeBatch(16, 32)
	var sh sim.IterationShape
	for _, b := range batch {
		sh.Add(b.Q, b.Past, b.Sample)
	}
	timeOf := func(p *partition.Plan) float64 {
		im, err := sim.NewIterationModel(p, sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := im.TimeS(sh)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	wantDev, graphed := timeOf(&eager), timeOf(&graphs)
	if wantDev == graphed {
		t.Fatalf("the model prices a decode iteration alike with and without graphs (%g s): the test cannot tell them apart", wantDev)
	}
	gc, _, err := EngineCost(&graphs, configs.BackendCUDA, true, 1e-15)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := gc.(BatchCoster).BatchTimeS(batch); err != nil || math.Abs(got-wantDev) > 1e-15 {
		t.Errorf("device-bound GPU engine: %g s, %v; want the ungraphed model's %g (graphed: %g)", got, err, wantDev, graphed)
	}
	// Host-bound at the preset's kernel_launch_s: 744 × 6 µs = 4.464 ms,
	// above the device's time.
	k := plan.System.GPU.KernelLaunchS
	if k != 6e-6 || !(wantDev < 744*k) {
		t.Fatalf("h100-sxm's kernel_launch_s is %g and the device time %g s: this test assumes 6 µs and a host-bound iteration", k, wantDev)
	}
	hc, how, err := EngineCost(plan, configs.BackendCUDA, true, k)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := hc.(BatchCoster).BatchTimeS(batch); err != nil || math.Abs(got-744*6e-6) > 1e-15 {
		t.Errorf("host-bound GPU engine: %g s, %v; want 744 × 6 µs = %g", got, err, 744*6e-6)
	}
	if want := "(744 launches to decode 16 sequences)"; !strings.Contains(how, want) {
		t.Errorf("description %q does not say %q", how, want)
	}
}

// Simulated through the scheduler, a host-bound GPU engine gives every
// token the launches of its iteration × 6 µs: 16 requests of 7 prompt and
// 5 output tokens arriving at once are one prefill iteration of 16 × 7 =
// 112 rows (one pass: fewer than the 128-row chunk, not a pass of the
// plan's own, so nothing fuses; 7 queries take the plain attention) and 4
// decode iterations of 16 rows: 72 + 16 × (36 + 6) = 744 launches each
// (launches_fake_test.go), so TTFT and every inter-token latency are
// 744 × 6 µs = 4.464 ms.
func TestSimulateHostBoundEngine(t *testing.T) {
	plan := enginePlan(t, 16, 128)
	cost, _, err := EngineCost(plan, configs.BackendCUDA, true, 6e-6)
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]Request, 16)
	for i := range reqs {
		reqs[i] = Request{ID: i, InputLen: 7, OutputLen: 5}
	}
	cfg := Config{Scheduler: SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 16, MaxNumBatchedTokens: 256, BlockSize: 1, NumBlocks: 16 * 128},
		Replicas: 1, Router: RouterRoundRobin}
	res, err := Simulate(reqs, cfg, cost)
	if err != nil {
		t.Fatal(err)
	}
	const want = 744 * 6e-6
	if res.Iterations != 5 {
		t.Fatalf("%d iterations, want 1 prefill and 4 decodes", res.Iterations)
	}
	for _, r := range res.Requests {
		if math.Abs(r.FirstTokenS-want) > 1e-12 || math.Abs(r.EndS-5*want) > 1e-12 {
			t.Errorf("request %d: first token %g s, end %g s; want %g and %g", r.ID, r.FirstTokenS, r.EndS, want, 5*want)
		}
	}
	if len(res.ITL.Value) == 0 {
		t.Fatalf("no inter-token latency recorded")
	}
	for i, v := range res.ITL.Value {
		if math.Abs(v-want) > 1e-12 {
			t.Errorf("inter-token latency %d is %g s, want %g", i, v, want)
		}
	}
}
