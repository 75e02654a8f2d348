package configs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/partbench/partbench/topology"
)

// SystemOverride is what a search puts in place of a config's own system:
// hardware and topology presets, a number of nodes of the topology's kind,
// and the GPU count the result must have (0: the topology's). Its errors
// name the search flags: --hardware, --topology, --nodes and --gpus.
type SystemOverride struct {
	Hardware, Topology string
	Nodes, GPUs        int
}

// Resolve returns the system cfg runs on under the override: the config's
// GPU and topology, each replaced by its preset when named, the topology
// scaled to Nodes nodes, and a check that it has GPUs GPUs.
func (o SystemOverride) Resolve(cfg *Config) (topology.System, error) {
	sys := topology.System{GPU: cfg.Hardware.GPU, Topology: cfg.Topology.Topology}
	from := "the config"
	if o.Hardware != "" || o.Topology != "" {
		hw, topo := o.Hardware, o.Topology
		if hw == "" {
			hw = firstPreset("hardware")
		}
		if topo == "" {
			topo = firstPreset("topology")
		}
		g, t, err := LoadSystem(hw, topo)
		if err != nil {
			flag := "--topology"
			if strings.Contains(err.Error(), "hardware") {
				flag = "--hardware"
			}
			return sys, fmt.Errorf("%s: %w", flag, err)
		}
		if o.Hardware != "" {
			sys.GPU = g
		}
		if o.Topology != "" {
			sys.Topology, from = t, "--topology"
		}
	}
	if o.Nodes > 0 {
		t := &sys.Topology
		if o.Nodes > 1 {
			if err := t.Inter.Validate("topology.inter_node"); err != nil {
				return sys, fmt.Errorf("--nodes %d: topology %q (%s) is one node with no link between nodes; give a multi-node topology with --topology (%s), then --nodes scales it (%w)",
					o.Nodes, t.Name, from, strings.Join(multiNodeTopologies(), ", "), err)
			}
		}
		t.Name = fmt.Sprintf("%s scaled to %d nodes", t.Name, o.Nodes)
		t.Nodes = o.Nodes
		if err := t.Validate("topology"); err != nil {
			return sys, fmt.Errorf("--nodes: %w", err)
		}
	}
	gpus := o.GPUs
	if gpus == 0 {
		gpus = sys.Topology.Size()
	}
	if n := sys.Topology.Size(); n != gpus {
		return sys, fmt.Errorf("--gpus: %d, but the topology from %s (%s) has %d GPUs (nodes %d × gpus_per_node %d); pass --topology with a preset of %d GPUs or --nodes%s (presets: %s)",
			gpus, from, sys.Topology.Name, n, sys.Topology.Nodes, sys.Topology.GPUsPerNode, gpus, nodesHint(sys.Topology, gpus), topologySizes())
	}
	return sys, nil
}

// nodesHint suggests --nodes when the GPU count is a multiple of the node size.
func nodesHint(t topology.Topology, gpus int) string {
	if t.GPUsPerNode > 0 && gpus%t.GPUsPerNode == 0 {
		return " " + strconv.Itoa(gpus/t.GPUsPerNode)
	}
	return fmt.Sprintf(" (with %d GPUs per node, --gpus must be a multiple of %d)", t.GPUsPerNode, t.GPUsPerNode)
}

// firstPreset is the first embedded preset of kind, "" when there is none.
func firstPreset(kind string) string {
	if p := Presets(kind); len(p) > 0 {
		return p[0]
	}
	return ""
}

// topologySizes lists the topology presets with their GPU counts.
func topologySizes() string {
	var out []string
	for _, name := range Presets("topology") {
		if _, t, err := LoadSystem(firstPreset("hardware"), name); err == nil {
			out = append(out, fmt.Sprintf("%s %d", name, t.Size()))
		}
	}
	return strings.Join(out, ", ")
}

// multiNodeTopologies are the embedded topology presets with a link between
// nodes: the ones --nodes can scale.
func multiNodeTopologies() []string {
	var out []string
	for _, name := range Presets("topology") {
		_, t, err := LoadSystem(firstPreset("hardware"), name)
		if err == nil && t.Inter.Validate("topology.inter_node") == nil {
			out = append(out, name)
		}
	}
	return out
}
