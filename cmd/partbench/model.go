package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
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
}

func newModelCmd() *cobra.Command {
	o := &modelOptions{}
	cmd := &cobra.Command{
		Use:   "model --dry-run [--config FILE] [--compare FILE]...",
		Short: "Estimate TTFT, TPOT, TPS, memory and communication of partitionings (no GPU needed)",
		Long: `Estimate each strategy with the analytical, topology-aware cost model.

With no --config the embedded seed comparison runs: tp8pp2 against layerwise16.
A config is a TOML file or the name of an embedded preset (see 'partbench presets').
The first strategy is the baseline of the comparison table.`,
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
	f.StringVar(&o.format, "format", report.FormatTable, "output format: table, markdown, csv, json")
	f.BoolVar(&o.perRank, "per-rank", false, "add one row per rank")
	f.IntVar(&o.decodeSteps, "decode-steps", 16, "decode steps the timeline simulates to reach steady state (≥ 3)")
	f.StringVarP(&o.out, "output", "o", "", "write to this file instead of standard output")
	f.StringVar(&o.calibration, "calibration", "", "hardware profile from 'partbench calibrate' to use instead of each config's hardware and links")
	f.StringVar(&o.sweep, "sweep", "", "what-if over one key: KEY=LO:HI (doubling), KEY=LO:HI:+STEP, or KEY=A,B,C; keys: "+strings.Join(configs.SweepKeys(), ", "))
	f.StringVar(&o.resumeLayers, "resume-layers", "", "price a pause after each of these layers (1,10,20) and its resume: recompute, offload, stateful (over --remote-link, default loopback)")
	f.StringVar(&o.remoteLink, "remote-link", "", "price the remote modes (partbench remote) over this client link: "+strings.Join(topology.ClientLinkNames(), ", ")+", or BYTES_PER_S[:LATENCY_S]")
	f.StringVar(&o.remoteMode, "mode", "all", "with --remote-link: the mode to mark (naive, kv, stateful, local, all)")
	f.Float64Var(&o.remoteOverheadS, "remote-overhead", 0, "with --remote-link: fixed seconds per request besides link and compute (default: the --calibration file's, else 0)")
	f.StringVar(&o.trace, "trace", "", "write the simulated timeline as a Chrome/Perfetto trace (JSON) to this file")
	addModelDirFlags(f, &o.modelDir, &o.dirRun)
	return cmd
}

func (o *modelOptions) run(stdout io.Writer) error {
	if !o.dryRun {
		return fmt.Errorf("model needs --dry-run: it only estimates; to measure, run 'partbench run' or 'mpirun -np N partbench --config FILE'")
	}
	if err := report.CheckFormat(o.format, report.FormatTable, report.FormatMarkdown, report.FormatCSV, report.FormatJSON); err != nil {
		return err
	}
	names := append(append([]string{}, o.configs...), o.compare...)
	if len(names) == 0 {
		names = configs.DefaultStrategies
	}
	load := configs.Load
	if o.modelDir != "" {
		if len(names) != len(configs.DefaultStrategies) || len(o.configs)+len(o.compare) > 0 {
			return fmt.Errorf("--model-dir: the model, workload and partitioning come from --model-dir and its flags; --config and --compare cannot be given with it")
		}
		names = []string{o.modelDir}
		load = func(string) (*configs.Config, error) { o.dirRun.Dir = o.modelDir; return o.dirRun.Config() }
	}
	var cfgs []*configs.Config
	for _, n := range names {
		cfg, err := load(n)
		if err != nil {
			return err
		}
		if _, err := applyCalibration(cfg, o.calibration); err != nil {
			return err
		}
		cfgs = append(cfgs, cfg)
	}
	opts := sim.Options{DecodeSteps: o.decodeSteps, Collectives: collectiveOptionsFromEnv()}
	if o.sweep != "" {
		return o.runSweep(stdout, cfgs, opts)
	}
	if (o.resumeLayers != "" || o.remoteLink != "") && !o.remoteOverheadSet {
		if v, ok, err := calibratedRequestOverhead(o.calibration); err != nil {
			return err
		} else if ok {
			o.remoteOverheadS = v
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
		e, err := estimateConfig(cfg, opts)
		if err != nil {
			return err
		}
		es = append(es, e)
	}
	if o.trace != "" {
		var spans []report.Span
		for _, e := range es {
			spans = append(spans, report.EstimateSpans(e)...)
		}
		if err := report.WriteFileAtomic(o.trace, func(w io.Writer) error { return report.ChromeTrace(w, spans) }); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
	}
	w := stdout
	if o.out != "" {
		f, err := os.Create(o.out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	return report.Model(w, o.format, version, es, o.perRank)
}

// estimateConfig plans and estimates one config.
func estimateConfig(cfg *configs.Config, opts sim.Options) (*sim.Estimate, error) {
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return nil, err
	}
	return sim.EstimatePlan(plan, opts)
}

func collectiveOptionsFromEnv() sim.CollectiveOptions {
	return sim.OptionsFromEnv(os.Getenv)
}

func (o *modelOptions) runSweep(stdout io.Writer, cfgs []*configs.Config, opts sim.Options) error {
	key, values, err := parseSweep(o.sweep)
	if err != nil {
		return err
	}
	var pts []report.SweepPoint
	for _, v := range values {
		p := report.SweepPoint{Value: v}
		for _, c := range cfgs {
			n, err := c.With(key, v)
			if err == nil {
				var e *sim.Estimate
				if e, err = estimateConfig(n, opts); err == nil {
					p.Strategies = append(p.Strategies, e)
					continue
				}
			}
			p.Skipped = append(p.Skipped, c.Name+": "+err.Error())
		}
		pts = append(pts, p)
	}
	return report.Sweep(stdout, o.format, version, key, pts)
}

// parseSweep reads KEY=LO:HI (doubling), KEY=LO:HI:+STEP (linear) or KEY=A,B,C.
func parseSweep(s string) (string, []int, error) {
	key, spec, ok := strings.Cut(s, "=")
	bad := func(why string) (string, []int, error) {
		return "", nil, fmt.Errorf("--sweep %q: %s (forms: KEY=LO:HI doubling, KEY=LO:HI:+STEP, KEY=A,B,C)", s, why)
	}
	if !ok || key == "" || spec == "" {
		return bad("missing KEY=")
	}
	if _, known := configs.Sweepable[key]; !known {
		return bad("unknown key; known: " + strings.Join(configs.SweepKeys(), ", "))
	}
	atoi := func(x string) (int, error) {
		v, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil || v <= 0 {
			return 0, fmt.Errorf("%q is not a positive integer", x)
		}
		return v, nil
	}
	var vals []int
	if parts := strings.Split(spec, ":"); len(parts) >= 2 && len(parts) <= 3 {
		lo, err := atoi(parts[0])
		if err != nil {
			return bad(err.Error())
		}
		hi, err := atoi(parts[1])
		if err != nil || hi < lo {
			return bad("HI must be an integer ≥ LO")
		}
		step := 0
		if len(parts) == 3 {
			if !strings.HasPrefix(parts[2], "+") {
				return bad("STEP must be written +N")
			}
			if step, err = atoi(parts[2][1:]); err != nil {
				return bad(err.Error())
			}
		}
		for v := lo; v <= hi && len(vals) <= 4096; {
			vals = append(vals, v)
			if step > 0 {
				v += step
			} else {
				v *= 2
			}
		}
	} else {
		for _, x := range strings.Split(spec, ",") {
			v, err := atoi(x)
			if err != nil {
				return bad(err.Error())
			}
			vals = append(vals, v)
		}
	}
	if len(vals) > 4096 {
		return bad("more than 4096 values")
	}
	return key, vals, nil
}
