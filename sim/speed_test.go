package sim

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// Where a stage's TP ranks see alike links (stageLinksAlike), every rank's
// Programs do the same work as its stage's TP index 0 (sameWork): partition
// builds them from the same shard shapes, with the rank's own peers and
// group. estimatePlan (which simulates replica 0) relies on it to skip building those ranks' Programs;
// this holds it on every per-stage case, replicas and a 4-node layout
// included, and checks that a cut TP group is refused.
func TestStageRanksAlikeByConstruction(t *testing.T) {
	cases := append(perStageCases, struct {
		name string
		edit func(*configs.Config)
	}{"tp8pp2", func(c *configs.Config) { // TP 2 × PP 4 × DP 2 on 4 nodes of 4
		c.Parallel.TP, c.Parallel.PP, c.Parallel.DP, c.Parallel.Microbatches = 2, 4, 2, 4
		c.Topology.Nodes, c.Topology.GPUsPerNode = 4, 4
	}})
	for _, tc := range cases {
		p := planEdited(t, tc.name, tc.edit).OneReplica() // the replica the estimate simulates
		if !stageLinksAlike(p) {
			t.Fatalf("%s: stageLinksAlike false for a per-stage case", p)
		}
		for r := range p.Ranks {
			rk := p.Ranks[r]
			sr := p.RankOf(rk.Stage, 0)
			for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
				if !sameWork(p, p.Program(sr, ph), p.Program(r, ph)) {
					t.Fatalf("%s rank %d %s: not alike its stage's TP index 0 (rank %d)", p, r, ph, sr)
				}
			}
		}
	}
	cut := planEdited(t, "tp8pp2", func(c *configs.Config) {
		c.Parallel.TP, c.Parallel.PP, c.Parallel.Microbatches = 4, 3, 4
		c.Topology.Nodes, c.Topology.GPUsPerNode = 2, 6
	})
	if stageLinksAlike(cut) {
		t.Fatal("tp 4 × pp 3 on nodes of 6: stageLinksAlike true for a cut TP group")
	}
}

// sortSlices gives what sort.SliceStable with the timeline's order gives:
// random slices with many equal ranks and start times (ties keep their
// input order, told apart by Step).
func TestSortSlicesIsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 100, 5000} {
		in := make([]Slice, n)
		for i := range in {
			in[i] = Slice{Rank: rng.IntN(5), StartS: float64(rng.IntN(8)), Step: i}
		}
		if n == 100 { // already in order: left as is
			sort.SliceStable(in, func(i, j int) bool { return in[i].Rank < in[j].Rank })
		}
		want := slices.Clone(in)
		sort.SliceStable(want, func(i, j int) bool {
			if want[i].Rank != want[j].Rank {
				return want[i].Rank < want[j].Rank
			}
			return want[i].StartS < want[j].StartS
		})
		got := slices.Clone(in)
		sortSlices(got)
		for i := range got {
			if got[i].Rank != want[i].Rank || got[i].StartS != want[i].StartS || got[i].Step != want[i].Step {
				t.Fatalf("n %d: slice %d is (rank %d, start %g, #%d), stable sort's (rank %d, start %g, #%d)", n, i,
					got[i].Rank, got[i].StartS, got[i].Step, want[i].Rank, want[i].StartS, want[i].Step)
			}
		}
	}
}

// allFinite, the fast walk, agrees with walkFinite on every place a
// non-finite value can hide in an Estimate: a top-level field, a map
// value, a slice element, an embedded struct, behind a pointer; and it
// skips what walkFinite skips (json:"-").
func TestAllFiniteAgreesWithWalk(t *testing.T) {
	base := func() *Estimate {
		return &Estimate{Ranks: RankRows{Kinds: []RankKind{{Count: 1}, {Count: 1}}}, Decode: PhaseEstimate{TimeByBound: map[Bound]float64{BoundHBM: 1}},
			Collectives: []CollectiveUse{{TimeS: 1}}}
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		what string
		edit func(*Estimate)
		ok   bool
	}{
		{"none", func(*Estimate) {}, true},
		{"top level", func(e *Estimate) { e.Decode.TPOTS = nan }, false},
		{"map value", func(e *Estimate) { e.Decode.TimeByBound[BoundL2] = inf }, false},
		{"slice element", func(e *Estimate) { e.Ranks.Kinds[1].DecodeFixed.TotalS = -inf }, false},
		{"collective", func(e *Estimate) { e.Collectives[0].TimeS = nan }, false},
		{"range", func(e *Estimate) { e.Range.TPOTS.Max = inf }, false},
		{"skipped timeline", func(e *Estimate) { e.Timeline = &Timeline{Slices: []Slice{{StartS: nan}}} }, true},
		{"row, first field", func(e *Estimate) { e.Ranks.Kinds[1].L2Residency = nan }, false},
		{"row, nested struct", func(e *Estimate) { e.Ranks.Kinds[0].PrefillFixed.LaunchS = inf }, false},
		{"row, last field", func(e *Estimate) { e.Ranks.Kinds[1].DecodeIdleS = nan }, false},
	} {
		e := base()
		tc.edit(e)
		fast := allFinite(reflect.ValueOf(e))
		slow := walkFinite(reflect.ValueOf(e), "") == nil
		if fast != tc.ok || slow != tc.ok {
			t.Errorf("%s: allFinite %v, walkFinite %v, want %v", tc.what, fast, slow, tc.ok)
		}
	}
}

// The rows of an estimate are checked by offset (flatFloats): every float
// field a row has, found here by reflection, set to NaN in turn, must be
// seen, and fields the walk skips must not be.
func TestFlatFloatsSeeEveryRowFloat(t *testing.T) {
	typ := reflect.TypeOf(RankEstimate{})
	offs, ok := flatFloats(typ)
	if !ok {
		t.Fatal("RankEstimate's floats are not flat: the rows are walked reflectively")
	}
	var paths [][]int // index paths of the float64 fields the walk visits
	var visit func(t reflect.Type, path []int)
	visit = func(t reflect.Type, path []int) {
		for _, i := range fieldsToWalk(t) {
			p := append(append([]int(nil), path...), i)
			switch f := t.Field(i); f.Type.Kind() {
			case reflect.Float64:
				paths = append(paths, p)
			case reflect.Struct:
				visit(f.Type, p)
			}
		}
	}
	visit(typ, nil)
	if len(paths) != len(offs) || len(paths) < 19 {
		t.Fatalf("%d float fields by reflection, %d offsets (RankEstimate has at least 19)", len(paths), len(offs))
	}
	for _, p := range paths {
		rows := []RankEstimate{{}, {}, {}}
		reflect.ValueOf(rows).Index(2).FieldByIndex(p).SetFloat(math.NaN())
		if allFinite(reflect.ValueOf(rows)) {
			t.Errorf("field %v of the last row NaN: allFinite says finite", p)
		}
		if walkFinite(reflect.ValueOf(rows), "") == nil {
			t.Errorf("field %v: walkFinite says finite", p)
		}
	}
}
