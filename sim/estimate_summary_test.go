package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// summarySearches are the searches TestSummaryIsFromEstimate re-runs: the
// 4,096-GPU synthetic search (BenchmarkSearchFullCommand's, top 10: chunked
// prefills of 4 to 64 chunks, some over the op limit), tp8pp2 on 1,024 GPUs
// (partbench search --config tp8pp2 --nodes 128 --full 3) and llama2-13b-2k
// on 512 GPUs of DGX nodes (--topology dgx-h100x2 --nodes 64 --full 2).
func summarySearches(t *testing.T) []struct {
	name string
	spec SearchSpec
	top  int
} {
	syn, err := SyntheticSearchSpec(4096)
	if err != nil {
		t.Fatal(err)
	}
	syn.NoFullRange = true
	req := func(config, topo string, nodes int) SearchSpec {
		_, spec, err := SearchRequest{Config: config, Topology: topo, Nodes: nodes, Objective: ObjectiveTPS, Top: 10, Full: -1,
			DecodeSteps: SearchDecodeSteps, MaxMicrobatches: DefaultMaxMicrobatches}.spec()
		if err != nil {
			t.Fatal(err)
		}
		return spec
	}
	return []struct {
		name string
		spec SearchSpec
		top  int
	}{
		{"synthetic-4096", syn, 10},
		{"tp8pp2-1024", req("tp8pp2", "", 128), 3},
		{"llama2-13b-2k-512", req("llama2-13b-2k", "dgx-h100x2", 64), 2},
	}
}

// Every re-run Refine makes of the three searches above (each row's first
// at SearchDecodeSteps and each repeat at twice the steps, as Refine
// decides them), estimated whole and as a summary: FromEstimate of the
// summary equals the whole estimate's, every field with ==, and so does an
// error over the op limit. The summary keeps no timeline and no per-rank
// rows (it is not the whole estimate under another name). At least one
// whole re-run wrote decode steps from the steady state and one wrote
// prefill chunks, so the summary's writing of both is held too. Then, for
// the two smaller searches, Refine with SummaryOnly gives the same result
// JSON as without, and no FullEstimate.
func TestSummaryIsFromEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("re-runs the top candidates of three searches twice")
	}
	runs, wroteSteps, wroteChunks := 0, false, false
	for _, c := range summarySearches(t) {
		spec := c.spec
		spec.SummaryOnly = false
		res, err := Search(spec)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		rows := 0
		for i := range res.Rows {
			row := &res.Rows[i]
			if row.Quick == nil || rows == c.top {
				continue
			}
			rows++
			plan, err := partition.NewPlan(spec.CandidateConfig(row.Candidate))
			if err != nil {
				t.Fatal(err)
			}
			plan.System.GPU.Ranges = topology.ParamRanges{}
			work := &planWork{} // the Programs, shared as Refine's re-runs of a row share them
			for steps := SearchDecodeSteps; steps <= 4*SearchDecodeSteps; steps *= 2 {
				o := Options{DecodeSteps: steps, Collectives: spec.Collectives}
				ew, errW := estimateShared(plan, o, work)
				o.summary = true
				es, errS := estimateShared(plan, o, work)
				runs++
				var tlW, tlS *TooLargeError
				isW, isS := errors.As(errW, &tlW), errors.As(errS, &tlS)
				if isW || isS {
					if tlW == nil || tlS == nil || *tlW != *tlS {
						t.Fatalf("%s %s at %d steps: whole %v, summary %v", c.name, row.Name(), steps, errW, errS)
					}
					break
				}
				if errW != nil || errS != nil {
					t.Fatalf("%s %s at %d steps: whole %v, summary %v", c.name, row.Name(), steps, errW, errS)
				}
				if fw, fs := FromEstimate(ew), FromEstimate(es); fw != fs {
					t.Fatalf("%s %s at %d steps: summary %+v, whole %+v", c.name, row.Name(), steps, fs, fw)
				}
				if es.Timeline != nil || es.Ranks.Kinds != nil {
					t.Fatalf("%s %s: the summary kept the timeline or the per-rank rows", c.name, row.Name())
				}
				wroteSteps = wroteSteps || ew.Timeline.settled > 0
				wroteChunks = wroteChunks || ew.Timeline.chunksWritten > 0
				f := FromEstimate(ew)
				if math.Abs((row.Quick.TPOTS-f.TPOTS)/f.TPOTS) <= QuickTolerance { // Refine stops here
					break
				}
			}
		}
		if c.name == "synthetic-4096" {
			continue // Refine itself on the smaller two: the same re-runs cost twice the time here
		}
		// Refine itself, with and without the summary.
		refined := func(summary bool) ([]byte, *SearchResult) {
			sp := c.spec
			sp.SummaryOnly = summary
			r, err := Search(sp)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Refine(sp, c.top, Options{}, nil); err != nil {
				t.Fatal(err)
			}
			r.ElapsedS, r.CandidatesPerS, r.FullElapsedS = 0, 0, 0
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			return b, r
		}
		a, rw := refined(false)
		b, rs := refined(true)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: the search's JSON differs with SummaryOnly", c.name)
		}
		full := 0
		for i := range rs.Rows {
			if rs.Rows[i].FullEstimate != nil {
				t.Fatalf("%s %s: SummaryOnly kept the whole estimate", c.name, rs.Rows[i].Name())
			}
			if rw.Rows[i].FullEstimate != nil {
				full++
			}
		}
		if full == 0 {
			t.Fatalf("%s: no row was re-run", c.name)
		}
	}
	if !wroteSteps || !wroteChunks {
		t.Fatalf("%d re-runs: decode steps written %v, prefill chunks written %v: the summary's writing is not exercised", runs, wroteSteps, wroteChunks)
	}
}

