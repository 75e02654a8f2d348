package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// pipeline builds p stages of one rank each, every stage taking exactly t
// seconds per micro-batch, with free, instant transfers.
func pipeline(p, m int, t float64) *simulator {
	g := topology.GPU{FP32FLOPsPerS: 1e12, ComputeEfficiency: 1, HBMBytesPerS: 1e12, HBMEfficiency: 1, L2BytesPerS: 1e12}
	link := topology.Link{Class: topology.NVLink, BytesPerS: math.Inf(1)}
	plan := &partition.Plan{
		System: topology.System{GPU: g, Topology: topology.Topology{Nodes: 1, GPUsPerNode: p, Intra: link}},
	}
	plan.Model.DType = "fp32"
	s := &simulator{plan: plan, chanFree: map[chanKey]float64{}, inbox: map[chanKey][]message{}}
	for r := 0; r < p; r++ {
		st := &rankState{}
		for mb := 0; mb < m; mb++ {
			if r > 0 {
				st.items = append(st.items, item{partition.Prefill, -1, &partition.Op{Kind: partition.Recv, Peer: r - 1, Microbatch: mb}, 0, false})
			}
			// FLOPs/peak = t exactly.
			st.items = append(st.items, item{partition.Prefill, -1, &partition.Op{Kind: partition.Activation, FLOPs: int64(t * 1e12), Microbatch: mb}, 0, false})
			if r < p-1 {
				st.items = append(st.items, item{partition.Prefill, -1, &partition.Op{Kind: partition.Send, Peer: r + 1, Microbatch: mb}, 0, false})
			}
		}
		s.ranks = append(s.ranks, st)
		s.residency = append(s.residency, 0)
	}
	return s
}

func TestPipelineFillDrain(t *testing.T) {
	for _, tc := range []struct{ p, m int }{{2, 8}, {16, 1}, {4, 4}, {1, 5}, {8, 32}} {
		const step = 1e-3
		s := pipeline(tc.p, tc.m, step)
		tl, err := s.run()
		if err != nil {
			t.Fatal(err)
		}
		end := 0.0
		for _, sl := range tl.All() {
			end = max(end, sl.EndS)
		}
		// p equal stages of time t with m micro-batches take (m+p−1)·t.
		want := float64(tc.m+tc.p-1) * step
		if math.Abs(end-want) > 1e-12 {
			t.Errorf("p=%d m=%d: makespan %g, want %g", tc.p, tc.m, end, want)
		}
		// Bubble (p−1)/(m+p−1).
		e := &Estimate{Timeline: tl}
		var pe PhaseEstimate
		e.phaseUse(&pe, partition.Prefill, 0, end)
		if wantB := float64(tc.p-1) / float64(tc.m+tc.p-1); math.Abs(pe.BubbleFraction-wantB) > 1e-9 {
			t.Errorf("p=%d m=%d: bubble %g, want %g", tc.p, tc.m, pe.BubbleFraction, wantB)
		}
	}
}

func TestDeadlockIsAnError(t *testing.T) {
	s := pipeline(2, 1, 1e-3)
	// Rank 0 waits for a message nobody sends.
	s.ranks[0].items = append([]item{{partition.Prefill, -1, &partition.Op{Kind: partition.Recv, Peer: 1, Name: "x.recv"}, 0, false}}, s.ranks[0].items...)
	if _, err := s.run(); err == nil {
		t.Fatal("a Program that waits forever must fail the estimate")
	}
}
