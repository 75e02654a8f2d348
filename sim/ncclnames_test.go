package sim

import (
	"testing"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
)

func TestNCCLAlgoName(t *testing.T) {
	nvswitch := topology.Topology{Intra: topology.Link{Class: topology.NVLink, Switch: true}}
	pcie := topology.Topology{Intra: topology.Link{Class: topology.PCIe}}
	for _, c := range []struct {
		topo topology.Topology
		algo commcount.Algorithm
		nam  string
	}{
		{nvswitch, commcount.AlgoRing, "Ring"}, {nvswitch, commcount.AlgoTree, "Tree"}, {nvswitch, commcount.AlgoNVLS, "NVLS"},
		{nvswitch, commcount.AlgoHierarchical, "NVLSTree"}, {pcie, commcount.AlgoHierarchical, "Tree"},
		{pcie, commcount.AlgoP2P, "P2P"}, {pcie, commcount.AlgoNone, "-"},
	} {
		if got := NCCLAlgoName(c.topo, c.algo); got != c.nam {
			t.Errorf("NCCLAlgoName(%v, %q) = %q, want %q", c.topo.Intra.Class, c.algo, got, c.nam)
		}
	}
}
