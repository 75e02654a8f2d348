package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/partition"
)

// Ranks bound two to a CPU (rank q on CPU q/2) count the busy ranks on
// their own CPU, over that one CPU. 2 cores.
//
// Per stage, TP 2 (tp2pp2): stage 0's slice (rank 0: ranks 0, 1, CPU 0) a
// gemm over [0, 2), stage 1's (rank 2: ranks 2, 3, CPU 1) over [1, 2).
//
//	host-wide: busy 2 in [0, 1), 4 in [1, 2): stage 0 (2 + 4)/2 = 3 → 3/2
//	= 1.5; stage 1 4/2 = 2
//	paired: each stage's CPU holds its 2 ranks whenever it computes → 2 and
//	2 (the fill's lone stage takes turns on its CPU as in the overlap)
//
// One stage of TP 4 (tp4: ranks 0–3, 0–1 on CPU 0): 4/2 = 2 host-wide,
// 2/1 = 2 paired. No TP, one rank a slice (pp4): rank 0 a gemm over
// [0, 2), rank 1 over [1, 2) (both CPU 0), rank 2 over [0, 2) (CPU 1):
//
//	host-wide: busy 2 in [0, 1), 3 in [1, 2) → (2 + 3)/2/2 = 1.25 for ranks
//	0 and 2
//	paired: rank 0's CPU 1 in [0, 1), 2 in [1, 2) → 1.5; rank 2's CPU 1
//	rank throughout → 1
func TestShareFactorsPaired(t *testing.T) {
	gemm := &partition.Op{Kind: partition.Gemm, Name: "g"}
	pp := &Timeline{PerStage: true, TP: 2, Slices: []Slice{
		{Rank: 0, Phase: partition.Prefill, Op: gemm, StartS: 0, EndS: 2},
		{Rank: 2, Phase: partition.Prefill, Op: gemm, StartS: 1, EndS: 2},
	}}
	tp4 := &Timeline{PerStage: true, TP: 4, Slices: []Slice{{Rank: 0, Phase: partition.Prefill, Op: gemm, StartS: 0, EndS: 1}}}
	pp4 := &Timeline{Slices: []Slice{
		{Rank: 0, Phase: partition.Prefill, Op: gemm, StartS: 0, EndS: 2},
		{Rank: 1, Phase: partition.Prefill, Op: gemm, StartS: 1, EndS: 2},
		{Rank: 2, Phase: partition.Prefill, Op: gemm, StartS: 0, EndS: 2},
	}}
	for _, c := range []struct {
		name         string
		tl           *Timeline
		rank         int
		host, paired float64
	}{
		{"tp2pp2 stage 0", pp, 0, 1.5, 2},
		{"tp2pp2 stage 1", pp, 2, 2, 2},
		{"tp4", tp4, 0, 2, 2},
		{"pp4 rank 0", pp4, 0, 1.25, 1.5},
		{"pp4 rank 2", pp4, 2, 1.25, 1},
	} {
		for _, v := range []struct {
			paired bool
			want   float64
		}{{false, c.host}, {true, c.paired}} {
			s := shareFactors(c.tl, 1, 2, v.paired, nil, nil)
			if got := s.factor(c.rank, partition.Prefill, gemm); math.Abs(got-v.want) > 1e-12 {
				t.Errorf("%s, paired %v: factor %g, want %g", c.name, v.paired, got, v.want)
			}
			// A gemm is active too: the core wait's share reads the same count.
			if got := s.activeFactor(c.rank, partition.Prefill, gemm); math.Abs(got-v.want) > 1e-12 {
				t.Errorf("%s, paired %v: active factor %g, want %g", c.name, v.paired, got, v.want)
			}
		}
	}
}

// pairedOnCPUs: twice the cores in ranks, an even count per replica and no
// odd TP group, as run --bind-to auto binds them (topology.PairedCPU).
func TestPairedOnCPUs(t *testing.T) {
	for _, c := range []struct {
		tp, pp, replicas, cores int
		want                    bool
	}{
		{2, 2, 1, 2, true},   // tp2pp2 on 2
		{2, 1, 2, 2, true},   // tp2-dp2: one replica's pair per CPU
		{4, 1, 1, 2, true},   // tp4
		{1, 4, 1, 2, true},   // pp4
		{1, 1, 4, 2, false},  // 4 one-rank replicas: two share a CPU, one timeline
		{1, 16, 1, 2, false}, // layerwise16: 8 to a CPU, not bound
		{2, 2, 1, 4, false},  // a core each
		{2, 1, 1, 2, false},  // tp2 on 2: a core each
	} {
		plan := &partition.Plan{TP: c.tp, PP: c.pp, DP: 1}
		if got := pairedOnCPUs(plan, c.replicas, c.cores); got != c.want {
			t.Errorf("TP %d PP %d × %d replicas on %d cores: %v, want %v", c.tp, c.pp, c.replicas, c.cores, got, c.want)
		}
	}
}
