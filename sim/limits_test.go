package sim

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/partition"
)

// Issue 12 item 2: a NaN that gets past validation (here set on the plan's
// system after it) is an error naming the metric, never a number in the estimate.
func TestEstimateRefusesNonFinite(t *testing.T) {
	p := seedPlan(t, "test/tp2pp2-tiny")
	p.System.Topology.Intra.LatencyS = math.NaN()
	_, err := EstimatePlan(p, Options{})
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Field == "" || !math.IsNaN(nf.Value) || !strings.Contains(err.Error(), "is NaN, not a finite number") {
		t.Fatalf("want a NonFiniteError naming the metric, got %v", err)
	}
	t.Log(err)
}

func TestCheckFiniteNamesThePath(t *testing.T) {
	type inner struct {
		X float64            `json:"x_s"`
		M map[string]float64 `json:"by"`
	}
	type outer struct {
		A      float64  `json:"a"`
		Hidden float64  `json:"-"`
		In     []inner  `json:"in"`
		P      *float64 `json:"p,omitempty"`
	}
	inf := math.Inf(1)
	for _, tc := range []struct {
		v    outer
		want string
	}{
		{outer{A: 1, Hidden: math.NaN()}, ""}, // not in the JSON: not checked
		{outer{A: math.NaN()}, "a"},
		{outer{In: []inner{{}, {X: inf}}}, "in[1].x_s"},
		{outer{In: []inner{{M: map[string]float64{"nvlink": math.Inf(-1)}}}}, "in[0].by.nvlink"},
		{outer{P: &inf}, "p"},
	} {
		err := checkFinite(&tc.v)
		var nf *NonFiniteError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: unexpected %v", tc.v, err)
		case tc.want != "" && (!errors.As(err, &nf) || nf.Field != tc.want):
			t.Errorf("%+v: got %v, want field %q", tc.v, err, tc.want)
		}
	}
}

// Issue 12 item 3: a timeline beyond MaxTimelineOps is refused before it is
// built, naming the count.
func TestEstimateBounded(t *testing.T) {
	p := seedPlan(t, "test/single-tiny")
	// One rank; at 1,000,000 decode steps its decode ops alone exceed 1M.
	_, err := EstimatePlan(p, Options{DecodeSteps: 1_000_000})
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Ops <= MaxTimelineOps || !strings.Contains(err.Error(), "more than the 1000000 allowed") {
		t.Fatalf("want TooLargeError, got %v", err)
	}
}

// A top candidate whose timeline would exceed the bound keeps its closed
// form and is named in FullSkipped, instead of the search running out of memory.
func TestRefineSkipsTooLargeTimelines(t *testing.T) {
	spec := seedSpec(t)
	cand := Candidate{TP: 8, PP: 2, Microbatches: 8, Variant: VariantEven, StageLayers: []int{8, 8}}
	p, err := partition.NewPlan(spec.CandidateConfig(cand))
	if err != nil {
		t.Fatal(err)
	}
	q, err := Quick(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &SearchResult{Rows: []SearchRow{{Candidate: cand, Quick: &q}}}
	// tp8pp2 decode: 2 simulated ranks (one per stage) × > 8 ops a step; at
	// 100,000 steps, > 1M ops.
	if err := r.Refine(spec, 1, Options{DecodeSteps: 100_000}, nil); err != nil {
		t.Fatal(err)
	}
	if r.Rows[0].Full != nil || len(r.FullSkipped) != 1 || !strings.Contains(r.FullSkipped[0], "tp8pp2-m8: ") {
		t.Fatalf("full %v, skipped %q", r.Rows[0].Full, r.FullSkipped)
	}
}
