package topology

import (
	"fmt"
	"strconv"
)

// Graph is the link graph of a machine or a topology: GPUs, the NVSwitches,
// PCIe fabrics and NICs between them, and the links. Renderers (partbench
// topo --format dot) draw it; Group names the box a node is drawn in.
type Graph struct {
	Name  string      `json:"name"`
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// GraphNode kinds.
const (
	NodeGPU      = "gpu"
	NodeNVSwitch = "nvswitch"
	NodePCIe     = "pcie"
	NodeNIC      = "nic"
	NodeNetwork  = "network"
)

type GraphNode struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Kind  string `json:"kind"`
	Group string `json:"group,omitempty"`
}

type GraphEdge struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	Class LinkClass `json:"class"`
	Label string    `json:"label,omitempty"`
}

// Graph draws the machine: GPUs grouped by NUMA node, one node per NVSwitch
// the links reach (edge label: links and NVLink generation), direct NVLinks
// between GPUs (NV<n>), and for pairs without NVLink their PCIe level.
func (m *Machine) Graph() Graph {
	g := Graph{Name: m.topologyName()}
	for i, d := range m.GPUs {
		group := ""
		if d.NUMANode >= 0 {
			group = fmt.Sprintf("NUMA node %d", d.NUMANode)
		}
		g.Nodes = append(g.Nodes, GraphNode{ID: gpuID(i), Label: fmt.Sprintf("GPU%d\n%s", i, d.Name), Kind: NodeGPU, Group: group})
	}
	switches := m.NVSwitches()
	swID := map[string]string{}
	for k, bus := range switches {
		swID[bus] = "nvswitch" + strconv.Itoa(k)
		label := "NVSwitch"
		if bus != "" {
			label += "\n" + bus
		}
		g.Nodes = append(g.Nodes, GraphNode{ID: swID[bus], Label: label, Kind: NodeNVSwitch})
	}
	for i, d := range m.GPUs {
		perSwitch := map[string]int{}
		for _, l := range d.NVLinks {
			if l.Active && l.Switch {
				perSwitch[l.RemoteBusID]++
			}
		}
		for _, bus := range switches {
			if n := perSwitch[bus]; n > 0 {
				g.Edges = append(g.Edges, GraphEdge{From: gpuID(i), To: swID[bus], Class: NVLink, Label: fmt.Sprintf("%d× NVLink %d", n, d.NVLinkVersion)})
			}
		}
	}
	for i := range m.GPUs {
		for j := i + 1; j < len(m.GPUs); j++ {
			p := m.pair(i, j)
			switch {
			case p.NVLinks > 0 && !p.ViaSwitch:
				g.Edges = append(g.Edges, GraphEdge{From: gpuID(i), To: gpuID(j), Class: NVLink, Label: p.Kind()})
			case p.NVLinks == 0:
				g.Edges = append(g.Edges, GraphEdge{From: gpuID(i), To: gpuID(j), Class: PCIe, Label: p.Kind()})
			}
		}
	}
	return g
}

func gpuID(i int) string { return "gpu" + strconv.Itoa(i) }

// Graph draws the topology: each node's GPUs (labelled with their ranks),
// one NVSwitch or PCIe fabric per node joining them (or direct NVLinks when
// the path has no switch), and, with more than one node, one NIC per GPU
// into the network.
func (t Topology) Graph() Graph {
	g := Graph{Name: t.Name}
	intra := linkLabel(t.Intra)
	for n := 0; n < t.Nodes; n++ {
		group := fmt.Sprintf("node %d", n)
		ids := make([]string, t.GPUsPerNode)
		for k := range ids {
			ids[k] = fmt.Sprintf("n%dgpu%d", n, k)
			g.Nodes = append(g.Nodes, GraphNode{ID: ids[k], Label: fmt.Sprintf("GPU%d\nrank %d", k, n*t.GPUsPerNode+k), Kind: NodeGPU, Group: group})
		}
		if t.GPUsPerNode > 1 {
			switch {
			case t.Intra.Class == NVLink && !t.Intra.Switch:
				for a := range ids {
					for b := a + 1; b < len(ids); b++ {
						g.Edges = append(g.Edges, GraphEdge{From: ids[a], To: ids[b], Class: NVLink, Label: intra})
					}
				}
			default:
				hub, kind, label := fmt.Sprintf("n%dpcie", n), NodePCIe, "PCIe"
				if t.Intra.Class == NVLink {
					hub, kind, label = fmt.Sprintf("n%dnvswitch", n), NodeNVSwitch, "NVSwitch"
				}
				g.Nodes = append(g.Nodes, GraphNode{ID: hub, Label: label, Kind: kind, Group: group})
				for _, id := range ids {
					g.Edges = append(g.Edges, GraphEdge{From: id, To: hub, Class: t.Intra.Class, Label: intra})
				}
			}
		}
		if t.Nodes > 1 {
			for k, id := range ids {
				nic := fmt.Sprintf("n%dnic%d", n, k)
				g.Nodes = append(g.Nodes, GraphNode{ID: nic, Label: "NIC", Kind: NodeNIC, Group: group})
				g.Edges = append(g.Edges, GraphEdge{From: id, To: nic, Class: PCIe})
				g.Edges = append(g.Edges, GraphEdge{From: nic, To: "network", Class: Network, Label: linkLabel(t.Inter)})
			}
		}
	}
	if t.Nodes > 1 {
		g.Nodes = append(g.Nodes, GraphNode{ID: "network", Label: t.Inter.Name, Kind: NodeNetwork})
	}
	return g
}

// linkLabel is a link's bandwidth per direction, e.g. "450 GB/s".
func linkLabel(l Link) string {
	if !(l.BytesPerS > 0) {
		return ""
	}
	return strconv.FormatFloat(l.BytesPerS/1e9, 'g', 3, 64) + " GB/s"
}

// Matrix is the rank×rank matrix of path kinds of the topology, in the
// spirit of nvidia-smi topo -m (a preset does not say how many NVLinks):
// X on the diagonal, NVS for NVLink through an NVSwitch with in-switch
// reduction, NVL for other NVLink paths, PCI for PCIe, NET for the network.
func (t Topology) Matrix() [][]string {
	n := t.Size()
	out := make([][]string, n)
	for a := range out {
		out[a] = make([]string, n)
		for b := range out[a] {
			out[a][b] = PathCode(t.Path(a, b))
		}
	}
	return out
}

// PathCode is the matrix entry of a Topology path.
func PathCode(l Link) string {
	switch l.Class {
	case Local:
		return "X"
	case NVLink:
		if l.Switch {
			return "NVS"
		}
		return "NVL"
	case PCIe:
		return "PCI"
	case Network:
		return "NET"
	}
	return "?"
}
