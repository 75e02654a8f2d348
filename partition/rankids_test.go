package partition

import (
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
)

// rankIDs is 0 … n−1 whatever was asked before (a list grown past its
// first 1,024, a short prefix after it, then beyond twice the grown one),
// with no room past n (an append copies instead of writing into the shared
// list), and a prefix handed out before the list grew still reads 0 … n−1.
func TestRankIDs(t *testing.T) {
	var kept [][]int
	for _, n := range []int{0, 1, 8, 1024, 1025, 10, 5000, 70000, 3} {
		ids := rankIDs(n)
		if len(ids) != n || cap(ids) != n {
			t.Fatalf("rankIDs(%d): length %d, capacity %d", n, len(ids), cap(ids))
		}
		kept = append(kept, ids)
	}
	for _, ids := range kept {
		for i, v := range ids {
			if v != i {
				t.Fatalf("rankIDs(%d)[%d] = %d", len(ids), i, v)
			}
		}
	}
}

// On 4,096 GPUs (tp8pp2's model, TP 8 × PP 2 × DP 256, ranks beyond the
// shared list's first length), every rank of a plan without its rank list
// is NewPlan's, field for field; its TP group has no room past its 8
// members, so appending to one rank's group leaves its neighbours' alone.
func TestRankAtGroupsAreShared(t *testing.T) {
	c, err := configs.Load("tp8pp2")
	if err != nil {
		t.Fatal(err)
	}
	c.Topology.Nodes, c.Parallel.DP = 512, 256
	full, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := NewPlanStages(c)
	if err != nil {
		t.Fatal(err)
	}
	if full.Size() != 4096 {
		t.Fatalf("plan of %d ranks, want 4,096", full.Size())
	}
	for r := 0; r < full.Size(); r++ {
		got := stages.RankAt(r)
		if !reflect.DeepEqual(got, full.Ranks[r]) {
			t.Fatalf("rank %d: %+v, NewPlan %+v", r, got, full.Ranks[r])
		}
		if cap(got.TPGroup) != 8 {
			t.Fatalf("rank %d: TP group %v has capacity %d", r, got.TPGroup, cap(got.TPGroup))
		}
	}
	g := stages.RankAt(4087).TPGroup // ranks 4080 … 4087
	_ = append(g, -1)
	if next := stages.RankAt(4088).TPGroup; next[0] != 4088 {
		t.Fatalf("an append to rank 4087's group wrote into the next group: %v", next)
	}
}
