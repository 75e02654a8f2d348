package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/exec/tcpcomm"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
)

// runOptions are the flags of a measured run, shared by the root command
// (one rank under mpirun/srun) and `partbench run`.
type runOptions struct {
	config      string
	backend     string
	rendezvous  string
	warmup      int
	iterations  int
	outDir      string
	format      string
	perRank     bool
	verbose     bool
	tolerance   float64
	strict      bool
	joinTimeout time.Duration
	calibration string
	trace       string
	compare     bool
	// run only
	nproc   int
	check   bool
	emulate int
	dtype   string
	// notes gathered while preparing the run, printed with its report
	notes []string
}

func (o *runOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.config, "config", "", "strategy config to run: a TOML file or an embedded preset name")
	f.StringVar(&o.backend, "backend", "auto", "compute backend: cuda, cpu, or auto (cuda when a driver is found)")
	f.StringVar(&o.rendezvous, "rendezvous", "", "rank 0's control address host:port (default: MASTER_ADDR:MASTER_PORT, else "+launch.DefaultRendezvousAddr+")")
	f.IntVar(&o.warmup, "warmup", -1, "warm-up iterations, discarded (default: the config's run.warmup)")
	f.IntVar(&o.iterations, "iterations", -1, "measured iterations (default: the config's run.iterations)")
	f.StringVar(&o.outDir, "out", ".", "directory where rank 0 writes results.json and results.csv (\"\" = none)")
	f.StringVar(&o.format, "format", report.FormatTable, "what rank 0 prints: table, markdown, json")
	f.BoolVar(&o.perRank, "per-rank", false, "add one row per rank")
	f.BoolVar(&o.verbose, "verbose", false, "every rank prints a line about itself, not only rank 0")
	f.Float64Var(&o.tolerance, "tolerance", 0.15, "relative error above which a timed metric is flagged")
	f.BoolVar(&o.strict, "strict", false, "exit with status 3 when a timed metric is outside the tolerance")
	f.StringVar(&o.calibration, "calibration", "", "hardware profile from 'partbench calibrate': the estimate uses it instead of the config's hardware")
	f.StringVar(&o.trace, "trace", "", "rank 0 writes the last iteration's measured timeline (prefill and 4 decode steps) as a Chrome/Perfetto trace to this file, beside the modeled one")
	f.BoolVar(&o.compare, "compare-model", true, "print the dry-run estimate of the same config beside the measurements, with the error of each (--compare-model=false: measurements alone)")
	f.DurationVar(&o.joinTimeout, "join-timeout", rendezvous.DefaultJoinTimeout, "how long ranks wait for each other at the start")
}

// rankArgs re-creates the flags for a child rank of `run --nproc`.
func (o *runOptions) rankArgs() []string {
	a := []string{"run", "--config", o.config, "--backend", o.backend, "--out", o.outDir, "--format", o.format,
		"--tolerance", strconv.FormatFloat(o.tolerance, 'g', -1, 64), "--join-timeout", o.joinTimeout.String()}
	if o.warmup >= 0 {
		a = append(a, "--warmup", strconv.Itoa(o.warmup))
	}
	if o.iterations >= 0 {
		a = append(a, "--iterations", strconv.Itoa(o.iterations))
	}
	if o.calibration != "" {
		a = append(a, "--calibration", o.calibration)
	}
	if o.trace != "" {
		a = append(a, "--trace", o.trace)
	}
	for _, b := range []struct {
		on   bool
		flag string
	}{{o.perRank, "--per-rank"}, {o.verbose, "--verbose"}, {o.strict, "--strict"}, {!o.compare, "--compare-model=false"}} {
		if b.on {
			a = append(a, b.flag)
		}
	}
	return a
}

func addRunFlags(root *cobra.Command) {
	o := &runOptions{}
	o.addFlags(root.Flags())
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if o.config == "" {
			return cmd.Help()
		}
		return o.runRank(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
	}
}

