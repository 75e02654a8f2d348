package serving

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// CapacityTolerance is the relative width at which MaxRate's bisection
// stops: the rate it returns meets the SLO, and one 2 % higher may too.
const CapacityTolerance = 0.02

// MaxRate is the highest request rate at which the deployment meets the
// SLO (at least attainment of the requests within every bound), found by
// bisection between 0 and the throughput it reaches with every request sent
// at once (no higher rate is sustained), each probe a run of spec at that
// rate with the same seed. It returns 0 and the lowest probe's point when
// even a rate of 1/1024 of the capacity misses the SLO.
func MaxRate(spec Spec, cfg Config, cost Coster, ps []float64, slo Goodput, attainment float64) (float64, Point, error) {
	if !slo.Set() {
		return 0, Point{}, fmt.Errorf("--goodput: the highest sustainable rate needs an SLO (ttft:MS, tpot:MS or e2el:MS)")
	}
	probe := func(rate float64) (Point, error) {
		s := spec
		s.Arrivals.RequestRate = rate
		reqs, err := Generate(s)
		if err != nil {
			return Point{}, err
		}
		res, err := Simulate(reqs, cfg, cost)
		if err != nil {
			return Point{}, err
		}
		return pointOf(rate, res, ps, slo, attainment), nil
	}
	sat, err := probe(math.Inf(1))
	if err != nil {
		return 0, Point{}, err
	}
	hi := sat.Metrics.RequestThroughput
	if !(hi > 0) {
		return 0, sat, nil
	}
	top, err := probe(hi)
	if err != nil || top.MeetsSLO {
		return hi, top, err
	}
	lo := hi / 1024
	best, err := probe(lo)
	if err != nil || !best.MeetsSLO {
		return 0, best, err
	}
	for (hi-lo)/hi > CapacityTolerance {
		mid := (lo + hi) / 2
		p, err := probe(mid)
		if err != nil {
			return 0, Point{}, err
		}
		if p.MeetsSLO {
			lo, best = mid, p
		} else {
			hi = mid
		}
	}
	return lo, best, nil
}

// Placement is one partitioning of the GPUs and the highest rate it
// sustains at the SLO.
type Placement struct {
	Name       string  `json:"name"`
	TP         int     `json:"tp"`
	PP         int     `json:"pp"`
	DP         int     `json:"dp"`
	GPUs       int     `json:"gpus"`
	Rate       float64 `json:"max_request_rate"`
	RatePerGPU float64 `json:"max_request_rate_per_gpu"`
	KV         KVCache `json:"kv_cache"`
	At         Point   `json:"-"`
	// Excluded says why the placement was not simulated (does not fit,
	// tp does not divide the heads, …).
	Excluded string `json:"excluded,omitempty"`
}

// PlacementSpec is a placement search: every tp × pp × dp of the system's
// GPUs (sim.SearchSpec.Enumerate's, one micro-batch, every layer map it
// lists) simulated under the same workload, scheduler and SLO.
type PlacementSpec struct {
	Config      *configs.Config
	System      topology.System
	Workload    Spec
	Serving     Config // Replicas is each placement's dp; NumBlocks from each plan unless BlocksOverride
	BlockSize   int
	MemUtil     float64
	Percentiles []float64
	SLO         Goodput
	Attainment  float64
}

// SearchPlacements ranks the placements by the highest request rate per GPU
// they sustain at the SLO; excluded ones follow, with the reason.
func SearchPlacements(sp PlacementSpec) ([]Placement, error) {
	ss := sim.SearchSpec{Config: sp.Config, System: sp.System, MaxMicrobatches: 1}
	cands, facts := ss.Enumerate()
	var out []Placement
	for _, f := range facts {
		if f.Excluded != "" {
			out = append(out, Placement{Name: fmt.Sprintf("tp%dpp%ddp%d", f.TP, f.PP, f.DP), TP: f.TP, PP: f.PP, DP: f.DP,
				GPUs: f.TP * f.PP * f.DP, Excluded: f.Excluded, Rate: math.NaN(), RatePerGPU: math.NaN()})
		}
	}
	for _, c := range cands {
		cfg := ss.CandidateConfig(c)
		pl := Placement{Name: cfg.Name, TP: c.TP, PP: c.PP, DP: max(c.DP, 1), GPUs: c.TP * c.PP * max(c.DP, 1), Rate: math.NaN(), RatePerGPU: math.NaN()}
		plan, err := partition.NewPlan(cfg)
		var nofit *partition.NoFitError
		if errors.As(err, &nofit) {
			pl.Excluded = nofit.Reason()
			out = append(out, pl)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("placement %s: %w", cfg.Name, err)
		}
		one := plan.OneReplica()
		im, err := sim.NewIterationModel(one, sim.Options{})
		if err != nil {
			return nil, fmt.Errorf("placement %s: %w", cfg.Name, err)
		}
		if pl.KV, err = KVBlocks(one, sp.BlockSize, sp.MemUtil); err != nil {
			return nil, err
		}
		scfg := sp.Serving
		scfg.Replicas = pl.DP
		if scfg.Scheduler.NumBlocks == 0 {
			scfg.Scheduler.NumBlocks = pl.KV.NumBlocks
		}
		if scfg.Scheduler.NumBlocks < im.Stages() {
			pl.Excluded = fmt.Sprintf("KV cache of %d blocks cannot serve %d pipeline stages", scfg.Scheduler.NumBlocks, im.Stages())
			out = append(out, pl)
			continue
		}
		rate, at, err := MaxRate(sp.Workload, scfg, im, sp.Percentiles, sp.SLO, sp.Attainment)
		if err != nil {
			return nil, fmt.Errorf("placement %s: %w", cfg.Name, err)
		}
		pl.Rate, pl.RatePerGPU, pl.At = rate, rate/float64(pl.GPUs), at
		out = append(out, pl)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Excluded == "") != (b.Excluded == "") {
			return a.Excluded == ""
		}
		return a.RatePerGPU > b.RatePerGPU
	})
	return out, nil
}
