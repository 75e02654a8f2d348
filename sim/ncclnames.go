package sim

import "github.com/partbench/partbench/topology"

// NCCLAlgoName is the name NCCL itself prints (NCCL_DEBUG=INFO, its tuner
// tables) for the algorithm the model chose on topo: Ring, Tree, NVLS,
// NVLSTree; P2P for a point-to-point message and "-" where nothing moves.
// partbench's "hierarchical" is NVLSTree on NVLink-switch nodes (NVLink
// SHARP inside the node, a tree or ring across nodes); on other nodes it
// is the nearest NCCL algorithm, Tree (chains inside each node, a tree
// across nodes).
func NCCLAlgoName(topo topology.Topology, algo string) string {
	switch algo {
	case AlgoRing:
		return "Ring"
	case AlgoTree:
		return "Tree"
	case AlgoNVLS:
		return "NVLS"
	case AlgoHierarchical:
		if topo.Intra.Switch && topo.Intra.Class == topology.NVLink {
			return "NVLSTree"
		}
		return "Tree"
	case AlgoP2P:
		return "P2P"
	case AlgoNone, "":
		return "-"
	}
	return algo
}
