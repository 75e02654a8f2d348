package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

func inPlaceEntry(kind string, group int, burstNS int64, w float64) configs.OpTime {
	return configs.OpTime{Kind: configs.InPlaceWaitKind, Shape: configs.InPlaceWaitShape(kind, fmtRanks(group)), Size: burstNS,
		TimeS: w, TimeMinS: w, TimeMaxS: w, Samples: 1, Ranks: group}
}

func fmtRanks(g int) string {
	_, shape, _, _ := OpKey(&partition.Op{Kind: partition.AllReduce, Group: make([]int, g)})
	return shape
}

// TestInPlaceWaitByBurst: the wait measured after 10 µs of compute (1 µs)
// and after 1 ms (4 µs). After 100 µs, halfway on a log scale
// (u = ln(100/10)/ln(1000/10) = 1/2): 1^(1/2)·4^(1/2) = 2 µs. Below and
// above the measured bursts the nearest holds (1 µs after 1 µs, 4 µs
// after 5 ms). An all_gather of the group, whose entry is another shape,
// has none; nor has a send.
func TestInPlaceWaitByBurst(t *testing.T) {
	tab := NewOpTable([]configs.OpTime{inPlaceEntry("all_reduce", 2, 10_000, 1e-6), inPlaceEntry("all_reduce", 2, 1_000_000, 4e-6)})
	ar := &partition.Op{Kind: partition.AllReduce, Group: []int{0, 1}}
	for _, c := range []struct{ burstS, want float64 }{{100e-6, 2e-6}, {1e-6, 1e-6}, {5e-3, 4e-6}} {
		if got, ok := inPlaceWaitS(tab, ar, c.burstS); !ok || math.Abs(got-c.want) > 1e-15 {
			t.Errorf("after %g s: %g s (%v), want %g s", c.burstS, got, ok, c.want)
		}
	}
	for _, op := range []*partition.Op{{Kind: partition.AllGather, Group: []int{0, 1}}, {Kind: partition.Send, Peer: 1},
		{Kind: partition.AllReduce, Group: []int{0, 1, 2, 3}}} {
		if got, ok := inPlaceWaitS(tab, op, 100e-6); ok {
			t.Errorf("%s over %d ranks: %g s, want none", op.Kind, len(op.Group), got)
		}
	}
}

// TestEstimateChargesInPlaceWait: tp4-tiny (4 ranks) on a 4-core host.
// Each pass holds 17 all-reduces and one all-gather over the 4 ranks, all
// on the critical path (every rank runs the same ops; with a core each,
// nothing is stretched), so an in-place wait of 3 µs per all_reduce and
// 1 µs per all_gather (one burst each: it holds at every burst) adds
// 17·3 + 1 = 52 µs to the prefill (TTFT) and to every decode step (TPOT).
// A core wait of 10 µs per message step measured there (105 steps a pass:
// TestEstimateChargesCoreWait) is not charged beside it — the in-place
// wait holds the partner's wake-up — so with both the growth is 52 µs
// still. Entries of 2-rank groups leave tp4-tiny as it is.
func TestEstimateChargesInPlaceWait(t *testing.T) {
	wait := configs.OpTime{Kind: configs.CoreWaitKind, Shape: configs.CoreWaitShape(4), Size: 1, TimeS: 10e-6, TimeMinS: 10e-6, TimeMaxS: 10e-6, Samples: 1, Ranks: 4}
	inPlace := []configs.OpTime{inPlaceEntry("all_reduce", 4, 5_000, 3e-6), inPlaceEntry("all_gather", 4, 5_000, 1e-6)}
	base := estimateOnCores(t, "test/tp4-tiny", 4)
	const want = 52e-6
	for name, e := range map[string]*Estimate{
		"in place":               estimateOnCores(t, "test/tp4-tiny", 4, inPlace...),
		"in place and core wait": estimateOnCores(t, "test/tp4-tiny", 4, append([]configs.OpTime{wait}, inPlace...)...),
	} {
		if d := e.Prefill.TTFTS - base.Prefill.TTFTS; math.Abs(d-want) > 1e-9 {
			t.Errorf("%s: TTFT grew by %.6g s, want %.6g s", name, d, want)
		}
		if d := e.Decode.TPOTS - base.Decode.TPOTS; math.Abs(d-want) > 1e-9 {
			t.Errorf("%s: TPOT grew by %.6g s, want %.6g s", name, d, want)
		}
	}
	other := estimateOnCores(t, "test/tp4-tiny", 4, inPlaceEntry("all_reduce", 2, 5_000, 3e-6))
	if other.Decode.TPOTS != base.Decode.TPOTS {
		t.Errorf("a 2-rank group's wait: TPOT %g, want unchanged %g", other.Decode.TPOTS, base.Decode.TPOTS)
	}
}
