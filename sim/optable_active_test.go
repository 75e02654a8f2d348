package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestShareFactorsActive: 2 cores, 4 ranks.
//
//	ranks 0, 1: a gemm over [0, 2)
//	ranks 2, 3: an all_reduce over [0, 1), then a receive over [1, 2)
//	computing: 2 ranks throughout → the gemm's fair share 2/2 = 1
//	active (computing, or in a collective or send): 4 in [0, 1), 2 in
//	[1, 2) → mean 3 → 3/2 = 1.5
//
// and the same with ranks 2, 3 in a receive throughout: 2 active → 1.
func TestShareFactorsActive(t *testing.T) {
	gemm := &partition.Op{Kind: partition.Gemm, Name: "g"}
	ar := &partition.Op{Kind: partition.AllReduce, Name: "ar"}
	recv := &partition.Op{Kind: partition.Recv, Name: "r"}
	tl := &Timeline{Slices: []Slice{
		{Rank: 0, Phase: partition.Decode, Op: gemm, StartS: 0, EndS: 2},
		{Rank: 1, Phase: partition.Decode, Op: gemm, StartS: 0, EndS: 2},
		{Rank: 2, Phase: partition.Decode, Op: ar, StartS: 0, EndS: 1},
		{Rank: 3, Phase: partition.Decode, Op: ar, StartS: 0, EndS: 1},
		{Rank: 2, Phase: partition.Decode, Op: recv, StartS: 1, EndS: 2},
		{Rank: 3, Phase: partition.Decode, Op: recv, StartS: 1, EndS: 2},
	}}
	s := shareFactors(tl, 1, 2, false, nil, nil)
	if got := s.overFactor(0, partition.Decode, gemm); got != 1 {
		t.Errorf("fair share of computing ranks: %g, want 1", got)
	}
	if got := s.activeFactor(0, partition.Decode, gemm); math.Abs(got-1.5) > 1e-12 {
		t.Errorf("active factor: %g, want 1.5", got)
	}
	asleep := &Timeline{Slices: []Slice{
		{Rank: 0, Phase: partition.Decode, Op: gemm, StartS: 0, EndS: 2},
		{Rank: 1, Phase: partition.Decode, Op: gemm, StartS: 0, EndS: 2},
		{Rank: 2, Phase: partition.Decode, Op: recv, StartS: 0, EndS: 2},
		{Rank: 3, Phase: partition.Decode, Op: recv, StartS: 0, EndS: 2},
	}}
	if got := shareFactors(asleep, 1, 2, false, nil, nil).activeFactor(0, partition.Decode, gemm); got != 1 {
		t.Errorf("the others asleep in a receive: active factor %g, want 1", got)
	}
	// A per-stage timeline's slice stands for its TP peers: rank 0's gemm
	// and rank 2's all_reduce over [0, 2), TP 2 → 2·2 = 4 active → 2.
	ps := &Timeline{PerStage: true, TP: 2, Slices: []Slice{
		{Rank: 0, Phase: partition.Decode, Op: gemm, StartS: 0, EndS: 2},
		{Rank: 2, Phase: partition.Decode, Op: ar, StartS: 0, EndS: 2},
	}}
	if got := shareFactors(ps, 1, 2, false, nil, nil).activeFactor(0, partition.Decode, gemm); got != 2 {
		t.Errorf("per stage, TP 2: active factor %g, want 2", got)
	}
}

// TestCoreWaitShareFromActivity: a rank's burst of 2 µs alone ran at an
// active factor of 1.5 (burstActS 3 µs) and a fair share of 1 (its
// partners' compute alone beside it): 4 ranks on 2 cores, share =
// (1.5 − 1)/(4/2 − 1) = 0.5, so a 2-rank all_reduce (2 message steps)
// after W = 30 µs, W_idle = 10 µs is charged 2·(30·0.5 + 10·0.5) = 40 µs;
// by the fair share of computing ranks (share 0) it was 2·10 = 20 µs.
func TestCoreWaitShareFromActivity(t *testing.T) {
	r := &rankState{burstS: 2e-6, burstAloneS: 2e-6, burstOverS: 2e-6, burstActS: 3e-6}
	if got := r.activity(); math.Abs(got-1.5) > 1e-12 {
		t.Fatalf("activity %g, want 1.5", got)
	}
	if got := (&rankState{}).activity(); got != 1 {
		t.Errorf("no burst: activity %g, want 1", got)
	}
	plan := coresPlan(t, "test/tp2-dp2-tiny", 2, nil, nil)
	e := func(kind string, w float64) configs.OpTime {
		return opEntry(kind, configs.CoreWaitShape(2), 2_000, 0, w, 4)
	}
	table := NewOpTable([]configs.OpTime{e(configs.CoreWaitKind, 30e-6), e(configs.CoreWaitIdleKind, 10e-6)})
	op := &partition.Op{Kind: partition.AllReduce, Group: []int{0, 1}, Bytes: 512}
	for _, c := range []struct {
		stretch, want float64
	}{{r.activity(), 40e-6}, {r.stretch(), 20e-6}} {
		if got := coreWaitS(table, plan, op, r.burstS, c.stretch); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("stretch %g: core wait %g s, want %g s", c.stretch, got, c.want)
		}
	}
}
