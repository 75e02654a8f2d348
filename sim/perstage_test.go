package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

func planEdited(t *testing.T, name string, edit func(*configs.Config)) *partition.Plan {
	t.Helper()
	c, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	p, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// perStageCases are configs whose stage's TP ranks are alike (every TP
// group inside one node): one rank per stage is simulated.
var perStageCases = []struct {
	name string
	edit func(*configs.Config)
}{
	{"test/tp2pp2-tiny", nil},
	{"test/tp8pp2-tiny", nil},
	{"tp8pp2", nil},
	{"test/layermap-tiny", nil}, // uneven layer_map [0 0 0 1], TP 2
	{"test/tp2-dp2-tiny", nil},  // dp 2
	{"tp8pp2", func(c *configs.Config) { c.Parallel.LayerMap = layerMap16() }}, // uneven 12 + 4 layers, TP 8
	{"layerwise16", func(c *configs.Config) { // TP 2 × PP 8 on the same 16 GPUs, 4 micro-batches
		c.Parallel.TP, c.Parallel.PP, c.Parallel.Microbatches = 2, 8, 4
	}},
	{"tp8pp2", func(c *configs.Config) { // 2 replicas of TP 8 × PP 2
		c.Parallel.DP, c.Topology.Nodes = 2, 4
	}},
}

func layerMap16() []int {
	m := make([]int, 16)
	for i := 12; i < 16; i++ {
		m[i] = 1
	}
	return m
}

// The estimate from one simulated rank per stage is the estimate from every
// rank, bit for bit (JSON and every field), and each rank's slices in the
// full timeline are its stand-in's in the per-stage one.
func TestPerStageEqualsEveryRank(t *testing.T) {
	for _, tc := range append(perStageCases, struct {
		name string
		edit func(*configs.Config)
	}{"layerwise16", nil}) { // TP 1: every rank is its stage's
		p := planEdited(t, tc.name, tc.edit)
		per, err := EstimatePlan(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		all, err := EstimatePlan(p, Options{EveryRank: true})
		if err != nil {
			t.Fatal(err)
		}
		label := tc.name
		if tc.edit != nil {
			label += fmt.Sprintf(" (tp %d pp %d dp %d)", p.TP, p.PP, p.DP)
		}
		if per.Timeline.PerStage != (p.TP > 1) || all.Timeline.PerStage {
			t.Fatalf("%s: per-stage %v / %v, want %v / false", label, per.Timeline.PerStage, all.Timeline.PerStage, p.TP > 1)
		}
		compareEstimates(t, label, per, all)
		// Slices: rank r's i-th slice in the full timeline has the times
		// of its stand-in's i-th slice.
		byRank := func(tl *Timeline) map[int][]Slice {
			m := map[int][]Slice{}
			for _, sl := range tl.All() {
				m[sl.Rank] = append(m[sl.Rank], sl)
			}
			return m
		}
		full, rep := byRank(all.Timeline), byRank(per.Timeline)
		if len(full) != p.GroupSize() || len(rep) != p.PP {
			t.Fatalf("%s: %d ranks in the full timeline, %d in the per-stage one; want %d and %d", label, len(full), len(rep), p.GroupSize(), p.PP)
		}
		for r, sls := range full {
			want := rep[per.Timeline.StandIn(r)]
			if len(sls) != len(want) {
				t.Fatalf("%s rank %d: %d slices, stand-in %d", label, r, len(sls), len(want))
			}
			for i, sl := range sls {
				w := want[i]
				if sl.StartS != w.StartS || sl.EndS != w.EndS || sl.WaitS != w.WaitS || sl.Bound != w.Bound || sl.Link != w.Link ||
					sl.Op.Name != w.Op.Name || sl.Step != w.Step || sl.HBMBytes != w.HBMBytes {
					t.Fatalf("%s rank %d slice %d: %+v, stand-in's %+v", label, r, i, sl, w)
				}
			}
		}
	}
}

func compareEstimates(t *testing.T, label string, a, b *Estimate) {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(ja) != string(jb) {
		t.Errorf("%s: per-stage JSON differs from every rank's:\n%s\n%s", label, ja, jb)
	}
	x, y := *a, *b
	x.Timeline, y.Timeline = nil, nil
	// The rows by kind: every rank is a kind of its own where every rank
	// is simulated; the rows, joined where alike, must be the same.
	for _, e := range []*Estimate{&x, &y} {
		rows, err := e.Ranks.Rows(0)
		if err != nil {
			t.Fatal(err)
		}
		e.Ranks = RanksOf(rows)
	}
	if !reflect.DeepEqual(x, y) {
		t.Errorf("%s: per-stage Estimate differs from every rank's", label)
	}
}

// A TP group cut by a node boundary has TP ranks on different links: the
// estimate falls back to every rank, and says so in the timeline.
func TestPerStageFallsBackWhenLinksDiffer(t *testing.T) {
	// TP 4 × PP 3 on 2 nodes of 6 GPUs: stage 1 is ranks 4–7, 4 and 5 on
	// node 0, 6 and 7 on node 1, so 0→4 is NVLink but 2→6 the network.
	p := planEdited(t, "tp8pp2", func(c *configs.Config) {
		c.Parallel.TP, c.Parallel.PP, c.Parallel.Microbatches = 4, 3, 4
		c.Topology.Nodes, c.Topology.GPUsPerNode = 2, 6
	})
	if stageLinksAlike(p) {
		t.Fatal("stageLinksAlike: true for a TP group across nodes")
	}
	per, err := EstimatePlan(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := EstimatePlan(p, Options{EveryRank: true})
	if err != nil {
		t.Fatal(err)
	}
	if per.Timeline.PerStage {
		t.Fatal("simulated per stage although TP ranks' links differ")
	}
	compareEstimates(t, "tp4pp3 on 2×6", per, all)
}

// sameWork refuses Programs that differ in what a simulated op costs.
func TestSameWorkDetectsDifferences(t *testing.T) {
	p := seedPlan(t, "test/tp2pp2-tiny")
	a, b := p.Program(0, partition.Decode), p.Program(1, partition.Decode)
	if !sameWork(p, a, b) {
		t.Fatal("TP ranks 0 and 1 of tp2pp2-tiny: want alike")
	}
	for _, tc := range []struct {
		what string
		edit func(*partition.Op)
	}{
		{"rows", func(op *partition.Op) { op.Rows++ }},
		{"weight bytes", func(op *partition.Op) { op.WeightBytes++ }},
		{"group", func(op *partition.Op) { op.Group = []int{1, 3} }},
	} {
		c := partition.Program{Rank: b.Rank, Phase: b.Phase, Ops: append([]partition.Op(nil), b.Ops...)}
		for i := range c.Ops {
			if tc.what != "group" || c.Ops[i].Kind == partition.AllReduce {
				tc.edit(&c.Ops[i])
				break
			}
		}
		if sameWork(p, a, c) {
			t.Errorf("%s changed: sameWork still true", tc.what)
		}
	}
	// A send to a peer of another TP index.
	c := partition.Program{Rank: b.Rank, Phase: b.Phase, Ops: append([]partition.Op(nil), b.Ops...)}
	for i := range c.Ops {
		if c.Ops[i].Kind == partition.Send {
			c.Ops[i].Peer = p.RankOf(p.Ranks[c.Ops[i].Peer].Stage, 0)
			break
		}
	}
	if sameWork(p, a, c) {
		t.Error("send to TP index 0 from TP index 1: sameWork still true")
	}
}

// The timeline holds ops of one rank per stage: its slices do not grow
// with TP. tp8pp2-tiny against the same model at TP 2 × PP 2 (same stages,
// micro-batches and layers per stage): the same number of slices, and
// every rank's timeline holds TP times as many.
func TestTimelineScalesWithStagesNotRanks(t *testing.T) {
	tp8 := planEdited(t, "test/tp8pp2-tiny", nil)
	tp2 := planEdited(t, "test/tp8pp2-tiny", func(c *configs.Config) { c.Parallel.TP, c.Topology.Nodes, c.Topology.GPUsPerNode = 2, 1, 4 })
	count := func(p *partition.Plan) int { // ops one rank per stage runs: prefill + 16 decode steps
		n := 0
		for s := 0; s < p.PP; s++ {
			r := p.RankOf(s, 0)
			n += len(p.Program(r, partition.Prefill).Ops) + 16*len(p.Program(r, partition.Decode).Ops)
		}
		return n
	}
	var sizes []int
	for _, p := range []*partition.Plan{tp8, tp2} {
		e, err := EstimatePlan(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		all, err := EstimatePlan(p, Options{EveryRank: true})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := e.Timeline.Len(), count(p); got != want {
			t.Errorf("tp %d: %d slices, want %d (one rank per stage)", p.TP, got, want)
		}
		if got, want := all.Timeline.Len(), p.TP*count(p); got != want {
			t.Errorf("tp %d every rank: %d slices, want %d", p.TP, got, want)
		}
		sizes = append(sizes, e.Timeline.Len())
	}
	if sizes[0] != sizes[1] {
		t.Errorf("slices at TP 8 and TP 2: %d and %d, want equal", sizes[0], sizes[1])
	}
}

// The bound counts simulated ops: TP 8 × PP 1,000 (8,000 GPUs, 1,000
// layers) is estimated; every rank of it would be 8 times the ops, over
// the bound, and the refusal says to reduce the micro-batches.
func TestBoundCountsSimulatedRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1,000-stage estimate")
	}
	p := planEdited(t, "tp8pp2", func(c *configs.Config) {
		c.Model.Layers, c.Parallel.PP, c.Parallel.Microbatches, c.Workload.Batch = 1000, 1000, 1, 2
		c.Topology.Nodes = 1000
	})
	e, err := EstimatePlan(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Timeline.PerStage || e.Timeline.Len() > MaxTimelineOps {
		t.Fatalf("per stage %v, %d slices", e.Timeline.PerStage, e.Timeline.Len())
	}
	_, err = EstimatePlan(p, Options{EveryRank: true})
	var tl *TooLargeError
	if !errors.As(err, &tl) || !tl.EveryRank || tl.Ops <= MaxTimelineOps || tl.Ops > 8*e.Timeline.Len() || !strings.Contains(err.Error(), "reduce parallel.microbatches") {
		t.Fatalf("every rank: want a TooLargeError for %d ops, got %v", 8*e.Timeline.Len(), err)
	}
}
