package report

import (
	"fmt"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/encoding"
	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/partbench/partbench/topology"
)

// dotNode is a topology node as gonum's DOT encoder sees it.
type dotNode struct {
	id int64
	n  topology.GraphNode
}

func (d dotNode) ID() int64     { return d.id }
func (d dotNode) DOTID() string { return d.n.ID }
func (d dotNode) Attributes() []encoding.Attribute {
	return append([]encoding.Attribute{{Key: "label", Value: dotLabel(d.n)}}, attrs(topoDOTShape(d.n.Kind))...)
}

// dotLabel is a node's label in the drawing: a NIC says which one it is
// ("NIC 3", or "NIC 3 (mlx5_3)" when the topology names it), from the
// index its ID ends in.
func dotLabel(n topology.GraphNode) string {
	if n.Kind != topology.NodeNIC {
		return n.Label
	}
	idx := n.ID[strings.LastIndexFunc(n.ID, func(r rune) bool { return r < '0' || r > '9' })+1:]
	name := strings.TrimSpace(n.Label)
	switch {
	case idx == "" && name == "":
		return "NIC"
	case idx == "":
		return name
	case name == "" || name == "NIC":
		return "NIC " + idx
	case strings.HasPrefix(name, "NIC"):
		return name
	}
	return "NIC " + idx + " (" + name + ")"
}

// dotOrder places hubs (NVSwitch, PCIe switch) before everything else: the
// encoder writes nodes and each link's ends in ID order, so a hub is the
// tail of its links to the GPUs and, with ordering=out (top to bottom:
// hub, GPUs, NICs, network), its GPUs are drawn left to right in their
// order; other nodes keep the topology's order. GPUs linked to each other
// without a hub are kept in order by one same-rank row per group, where a
// link's lower end is drawn to the left.
func dotOrder(nodes []topology.GraphNode) []int {
	var hubs, rest []int
	for i, n := range nodes {
		if n.Kind == topology.NodeNVSwitch || n.Kind == topology.NodePCIe {
			hubs = append(hubs, i)
		} else {
			rest = append(rest, i)
		}
	}
	return append(hubs, rest...)
}

// orderNode is an invisible node above the groups' hubs: its invisible
// links to them, written in group order under ordering=out, draw node 0's
// box left of node 1's.
type orderNode struct{}

// orderID is orderNode's ID, below every topology node's.
const orderID = -1

func (orderNode) ID() int64     { return orderID }
func (orderNode) DOTID() string { return "_group_order" }
func (orderNode) Attributes() []encoding.Attribute {
	return attrs(`style=invis shape=point width=0 label=""`)
}

// invisEdge is a link that only orders the drawing.
type invisEdge struct{ from, to graph.Node }

func (e invisEdge) From() graph.Node         { return e.from }
func (e invisEdge) To() graph.Node           { return e.to }
func (e invisEdge) ReversedEdge() graph.Edge { return invisEdge{e.to, e.from} }
func (e invisEdge) Attributes() []encoding.Attribute {
	return []encoding.Attribute{{Key: "style", Value: "invis"}}
}

// dotEdge is a topology link with its label and style.
type dotEdge struct {
	from, to dotNode
	e        topology.GraphEdge
}

func (d dotEdge) From() graph.Node         { return d.from }
func (d dotEdge) To() graph.Node           { return d.to }
func (d dotEdge) ReversedEdge() graph.Edge { return dotEdge{d.to, d.from, d.e} }
func (d dotEdge) Attributes() []encoding.Attribute {
	var a []encoding.Attribute
	if d.e.Label != "" {
		a = append(a, encoding.Attribute{Key: "label", Value: d.e.Label})
	}
	return append(a, attrs(topoDOTEdge(d.e.Class))...)
}

// attrs splits "k=v k2=\"v 2\"" into attributes (values unquoted: the
// encoder quotes what needs it).
func attrs(s string) []encoding.Attribute {
	var out []encoding.Attribute
	for _, kv := range strings.Fields(s) {
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, encoding.Attribute{Key: k, Value: strings.Trim(v, `"`)})
	}
	return out
}

// dotGraph is the whole drawing: its nodes and links, the graph-wide
// attributes and one cluster per group.
type dotGraph struct {
	*simple.UndirectedGraph
	clusters []dot.Graph
}

