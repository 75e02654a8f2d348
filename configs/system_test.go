package configs

import (
	"strings"
	"testing"
)

func TestSystemOverrideResolve(t *testing.T) {
	cfg, err := Load("tp8pp2") // H100 on dgx-h100x2: 2 nodes × 8 GPUs = 16
	if err != nil {
		t.Fatal(err)
	}
	sys, err := SystemOverride{}.Resolve(cfg)
	if err != nil || sys.Topology.Name != "dgx-h100x2" || sys.Topology.Size() != 16 || sys.GPU.Name != "H100-SXM5-80GB" {
		t.Fatalf("no override: %s %s %d GPUs, %v", sys.GPU.Name, sys.Topology.Name, sys.Topology.Size(), err)
	}
	// 4 nodes of 8: 32 GPUs, and --gpus 32 agrees.
	sys, err = SystemOverride{Nodes: 4, GPUs: 32}.Resolve(cfg)
	if err != nil || sys.Topology.Name != "dgx-h100x2 scaled to 4 nodes" || sys.Topology.Size() != 32 {
		t.Fatalf("--nodes 4: %s %d GPUs, %v", sys.Topology.Name, sys.Topology.Size(), err)
	}
	// --hardware alone keeps the config's topology; --topology alone keeps its GPU.
	sys, err = SystemOverride{Hardware: "h200-sxm"}.Resolve(cfg)
	if err != nil || sys.GPU.Name != "H200-SXM-141GB" || sys.Topology.Name != "dgx-h100x2" {
		t.Fatalf("--hardware h200-sxm: %s on %s, %v", sys.GPU.Name, sys.Topology.Name, err)
	}
	sys, err = SystemOverride{Topology: "nvl16"}.Resolve(cfg)
	if err != nil || sys.GPU.Name != "H100-SXM5-80GB" || sys.Topology.Name != "nvl16" {
		t.Fatalf("--topology nvl16: %s on %s, %v", sys.GPU.Name, sys.Topology.Name, err)
	}
	for _, c := range []struct {
		o    SystemOverride
		want string
	}{
		// 32 = 4 × 8: the hint names --nodes 4; the presets are listed with their sizes.
		{SystemOverride{GPUs: 32}, "--gpus: 32, but the topology from the config (dgx-h100x2) has 16 GPUs (nodes 2 × gpus_per_node 8); pass --topology with a preset of 32 GPUs or --nodes 4 (presets: dgx-h100x2 16, gb200-nvl72 72, hgx-a100 8, hgx-b200 8, hgx-h100 8, hgx-h20 8, hgx-h200 8, mi300x-8 8, nvl16 16, pcie-gen4 8, pcie-gen5 16)"},
		// 12 is no multiple of 8.
		{SystemOverride{GPUs: 12, Topology: "nvl16"}, "--gpus: 12, but the topology from --topology (nvl16) has 16 GPUs (nodes 1 × gpus_per_node 16); pass --topology with a preset of 12 GPUs or --nodes (with 16 GPUs per node, --gpus must be a multiple of 16)"},
		{SystemOverride{Topology: "nope"}, `--topology: unknown topology preset "nope"`},
		{SystemOverride{Hardware: "nope"}, `--hardware: `},
		{SystemOverride{Nodes: 2, Topology: "nvl16"}, `--nodes 2: topology "nvl16" (--topology) is one node with no link between nodes; give a multi-node topology with --topology (`},
	} {
		if _, err := c.o.Resolve(cfg); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// A config's [topology.collectives] reaches the system; a partial one is
// refused with the key's path.
func TestConfigCollectiveTuning(t *testing.T) {
	base := `version = 1
[model]
preset = "seed-dense16"
[workload]
batch = 8
context = 256
output_tokens = 16
[parallel]
tp = 8
pp = 2
[hardware]
preset = "h100-sxm"
[run]
iterations = 1
[topology]
preset = "dgx-h100x2"
[topology.collectives]
ramp_simple_s = 4e-05
ramp_simple_half_bytes = 8388608
ramp_ll_s = 1e-05
ramp_ll_half_bytes = 524288
nvls_base_s = 1.25e-05
`
	cfg, err := Parse(strings.NewReader(base+"nvls_per_rank_s = 1.5e-06\nsource = \"fit\"\n"), "tuned.toml")
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Topology.Collectives
	if c == nil || *c.RampSimpleS != 4e-05 || *c.NVLSPerRankS != 1.5e-06 || c.Source != "fit" {
		t.Fatalf("section not decoded: %+v", c)
	}
	_, err = Parse(strings.NewReader(base), "partial.toml")
	if err == nil || !strings.Contains(err.Error(), "partial.toml") || !strings.Contains(err.Error(), "topology.collectives.nvls_per_rank_s: missing") {
		t.Errorf("partial section: %v", err)
	}
}