func newRunCmd() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run --config FILE [--nproc N | --check]",
		Short: "Run a config for real and print measured against modeled",
		Long: `Run every rank's shard of the model, count every communication call, and print
(on rank 0) the measurements beside the dry-run estimate of the same config.

  mpirun -np 16 partbench --config configs/tp8pp2.toml    one process per rank (also srun, torchrun-style env)
  partbench run --nproc 4 --config test/tp2pp2-tiny      start 4 local ranks, no MPI needed
  partbench run --check --config test/tp2pp2-tiny        outputs of the partitioning equal a single rank's`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.config == "" {
				return errors.New("run: --config is required")
			}
			switch {
			case o.emulate > 0:
				return o.runEmulate(cmd.Context(), cmd.OutOrStdout())
			case o.check:
				return o.runCheck(cmd.Context(), cmd.OutOrStdout())
			case cmd.Flags().Changed("nproc"):
				return o.launch(cmd.Context())
			}
			return o.runRank(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().IntVar(&o.nproc, "nproc", 0, "start this many local ranks (the built-in launcher) and wait for all")
	cmd.Flags().IntVar(&o.emulate, "emulate-ranks", 0, "play all N ranks in turn on this one device (compute measured, communication modeled)")
	cmd.Flags().StringVar(&o.dtype, "dtype", "", "with --check --backend cuda: the GPU's storage type, fp32 (default), fp16 or bf16")
	cmd.Flags().BoolVar(&o.check, "check", false, "run single-rank and partitioned in-process and compare outputs (against the CPU reference)")
	return cmd
}

// loadRunConfig loads the config and applies the iteration overrides.
func (o *runOptions) loadRunConfig() (*configs.Config, error) {
	if err := report.CheckFormat(o.format, report.FormatTable, report.FormatMarkdown, report.FormatJSON); err != nil {
		return nil, err
	}
	cfg, err := configs.Load(o.config)
	if err != nil {
		return nil, err
	}
	if o.warmup >= 0 {
		cfg.Run.Warmup = o.warmup
	}
	if o.iterations >= 0 {
		cfg.Run.Iterations = o.iterations
	}
	if !(o.tolerance > 0) {
		return nil, fmt.Errorf("--tolerance: must be positive (got %g)", o.tolerance)
	}
	notes, err := applyCalibration(cfg, o.calibration)
	if err != nil {
		return nil, err
	}
	o.notes = append(o.notes, notes...)
	return cfg, cfg.Validate()
}

type newComputeFunc = func(*partition.Plan, int) (pexec.Compute, error)
type newCommFunc = func(context.Context, *rendezvous.Session, *partition.Plan, int, pexec.Compute) (pexec.Comm, error)

// backendFor resolves --backend and returns its constructors, possibly
// adjusting the config (the CPU backend computes in fp32).
func (o *runOptions) backendFor(cfg *configs.Config, env launch.Env) (string, newComputeFunc, newCommFunc, []string, error) {
	b := o.backend
	if b == "auto" {
		if err := cudaAvailable(); err != nil {
			return "", nil, nil, nil, fmt.Errorf("no GPU backend here (%v): use --backend cpu to run on the CPU", err)
		}
		b = "cuda"
	}
	switch b {
	case "cpu":
		var notes []string
		if cfg.Model.DType != "fp32" {
			notes = append(notes, fmt.Sprintf("the CPU backend computes in fp32: the config's %s is run (and modeled) as fp32", cfg.Model.DType))
			cfg.Model.DType = "fp32"
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return "", nil, nil, nil, err
		}
		const limit = 8 << 30
		for _, r := range plan.Ranks {
			if r.Memory.TotalBytes > limit {
				return "", nil, nil, nil, fmt.Errorf("--backend cpu: rank %d would hold %.1f GB (weights, KV cache, activations); the CPU backend is for small models — use a test config (configs/test/) or a GPU backend",
					r.Rank, float64(r.Memory.TotalBytes)/1e9)
			}
		}
		newCompute := func(p *partition.Plan, rank int) (pexec.Compute, error) { return cpu.New(p, rank) }
		newComm := func(ctx context.Context, sess *rendezvous.Session, p *partition.Plan, rank int, _ pexec.Compute) (pexec.Comm, error) {
			return tcpcomm.New(ctx, sess, rank, p.Size(), "")
		}
		return "cpu", newCompute, newComm, notes, nil
	case "cuda":
		newCompute, newComm, err := cudaBackend(env)
		if err != nil {
			return "", nil, nil, nil, err
		}
		return "cuda", newCompute, newComm, nil, nil
	}
	return "", nil, nil, nil, fmt.Errorf("--backend: must be cuda, cpu or auto (got %q)", o.backend)
}

