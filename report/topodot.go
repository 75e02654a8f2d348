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
	return append([]encoding.Attribute{{Key: "label", Value: d.n.Label}}, attrs(topoDOTShape(d.n.Kind))...)
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
	return attrList{{Key: "rankdir", Value: "LR"}, {Key: "fontname", Value: "Helvetica"}},
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
	for i, n := range tg.Nodes {
		d := dotNode{id: int64(i), n: n}
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
	for k, grp := range groups {
		c := cluster{UndirectedGraph: simple.NewUndirectedGraph(), id: fmt.Sprintf("cluster_%d", k), label: grp}
		for _, d := range members[grp] {
			c.AddNode(member{d.id, d.n.ID}) // attributes once, at the top level
		}
		g.clusters = append(g.clusters, c)
	}
	return g
}
