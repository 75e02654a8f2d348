package serving

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/topology"
)

// One request at a time, 1 s each (a static batch of one, one output
// token), requests evenly spaced (fixed arrivals): below 1 req/s nobody
// waits and every TTFT is exactly 1 s. So an SLO of TTFT ≤ 1,500 ms holds
// up to the capacity, 1 req/s (101 requests sent at once finish in 101 s),
// and MaxRate returns exactly that; an SLO of 999 ms never holds: 0.
func TestMaxRateHandWorked(t *testing.T) {
	cfg := cfgOf(PolicyStatic, 1, 1<<20, 1<<20)
	spec := Spec{NumPrompts: 101, Arrivals: Arrivals{Process: ArrivalFixed}, Lengths: Lengths{InputLen: 8, OutputLen: 1}}
	cost := &constCost{t: t, s: 1, cfg: cfg.Scheduler}
	rate, at, err := MaxRate(spec, cfg, cost, []float64{99}, Goodput{TTFTMs: 1500}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rate != 1 || !at.MeetsSLO {
		t.Errorf("TTFT ≤ 1500 ms: max rate %g (meets %v), want 1", rate, at.MeetsSLO)
	}
	rate, _, err = MaxRate(spec, cfg, cost, []float64{99}, Goodput{TTFTMs: 999}, 1)
	if err != nil || rate != 0 {
		t.Errorf("TTFT ≤ 999 ms: max rate %g, %v; want 0", rate, err)
	}
	if _, _, err := MaxRate(spec, cfg, cost, nil, Goodput{}, 1); err == nil {
		t.Error("no SLO accepted")
	}
}

// Under Poisson arrivals the bisection's answer meets the SLO, and a rate
// CapacityTolerance above it (twice, for the bisection's last step) does
// not, unless it is the capacity itself.
func TestMaxRateBisects(t *testing.T) {
	cfg := cfgOf(PolicyStatic, 1, 1<<20, 1<<20)
	spec := Spec{NumPrompts: 2000, Arrivals: Arrivals{Process: ArrivalPoisson}, Lengths: Lengths{InputLen: 8, OutputLen: 1}, Seed: 2}
	cost := &constCost{t: t, s: 1, cfg: cfg.Scheduler}
	slo := Goodput{TTFTMs: 4000}
	rate, at, err := MaxRate(spec, cfg, cost, []float64{99}, slo, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if !(rate > 0 && rate < 1) || !at.MeetsSLO || at.RequestRate != rate {
		t.Fatalf("max rate %g, point %+v", rate, at)
	}
	s := spec
	s.Arrivals.RequestRate = rate * (1 + 2*CapacityTolerance)
	res, err := Simulate(mustGenerate(t, s), cfg, cost)
	if err != nil {
		t.Fatal(err)
	}
	if p := pointOf(s.Arrivals.RequestRate, res, []float64{99}, slo, 0.9); p.MeetsSLO {
		t.Errorf("%.4g req/s meets the SLO (%.1f %% good) but the answer was %.4g", s.Arrivals.RequestRate, 100*p.GoodFraction, rate)
	}
}

// Placements of Llama-2-7B over two H100s: tp1pp1dp2, tp2pp1dp1 and
// tp1pp2dp1 are simulated and ranked by rate per GPU; every simulated one
// sustains a positive rate that meets the SLO.
func TestSearchPlacements(t *testing.T) {
	cfg, err := configs.Load("testdata/llama2-7b-h100.toml")
	if err != nil {
		t.Fatal(err)
	}
	topo := cfg.Topology.Topology
	topo.GPUsPerNode = 2
	sys := topology.System{GPU: cfg.Hardware.GPU, Topology: topo}
	sys.Topology.Intra = topology.Link{Class: topology.NVLink, Name: "NVLink", BytesPerS: 450e9, LatencyS: 1e-6}
	sys.Topology.Inter = topology.Link{Class: topology.Network, Name: "IB", BytesPerS: 50e9, LatencyS: 5e-6}
	sp := PlacementSpec{Config: cfg, System: sys, BlockSize: 16, MemUtil: 0.9, Percentiles: []float64{99}, SLO: Goodput{TTFTMs: 1000, TPOTMs: 100}, Attainment: 0.9,
		Workload: Spec{NumPrompts: 300, Arrivals: Arrivals{Process: ArrivalPoisson}, Lengths: Lengths{InputLen: 512, OutputLen: 64}, Seed: 1},
		Serving:  Config{Scheduler: SchedulerConfig{Policy: PolicyChunked, MaxNumSeqs: 128, MaxNumBatchedTokens: 4096, BlockSize: 16}, Router: RouterLeastOutstanding}}
	pls, err := SearchPlacements(sp)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[3]int]bool{}
	for i, p := range pls {
		if p.Excluded != "" {
			continue
		}
		seen[[3]int{p.TP, p.PP, p.DP}] = true
		if !(p.Rate > 0) || !p.At.MeetsSLO || math.Abs(p.RatePerGPU*2-p.Rate) > 1e-12 {
			t.Errorf("%s: rate %g, per GPU %g, meets %v", p.Name, p.Rate, p.RatePerGPU, p.At.MeetsSLO)
		}
		if i > 0 && pls[i-1].Excluded == "" && pls[i-1].RatePerGPU < p.RatePerGPU {
			t.Errorf("not ranked: %s %g before %s %g", pls[i-1].Name, pls[i-1].RatePerGPU, p.Name, p.RatePerGPU)
		}
	}
	for _, k := range [][3]int{{1, 1, 2}, {2, 1, 1}, {1, 2, 1}} {
		if !seen[k] {
			t.Errorf("placement tp%d pp%d dp%d not simulated (got %+v)", k[0], k[1], k[2], pls)
		}
	}
}
