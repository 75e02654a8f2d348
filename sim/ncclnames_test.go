package sim

import (
	"testing"

	"github.com/partbench/partbench/topology"
)

func TestNCCLAlgoName(t *testing.T) {
	nvswitch := topology.Topology{Intra: topology.Link{Class: topology.NVLink, Switch: true}}
	pcie := topology.Topology{Intra: topology.Link{Class: topology.PCIe}}
	for _, c := range []struct {
		topo      topology.Topology
		algo, nam string
	}{
		{nvswitch, AlgoRing, "Ring"}, {nvswitch, AlgoTree, "Tree"}, {nvswitch, AlgoNVLS, "NVLS"},
		{nvswitch, AlgoHierarchical, "NVLSTree"}, {pcie, AlgoHierarchical, "Tree"},
		{pcie, AlgoP2P, "P2P"}, {pcie, AlgoNone, "-"},
	} {
		if got := NCCLAlgoName(c.topo, c.algo); got != c.nam {
			t.Errorf("NCCLAlgoName(%v, %q) = %q, want %q", c.topo.Intra.Class, c.algo, got, c.nam)
		}
	}
}