// runRank runs this process as one rank of a launched job.
func (o *runOptions) runRank(ctx context.Context, stdout, stderr io.Writer) error {
	started := time.Now()
	cfg, err := o.loadRunConfig()
	if err != nil {
		return err
	}
	env, err := launch.Detect(os.LookupEnv)
	if err != nil {
		return err
	}
	if err := o.preflightRank(ctx, cfg, &env); err != nil {
		return err
	}
	backend, newCompute, newComm, notes, err := o.backendFor(cfg, env)
	if err != nil {
		return fmt.Errorf("rank %d: %w", env.Rank, err)
	}
	var progress func(done, total int)
	if env.Rank == 0 {
		progress = newProgress(cfg.Name+" iterations", cfg.Run.Warmup+cfg.Run.Iterations)
	}
	results, err := pexec.Run(ctx, pexec.RunOptions{
		Config: cfg, Env: env, Backend: backend, JoinTimeout: o.joinTimeout, NewCompute: newCompute, Progress: progress,
		TraceDecodeSteps: traceSteps(o.trace),
		NewComm:          newComm,
	})
	if err != nil {
		return fmt.Errorf("rank %d: %w", env.Rank, err)
	}
	if o.verbose {
		fmt.Fprintf(stderr, "rank %d of %d (%s): done\n", env.Rank, env.Size, env.Source)
	}
	if env.Rank != 0 {
		return nil
	}
	doc, err := runDoc(cfg, backend, string(env.Source), results, o.tolerance, started)
	if err != nil {
		return err
	}
	doc.Notes = append(append(o.notes, notes...), doc.Notes...)
	if o.trace != "" {
		spans := append(report.RunSpans(cfg.Name+" (measured)", results), report.EstimateSpans(doc.Estimate)...)
		if err := writeFileAtomic(o.trace, func(w io.Writer) error { return report.ChromeTrace(w, spans) }); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
	}
	if !o.compare {
		doc.Comparison, doc.Estimate = measuredOnly(doc.Comparison), nil
	}
	return o.finish(stdout, doc)
}

// runDoc aggregates the ranks' results and holds them against the estimate.
func runDoc(cfg *configs.Config, backend, launcher string, results []pexec.RankResult, tol float64, started time.Time) (*report.RunDoc, error) {
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return nil, err
	}
	est, err := sim.EstimatePlan(plan, sim.Options{Collectives: collectiveOptionsFromEnv()})
	if err != nil {
		return nil, err
	}
	m, err := pexec.Aggregate(results, cfg.Workload.Batch, cfg.Run.Warmup)
	if err != nil {
		return nil, err
	}
	rows, problems := pexec.Compare(m, est, plan, tol)
	seen := map[string]bool{}
	var hostList, devices []string
	for _, r := range results {
		if !seen["host:"+r.Host] {
			seen["host:"+r.Host] = true
			hostList = append(hostList, r.Host)
		}
		if d := r.Device + "; " + r.DataPlane; !seen["dev:"+d] {
			seen["dev:"+d] = true
			devices = append(devices, d)
		}
	}
	doc := &report.RunDoc{Schema: report.RunSchema, Version: version, Backend: backend, Launcher: launcher, Hosts: hostList, Devices: devices,
		StartedAt: started.UTC().Format(time.RFC3339), ElapsedS: time.Since(started).Seconds(), Config: cfg, ConfigHash: cfg.Hash(),
		Tolerance: tol, Measurement: m, Estimate: est, Comparison: rows, Problems: problems}
	if backend == "cpu" && !strings.HasPrefix(est.Hardware, "cpu") {
		doc.Notes = append(doc.Notes, fmt.Sprintf("times are modeled for %s but measured on the CPU backend: their errors measure the hardware difference, not the model (use --calibration from 'partbench calibrate'); counts and bytes must match exactly", est.Hardware))
	}
	return doc, nil
}

