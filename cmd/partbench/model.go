package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

type modelOptions struct {
	dryRun      bool
	configs     []string
	compare     []string
	format      string
	perRank     bool
	decodeSteps int
	out         string
	trace       string
	traceFull   bool
	sweep       string
	calibration string
	// remote dry run (cmd/partbench/remote.go)
	remoteLink, remoteMode string
	resumeLayers           string
	remoteOverheadS        float64
	remoteOverheadSet      bool // --remote-overhead given: it wins over the calibration's
	// --model-dir: the model of a Hugging Face directory's config.json
	modelDir string
	dirRun   configs.ModelDirRun
	// --batch-size, --input-len, --output-len
	workload configs.WorkloadOverrides
	// --runtime and --measured/--fit (runtime.go, measured.go)
	runtime  string
	measured string
	fit      bool
}

func newModelCmd() *cobra.Command {
	o := &modelOptions{}
	cmd := &cobra.Command{
		Use:   "model --dry-run [--config FILE] [--compare FILE]...",
		Short: "Estimate TTFT, TPOT, TPS, memory and communication of partitionings (no GPU needed)",
		Long: `Estimate each strategy with the analytical, topology-aware cost model.

With no --config the embedded seed comparison runs: tp8pp2 against layerwise16.
A config is a TOML file or the name of an embedded preset (see 'partbench presets').
The first strategy is the baseline of the comparison table.

--runtime NAME prices host costs, CUDA graphs and the all-reduce as that engine
runs them. --measured FILE puts one config beside measured results (vLLM,
TensorRT-LLM or CSV; --dry-run is implied) and --fit fits the runtime to them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.remoteOverheadSet = cmd.Flags().Changed("remote-overhead")
			if err := checkModelDirFlags(cmd.Flags(), o.modelDir); err != nil {
				return err
			}
			return o.run(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.dryRun, "dry-run", false, "estimate analytically without running anything (required: measurement is 'partbench run')")
	f.StringArrayVar(&o.configs, "config", nil, "strategy config: a TOML file or an embedded preset name (repeatable)")
	f.StringArrayVar(&o.compare, "compare", nil, "further strategies to compare with the first (repeatable)")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	f.BoolVar(&o.perRank, "per-rank", false, "add one row per rank")
	f.IntVar(&o.decodeSteps, "decode-steps", defaultDecodeSteps, "decode steps the timeline simulates to reach steady state (≥ 3)")
	cliflag.Output(f, &o.out, "write the table or document to this file instead of standard output (with --sweep too)", "o", "out")
	f.StringVar(&o.calibration, "calibration", "", "hardware profile from 'partbench calibrate' to use instead of each config's hardware and links")
	f.StringVar(&o.sweep, "sweep", "", "what-if over one key: KEY=LO:HI (doubling), KEY=LO:HI:+STEP, or KEY=A,B,C; keys: "+strings.Join(configs.SweepKeys(), ", "))
	f.StringVar(&o.resumeLayers, "resume-layers", "", "price a pause after each of these layers (1,10,20) and its resume: recompute, offload, stateful (over --remote-link, default loopback)")
	f.StringVar(&o.remoteLink, "remote-link", "", "price the remote modes (partbench remote) over this client link: "+strings.Join(topology.ClientLinkNames(), ", ")+", or BYTES_PER_S[:LATENCY_S]")
	f.StringVar(&o.remoteMode, "mode", "all", "with --remote-link: the mode to mark (naive, kv, stateful, local, all)")
	cliflag.FiniteFloat(f, &o.remoteOverheadS, "remote-overhead", 0, "with --remote-link: fixed seconds per request besides link and compute (default: the --calibration file's, else 0)")
	f.StringVar(&o.trace, "trace", "", "write the simulated timeline as a Chrome/Perfetto trace (JSON) to this file: prefill and the first "+strconv.Itoa(report.TraceDecodeSteps)+" decode steps")
	cliflag.MarkOutputFile(f, "trace")
	f.BoolVar(&o.traceFull, "trace-full", false, "with --trace: every simulated decode step (tens of MB for the seed)")
	addModelDirFlags(f, &o.modelDir, &o.dirRun)
	addWorkloadFlags(f, &o.workload)
	cliflag.DefaultInUsage(f, "batch-size", "input-len", "output-len")
	addRuntimeFlag(f, &o.runtime)
	addMeasuredFlags(f, &o.measured, &o.fit)
	return cmd
}

func (o *modelOptions) run(stdout io.Writer) error {
	if !o.dryRun && o.measured == "" && !o.fit {
		return fmt.Errorf("model needs --dry-run: it only estimates; to measure, run 'partbench run' or 'mpirun -np N partbench --config FILE'")
	}
	o.dirRun.Dir = o.modelDir
	cfgs, err := configs.LoadEstimated(append(append([]string{}, o.configs...), o.compare...), o.dirRun, o.calibration)
	if err != nil {
		return err
	}
	for _, cfg := range cfgs {
		if err := o.workload.Apply(cfg); err != nil {
			return err
		}
	}
	if err := configs.ApplyRuntimeFlag(cfgs, o.runtime); err != nil {
		return err
	}
	if o.measured != "" || o.fit {
		return o.runMeasured(stdout, cfgs)
	}
	// A trace draws every rank: simulate each (else one per stage).
	opts := sim.Options{DecodeSteps: o.decodeSteps, Collectives: collectiveOptionsFromEnv(), EveryRank: o.trace != ""}
	if o.sweep != "" {
		return o.runSweep(stdout, cfgs, opts)
	}
	if o.resumeLayers != "" || o.remoteLink != "" {
		if o.remoteOverheadS, err = configs.RequestOverhead(o.remoteOverheadS, o.remoteOverheadSet, o.calibration); err != nil {
			return err
		}
	}
	if o.resumeLayers != "" {
		return modelResume(stdout, o.format, cfgs, o.resumeLayers, o.remoteLink, o.remoteOverheadS, opts)
	}
	if o.remoteLink != "" {
		return modelRemote(stdout, o.format, cfgs, o.remoteLink, o.remoteMode, o.remoteOverheadS, opts)
	}
	var es []*sim.Estimate
	for _, cfg := range cfgs {
		e, err := sim.EstimateConfig(cfg, opts)
		if err != nil {
			return err
		}
		es = append(es, e)
	}
	if o.trace != "" {
		if err := report.WriteModelTrace(o.trace, es, o.traceFull); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
	}
	return report.ToOutput(o.out, stdout, func(w io.Writer) error { return report.Model(w, o.format, version, es, o.perRank) })
}

// defaultDecodeSteps is the decode steps model and search simulate by default.
const defaultDecodeSteps = 16

func collectiveOptionsFromEnv() sim.CollectiveOptions {
	return sim.OptionsFromEnv(os.Getenv)
}

func (o *modelOptions) runSweep(stdout io.Writer, cfgs []*configs.Config, opts sim.Options) error {
	key, values, err := configs.ParseSweep(o.sweep)
	if err != nil {
		return err
	}
	pts := sim.Sweep(cfgs, key, values, opts)
	return report.ToOutput(o.out, stdout, func(w io.Writer) error { return report.Sweep(w, o.format, version, key, pts) })
}
