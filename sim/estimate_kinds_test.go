package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// rankRow is rank r's row of e, failing the test where e has none.
func rankRow(t testing.TB, e *Estimate, r int) RankEstimate {
	t.Helper()
	row, ok := e.Ranks.Row(r)
	if !ok {
		t.Fatalf("%s: no row for rank %d (%d rows)", e.Name, r, e.Ranks.Len())
	}
	return row
}

// perRankRows is every rank's row computed rank by rank, as the estimate
// did before it kept rows by kind: the plan's rank (stage, TP index,
// layers, memory), fixed costs, working set and L2 residency from the
// rank's own Programs built by the plan, and busy and idle times and
// pricing counts from ref, an estimate of the same plan that simulated
// every rank (Options.EveryRank: each rank's own slices).
func perRankRows(t *testing.T, e, ref *Estimate) []RankEstimate {
	t.Helper()
	plan := e.Plan.OneReplica()
	g := plan.System.GPU
	usable := g.UsableL2Bytes()
	var rows []RankEstimate
	for r := 0; r < plan.Size(); r++ {
		rk := plan.Ranks[r]
		p, d := plan.Program(r, partition.Prefill), plan.Program(r, partition.Decode)
		ws := workingSet(d)
		res := 1.0
		if ws > 0 {
			res = math.Min(1, float64(usable)/float64(ws))
		}
		w := rankRow(t, ref, r)
		rows = append(rows, RankEstimate{Rank: rk.Rank, Stage: rk.Stage, TPIndex: rk.TPIndex, Memory: rk.Memory, Layers: rk.Layers,
			L2Residency: res, L2WorkingSetBytes: ws, DecodeFixed: fixedCosts(g, d), PrefillFixed: fixedCosts(g, p),
			PrefillBusyS: w.PrefillBusyS, PrefillIdleS: w.PrefillIdleS, DecodeBusyS: w.DecodeBusyS, DecodeIdleS: w.DecodeIdleS,
			TableOps: w.TableOps, ModelOps: w.ModelOps})
	}
	return rows
}

// The kinds of every golden case's estimate (every preset and test preset;
// TP × PP × DP mixes; uneven stages; layer-wise pipelines; TP groups cut by
// nodes, where every rank is its own kind) expand to the rows computed
// rank by rank (perRankRows), every field equal, and marshal to the JSON
// those rows marshal to; and where a stage's TP ranks are simulated once,
// there is one kind per stage.
func TestRankKindsExpandToPerRankRows(t *testing.T) {
	for i, c := range goldenCases() {
		p := planEdited(t, c.name, c.edit)
		label := goldenLabel(i, c, p)
		e, err := EstimatePlan(p, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		opts := c.opts
		opts.EveryRank = true
		ref, err := EstimatePlan(p, opts)
		if err != nil {
			t.Fatalf("%s every rank: %v", label, err)
		}
		want := perRankRows(t, e, ref)
		got, err := e.Ranks.Rows(0)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if len(got) != len(want) || e.Ranks.Len() != len(want) {
			t.Fatalf("%s: %d rows (Len %d), want %d", label, len(got), e.Ranks.Len(), len(want))
		}
		for r := range want {
			if !reflect.DeepEqual(got[r], want[r]) {
				t.Fatalf("%s rank %d:\n got %+v\nwant %+v", label, r, got[r], want[r])
			}
			if row := rankRow(t, e, r); !reflect.DeepEqual(row, want[r]) {
				t.Fatalf("%s: Row(%d) = %+v, want %+v", label, r, row, want[r])
			}
		}
		gj, err := json.Marshal(e.Ranks)
		if err != nil {
			t.Fatal(err)
		}
		wj, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gj, wj) {
			t.Fatalf("%s: the kinds' JSON differs from the rows'", label)
		}
		kinds := p.Size() / p.DP
		if e.Timeline.PerStage {
			kinds = p.PP
		}
		if len(e.Ranks.Kinds) != kinds {
			t.Errorf("%s: %d kinds, want %d (per stage: %v)", label, len(e.Ranks.Kinds), kinds, e.Timeline.PerStage)
		}
	}
}

