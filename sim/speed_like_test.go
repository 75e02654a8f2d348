package sim

import (
	"reflect"
	"slices"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// A plan's work builds each middle stage kind's Programs once and makes
// the rest alike (partition.ProgramLike): every Program it returns is the
// plan's own, each middle stage after its kind's first names that one as
// its template, and a rank made alike gets the first touches and working set
// found afresh from its own Programs (kindsConfig: PP 6, middle kinds of stages 1–2 and
// 3–4).
func TestPlanWorkProgramsAlike(t *testing.T) {
	plan := planOfText(t, kindsConfig, "kinds-tiny")
	w := &planWork{}
	var tmpl []int
	for r := range plan.Size() {
		for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
			if got, want := w.program(plan, r, ph), plan.Program(r, ph); !reflect.DeepEqual(got, want) {
				t.Errorf("rank %d %v: planWork's Program is not the plan's", r, ph)
			}
		}
		tmpl = append(tmpl, w.templateOf(r))
	}
	// TP 2: ranks 2st, 2st+1. Stage 1 (ranks 2, 3) and 3 (6, 7) are their
	// kinds' templates, stages 2 (4, 5) and 4 (8, 9) made from them; the
	// first (0, 1) and last (10, 11) stages are templates of kinds of one.
	want := []int{0, 1, 2, 3, 2, 3, 6, 7, 6, 7, 10, 11}
	if !slices.Equal(tmpl, want) {
		t.Errorf("templates of ranks 0…11: %v, want %v", tmpl, want)
	}
	for r := range plan.Size() {
		// Made alike, Programs are carved from one array per kind: each
		// is still its own after the others were made.
		for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
			if !reflect.DeepEqual(w.program(plan, r, ph), plan.Program(r, ph)) {
				t.Errorf("rank %d %v: changed after the later Programs were made", r, ph)
			}
		}
		a := &rankState{pre: w.program(plan, r, partition.Prefill).Ops, dec: w.program(plan, r, partition.Decode).Ops, steps: 16}
		b := &rankState{pre: a.pre, dec: a.dec, steps: 16}
		markFirstTouch(a, w, r)
		markFirstTouch(b, nil, r)
		if !slices.Equal(a.first, b.first) {
			t.Errorf("rank %d: first touches %v through the plan's work, %v marked afresh", r, a.first, b.first)
		}
		d := partition.Program{Rank: r, Phase: partition.Decode, Ops: a.dec}
		if got, want := w.workingSet(r, d, map[tensorKey]bool{}), workingSetIn(d, map[tensorKey]bool{}); got != want || want == 0 {
			t.Errorf("rank %d: working set %d through the plan's work, %d afresh (0: none read)", r, got, want)
		}
	}
}

// Programs carved from one array stay each their own: layerwise16-tiny's 14
// middle stages are one kind (one layer each, TP 1), 13 of them made alike
// from stage 1's per phase, every one equal to the plan's after all were
// made.
func TestPlanWorkCarvedProgramsApart(t *testing.T) {
	c, err := configs.Load("test/layerwise16-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	w := &planWork{}
	made := 0
	for r := range plan.Size() {
		for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
			w.program(plan, r, ph)
		}
		if tm := w.templateOf(r); tm >= 0 && tm != r {
			made++
		}
	}
	if made != 13 {
		t.Errorf("%d ranks made alike, want 13 (stages 2…14 from stage 1)", made)
	}
	for r := range plan.Size() {
		for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
			if !reflect.DeepEqual(w.program(plan, r, ph), plan.Program(r, ph)) {
				t.Errorf("rank %d %v: not the plan's Program once every Program was made", r, ph)
			}
		}
	}
}
