package report

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

func TestModelGridsShowFixedCostsAndRange(t *testing.T) {
	// Rank 1: 86 kernels × 6 µs = 0.516 ms + 2 × 2 ms host = 4.516 ms, half
	// of a 9.032 ms TPOT; rank 0 has less and is not the one spelled out.
	e := &sim.Estimate{Name: "s", GPUs: 4, TP: 2, PP: 1, DP: 2, Microbatches: 2,
		Ranks: sim.RanksOf([]sim.RankEstimate{
			{Rank: 0, DecodeFixed: sim.FixedCosts{Kernels: 82, LaunchS: 492e-6, TotalS: 492e-6}},
			{Rank: 1, DecodeFixed: sim.FixedCosts{Kernels: 86, LaunchS: 516e-6, StepOverheadS: 4e-3, HostS: 4e-3, TotalS: 4.516e-3},
				PrefillFixed: sim.FixedCosts{TotalS: 4.6e-3}},
		}),
		Decode: sim.PhaseEstimate{TPOTS: 9.032e-3, Comm: partition.CommSummary{CallsPerRank: partition.PerRankOf([]int64{1, 1}), MessagesPerRank: partition.PerRankOf([]int64{2, 2})}},
		Range: sim.Range{TTFTS: sim.Spread{Min: 1, Median: 2, Max: 3}, TPOTS: sim.Spread{Min: 4e-3, Median: 5e-3, Max: 6e-3},
			TokensPerS: sim.Spread{Min: 100, Median: 200, Max: 300}},
	}
	grids := ModelGrids([]*sim.Estimate{e}, true)
	rg := grids[len(grids)-1]
	if h := rg.Header[len(rg.Header)-2:]; h[0] != "decode fixed (ms)" || h[1] != "decode host (ms)" {
		t.Fatalf("per-rank header ends with %q", h)
	}
	// The host column is the host's share alone: 0 on rank 0, the 4 ms of step overhead on rank 1.
	if n := len(rg.Header); rg.Rows[0][n-2] != "0.492" || rg.Rows[1][n-2] != "4.516" || rg.Rows[0][n-1] != "0.000" || rg.Rows[1][n-1] != "4.000" {
		t.Fatalf("fixed and host columns %v", rg.Rows)
	}
	notes := strings.Join(rg.Notes, "\n")
	for _, want := range []string{"rank 1 (the largest): 86 kernels × 6.0 µs launch = 0.516 ms", "host step overhead (scheduling, sampling) 4.000 ms = 4.516 ms, 50.0 % of TPOT 9.032 ms",
		"prefill 4.600 ms", "the other 1 replicas"} {
		if !strings.Contains(notes, want) {
			t.Errorf("per-rank notes lack %q:\n%s", want, notes)
		}
	}
	sum := strings.Join(grids[0].Notes, "\n")
	if want := "s: range over the stated parameter ranges (min / median / max): TTFT 1.000 / 2.000 / 3.000 s, TPOT 4.000 / 5.000 / 6.000 ms, TPS 100 / 200 / 300 tok/s"; !strings.Contains(sum, want) {
		t.Errorf("summary notes lack %q:\n%s", want, sum)
	}
	// No stated ranges: no range line.
	e.Range = sim.Range{TTFTS: sim.Spread{Min: 2, Median: 2, Max: 2}}
	if sum := strings.Join(ModelGrids([]*sim.Estimate{e}, false)[0].Notes, "\n"); strings.Contains(sum, "range over") {
		t.Errorf("range line without ranges:\n%s", sum)
	}
}