// RanksOf joins a row to the kind before it only where it is that kind's
// next rank with every other field equal; Row, All and Rows read them back;
// the JSON is a []RankEstimate's, and reads back to the same kinds.
func TestRankRowsOf(t *testing.T) {
	layers := []int{0, 1}
	rows := []RankEstimate{
		{Rank: 0, Stage: 0, TPIndex: 0, Layers: layers, DecodeBusyS: 1},
		{Rank: 1, Stage: 0, TPIndex: 1, Layers: []int{0, 1}, DecodeBusyS: 1}, // joins rank 0
		{Rank: 2, Stage: 0, TPIndex: 2, Layers: layers, DecodeBusyS: 2},      // another busy time
		{Rank: 3, Stage: 1, TPIndex: 0, Layers: []int{2}, DecodeBusyS: 2},    // another stage
		{Rank: 4, Stage: 1, TPIndex: 1, Layers: []int{2}, DecodeBusyS: 2},    // joins rank 3
		{Rank: 5, Stage: 1, TPIndex: 3, Layers: []int{2}, DecodeBusyS: 2},    // TP index not the next
	}
	rs := RanksOf(rows)
	// Kinds: {0,1}, {2}, {3,4}, {5}.
	var counts []int
	for _, k := range rs.Kinds {
		counts = append(counts, k.Count)
	}
	if !reflect.DeepEqual(counts, []int{2, 1, 2, 1}) || rs.Len() != 6 {
		t.Fatalf("kinds of %v ranks, Len %d; want [2 1 2 1], 6", counts, rs.Len())
	}
	for i, want := range rows {
		if got, ok := rs.Row(want.Rank); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("Row(%d) = %+v, %v; want %+v", want.Rank, got, ok, want)
		}
		n := 0
		for j, got := range rs.All() {
			if j == i && !reflect.DeepEqual(got, want) {
				t.Errorf("All()[%d] = %+v, want %+v", j, got, want)
			}
			n++
		}
		if n != len(rows) {
			t.Fatalf("All yields %d rows, want %d", n, len(rows))
		}
	}
	for _, r := range []int{-1, 6, 100} {
		if _, ok := rs.Row(r); ok {
			t.Errorf("Row(%d) found a row outside ranks 0–5", r)
		}
	}
	if _, err := rs.Rows(5); err == nil || !strings.Contains(err.Error(), "6 per-rank rows (4 rank kinds) exceed the limit of 5") {
		t.Errorf("Rows(5) of 6 rows: %v", err)
	}
	if got, err := rs.Rows(6); err != nil || !reflect.DeepEqual(got, rows) {
		t.Errorf("Rows(6) = %v, %v", got, err)
	}

	gj, err := json.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	wj, _ := json.Marshal(rows)
	if !bytes.Equal(gj, wj) {
		t.Fatalf("JSON\n got %s\nwant %s", gj, wj)
	}
	var back RankRows
	if err := json.Unmarshal(gj, &back); err != nil || !reflect.DeepEqual(back, rs) {
		t.Fatalf("JSON read back: %+v, %v; want %+v", back, err, rs)
	}
	for _, c := range []struct {
		rows []RankEstimate
		want string
	}{{nil, "null"}, {[]RankEstimate{}, "[]"}} {
		if b, err := json.Marshal(RanksOf(c.rows)); err != nil || string(b) != c.want {
			t.Errorf("JSON of %#v: %s, %v; want %s", c.rows, b, err, c.want)
		}
	}
}

// stageLinksAlikeEach is stageLinksAlike rank by rank: every TP index's
// paths to the next stage and back against TP index 0's.
func stageLinksAlikeEach(plan *partition.Plan) bool {
	topo := plan.System.Topology
	for st := 0; st < plan.PP; st++ {
		next := (st + 1) % plan.PP
		a, b := plan.RankOf(st, 0), plan.RankOf(next, 0)
		for t := 1; t < plan.TP; t++ {
			if topo.Path(plan.RankOf(st, t), plan.RankOf(next, t)) != topo.Path(a, b) ||
				topo.Path(plan.RankOf(next, t), plan.RankOf(st, t)) != topo.Path(b, a) {
				return false
			}
		}
	}
	return true
}

