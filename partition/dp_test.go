package partition

import (
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
)

// withLayout is a test config with another parallel layout on the same
// links: tp × pp × dp GPUs in one node.
func withLayout(t *testing.T, name string, tp, pp, dp int) *Plan {
	t.Helper()
	c, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	c.Parallel.TP, c.Parallel.PP, c.Parallel.DP = tp, pp, dp
	c.Topology.Nodes, c.Topology.GPUsPerNode = 1, tp*pp*dp
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDPRankNumbering(t *testing.T) {
	p := plan(t, "test/tp2-dp2-tiny")
	// tp 2 × pp 1 × dp 2: replica 0 = ranks 0, 1; replica 1 = ranks 2, 3.
	if p.Size() != 4 || p.GroupSize() != 2 || p.DP != 2 || len(p.Ranks) != 4 {
		t.Fatalf("size %d, group size %d, dp %d, ranks %d; want 4, 2, 2, 4", p.Size(), p.GroupSize(), p.DP, len(p.Ranks))
	}
	want := []struct {
		replica, tp int
		group       []int
	}{
		{0, 0, []int{0, 1}}, {0, 1, []int{0, 1}}, {1, 0, []int{2, 3}}, {1, 1, []int{2, 3}},
	}
	for i, w := range want {
		r := p.Ranks[i]
		if r.Rank != i || r.Replica != w.replica || r.TPIndex != w.tp || !reflect.DeepEqual(r.TPGroup, w.group) {
			t.Errorf("rank %d = %+v, want replica %d tp %d group %v", i, r, w.replica, w.tp, w.group)
		}
	}
}

// Every replica's Program is replica 0's with ranks shifted by
// replica·TP·PP, and no op names a rank of another replica.
func TestDPProgramsStayInTheirReplica(t *testing.T) {
	for _, p := range []*Plan{
		plan(t, "test/tp2-dp2-tiny"),
		withLayout(t, "test/tp2pp2-tiny", 1, 2, 2), // pipeline peers and token returns
		withLayout(t, "test/tp2pp2-tiny", 2, 2, 2), // both
	} {
		g := p.GroupSize()
		for _, phase := range []Phase{Prefill, Decode} {
			for _, r := range p.Ranks {
				prog := p.Program(r.Rank, phase)
				ref := p.Program(r.Rank-r.Replica*g, phase)
				if len(prog.Ops) != len(ref.Ops) {
					t.Fatalf("%s rank %d %s: %d ops, replica 0's twin has %d", p, r.Rank, phase, len(prog.Ops), len(ref.Ops))
				}
				for i, op := range prog.Ops {
					if _, ok := op.Kind.Comm(); !ok {
						continue
					}
					if op.Kind == Send || op.Kind == Recv {
						if op.Peer/g != r.Replica {
							t.Errorf("%s rank %d (replica %d) %s: peer %d is in replica %d", p, r.Rank, r.Replica, op.Name, op.Peer, op.Peer/g)
						}
						if op.Peer-r.Replica*g != ref.Ops[i].Peer {
							t.Errorf("%s rank %d %s: peer %d, replica 0's twin %d", p, r.Rank, op.Name, op.Peer, ref.Ops[i].Peer)
						}
					}
					for j, m := range op.Group {
						if m/g != r.Replica || m-r.Replica*g != ref.Ops[i].Group[j] {
							t.Errorf("%s rank %d %s: group %v, replica 0's twin %v", p, r.Rank, op.Name, op.Group, ref.Ops[i].Group)
							break
						}
					}
				}
			}
		}
	}
}

// A replica's GPU holds what the same TP×PP group holds alone: dp changes
// neither weights nor KV cache nor activations per GPU (workload.batch is
// per replica).
func TestDPMemoryPerGPUUnchanged(t *testing.T) {
	one := withLayout(t, "test/tp2pp2-tiny", 2, 2, 1)
	two := withLayout(t, "test/tp2pp2-tiny", 2, 2, 2)
	for _, r := range two.Ranks {
		if r.Memory != one.Ranks[r.Rank%4].Memory {
			t.Errorf("dp 2 rank %d memory %+v, dp 1 rank %d %+v", r.Rank, r.Memory, r.Rank%4, one.Ranks[r.Rank%4].Memory)
		}
	}
	// The whole deployment moves twice the bytes: every summed count doubles.
	for _, phase := range []Phase{Prefill, Decode} {
		a, b := one.Comm(phase), two.Comm(phase)
		for c, n := range a.BytesByLink {
			if b.BytesByLink[c] != 2*n {
				t.Errorf("%s %s bytes: dp 2 %d, want 2 × %d", phase, c, b.BytesByLink[c], n)
			}
		}
		// Logical calls per micro-batch count one replica's model.
		if a.CollectiveCallsPerMicrobatch != b.CollectiveCallsPerMicrobatch || a.P2PSendsPerMicrobatch != b.P2PSendsPerMicrobatch {
			t.Errorf("%s per-micro-batch calls: dp 1 %+v, dp 2 %+v", phase, a, b)
		}
	}
}
