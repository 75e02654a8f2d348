package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
)

// TestReplicaSpread: the later of R replicas' TTFT over one replica's, from
// the table's replica_spread entries on 2 cores: R = 2 at blocks of 1 ms
// (×1.10) and 4 ms (×1.04), measured at 4 ranks. Between the two lengths
// the ratio goes as a power law in the length: at 2 ms, u = ln 2 / ln 4 =
// 0.5 and the factor is √(1.10 · 1.04) = 1.069579; below 1 ms it is 1 ms's,
// above 4 ms 4 ms's (clamped). One replica, no host cores, replicas not
// measured (4, beyond R = 2), no entry, or an entry below 1 (0.98): 1.
func TestReplicaSpread(t *testing.T) {
	e := func(blockNs int64, r int64, f float64) configs.OpTime {
		return opEntry(configs.ReplicaSpreadKind, configs.CoreWaitShape(2), blockNs, r, f, 4)
	}
	tab := NewOpTable([]configs.OpTime{e(1_000_000, 2, 1.10), e(4_000_000, 2, 1.04)})
	below := NewOpTable([]configs.OpTime{e(1_000_000, 2, 0.98)})
	dp2 := coresPlan(t, "test/tp2-dp2-tiny", 2, nil, nil)
	noCores := coresPlan(t, "test/tp2-dp2-tiny", 0, nil, nil)
	onePlan := coresPlan(t, "test/tp2pp2-tiny", 2, nil, nil)
	dp4 := coresPlan(t, "test/tp2-dp2-tiny", 2, nil, func(c *configs.Config) {
		c.Parallel.DP = 4
		c.Topology.GPUsPerNode = 8
	})
	for _, c := range []struct {
		name  string
		tab   *OpTable
		dp    bool
		ttftS float64
		want  float64
	}{
		{"at 1 ms", tab, true, 1e-3, 1.10},
		{"at 4 ms", tab, true, 4e-3, 1.04},
		{"at 2 ms", tab, true, 2e-3, math.Sqrt(1.10 * 1.04)},
		{"below the lengths", tab, true, 0.2e-3, 1.10},
		{"above the lengths", tab, true, 50e-3, 1.04},
		{"no entry", nil, true, 2e-3, 1},
		{"below 1", below, true, 1e-3, 1},
	} {
		if got := replicaSpread(c.tab, dp2, c.ttftS); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: ×%.6f, want ×%.6f", c.name, got, c.want)
		}
	}
	if got := replicaSpread(tab, onePlan, 2e-3); got != 1 {
		t.Errorf("one replica: ×%g, want 1", got)
	}
	if got := replicaSpread(tab, noCores, 2e-3); got != 1 {
		t.Errorf("no host cores: ×%g, want 1", got)
	}
	if got := replicaSpread(tab, dp4, 2e-3); got != 1 {
		t.Errorf("4 replicas, measured for 2 only: ×%g, want 1", got)
	}
}

// TestEstimateReplicaSpread: tp2-dp2-tiny on 2 cores with a replica_spread
// entry of ×1.25 at every length (one block length: the same factor at any
// TTFT, clamped) prices TTFT at 1.25 × the TTFT without it, keeps the TTFT
// without it as one replica's, and TPOT as without it.
func TestEstimateReplicaSpread(t *testing.T) {
	without := coresPlan(t, "test/tp2-dp2-tiny", 2, nil, nil)
	with := coresPlan(t, "test/tp2-dp2-tiny", 2, []configs.OpTime{opEntry(configs.ReplicaSpreadKind, configs.CoreWaitShape(2), 3_000_000, 2, 1.25, 4)}, nil)
	a, err := EstimatePlan(without, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := EstimatePlan(with, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Prefill.TTFTS / a.Prefill.TTFTS; math.Abs(r-1.25) > 1e-9 || b.Decode.TPOTS != a.Decode.TPOTS {
		t.Errorf("TTFT %g → %g (×%g, want ×1.25), TPOT %g → %g (want unchanged)", a.Prefill.TTFTS, b.Prefill.TTFTS, r, a.Decode.TPOTS, b.Decode.TPOTS)
	}
	// One replica's TTFT is kept beside the later one's, only where priced.
	if b.Prefill.ReplicaTTFTS != a.Prefill.TTFTS || a.Prefill.ReplicaTTFTS != 0 {
		t.Errorf("one replica's TTFT %g with the spread (want %g), %g without (want 0)", b.Prefill.ReplicaTTFTS, a.Prefill.TTFTS, a.Prefill.ReplicaTTFTS)
	}
}