// A summary asked for where a host's cores are shared among its ranks
// (shareCores reads the whole timeline) or op times are measured is the
// whole estimate: summaryAllowed refuses those, and allows a plan of GPUs.
func TestSummaryAllowed(t *testing.T) {
	plan := planEdited(t, "tp8pp2", nil)
	if !summaryAllowed(plan, 1, Options{}) {
		t.Fatal("tp8pp2 on its GPUs: summary refused")
	}
	if summaryAllowed(plan, 1, Options{Measured: &MeasuredOps{}}) {
		t.Fatal("measured op times: summary allowed")
	}
	if summaryAllowed(plan, 1, Options{EveryRank: true}) {
		t.Fatal("every rank asked for: summary allowed")
	}
	shared := *plan
	cfg := *plan.Config
	cfg.Hardware.HostCores = 4 // 16 ranks on 4 cores
	shared.Config = &cfg
	if summaryAllowed(&shared, 1, Options{}) {
		t.Fatal("16 ranks sharing 4 cores: summary allowed")
	}
	cfg.Hardware.HostCores = 16 // one core each: nothing shared
	if !summaryAllowed(&shared, 1, Options{}) {
		t.Fatal("16 ranks on 16 cores: summary refused")
	}
	if summaryAllowed(&shared, 2, Options{}) {
		t.Fatal("2 replicas of 16 ranks on 16 cores: summary allowed")
	}
}

// summaryUse on two ranks' hand-made ops. Rank 0: a prefill compute op on
// [0, 2], a decode op bound by HBM on [2, 6]. Rank 1 (its ops stored out of
// start order, which summaryUse puts right): a prefill recv on [0, 2]
// waiting 2, a decode compute op on [2, 5]. Prefill window [0, 2] (its
// last end): busy 2 and 0 (a recv is idle) → bubble 1 − 2/(2·2) = 0.5,
// critical rank 0, bound compute. Decode window [3, 6]: busy 3 and 2 →
// bubble 1 − 5/(2·3) = 1/6, critical rank 0, HBM 3 of its window, no idle.
// A bound useBounds does not list is errNoSummary.
func TestSummaryUseByHand(t *testing.T) {
	ci, hi, ni := int8(useBoundIndex(BoundCompute)), int8(useBoundIndex(BoundHBM)), int8(useBoundIndex(BoundNVLink))
	mk := func(bad bool) *simulator {
		s := &simulator{ranks: []*rankState{{}, {}}, ids: []int{0, 1}, useBase: []int{0, 2}, uses: []opUse{
			{start: 0, end: 2, bound: ci, phase: 0},
			{start: 2, end: 6, bound: hi, phase: 1},
			{start: 2, end: 5, bound: ci, phase: 1},
			{start: 0, end: 2, wait: 2, bound: ni, phase: 0, recv: true},
		}}
		if bad {
			s.uses[2].bound = -1
		}
		return s
	}
	e := &Estimate{}
	if err := mk(false).summaryUse(&Timeline{Ranks: 2}, e, 3, 6); err != nil {
		t.Fatal(err)
	}
	if e.Prefill.BubbleFraction != 0.5 || e.Prefill.CriticalRank != 0 || e.Prefill.Bottleneck != BoundCompute {
		t.Errorf("prefill: bubble %v, critical rank %d, bottleneck %s; want 0.5, 0, compute", e.Prefill.BubbleFraction, e.Prefill.CriticalRank, e.Prefill.Bottleneck)
	}
	if math.Abs(e.Decode.BubbleFraction-1.0/6) > 1e-15 || e.Decode.CriticalRank != 0 || e.Decode.Bottleneck != BoundHBM ||
		e.Decode.TimeByBound[BoundHBM] != 3 || e.Decode.TimeByBound[BoundCompute] != 0 || len(e.Decode.TimeByBound) != 2 {
		t.Errorf("decode: bubble %v, critical rank %d, bottleneck %s, by bound %v; want 1/6, 0, hbm, hbm 3 compute 0",
			e.Decode.BubbleFraction, e.Decode.CriticalRank, e.Decode.Bottleneck, e.Decode.TimeByBound)
	}
	if err := mk(true).summaryUse(&Timeline{Ranks: 2}, &Estimate{}, 3, 6); !errors.Is(err, errNoSummary) {
		t.Errorf("an unlisted bound: %v, want errNoSummary", err)
	}
}
