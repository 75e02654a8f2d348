package sim

import (
	"fmt"
	"math"
	"sort"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
)

// MeasuredCollective is one measured size of a collective: what nccl-tests
// printed for a group of ranks of a system (out-of-place busbw), and the
// NCCL_ALGO/NCCL_PROTO the run forced.
type MeasuredCollective struct {
	Op             commcount.Op
	Ranks          []int
	Bytes          int64
	BusBWBytesPerS float64
	Opt            CollectiveOptions
}

// FitMinBytes is the smallest size a fit uses and docs/validation.md's bar
// counts: below it nccl-tests' times carry the host launch the model leaves
// out, and busbw is rounded to 0.01 GB/s. FitBarRelErr is that bar: every
// busbw point of FitMinBytes or more within 15 % of the measurement.
const (
	FitMinBytes  = 1 << 20
	FitBarRelErr = 0.15
)

// CollectiveErrors summarizes |modeled − measured| / measured busbw over
// the points of a fit.
type CollectiveErrors struct {
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// CollectiveFit is a system's collective constants fitted to its own
// measurements, with the errors before (the system's current constants) and
// after.
type CollectiveFit struct {
	Tuning topology.CollectiveTuning `json:"tuning"`
	Points int                       `json:"points"`
	Before CollectiveErrors          `json:"before"`
	After  CollectiveErrors          `json:"after"`
}

// The grids a fit searches, each holding the default (docs/validation.md
// fitted the defaults over the same ranges).
var (
	fitRampSimpleS    = []float64{0, 20e-6, 40e-6, 60e-6, 80e-6, 100e-6, 120e-6, 160e-6}
	fitRampSimpleHalf = []float64{2 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20}
	fitRampLLS        = []float64{0, 10e-6, 20e-6, 30e-6, 40e-6}
	fitRampLLHalf     = []float64{256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20}
	fitNVLSBase       = []float64{0, 2.5e-6, 5e-6, 6.5e-6, 7.5e-6, 10e-6, 12.5e-6, 15e-6, 20e-6}
	fitNVLSPerRank    = []float64{0, 0.5e-6, 1e-6, 1.5e-6, 2e-6, 2.5e-6, 3e-6, 3.5e-6, 4e-6}
)

// FitCollectiveTuning fits the ramp and NVLS constants of sys to measured
// points of FitMinBytes or more: the smallest max |error|, ties to the
// smaller median. It searches the Simple ramp with the NVLS overhead (both
// shape NVLS), then the LL ramp, each over its grid with the other held, from
// the system's current constants, and repeats until neither improves; a
// constant moves only
// on a strict improvement, so one the points do not exercise (NVLS without an
// NVSwitch, say) keeps its value. source names the measurements.
func FitCollectiveTuning(sys topology.System, pts []MeasuredCollective, source string) (CollectiveFit, error) {
	var use []MeasuredCollective
	for _, p := range pts {
		if p.Bytes >= FitMinBytes && p.BusBWBytesPerS > 0 && !math.IsInf(p.BusBWBytesPerS, 0) {
			use = append(use, p)
		}
	}
	if len(use) == 0 {
		return CollectiveFit{}, fmt.Errorf("collective fit: no measured size of %d B or more with a busbw above 0", FitMinBytes)
	}
	eval := func(par collectiveParams) (CollectiveErrors, error) {
		s := sys
		t := par.tuning(source)
		s.Topology.Collectives = &t
		errs := make([]float64, len(use))
		for i, p := range use {
			e, err := Collective(s, p.Op, p.Ranks, p.Bytes, p.Opt)
			if err != nil {
				return CollectiveErrors{}, err
			}
			errs[i] = math.Abs(e.BusBWBytesPerS-p.BusBWBytesPerS) / p.BusBWBytesPerS
		}
		return SummarizeErrors(errs), nil
	}
	better := func(a, b CollectiveErrors) bool {
		return a.Max < b.Max-1e-12 || (math.Abs(a.Max-b.Max) <= 1e-12 && a.Median < b.Median-1e-12)
	}
	cur := collectiveParamsOf(sys.Topology)
	before, err := eval(cur)
	if err != nil {
		return CollectiveFit{}, err
	}
	best := before
	// The Simple ramp and the NVLS overhead both shape NVLS and are searched
	// together; the LL ramp on its own.
	blocks := []func(p collectiveParams) []collectiveParams{
		func(p collectiveParams) (out []collectiveParams) {
			// The current NVLS values come first for every ramp, so that
			// where no point runs NVLS (equal errors) they stay.
			nvls := [][2]float64{{p.nvlsBaseS, p.nvlsPerRankS}}
			for _, nb := range fitNVLSBase {
				for _, nk := range fitNVLSPerRank {
					nvls = append(nvls, [2]float64{nb, nk})
				}
			}
			for _, r := range fitRampSimpleS {
				for _, h := range fitRampSimpleHalf {
					for _, v := range nvls {
						q := p
						q.rampSimple, q.nvlsBaseS, q.nvlsPerRankS = rampParams{r, h}, v[0], v[1]
						out = append(out, q)
					}
				}
			}
			return out
		},
		func(p collectiveParams) (out []collectiveParams) {
			for _, r := range fitRampLLS {
				for _, h := range fitRampLLHalf {
					q := p
					q.rampLL = rampParams{r, h}
					out = append(out, q)
				}
			}
			return out
		},
	}
	for round := 0; round < 8; round++ {
		moved := false
		for _, block := range blocks {
			for _, cand := range block(cur) {
				e, err := eval(cand)
				if err != nil {
					return CollectiveFit{}, err
				}
				if better(e, best) {
					cur, best, moved = cand, e, true
				}
			}
		}
		if !moved {
			break
		}
	}
	return CollectiveFit{Tuning: cur.tuning(source), Points: len(use), Before: before, After: best}, nil
}

// SummarizeErrors is the median (the mean of the middle two for an even
// count, as docs/validation.md's medians) and the maximum of |errors|; errs
// must not be empty.
func SummarizeErrors(errs []float64) CollectiveErrors {
	s := append([]float64(nil), errs...)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return CollectiveErrors{Median: med, Max: s[n-1]}
}
