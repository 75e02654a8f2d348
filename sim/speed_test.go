package sim

import (
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// Where a stage's TP ranks see alike links (stageLinksAlike), every rank's
// Programs do the same work as its stage's TP index 0 (sameWork): partition
// builds them from the same shard shapes, with the rank's own peers and
// group. estimatePlan (which simulates replica 0) relies on it to skip building those ranks' Programs;
// this holds it on every per-stage case, replicas and a 4-node layout
// included, and checks that a cut TP group is refused.
func TestStageRanksAlikeByConstruction(t *testing.T) {
	cases := append(perStageCases, struct {
		name string
		edit func(*configs.Config)
	}{"tp8pp2", func(c *configs.Config) { // TP 2 × PP 4 × DP 2 on 4 nodes of 4
		c.Parallel.TP, c.Parallel.PP, c.Parallel.DP, c.Parallel.Microbatches = 2, 4, 2, 4
		c.Topology.Nodes, c.Topology.GPUsPerNode = 4, 4
	}})
	for _, tc := range cases {
		p := planEdited(t, tc.name, tc.edit).OneReplica() // the replica the estimate simulates
		if !stageLinksAlike(p) {
			t.Fatalf("%s: stageLinksAlike false for a per-stage case", p)
		}
		for r := range p.Ranks {
			rk := p.Ranks[r]
			sr := p.RankOf(rk.Stage, 0)
			for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
				if !sameWork(p, p.Program(sr, ph), p.Program(r, ph)) {
					t.Fatalf("%s rank %d %s: not alike its stage's TP index 0 (rank %d)", p, r, ph, sr)
				}
			}
		}
	}
	cut := planEdited(t, "tp8pp2", func(c *configs.Config) {
		c.Parallel.TP, c.Parallel.PP, c.Parallel.Microbatches = 4, 3, 4
		c.Topology.Nodes, c.Topology.GPUsPerNode = 2, 6
	})
	if stageLinksAlike(cut) {
		t.Fatal("tp 4 × pp 3 on nodes of 6: stageLinksAlike true for a cut TP group")
	}
}
