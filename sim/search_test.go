package sim

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// quickTol is the stated agreement of Quick with the full timeline on
// balanced pipelines and on unbalanced ones once the timeline reaches steady
// state (docs/search.md): 0.5 % on TTFT and TPOT.
const quickTol = QuickTolerance

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

func seedPlan(t *testing.T, name string) *partition.Plan {
	t.Helper()
	c, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestQuickMatchesTimelineOnSeeds(t *testing.T) {
	for _, name := range []string{"tp8pp2", "layerwise16"} {
		p := seedPlan(t, name)
		q, err := Quick(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := EstimatePlan(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if relErr(q.TTFTS, e.Prefill.TTFTS) > quickTol || relErr(q.TPOTS, e.Decode.TPOTS) > quickTol {
			t.Errorf("%s: quick TTFT %.6g s TPOT %.6g s, timeline %.6g s %.6g s: beyond %.1f %%",
				name, q.TTFTS, q.TPOTS, e.Prefill.TTFTS, e.Decode.TPOTS, 100*quickTol)
		}
		if math.Abs(q.BubbleFraction-e.Decode.BubbleFraction) > 0.01 || q.Bottleneck != e.Decode.Bottleneck {
			t.Errorf("%s: quick bubble %.4f bottleneck %s, timeline %.4f %s", name, q.BubbleFraction, q.Bottleneck,
				e.Decode.BubbleFraction, e.Decode.Bottleneck)
		}
	}
	// tp8pp2 decodes 8 micro-batches over 2 stages: throughput-bound, TPOT is
	// 8 × the slower stage. layerwise16 has 1 micro-batch over 16 stages:
	// TPOT is the round trip through all of them.
	if q, _ := Quick(seedPlan(t, "tp8pp2"), Options{}); q.TPOTS != q.BusiestS || q.RoundTripS >= q.BusiestS {
		t.Errorf("tp8pp2: TPOT %.6g, busiest %.6g, round trip %.6g: want the busiest stage to bound", q.TPOTS, q.BusiestS, q.RoundTripS)
	}
	if q, _ := Quick(seedPlan(t, "layerwise16"), Options{}); q.TPOTS != q.RoundTripS || q.BusiestS >= q.RoundTripS {
		t.Errorf("layerwise16: TPOT %.6g, busiest %.6g, round trip %.6g: want the round trip to bound", q.TPOTS, q.BusiestS, q.RoundTripS)
	}
}

// equalStages is a tiny pipeline whose stage time is exactly its FLOPs at
// 1 GFLOP/s: no launch cost, HBM, L2 and links effectively infinite.
func equalStages(t *testing.T, pp, micro int) *partition.Plan {
	t.Helper()
	// Validation refuses unphysical figures, so the plan is made with the
	// fastest memory and link it allows (a roofline's memory time below the
	// compute time does not count) and the ideal link (1e30 B/s, whose
	// transfers cost nothing) is set on the plan's system.
	fast := topology.Link{Class: topology.NVLink, Name: "ideal", BytesPerS: topology.MaxLinkBytesPerS}
	cfg := &configs.Config{
		Version: configs.SchemaVersion, Name: "equal-stages",
		Model:    configs.Model{Name: "tiny", Layers: 4, Hidden: 8, Heads: 2, KVHeads: 2, HeadDim: 4, FFN: 16, DType: "fp32"},
		Workload: configs.Workload{Batch: 4, Context: 10, OutputTokens: 2, Phases: []string{"prefill", "decode"}},
		Parallel: configs.Parallel{TP: 1, PP: pp, Microbatches: micro, Schedule: "fill-drain"},
		Hardware: configs.Hardware{GPU: topology.GPU{Name: "ideal", FP32FLOPsPerS: 1e9, FP16FLOPsPerS: 1e9, BF16FLOPsPerS: 1e9,
			HBMBytes: 1 << 30, HBMBytesPerS: topology.MaxBytesPerS, L2Bytes: 1 << 20, L2UsableFraction: 1, L2BytesPerS: topology.MaxBytesPerS, SMs: 1,
			ComputeEfficiency: 1, HBMEfficiency: 1}},
		Topology: configs.Topology{Topology: topology.Topology{Name: "ideal", Nodes: 1, GPUsPerNode: pp, Intra: fast, Inter: fast}},
		Run:      configs.Run{Iterations: 1},
	}
	p, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ideal := topology.Link{Class: topology.NVLink, Name: "ideal", BytesPerS: 1e30}
	p.System.Topology.Intra, p.System.Topology.Inter = ideal, ideal
	return p
}

func TestQuickEqualStagesHandDerived(t *testing.T) {
	// One layer's FLOPs (docs/costmodel.md), H 8, 2 heads of 4, ffn 16, not
	// gated; prompt 8 tokens, decode past = 8 + 2/2 = 9.
	// Prefill, 2 sequences × 8 tokens (T = 16), pairs 2·8·9/2 = 72:
	//   norms 2·4·16·8 = 1,024; qkv 2·16·24·8 = 6,144; attention 4·8·72 = 2,304;
	//   o 2·16·8·8 = 2,048; residuals 2·16·8 = 256; up 2·16·16·8 = 4,096;
	//   activation 5·16·16 = 1,280; down 4,096 → 21,248 FLOPs = 21.248 µs.
	// Decode, 2 sequences × 1 token, pairs 2·(9 + 1) = 20:
	//   128 + 768 + 640 + 256 + 32 + 512 + 160 + 512 = 3,008 FLOPs = 3.008 µs.
	// Every stage costs the same and links cost nothing, so with P stages
	// and m micro-batches TTFT = (m + P − 1)·t and TPOT = max(m, P)·t.
	cases := []struct {
		name           string
		pp, micro      int
		ttftS, tpotS   float64
		roundTripBound bool
	}{
		// 4 stages of 1 layer, 2 micro-batches of 2: (2+4−1)·21.248 µs; decode
		// is the round trip 4·3.008 µs.
		{"pp4 m2", 4, 2, 5 * 21.248e-6, 4 * 3.008e-6, true},
		// 2 stages of 2 layers, 4 micro-batches of 1 (FLOPs halve, layers
		// double: the stage time is the same): (4+2−1)·21.248 µs; decode is
		// throughput-bound, 4·3.008 µs.
		{"pp2 m4", 2, 4, 5 * 21.248e-6, 4 * 3.008e-6, false},
	}
	for _, tc := range cases {
		p := equalStages(t, tc.pp, tc.micro)
		q, err := Quick(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if relErr(q.TTFTS, tc.ttftS) > 1e-6 || relErr(q.TPOTS, tc.tpotS) > 1e-6 {
			t.Errorf("%s: quick TTFT %.6g s TPOT %.6g s, want %.6g and %.6g", tc.name, q.TTFTS, q.TPOTS, tc.ttftS, tc.tpotS)
		}
		if tc.roundTripBound != (q.RoundTripS >= q.BusiestS) {
			t.Errorf("%s: round trip %.6g busiest %.6g", tc.name, q.RoundTripS, q.BusiestS)
		}
		// The timeline agrees with the same hand numbers.
		e, err := EstimatePlan(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if relErr(e.Prefill.TTFTS, tc.ttftS) > 1e-6 || relErr(e.Decode.TPOTS, tc.tpotS) > 1e-6 {
			t.Errorf("%s: timeline TTFT %.6g s TPOT %.6g s, want %.6g and %.6g", tc.name, e.Prefill.TTFTS, e.Decode.TPOTS, tc.ttftS, tc.tpotS)
		}
	}
	// Decode bubble of pp4 m2: 4 stages busy 2·t each of a 4·t step → 1 − 8/16 = 0.5.
	if q, _ := Quick(equalStages(t, 4, 2), Options{}); math.Abs(q.BubbleFraction-0.5) > 1e-9 {
		t.Errorf("pp4 m2 decode bubble %.6g, want 0.5", q.BubbleFraction)
	}
}

// An unbalanced pipeline (9 and 7 layers) reaches steady state later than
// the timeline's default 6 decode steps: there the timeline's TPOT is still
// low by more than the tolerance. Refine repeats it with 12 steps, and then
// Quick agrees.
func TestQuickUnbalancedAgainstSteadyTimeline(t *testing.T) {
	c, err := configs.Load("tp8pp2")
	if err != nil {
		t.Fatal(err)
	}
	c.Model.Embeddings, c.Model.LMHead = true, true
	// Without the per-pass host overhead: 2 ms on the last stage's sample op
	// dwarfs the 9-vs-7-layer imbalance whose slow settling this test covers.
	c.Hardware.StepOverheadS, c.Hardware.Ranges = 0, topology.ParamRanges{}
	spec := SearchSpec{Config: c, System: topology.System{GPU: c.Hardware.GPU, Topology: c.Topology.Topology}}
	cand := Candidate{TP: 8, PP: 2, Microbatches: 8, Variant: VariantLast, StageLayers: []int{9, 7}}
	p, err := partition.NewPlan(spec.CandidateConfig(cand))
	if err != nil {
		t.Fatal(err)
	}
	q, err := Quick(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e6, err := EstimatePlan(p, Options{DecodeSteps: 6})
	if err != nil {
		t.Fatal(err)
	}
	if relErr(q.TPOTS, e6.Decode.TPOTS) <= quickTol {
		t.Fatalf("9,7 layers at 6 steps: quick %.6g timeline %.6g already agree; the transient this test covers is gone", q.TPOTS, e6.Decode.TPOTS)
	}
	r := &SearchResult{Rows: []SearchRow{{Candidate: cand, Quick: &q}}}
	if err := r.Refine(spec, 1, Options{DecodeSteps: 6}, nil); err != nil {
		t.Fatal(err)
	}
	row := r.Rows[0]
	if row.FullDecodeSteps != 12 || relErr(q.TTFTS, row.Full.TTFTS) > quickTol || relErr(q.TPOTS, row.Full.TPOTS) > quickTol {
		t.Errorf("9,7 layers: quick TTFT %.6g TPOT %.6g, timeline (%d steps) %.6g %.6g", q.TTFTS, q.TPOTS, row.FullDecodeSteps, row.Full.TTFTS, row.Full.TPOTS)
	}
}

func TestLayerVariants(t *testing.T) {
	cases := []struct {
		layers, pp int
		ends       bool
		want       map[string][]int
	}{
		// 16 over 3: even 6,5,5; first lighter: 5 then 11 over 2 = 6,5;
		// last lighter: 4 after 12 over 2 = 6,6; both: 5, 7, 4.
		{16, 3, false, map[string][]int{VariantEven: {6, 5, 5}, VariantFirst: {5, 6, 5}, VariantLast: {6, 6, 4}, VariantEnds: {5, 7, 4}}},
		// Divisible and no embedding or head: the even split only.
		{16, 4, false, map[string][]int{VariantEven: {4, 4, 4, 4}}},
		{16, 4, true, map[string][]int{VariantEven: {4, 4, 4, 4}, VariantFirst: {3, 5, 4, 4}, VariantLast: {5, 4, 4, 3}, VariantEnds: {3, 5, 5, 3}}},
		// One layer per stage cannot lose one.
		{16, 16, true, map[string][]int{VariantEven: {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}},
		// Two stages: ends-1 needs a middle stage.
		{5, 2, false, map[string][]int{VariantEven: {3, 2}, VariantFirst: {2, 3}, VariantLast: {4, 1}}},
		{16, 1, true, map[string][]int{VariantEven: {16}}},
	}
	for _, tc := range cases {
		got := LayerVariants(tc.layers, tc.pp, tc.ends)
		if len(got) != len(tc.want) {
			t.Errorf("%d layers over %d (ends %v): %d variants %v, want %d", tc.layers, tc.pp, tc.ends, len(got), got, len(tc.want))
			continue
		}
		for _, v := range got {
			if !slices.Equal(v.StageLayers, tc.want[v.Variant]) {
				t.Errorf("%d layers over %d: %s = %v, want %v", tc.layers, tc.pp, v.Variant, v.StageLayers, tc.want[v.Variant])
			}
		}
	}
	c := Candidate{TP: 2, PP: 8, Microbatches: 4, Variant: VariantEnds, StageLayers: []int{1, 3, 3, 2, 2, 2, 2, 1}}
	if c.LayerSummary() != "1,3×2,2×4,1" || c.Name() != "tp2pp8-m4-ends-1" || len(c.LayerMap()) != 16 || c.LayerMap()[1] != 1 {
		t.Errorf("summary %q name %q map %v", c.LayerSummary(), c.Name(), c.LayerMap())
	}
}

func seedSpec(t *testing.T) SearchSpec {
	t.Helper()
	c, err := configs.Load("tp8pp2")
	if err != nil {
		t.Fatal(err)
	}
	return SearchSpec{Config: c, System: topology.System{GPU: c.Hardware.GPU, Topology: c.Topology.Topology}}
}

func TestSearchSeedCountsAndRanking(t *testing.T) {
	spec := seedSpec(t)
	r, err := Search(spec)
	if err != nil {
		t.Fatal(err)
	}
	// tp × pp × dp = 16 = 2⁴: the exponents (a, b, c) with a + b + c = 4
	// are C(6, 2) = 15 factorizations. tp ∈ {1, 2, 4, 8, 16} all divide 32
	// heads, 32 KV heads and ffn 16,384; pp ≤ 16 layers; a replica of tp·pp
	// GPUs (a power of 2) divides a node of 8 or fills whole nodes, so none
	// is excluded. m ∈ {1, 2, 4, …, 64} (divisors of 128 up to 64); every pp
	// divides 16 layers and there is no embedding or head, so one layer map
	// each: 15 × 7 = 105 candidates (the 5 with dp = 1 give the 35 of tp ×
	// pp = 16 alone).
	if r.Enumerated != 105 || len(r.Rows) != 105 || len(r.Factorizations) != 15 {
		t.Fatalf("enumerated %d rows %d factorizations %d, want 105, 105, 15", r.Enumerated, len(r.Rows), len(r.Factorizations))
	}
	for _, f := range r.Factorizations {
		if f.TP*f.PP*f.DP != 16 || f.Excluded != "" {
			t.Errorf("factorization %+v: want tp × pp × dp = 16, none excluded", f)
		}
	}
	// workload.batch (128 at context 10,000) is per replica: its KV cache is
	// 16 layers × 128 × 10,000 × 2 × 4,096 × 2 B = 335.5 GB, 41.9 GB per GPU
	// over 8 and 83.9 GB over 4, above the 80 GB HBM. So the 6
	// factorizations with tp·pp ≤ 4 (3 of 4 GPUs, 2 of 2, 1 of 1) do not fit:
	// 6 × 7 = 42 candidates pruned, 9 × 7 = 63 priced.
	if r.PrunedMemory != 42 || r.Feasible+r.Violating != 63 {
		t.Fatalf("pruned %d, priced %d; want 42, 63", r.PrunedMemory, r.Feasible+r.Violating)
	}
	// Two replicas of a tp·pp = 8 group serve twice the batch at one
	// group's TPOT: the best candidate by TPS has dp = 2.
	if r.Rows[0].DP != 2 {
		t.Errorf("best by TPS %s, want a dp = 2 candidate", r.Rows[0].Name())
	}
	if r.Feasible+r.Violating+r.PrunedMemory != r.Enumerated || r.Violating != 0 {
		t.Fatalf("feasible %d + violating %d + pruned %d ≠ %d", r.Feasible, r.Violating, r.PrunedMemory, r.Enumerated)
	}
	for i := 1; i < r.Feasible; i++ {
		if r.Rows[i].Rank != i+1 || r.Rows[i].Quick.TokensPerS > r.Rows[i-1].Quick.TokensPerS {
			t.Fatalf("row %d (rank %d) out of order", i, r.Rows[i].Rank)
		}
	}
	// The seed's own layouts are among the candidates with the seed's numbers.
	for _, name := range []string{"tp8pp2-m8", "tp1pp16-m1"} {
		found := false
		for _, row := range r.Rows {
			found = found || row.Name() == name && row.Quick != nil
		}
		if !found {
			t.Errorf("%s missing", name)
		}
	}

	// A TPOT limit splits the candidates; the counts add up.
	spec.MaxTPOTS = 0.020
	r2, err := Search(spec)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Violating == 0 || r2.Feasible == 0 || r2.ViolatingBy["max_tpot"] != r2.Violating || r2.Feasible+r2.Violating != r.Feasible {
		t.Fatalf("with max TPOT 20 ms: feasible %d violating %d (%v), before %d feasible", r2.Feasible, r2.Violating, r2.ViolatingBy, r.Feasible)
	}
	for _, row := range r2.Rows {
		if row.Status == StatusDoesNotFit {
			continue // no estimate: replicas of ≤ 4 GPUs (see above)
		}
		if (row.Status == StatusFeasible) != (row.Quick.TPOTS <= 0.020) {
			t.Fatalf("%s: status %s at TPOT %.4g s", row.Name(), row.Status, row.Quick.TPOTS)
		}
	}

	// The full timeline on the top 2 sits beside the quick numbers.
	if err := r.Refine(spec, 2, Options{DecodeSteps: SearchDecodeSteps}, nil); err != nil {
		t.Fatal(err)
	}
	if r.FullTop != 2 || r.Rows[0].Full == nil || r.Rows[1].Full == nil || r.Rows[2].Full != nil || math.Abs(*r.Rows[0].TPOTRelDiff) > quickTol {
		t.Fatalf("refine: full top %d, rows %+v", r.FullTop, r.Rows[:3])
	}
	// The re-run's cost is reported apart from the search's: one timeline
	// per row at least (more where the steps were doubled), and its time.
	if r.FullRuns < 2 || r.FullRuns > 2*3 || r.FullElapsedS <= 0 {
		t.Errorf("refine: %d timelines in %g s, want 2 to 6 in a positive time", r.FullRuns, r.FullElapsedS)
	}
}

func TestSearchPrunesByMemory(t *testing.T) {
	spec := seedSpec(t)
	spec.Config.Workload.Batch = 1024 // KV cache: 16 layers × 1024 × 10,000 × 16,384 B = 2.7 TB over 16 GPUs
	r, err := Search(spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.PrunedMemory != r.Enumerated || r.PrunedByReason["weights + KV cache exceed usable HBM"] != r.Enumerated {
		t.Fatalf("pruned %d of %d: %v", r.PrunedMemory, r.Enumerated, r.PrunedByReason)
	}
	if r.Rows[0].Status != StatusDoesNotFit || r.Rows[0].Quick != nil || r.Rows[0].Rank != 0 {
		t.Fatalf("row %+v", r.Rows[0])
	}
}

func TestSearchSpecErrors(t *testing.T) {
	spec := seedSpec(t)
	spec.Objective = "latency"
	if _, err := Search(spec); err == nil || !strings.Contains(err.Error(), "objective: must be one of tps, tpot, ttft") {
		t.Fatalf("objective error: %v", err)
	}
	if _, err := SyntheticSearchSpec(12); err == nil || !strings.Contains(err.Error(), "multiple of 8") {
		t.Fatalf("synthetic error: %v", err)
	}
}

// BenchmarkSearch searches every partitioning of a 128-layer model (hidden
// 16,384, 128 heads, batch 4,096) over 4,096 GPUs (512 DGX nodes) with
// m = 1…64 and reports candidates per second. Record results in
// docs/measurements/search-bench.md.
func BenchmarkSearch(b *testing.B) {
	spec := syntheticSpec(b, 4096)
	if spec.System.Topology.Nodes != 512 || spec.System.Topology.GPUsPerNode != 8 {
		b.Fatalf("topology %+v", spec.System.Topology)
	}
	var n int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Search(spec)
		if err != nil {
			b.Fatal(err)
		}
		n += r.Enumerated
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "candidates/s")
	b.ReportMetric(float64(n)/float64(b.N), "candidates/op")
}
