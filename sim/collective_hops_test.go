package sim

import (
	"testing"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/topologytest"
)

// A group a QuickCache prices at many payloads reads its per-step
// latencies from a table worked out once (withHops). For groups of every
// size from 1 to 24 starting at every GPU of a node, on four DGX H100
// nodes, an 8-GPU PCIe box and that box's topology with two nodes joined by
// its network, every algorithm (those the model has and one it has not)
// and every protocol (and a name that is none) must get from the table
// what the group works out without it, to the bit; and the table must be
// read (changing one entry changes the answer).
func TestGroupHopTableIsHops(t *testing.T) {
	pcie2 := topologytest.PCIeBox8().Topology
	pcie2.Nodes = 2
	pcie2.Inter = topologytest.DGXH100(2).Topology.Inter
	algos := append(append([]commcount.Algorithm(nil), ncclAlgos...), commcount.AlgoP2P)
	protos := append(append([]string(nil), Protocols...), "none")
	checked := 0
	for _, topo := range []topology.Topology{topologytest.DGXH100(4).Topology, topologytest.PCIeBox8().Topology, pcie2} {
		per := topo.GPUsPerNode
		for n := 1; n <= min(24, topo.Size()); n++ {
			for first := 0; first < per && first+n <= topo.Size(); first++ {
				ranks := make([]int, n)
				for i := range ranks {
					ranks[i] = first + i
				}
				g := analyze(topo, ranks)
				h := g.withHops()
				for _, a := range algos {
					for _, p := range protos {
						if got, want := h.intraHopS(a, p), g.intraHopS(a, p); got != want {
							t.Fatalf("%s, ranks %d–%d, %s %s: intra-node hop %v from the table, %v worked out", topo.Name, first, first+n-1, a, p, got, want)
						}
						if got, want := h.interHopS(a, p), g.interHopS(a, p); got != want {
							t.Fatalf("%s, ranks %d–%d, %s %s: inter-node hop %v from the table, %v worked out", topo.Name, first, first+n-1, a, p, got, want)
						}
						checked++
					}
				}
				h.hops.intra[1][2] += 1 // tree, Simple
				if h.intraHopS(commcount.AlgoTree, ProtoSimple) == g.intraHopS(commcount.AlgoTree, ProtoSimple) {
					t.Fatalf("%s, ranks %d–%d: the table is not read", topo.Name, first, first+n-1)
				}
			}
		}
	}
	if checked < 5000 {
		t.Fatalf("%d hops compared: too few to test", checked)
	}
}