func (g dotGraph) DOTAttributers() (graph, node, edge encoding.Attributer) {
	return attrList{{Key: "rankdir", Value: "TB"}, {Key: "ordering", Value: "out"}, {Key: "fontname", Value: "Helvetica"}},
		attrList{{Key: "fontname", Value: "Helvetica"}},
		attrList{{Key: "fontname", Value: "Helvetica"}, {Key: "fontsize", Value: "10"}}
}

func (g dotGraph) Structure() []dot.Graph { return g.clusters }

type attrList []encoding.Attribute

func (a attrList) Attributes() []encoding.Attribute { return a }

// member names a node inside a cluster, without its attributes.
type member struct {
	id    int64
	dotID string
}

func (m member) ID() int64     { return m.id }
func (m member) DOTID() string { return m.dotID }

// cluster is one group's box.
type cluster struct {
	*simple.UndirectedGraph
	id, label string
	rows      []dot.Graph
}

func (c cluster) Structure() []dot.Graph { return c.rows }

// sameRank is a row of nodes drawn side by side (rank=same).
type sameRank struct {
	*simple.UndirectedGraph
	id string
}

func (r sameRank) DOTID() string { return r.id }
func (r sameRank) DOTAttributers() (graph, node, edge encoding.Attributer) {
	return attrList{{Key: "rank", Value: "same"}}, attrList{}, attrList{}
}

func (c cluster) DOTID() string { return c.id }
func (c cluster) DOTAttributers() (graph, node, edge encoding.Attributer) {
	return attrList{{Key: "label", Value: c.label}}, attrList{}, attrList{}
}

// newDOTGraph turns a topology.Graph into gonum's graph with its clusters.
func newDOTGraph(tg topology.Graph) dotGraph {
	g := dotGraph{UndirectedGraph: simple.NewUndirectedGraph()}
	byID := map[string]dotNode{}
	var groups []string
	members := map[string][]dotNode{}
	for id, i := range dotOrder(tg.Nodes) {
		n := tg.Nodes[i]
		d := dotNode{id: int64(id), n: n}
		byID[n.ID] = d
		g.AddNode(d)
		if n.Group != "" {
			if _, ok := members[n.Group]; !ok {
				groups = append(groups, n.Group)
			}
			members[n.Group] = append(members[n.Group], d)
		}
	}
	for _, e := range tg.Edges {
		from, ok1 := byID[e.From]
		to, ok2 := byID[e.To]
		if ok1 && ok2 && e.From != e.To {
			g.SetEdge(dotEdge{from, to, e})
		}
	}
	// Groups left to right in their order: an invisible node linked to the
	// first hub of each group (when two or more groups have one).
	var hubs []dotNode
	for _, grp := range groups {
		for _, d := range members[grp] {
			if d.n.Kind == topology.NodeNVSwitch || d.n.Kind == topology.NodePCIe {
				hubs = append(hubs, d)
				break
			}
		}
	}
	if len(hubs) > 1 {
		g.AddNode(orderNode{})
		for _, h := range hubs {
			g.SetEdge(invisEdge{orderNode{}, h})
		}
	}
	for k, grp := range groups {
		c := cluster{UndirectedGraph: simple.NewUndirectedGraph(), id: fmt.Sprintf("cluster_%d", k), label: grp}
		row := sameRank{UndirectedGraph: simple.NewUndirectedGraph(), id: fmt.Sprintf("gpus_%d", k)}
		for _, d := range members[grp] {
			c.AddNode(member{d.id, d.n.ID}) // attributes once, at the top level
			if d.n.Kind == topology.NodeGPU {
				row.AddNode(member{d.id, d.n.ID})
			}
		}
		if row.Nodes().Len() > 1 {
			c.rows = append(c.rows, row)
		}
		g.clusters = append(g.clusters, c)
	}
	// GPUs outside any group share one row too.
	row := sameRank{UndirectedGraph: simple.NewUndirectedGraph(), id: "gpus"}
	for _, d := range byID {
		if d.n.Kind == topology.NodeGPU && d.n.Group == "" {
			row.AddNode(member{d.id, d.n.ID})
		}
	}
	if row.Nodes().Len() > 1 {
		g.clusters = append(g.clusters, row)
	}
	return g
}
