package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
)

// The quick estimate prices the later of the replicas as the timeline
// does: tp2-dp2-tiny on 2 cores with a replica_spread entry of ×1.25 at
// every length (one block length: clamped) gives a quick TTFT 1.25 × the
// quick TTFT without it, and TPOT as without it.
func TestQuickReplicaSpread(t *testing.T) {
	without := coresPlan(t, "test/tp2-dp2-tiny", 2, nil, nil)
	with := coresPlan(t, "test/tp2-dp2-tiny", 2, []configs.OpTime{opEntry(configs.ReplicaSpreadKind, configs.CoreWaitShape(2), 3_000_000, 2, 1.25, 4)}, nil)
	a, err := Quick(without, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Quick(with, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := b.TTFTS / a.TTFTS; math.Abs(r-1.25) > 1e-9 || b.TPOTS != a.TPOTS || !(a.TTFTS > 0) {
		t.Errorf("quick TTFT %g → %g (×%g, want ×1.25), TPOT %g → %g (want unchanged)", a.TTFTS, b.TTFTS, r, a.TPOTS, b.TPOTS)
	}
}
