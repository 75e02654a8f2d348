package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestOpTableAllGather: a profile's all_gather entries (calibrate's: kind
// all_gather, shape ranks=G, size the gathered bytes) over 2 ranks at
// 256 B and 4 KiB, 1 and 4 µs, and over 4 ranks at 1536 B, 30 µs. As every
// collective, a power law between measured sizes: a 768 B gather over 2
// ranks (tp2pp2-tiny's logits) sits at u = ln(768/256)/ln(4096/256) =
// ln 3/ln 16 of the way, 1^(1−u)·4^u = e^(ln 3·ln 4/ln 16) = e^(ln 3/2) =
// √3 µs; measured sizes read back exactly; outside the measured sizes
// (128 B, 8 KiB) and at a group size not measured (768 B over 4 ranks:
// below its one entry; over 8 ranks: none) there is no entry and the link
// prices it.
func TestOpTableAllGather(t *testing.T) {
	ts := append(opTimes("all_gather", "ranks=2", [3]float64{256, 0, 1e-6}, [3]float64{4096, 0, 4e-6}),
		opTimes("all_gather", "ranks=4", [3]float64{1536, 0, 30e-6})...)
	ts = append(ts, opTimes("all_reduce", "ranks=2", [3]float64{768, 0, 50e-6})...) // another kind, same key otherwise
	tab := NewOpTable(ts)
	gather := func(group []int, bytes int64) partition.Op {
		return partition.Op{Kind: partition.AllGather, Name: "logits.ag", Group: group, Bytes: bytes, Elems: int(bytes / 4)}
	}
	for _, c := range []struct {
		op   partition.Op
		want float64
		ok   bool
	}{
		{gather([]int{2, 3}, 768), math.Sqrt(3) * 1e-6, true},
		{gather([]int{0, 1}, 256), 1e-6, true},
		{gather([]int{0, 1}, 4096), 4e-6, true},
		{gather([]int{0, 1, 2, 3}, 1536), 30e-6, true},
		{gather([]int{0, 1}, 128), 0, false},
		{gather([]int{0, 1}, 8192), 0, false},
		{gather([]int{0, 1, 2, 3}, 768), 0, false},
		{gather([]int{0, 1, 2, 3, 4, 5, 6, 7}, 1536), 0, false},
	} {
		got, ok := tab.Time(&c.op)
		if ok != c.ok || math.Abs(got-c.want) > 1e-15 {
			t.Errorf("all_gather of %d B over %d ranks: (%g, %v), want (%g, %v)", c.op.Bytes, len(c.op.Group), got, ok, c.want, c.ok)
		}
	}
}

// TestEstimatePricesAllGatherFromTable: tp4-tiny gathers its logits
// (1536 B over its 4 ranks) once in the prefill and once per decode step,
// every rank at the same time (the four run the same ops). With an entry
// of 7 µs at that size and group the gather's slice on every rank is
// marked table and lasts 7 µs; without it the link model prices it (not
// table) at some d; the gather is on the critical path, so TTFT and TPOT
// move by exactly 7 µs − d. Rank 0's table count is 2 (the prefill's and
// the first decode step's gather), its model count 2 fewer than without.
// On a 2-core host the gather priced from the table gets the same core
// wait as from the link: with W = 10 µs per message step the 105 steps of
// a pass (TestEstimateChargesCoreWait) add 1.05 ms to TPOT with the entry
// as without it.
func TestEstimatePricesAllGatherFromTable(t *testing.T) {
	const tag = 7e-6
	entry := configs.OpTime{Kind: "all_gather", Shape: "ranks=4", Size: 1536, TimeS: tag, TimeMinS: tag, TimeMaxS: tag, Samples: 1, Ranks: 4}
	with, without := estimateOnCores(t, "test/tp4-tiny", 0, entry), estimateOnCores(t, "test/tp4-tiny", 0)
	gathers := func(e *Estimate) (n int, bound Bound, d float64) {
		for _, sl := range e.Timeline.All() {
			if sl.Op.Kind != partition.AllGather {
				continue
			}
			if sl.Op.Bytes != 1536 || len(sl.Op.Group) != 4 {
				t.Fatalf("%s: %d B over %d ranks, want tp4-tiny's 1536 over 4", sl.Op.Name, sl.Op.Bytes, len(sl.Op.Group))
			}
			if n > 0 && (sl.Bound != bound || math.Abs(sl.EndS-sl.StartS-d) > 1e-12) {
				t.Fatalf("rank %d %s step %d: %s, %g s; another gather %s, %g s", sl.Rank, sl.Phase, sl.Step, sl.Bound, sl.EndS-sl.StartS, bound, d)
			}
			n, bound, d = n+1, sl.Bound, sl.EndS-sl.StartS
		}
		return n, bound, d
	}
	n, b, d := gathers(with)
	if n == 0 || b != BoundTable || math.Abs(d-tag) > 1e-12 {
		t.Errorf("with the entry: %d gathers, %s, %g s; want table, 7 µs", n, b, d)
	}
	n0, b0, d0 := gathers(without)
	if n0 != n || b0 == BoundTable || !(d0 > 0) {
		t.Errorf("without: %d gathers, %s, %g s; want %d from the link model", n0, b0, d0, n)
	}
	if dt := with.Decode.TPOTS - without.Decode.TPOTS; math.Abs(dt-(tag-d0)) > 1e-12 {
		t.Errorf("TPOT moved %g s, want 7 µs − %g = %g", dt, d0, tag-d0)
	}
	if dt := with.Prefill.TTFTS - without.Prefill.TTFTS; math.Abs(dt-(tag-d0)) > 1e-12 {
		t.Errorf("TTFT moved %g s, want %g", dt, tag-d0)
	}
	rw, r0 := rankRow(t, with, 0), rankRow(t, without, 0)
	if rw.TableOps != 2 || r0.TableOps != 0 || rw.ModelOps != r0.ModelOps-2 {
		t.Errorf("rank 0: %d table, %d model ops with the entry; %d, %d without; want 2, %d and 0, %d", rw.TableOps, rw.ModelOps, r0.TableOps, r0.ModelOps, r0.ModelOps-2, r0.ModelOps)
	}

	const w = 10e-6
	wait := configs.OpTime{Kind: configs.CoreWaitKind, Shape: configs.CoreWaitShape(2), Size: 1, TimeS: w, TimeMinS: w, TimeMaxS: w, Samples: 1, Ranks: 4}
	for _, c := range []struct {
		name        string
		base, waits *Estimate
	}{
		{"from the table", estimateOnCores(t, "test/tp4-tiny", 2, entry), estimateOnCores(t, "test/tp4-tiny", 2, entry, wait)},
		{"from the link", estimateOnCores(t, "test/tp4-tiny", 2), estimateOnCores(t, "test/tp4-tiny", 2, wait)},
	} {
		if dt := c.waits.Decode.TPOTS - c.base.Decode.TPOTS; math.Abs(dt-105*w) > 1e-9 {
			t.Errorf("%s on 2 cores: the core wait added %g s to TPOT, want 105 × 10 µs", c.name, dt)
		}
	}
}