// finish prints rank 0's report and writes the results files.
func (o *runOptions) finish(stdout io.Writer, doc *report.RunDoc) error {
	var err error
	if o.format == report.FormatJSON {
		err = report.RunJSON(stdout, doc)
	} else {
		err = report.WriteGrids(stdout, o.format, report.RunGrids(doc, o.perRank)...)
	}
	if err != nil {
		return err
	}
	if err := o.writeResults(stdout, doc); err != nil {
		return err
	}
	if perr := pexec.Problems(doc.Problems); perr != nil {
		return &exitError{code: 4, err: perr}
	}
	if o.strict {
		var out []string
		for _, r := range doc.Comparison {
			if r.Flag != "" {
				out = append(out, r.Metric)
			}
		}
		if len(out) > 0 {
			return &exitError{code: 3, err: fmt.Errorf("--strict: outside ±%.0f %%: %s", 100*o.tolerance, strings.Join(out, ", "))}
		}
	}
	return nil
}

// runCheck compares the partitioned run with a single rank, in process.
func (o *runOptions) runCheck(ctx context.Context, stdout io.Writer) error {
	cfg, err := o.loadRunConfig()
	if err != nil {
		return err
	}
	opts := pexec.CheckOptions{
		NewCompute: func(p *partition.Plan, rank int) (pexec.Compute, error) { return cpu.New(p, rank) },
		NewComms:   localcomm.Comms,
	}
	switch o.backend {
	case "auto", "cpu":
	case "cuda":
		// Every rank on this process's GPU against the CPU reference, in the GPU's storage type.
		opts = cudaCheckOptions(o.dtype)
	default:
		return fmt.Errorf("--backend: must be cuda, cpu or auto (got %q)", o.backend)
	}
	res, err := pexec.Check(ctx, cfg, opts)
	if err != nil {
		return err
	}
	if err := report.WriteGrids(stdout, report.FormatTable, report.CheckGrid(res)); err != nil {
		return err
	}
	return res.Err()
}

// runEmulate plays every rank in turn on one device and rebuilds the
// system's timeline from the measured compute.
func (o *runOptions) runEmulate(ctx context.Context, stdout io.Writer) error {
	cfg, err := o.loadRunConfig()
	if err != nil {
		return err
	}
	backend, newCompute, _, notes, err := o.backendFor(cfg, launch.Env{})
	if err != nil {
		return err
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return err
	}
	if o.emulate != plan.Size() {
		return fmt.Errorf("--emulate-ranks: %s needs tp × pp = %d ranks (got %d)", cfg.Name, plan.Size(), o.emulate)
	}
	em, err := pexec.Emulate(ctx, plan, newCompute, cfg.Run.Warmup, cfg.Run.Iterations)
	if err != nil {
		return err
	}
	opts := sim.Options{Collectives: collectiveOptionsFromEnv()}
	model, err := sim.EstimatePlan(plan, opts)
	if err != nil {
		return err
	}
	opts.Measured = &em.Ops
	emu, err := sim.EstimatePlan(plan, opts)
	if err != nil {
		return err
	}
	g := report.EmulationGrid(backend, emu, model, em.AllocatedBytes)
	g.Notes = append(g.Notes, notes...)
	return report.WriteGrids(stdout, o.format, g)
}

// traceSteps is how many decode steps a run records for --trace.
func traceSteps(trace string) int {
	if trace == "" {
		return 0
	}
	return 4
}

// measuredOnly drops the modeled side of the comparison rows.
func measuredOnly(rows []pexec.Row) []pexec.Row {
	out := make([]pexec.Row, len(rows))
	for i, r := range rows {
		out[i] = pexec.Row{Metric: r.Metric, Unit: r.Unit, Measured: r.Measured, Exact: r.Exact}
	}
	return out
}
