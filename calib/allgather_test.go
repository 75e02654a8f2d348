package calib

import (
	"math"
	"slices"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// gatherBytes rounds to whole float32 elements per member, at least one:
// over 2 ranks 4 B → 8 (one element each), 1536 → 1536 (192 each), 1537 →
// 1536; over 4 ranks 4 and 16 B → 16, 100 → 96 (6 each).
// gatherSizes over 2 ranks of the sweep {4, 16, 64, 1024} and the Programs'
// 768: {8, 16, 64, 768, 1024}; over 4 ranks with 1536: 4 and 16 both → 16,
// so {16, 64, 1024, 1536}.
func TestGatherSizes(t *testing.T) {
	for _, c := range []struct {
		bytes int64
		g     int
		want  int64
	}{{4, 2, 8}, {1536, 2, 1536}, {1537, 2, 1536}, {4, 4, 16}, {16, 4, 16}, {100, 4, 96}} {
		if got := gatherBytes(c.bytes, c.g); got != c.want {
			t.Errorf("gatherBytes(%d, %d) = %d, want %d", c.bytes, c.g, got, c.want)
		}
	}
	sweep := []int64{4, 16, 64, 1024}
	if got := gatherSizes(sweep, []int64{768}, 2); !slices.Equal(got, []int64{8, 16, 64, 768, 1024}) {
		t.Errorf("over 2 ranks: %v, want [8 16 64 768 1024]", got)
	}
	if got := gatherSizes(sweep, []int64{1536}, 4); !slices.Equal(got, []int64{16, 64, 1024, 1536}) {
		t.Errorf("over 4 ranks: %v, want [16 64 1024 1536]", got)
	}
}

// The test configs' Programs gather their logits over the TP group: tp2pp2
// and tp2-dp2 2 sequences (batch 4 over 2 micro-batches, or over 2
// replicas) × vocab 96 × 4 B (fp32) = 768 B over 2 ranks; tp4 4 × 96 × 4 =
// 1536 B over 4; single-tiny (TP 1) none.
func TestProgramGathers(t *testing.T) {
	plans, err := opPlans([]string{"test/single-tiny", "test/tp2pp2-tiny", "test/tp2-dp2-tiny", "test/tp4-tiny"})
	if err != nil {
		t.Fatal(err)
	}
	got := programGathers(plans)
	if len(got) != 2 || !slices.Equal(got[2], []int64{768}) || !slices.Equal(got[4], []int64{1536}) {
		t.Errorf("all_gather payloads by group size %v, want map[2:[768] 4:[1536]]", got)
	}
}

// At 4 ranks the link is timed over commGroups' all_reduce (all, pairs)
// and sendrecv at the sweep, then the all_gather over all 4 at the sweep
// and 1536, and the pairs' all_gather at once at the sweep and 768; at 3
// ranks (odd) the pair's all_gather is the pair {0, 1} alone, and not at
// all in quick mode; at 2 one all_gather over both; at 1 nothing.
func TestLinkGroups(t *testing.T) {
	sweep := []int64{16, 4096}
	progs := map[int][]int64{2: {768}, 4: {1536}}
	type row struct {
		op    string
		ranks []int
		sizes []int64
	}
	all4 := []int{0, 1, 2, 3}
	for _, c := range []struct {
		n     int
		quick bool
		want  []row
	}{
		{4, false, []row{{opAllReduce, all4, sweep}, {opAllReducePairs, all4, sweep}, {opSendRecv, []int{0, 1}, sweep},
			{opAllGather, all4, []int64{16, 1536, 4096}}, {opAllGatherPairs, all4, []int64{16, 768, 4096}}}},
		{3, false, []row{{opAllReduce, []int{0, 1, 2}, sweep}, {opAllReduce, []int{0, 1}, sweep}, {opSendRecv, []int{0, 1}, sweep},
			{opAllGather, []int{0, 1, 2}, []int64{12, 4092}}, {opAllGather, []int{0, 1}, []int64{16, 768, 4096}}}},
		{3, true, []row{{opAllReduce, []int{0, 1, 2}, sweep}, {opSendRecv, []int{0, 1}, sweep},
			{opAllGather, []int{0, 1, 2}, []int64{12, 4092}}}},
		{2, false, []row{{opAllReduce, []int{0, 1}, sweep}, {opSendRecv, []int{0, 1}, sweep},
			{opAllGather, []int{0, 1}, []int64{16, 768, 4096}}}},
		{1, false, nil},
	} {
		got := linkGroups(c.n, c.quick, sweep, progs)
		if len(got) != len(c.want) {
			t.Errorf("n=%d quick=%v: %d groups %v, want %d", c.n, c.quick, len(got), got, len(c.want))
			continue
		}
		for i, w := range c.want {
			g := got[i]
			if g.op != w.op || !slices.Equal(g.ranks, w.ranks) || !slices.Equal(g.sizes, w.sizes) {
				t.Errorf("n=%d quick=%v group %d: %s over %v at %v, want %s over %v at %v", c.n, c.quick, i, g.op, g.ranks, g.sizes, w.op, w.ranks, w.sizes)
			}
		}
		if n := samplesCount(got); c.n == 4 && n != 3*2+3+3 {
			t.Errorf("n=4: %d samples, want 12", n)
		}
	}
}

// The link's α and β come from the all_reduce and sendrecv samples alone:
// with all_gather samples 100× what the true link gives among them (an
// all_gather fitted as an all_reduce, or at all, would pull the fit), the
// fit still recovers the true α = 30 µs and β = 3e8 B/s.
func TestLinkFitLeavesOutAllGather(t *testing.T) {
	link := linkOf("truth", 30e-6, 3e8)
	var samples []linkSample
	for _, op := range []struct {
		op    string
		ranks int
		scale float64
	}{{opAllReduce, 4, 1}, {opAllReduce, 2, 1}, {opSendRecv, 2, 1}, {opAllGather, 4, 100}, {opAllGatherPairs, 2, 100}} {
		for _, b := range QuickCommSizes {
			e, err := modelComm(commPoint{op: op.op, ranks: op.ranks, bytes: b}, link)
			if err != nil {
				t.Fatal(err)
			}
			samples = append(samples, linkSample{op.op, op.ranks, b, []float64{e.TimeS * op.scale}})
		}
	}
	pts := linkFitPoints(samples, 0)
	if len(pts) != 3*len(QuickCommSizes) {
		t.Fatalf("%d points fitted, want the %d of all_reduce and sendrecv", len(pts), 3*len(QuickCommSizes))
	}
	a, b, err := fitLink(pts)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(a/30e-6-1) > 0.02 || math.Abs(b/3e8-1) > 0.02 {
		t.Errorf("fit α %g, β %g; want 3e-05, 3e+08", a, b)
	}
}

// An all_gather sample is modeled as sim models an all_gather, not as an
// all_reduce: over 2 ranks on a link of α = 10 µs, β = 1e9 B/s the ring
// all_gather takes one step and the all_reduce two, so at 1 MiB (bandwidth
// bound) the all_gather's model is below the all_reduce's and equals
// sim.Collective's all_gather of the same payload.
func TestModelCommAllGather(t *testing.T) {
	link := linkOf("l", 10e-6, 1e9)
	ag, err := modelComm(commPoint{op: opAllGatherPairs, ranks: 2, bytes: 1 << 20}, link)
	if err != nil {
		t.Fatal(err)
	}
	ar, err := modelComm(commPoint{op: opAllReduce, ranks: 2, bytes: 1 << 20}, link)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sim.Collective(systemOf(2, link), "all_gather", []int{0, 1}, 1<<20, sim.CollectiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ag.TimeS != want.TimeS || !(ag.TimeS < ar.TimeS) {
		t.Errorf("all_gather modeled %g s (sim's all_gather %g), all_reduce %g", ag.TimeS, want.TimeS, ar.TimeS)
	}
}

// The pairs' all_gather and the all_gather over a group write op-time
// entries of kind all_gather at their group size, sim's key: a look-up of
// a 768 B all_gather over 2 ranks finds the pairs' entry, over 4 ranks at
// 1536 B the group's.
func TestCommOpTimesAllGather(t *testing.T) {
	got := commOpTimes([]configs.CommSample{
		{Op: opAllGatherPairs, Ranks: 2, Bytes: 768, TimeMinS: 1e-6, TimeMedianS: 2e-6, TimeMaxS: 3e-6},
		{Op: opAllGather, Ranks: 4, Bytes: 1536, TimeMinS: 4e-6, TimeMedianS: 5e-6, TimeMaxS: 6e-6},
	}, 4, 5)
	want := []configs.OpTime{
		{Kind: "all_gather", Shape: "ranks=2", Size: 768, TimeS: 2e-6, TimeMinS: 1e-6, TimeMaxS: 3e-6, Samples: 5, Ranks: 4},
		{Kind: "all_gather", Shape: "ranks=4", Size: 1536, TimeS: 5e-6, TimeMinS: 4e-6, TimeMaxS: 6e-6, Samples: 5, Ranks: 4},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("entries %+v, want %+v", got, want)
	}
	tab := sim.NewOpTable(got)
	if v, ok := tab.Time(&partition.Op{Kind: partition.AllGather, Group: []int{2, 3}, Bytes: 768}); !ok || v != 2e-6 {
		t.Errorf("2-rank look-up: %g, %v; want 2e-06", v, ok)
	}
	if v, ok := tab.Time(&partition.Op{Kind: partition.AllGather, Group: []int{0, 1, 2, 3}, Bytes: 1536}); !ok || v != 5e-6 {
		t.Errorf("4-rank look-up: %g, %v; want 5e-06", v, ok)
	}
}

// checkAllGatherEntries checks a calibration's all_gather: link samples at
// sizes over 2 ranks, modeled as sim's all_gather with the fitted link,
// and an op-time entry of kind all_gather for each, shape ranks=2, at the
// profile's ranks, its time the sample's median.
func checkAllGatherEntries(t *testing.T, cal *configs.Calibration, sizes []int64) {
	t.Helper()
	var got []int64
	median := map[int64]float64{}
	for _, s := range cal.Comm {
		if s.Op != opAllGather {
			continue
		}
		got = append(got, s.Bytes)
		median[s.Bytes] = s.TimeMedianS
		want, err := sim.Collective(systemOf(2, cal.Topology.Intra), "all_gather", []int{0, 1}, s.Bytes, sim.CollectiveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Ranks != 2 || s.ModelTimeS != want.TimeS {
			t.Errorf("all_gather sample %+v: want ranks 2 and the link's all_gather model %g s", s, want.TimeS)
		}
	}
	if !slices.Equal(got, sizes) {
		t.Errorf("all_gather samples at %v B, want %v", got, sizes)
	}
	var entries []int64
	for _, e := range cal.OpTimes {
		if e.Kind != "all_gather" {
			continue
		}
		entries = append(entries, e.Size)
		if e.Shape != "ranks=2" || e.Ranks != cal.Info.Ranks || e.TimeS != median[e.Size] {
			t.Errorf("all_gather entry %+v: want shape ranks=2, ranks %d, time %g (the sample's median)", e, cal.Info.Ranks, median[e.Size])
		}
	}
	if !slices.Equal(entries, sizes) {
		t.Errorf("all_gather entries at %v B, want %v", entries, sizes)
	}
}
