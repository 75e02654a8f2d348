package exec_test

import (
	"maps"
	"slices"
	"testing"

	pexec "github.com/partbench/partbench/exec"
)

// runTP2 runs the tiny model at TP=2 (runTiny, two measured iterations)
// with probe calls of each collective after the measured iterations.
func runTP2(t *testing.T, probe int) []pexec.RankResult {
	t.Helper()
	results, _ := runTiny(t, 2, 1, 2, func(o *pexec.RunOptions) { o.LinkProbeCalls = probe })
	return results
}

// Each rank probes its TP group's two collectives after the measured
// iterations — the decode all_reduce of the hidden states (4 sequences ×
// 64 × 4 B = 1024 B) and the logits' all_gather (4 × 96 ids × 4 B = 1536 B,
// its output), in the order the decode Program first calls them — and the
// probe's calls stay out of the run's counts.
func TestLinkProbe(t *testing.T) {
	with := runTP2(t, 8)
	for _, res := range with {
		if len(res.LinkProbes) != 2 {
			t.Fatalf("rank %d: probes %+v, want the all_reduce and the all_gather", res.Rank, res.LinkProbes)
		}
		for i, want := range []struct {
			kind  string
			bytes int64
		}{{"all_reduce", 1024}, {"all_gather", 1536}} {
			p := res.LinkProbes[i]
			if p.Kind != want.kind || p.Bytes != want.bytes || !slices.Equal(p.Ranks, []int{0, 1}) || p.Calls != 8 ||
				!(p.MinS > 0) || p.MinS > p.MedianS || p.MedianS > 0.1 {
				t.Errorf("rank %d probe %d: %+v; want %s of %d B over {0, 1}, 8 calls, 0 < least ≤ median < 0.1 s", res.Rank, i, p, want.kind, want.bytes)
			}
		}
	}
	without := runTP2(t, 0)
	for r := range with {
		if without[r].LinkProbes != nil {
			t.Errorf("rank %d without probe calls: probes %+v", r, without[r].LinkProbes)
		}
		w, o := with[r], without[r]
		if !maps.Equal(w.DecodeCounts.Calls, o.DecodeCounts.Calls) || !maps.Equal(w.PrefillCounts.Calls, o.PrefillCounts.Calls) ||
			!maps.Equal(w.DecodeCounts.Bytes, o.DecodeCounts.Bytes) {
			t.Errorf("rank %d: counts with probes %+v / %+v, without %+v / %+v", r, w.PrefillCounts, w.DecodeCounts, o.PrefillCounts, o.DecodeCounts)
		}
	}
}
