package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

type searchOptions struct {
	model       string
	gpus        int
	hardware    string
	topology    string
	nodes       int
	objective   string
	maxTPOTms   float64
	maxTTFTs    float64
	top         int
	full        int
	decodeSteps int
	maxMicro    int
	format      string
	out         string
}

func newSearchCmd() *cobra.Command {
	o := &searchOptions{}
	cmd := &cobra.Command{
		Use:   "search --model CONFIG --gpus N [--objective tps|tpot|ttft] [--max-tpot-ms X] [--max-ttft-s Y]",
		Short: "Search every TP×PP, micro-batch count and layer map for the best partitioning",
		Long: `Enumerate every partitioning of the config's model and workload over N GPUs:
each tp × pp = N where tp divides heads, kv_heads and ffn and pp ≤ layers; every
micro-batch count 1…64 that divides the batch; the even layer map and, when the
layers do not divide evenly or the model has an embedding or LM head, the maps
with the first and/or last stage one layer lighter. Candidates that do not fit in
memory are pruned; the rest are estimated with the closed-form pipeline law
(sim.Quick) and ranked by the objective under the constraints. The top ones are
re-run through the full discrete-event timeline and both numbers are printed.

The system is the config's hardware and topology unless --hardware/--topology
name presets; --nodes scales the topology to that many nodes of its kind.

  partbench search --model tp8pp2 --gpus 16
  partbench search --model configs/tp8pp2.toml --gpus 64 --nodes 8 --objective tpot --max-ttft-s 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.model, "model", "", "config whose model and workload are searched: a TOML file or an embedded preset name")
	f.IntVar(&o.gpus, "gpus", 0, "number of GPUs; must equal the topology's")
	f.StringVar(&o.hardware, "hardware", "", "GPU preset (default: the config's hardware)")
	f.StringVar(&o.topology, "topology", "", "topology preset (default: the config's topology)")
	f.IntVar(&o.nodes, "nodes", 0, "scale the topology to this many nodes of the same kind")
	f.StringVar(&o.objective, "objective", sim.ObjectiveTPS, "rank by: tps (highest), tpot (lowest) or ttft (lowest)")
	f.Float64Var(&o.maxTPOTms, "max-tpot-ms", 0, "constraint: TPOT at most this many milliseconds (0: none)")
	f.Float64Var(&o.maxTTFTs, "max-ttft-s", 0, "constraint: TTFT at most this many seconds (0: none)")
	f.IntVar(&o.top, "top", 10, "rows to print")
	f.IntVar(&o.full, "full", -1, "top candidates to re-run through the full timeline (default: --top; 0: none)")
	f.IntVar(&o.decodeSteps, "decode-steps", sim.SearchDecodeSteps, "decode steps the full timeline re-run starts with (≥ 3; doubled up to 4× where it disagrees with the closed form)")
	f.IntVar(&o.maxMicro, "max-microbatches", sim.DefaultMaxMicrobatches, "largest micro-batch count tried")
	f.StringVar(&o.format, "format", report.FormatTable, "output format: table, markdown, csv, json")
	f.StringVarP(&o.out, "output", "o", "", "write to this file instead of standard output")
	return cmd
}

func (o *searchOptions) check() error {
	if err := report.CheckFormat(o.format, report.FormatTable, report.FormatMarkdown, report.FormatCSV, report.FormatJSON); err != nil {
		return err
	}
	switch {
	case o.model == "":
		return fmt.Errorf("--model: required: a config file or embedded preset whose model and workload are searched (see 'partbench presets')")
	case o.gpus < 1:
		return fmt.Errorf("--gpus: required: a positive number of GPUs (got %d)", o.gpus)
	case o.nodes < 0:
		return fmt.Errorf("--nodes: must be ≥ 1 (got %d)", o.nodes)
	case o.top < 1:
		return fmt.Errorf("--top: must be ≥ 1 (got %d)", o.top)
	case o.full < -1:
		return fmt.Errorf("--full: must be ≥ 0 (got %d)", o.full)
	case o.decodeSteps < 3:
		return fmt.Errorf("--decode-steps: must be ≥ 3 (got %d)", o.decodeSteps)
	case o.maxMicro < 1:
		return fmt.Errorf("--max-microbatches: must be ≥ 1 (got %d)", o.maxMicro)
	case o.maxTPOTms < 0:
		return fmt.Errorf("--max-tpot-ms: must be ≥ 0 (got %g)", o.maxTPOTms)
	case o.maxTTFTs < 0:
		return fmt.Errorf("--max-ttft-s: must be ≥ 0 (got %g)", o.maxTTFTs)
	}
	for _, ob := range sim.Objectives {
		if o.objective == ob {
			return nil
		}
	}
	return fmt.Errorf("--objective: must be one of %s (got %q)", strings.Join(sim.Objectives, ", "), o.objective)
}

// system resolves the hardware and topology a search runs on.
func (o *searchOptions) system(cfg *configs.Config) (topology.System, error) {
	sys := topology.System{GPU: cfg.Hardware.GPU, Topology: cfg.Topology.Topology}
	from := "the config"
	if o.hardware != "" || o.topology != "" {
		hw, topo := o.hardware, o.topology
		if hw == "" {
			hw = firstPreset("hardware")
		}
		if topo == "" {
			topo = firstPreset("topology")
		}
		g, t, err := configs.LoadSystem(hw, topo)
		if err != nil {
			flag := "--topology"
			if strings.Contains(err.Error(), "hardware") {
				flag = "--hardware"
			}
			return sys, fmt.Errorf("%s: %w", flag, err)
		}
		if o.hardware != "" {
			sys.GPU = g
		}
		if o.topology != "" {
			sys.Topology, from = t, "--topology"
		}
	}
	if o.nodes > 0 {
		t := &sys.Topology
		if o.nodes > 1 {
			if err := t.Inter.Validate("topology.inter_node"); err != nil {
				return sys, fmt.Errorf("--nodes: topology %q has no link between nodes: %w", t.Name, err)
			}
		}
		t.Name = fmt.Sprintf("%s scaled to %d nodes", t.Name, o.nodes)
		t.Nodes = o.nodes
		if err := t.Validate("topology"); err != nil {
			return sys, fmt.Errorf("--nodes: %w", err)
		}
	}
	if n := sys.Topology.Size(); n != o.gpus {
		return sys, fmt.Errorf("--gpus: %d, but the topology from %s (%s) has %d GPUs (nodes %d × gpus_per_node %d); pass --topology with a preset of %d GPUs or --nodes%s (presets: %s)",
			o.gpus, from, sys.Topology.Name, n, sys.Topology.Nodes, sys.Topology.GPUsPerNode, o.gpus, nodesHint(sys.Topology, o.gpus), topologySizes())
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

func firstPreset(kind string) string {
	if p := configs.Presets(kind); len(p) > 0 {
		return p[0]
	}
	return ""
}

// topologySizes lists the topology presets with their GPU counts.
func topologySizes() string {
	var out []string
	for _, name := range configs.Presets("topology") {
		if _, t, err := configs.LoadSystem(firstPreset("hardware"), name); err == nil {
			out = append(out, fmt.Sprintf("%s %d", name, t.Size()))
		}
	}
	return strings.Join(out, ", ")
}

func (o *searchOptions) run(stdout io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	cfg, err := configs.Load(o.model)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	sys, err := o.system(cfg)
	if err != nil {
		return err
	}
	spec := sim.SearchSpec{Config: cfg, System: sys, Objective: o.objective, MaxTPOTS: o.maxTPOTms / 1e3, MaxTTFTS: o.maxTTFTs,
		MaxMicrobatches: o.maxMicro, Collectives: collectiveOptionsFromEnv(), Progress: lazyProgress("search")}
	res, err := sim.Search(spec)
	if err != nil {
		return err
	}
	full := o.full
	if full < 0 {
		full = o.top
	}
	if full > 0 {
		opts := sim.Options{DecodeSteps: o.decodeSteps, Collectives: spec.Collectives}
		if err := res.Refine(spec, full, opts, lazyProgress("full timeline")); err != nil {
			return err
		}
	}
	if res.Enumerated == 0 {
		return res.Empty()
	}
	write := func(w io.Writer) error { return o.write(w, cfg, res) }
	if o.out != "" {
		err = report.WriteFileAtomic(o.out, write)
	} else {
		err = write(stdout)
	}
	if err != nil {
		return err
	}
	return res.Empty() // the table shows why; the exit status says there is no answer
}

// lazyProgress draws a bar once the total is known, only on a terminal.
func lazyProgress(what string) func(done, total int) {
	var bar func(done, total int)
	started := false
	return func(done, total int) {
		if !started {
			started = true
			bar = newProgress(what, total)
		}
		if bar != nil {
			bar(done, total)
		}
	}
}

func (o *searchOptions) write(w io.Writer, cfg *configs.Config, res *sim.SearchResult) error {
	return report.Search(w, o.format, version, cfg, res, o.top, o.decodeSteps)
}
