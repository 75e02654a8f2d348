package sim

import (
	"reflect"
	"testing"

	"github.com/partbench/partbench/partition"
)

// A stage made alike from its kind's template holds no ops of its own
// (planWork.view): the timeline runs read the template's ops with the
// rank's labels, and its own Programs are made where a reader needs them.
// Every reader is held to an estimate with no planWork (nil: every
// Program built, none lazy, the alike check comparing every op), which
// writes the same stages: the estimate, and the timeline through All, At
// and List (slices pointing at ops with the rank's own names, layers,
// peers and groups), equal to the bit; the summary run too. A label read
// from the template (a recv's or send's peer, a group, a name) moves a
// flow, a wait or a slice's op and fails it.
func TestLazyProgramsAreOwn(t *testing.T) {
	alt := make([]int, 96) // 64 stages of 1 and 2 layers in turn, as TestAlikeStagesMatchStepwise
	for l, st := 0, 0; st < 64; st++ {
		for range 1 + st%2 {
			alt[l] = st
			l++
		}
	}
	for _, c := range []struct {
		label string
		cfg   func(t *testing.T) *planArgs
	}{
		{"64 stages, TP 2, 4 micro-batches", func(t *testing.T) *planArgs { return &planArgs{64, 2, 64, 4, 2, nil} }},
		{"256 stages, TP 1", func(t *testing.T) *planArgs { return &planArgs{256, 1, 256, 1, 1, nil} }},
		{"64 stages, a node boundary every 4", func(t *testing.T) *planArgs { return &planArgs{64, 2, 64, 1, 8, nil} }},
		{"64 stages of 1 and 2 layers", func(t *testing.T) *planArgs { return &planArgs{96, 2, 64, 2, 2, alt} }},
		{"100,000 GPUs", nil},
	} {
		t.Run(c.label, func(t *testing.T) {
			var p *partition.Plan
			if c.cfg == nil {
				p = largePlan(t)
			} else {
				a := c.cfg(t)
				p = stagesPlan(t, a.layers, a.tp, a.pp, a.mb, a.perNode, a.layerMap)
			}
			got, err := EstimatePlan(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// How many simulated ranks read their template's ops when
			// the run ended (written, never simulated): none where no
			// stage is alike.
			lazy := 0
			if pk := got.Timeline.packed; pk != nil {
				for _, l := range pk.like {
					if l != nil {
						lazy++
					}
				}
			}
			ref, err := estimateShared(p, Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d ranks lazy, %d segments written (reference %d)", lazy, got.Timeline.stagesWritten, ref.Timeline.stagesWritten)
			if (lazy == 0) != (got.Timeline.stagesWritten == 0) {
				t.Errorf("%d ranks lazy at the end, %d segments written: want both or neither", lazy, got.Timeline.stagesWritten)
			}
			// At before List: a slice of a lazy rank expanded alone.
			n := got.Timeline.Len()
			for _, i := range []int{0, n / 3, n / 2, n - 1} {
				if g, w := got.Timeline.At(i), ref.Timeline.At(i); !reflect.DeepEqual(g, w) {
					t.Errorf("At(%d): %+v (op %+v), with no planWork %+v (op %+v)", i, g, *g.Op, w, *w.Op)
				}
			}
			gs, rs := got.Timeline.List(), ref.Timeline.List()
			if len(gs) != len(rs) {
				t.Fatalf("%d slices, with no planWork %d", len(gs), len(rs))
			}
			for i := range gs {
				if !reflect.DeepEqual(gs[i], rs[i]) {
					t.Fatalf("slice %d: %+v (op %+v), with no planWork %+v (op %+v)", i, gs[i], *gs[i].Op, rs[i], *rs[i].Op)
				}
			}
			k := 0
			for i, sl := range got.Timeline.All() {
				if i != k || !reflect.DeepEqual(sl, rs[i]) {
					t.Fatalf("All: slice %d (at %d) differs", i, k)
				}
				k++
			}
			g, r := *got, *ref
			g.Timeline, r.Timeline = nil, nil
			if !reflect.DeepEqual(g, r) {
				t.Errorf("the estimate differs from the one with no planWork")
			}
			gsum, err := EstimatePlan(p, Options{summary: true})
			if err != nil {
				t.Fatal(err)
			}
			rsum, err := estimateShared(p, Options{summary: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(FromEstimate(gsum), FromEstimate(rsum)) {
				t.Errorf("summary: %+v, with no planWork %+v", FromEstimate(gsum), FromEstimate(rsum))
			}
		})
	}
}

// planArgs are stagesPlan's arguments.
type planArgs struct {
	layers, tp, pp, mb, perNode int
	layerMap                    []int
}
