package sim

import (
	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
)

// NCCLAlgoName is the name NCCL itself prints (NCCL_DEBUG=INFO, its tuner
// tables) for the algorithm the model chose on topo: Ring, Tree, NVLS,
// NVLSTree; P2P for a point-to-point message and "-" where nothing moves.
// partbench's "hierarchical" is NVLSTree on NVLink-switch nodes (NVLink
// SHARP inside the node, a tree or ring across nodes); on other nodes it
// is the nearest NCCL algorithm, Tree (chains inside each node, a tree
// across nodes).
func NCCLAlgoName(topo topology.Topology, algo commcount.Algorithm) string {
	switch algo {
	case commcount.AlgoRing:
		return "Ring"
	case commcount.AlgoTree:
		return "Tree"
	case commcount.AlgoNVLS:
		return "NVLS"
	case commcount.AlgoHierarchical:
		if topo.Intra.Switch && topo.Intra.Class == topology.NVLink {
			return "NVLSTree"
		}
		return "Tree"
	case commcount.AlgoP2P:
		return "P2P"
	case commcount.AlgoNone, "":
		return "-"
	}
	return string(algo)
}