// stageLinksAlike, one look-up per run of TP indices within a node, agrees
// with the rank-by-rank check on every TP 1–12 × PP 1–5 layout over nodes
// of 1–16 GPUs, and finds both answers among them.
func TestStageLinksAlikeByRuns(t *testing.T) {
	seen := map[bool]int{}
	for gpn := 1; gpn <= 16; gpn++ {
		for tp := 1; tp <= 12; tp++ {
			for pp := 1; pp <= 5; pp++ {
				p := &partition.Plan{TP: tp, PP: pp, DP: 1}
				p.System.Topology = topology.Topology{Nodes: (tp*pp + gpn - 1) / gpn, GPUsPerNode: gpn,
					Intra: topology.Link{Class: topology.NVLink, BytesPerS: 4.5e11}, Inter: topology.Link{Class: topology.Network, BytesPerS: 5e10}}
				got, want := stageLinksAlike(p), stageLinksAlikeEach(p)
				if got != want {
					t.Errorf("tp %d pp %d on nodes of %d: alike %v, rank by rank %v", tp, pp, gpn, got, want)
				}
				seen[want]++
			}
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("layouts alike / not alike: %d / %d; want some of each", seen[true], seen[false])
	}
}

// An estimate reads ranks through Plan.RankAt, never Plan.Ranks: a plan
// without its rank list (partition.NewPlanStages) gives the same JSON as
// NewPlan's on every golden case.
func TestEstimateWithoutRankList(t *testing.T) {
	for i, c := range goldenCases() {
		p := planEdited(t, c.name, c.edit)
		label := goldenLabel(i, c, p)
		s, err := partition.NewPlanStages(p.Config)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if s.Ranks != nil {
			t.Fatalf("%s: NewPlanStages listed %d ranks", label, len(s.Ranks))
		}
		want, err := EstimatePlan(p, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		got, err := EstimatePlan(s, c.opts)
		if err != nil {
			t.Fatalf("%s without the rank list: %v", label, err)
		}
		gj, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		wj, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gj, wj) {
			t.Errorf("%s: the estimate without the rank list differs", label)
		}
	}
}

// WriteIndentedJSON writes what json.Indent makes of a []RankEstimate's
// JSON, at any prefix: the rows of TestRankRowsOf (kinds of 2, 1, 2 and 1
// ranks, one with Count 0 left out as MarshalJSON leaves it), none (null)
// and an empty list ([]); and it says how many bytes it wrote.
func TestWriteIndentedJSONIsIndent(t *testing.T) {
	layers := []int{0, 1}
	rs := RanksOf([]RankEstimate{
		{Rank: 0, Stage: 0, TPIndex: 0, Layers: layers, DecodeBusyS: 1},
		{Rank: 1, Stage: 0, TPIndex: 1, Layers: layers, DecodeBusyS: 1},
		{Rank: 2, Stage: 0, TPIndex: 2, Layers: layers, DecodeBusyS: 2},
		{Rank: 3, Stage: 1, TPIndex: 0, Layers: []int{2}, DecodeBusyS: 2},
		{Rank: 4, Stage: 1, TPIndex: 1, Layers: []int{2}, DecodeBusyS: 2},
		{Rank: 5, Stage: 1, TPIndex: 3, Layers: []int{2}, DecodeBusyS: 2},
	})
	withZero := RankRows{Kinds: append([]RankKind{{RankEstimate: RankEstimate{Rank: 9}, Count: 0}}, rs.Kinds...)}
	for _, c := range []RankRows{rs, withZero, {}, {Kinds: []RankKind{}}} {
		raw, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		for _, prefix := range []string{"", "      "} {
			var want, got bytes.Buffer
			if err := json.Indent(&want, raw, prefix, "  "); err != nil {
				t.Fatal(err)
			}
			n, err := c.WriteIndentedJSON(&got, prefix, "  ")
			if err != nil || n != int64(got.Len()) {
				t.Fatalf("%d bytes written, %d counted, %v", got.Len(), n, err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("prefix %q:\n got %s\nwant %s", prefix, got.Bytes(), want.Bytes())
			}
		}
	}
}
