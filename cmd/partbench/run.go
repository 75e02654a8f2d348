package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/launchflags"
	"github.com/partbench/partbench/progress"
	"github.com/partbench/partbench/report"
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
	transport   string // --transport (runtransport.go)
	bindTo      string // --bind-to (runbind.go)
	trace       string
	compare     bool
	quiet       bool
	// run only
	nproc   int
	check   bool
	emulate int
	dtype   string
	nodes   launchflags.Nodes
	// --model-dir with --check (modeldir.go), and its --host-window
	modelDir, hostWindow string
	encoder              bool
	// notes gathered while preparing the run, printed with its report
	notes []string
	// backends are the backends --backend chooses from.
	backends *backend.Registry
}

func (o *runOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.config, "config", "", "strategy config to run: a TOML file or an embedded preset name")
	f.StringVar(&o.backend, "backend", "auto", "compute backend: cuda, cpu, or auto (cuda when a driver is found)")
	f.StringVar(&o.rendezvous, "rdzv-endpoint", "", "rank 0's control address host:port, as torchrun's (default: MASTER_ADDR:MASTER_PORT, else "+launch.DefaultRendezvousAddr+")")
	cliflag.Alias(f, "rendezvous", "rdzv-endpoint", false)
	f.IntVar(&o.warmup, "warmup", -1, "warm-up iterations, discarded (default: the config's run.warmup)")
	f.IntVar(&o.iterations, "iterations", -1, "measured iterations (default: the config's run.iterations)")
	cliflag.OutputDir(f, &o.outDir, "results", "directory where rank 0 writes results.json and results.csv, as remote, resume and suite do (\"\" = none)", "out")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	f.BoolVar(&o.perRank, "per-rank", false, "add one row per rank")
	f.BoolVar(&o.verbose, "verbose", false, "every rank prints a line about itself and its errors in full, not only rank 0")
	f.BoolVar(&o.quiet, "quiet", false, "no progress on standard error")
	cliflag.FiniteFloat(f, &o.tolerance, "tolerance", compare.DefaultTolerance, "relative error above which a timed metric is flagged")
	f.BoolVar(&o.strict, "strict", false, "exit with status 3 when a timed metric is outside the tolerance")
	f.StringVar(&o.calibration, "calibration", "", "hardware profile from 'partbench calibrate': the estimate uses it instead of the config's hardware")
	f.StringVar(&o.trace, "trace", "", "rank 0 writes the last iteration's measured timeline (prefill and the first 4 decode steps, all of them when workload.output_tokens − 1 is fewer) as a Chrome/Perfetto trace to this file, beside the model of the same ranks and steps (partbench trace stats FILE summarises it)")
	cliflag.MarkOutputFile(f, "trace")
	f.BoolVar(&o.compare, "compare-model", true, "print the dry-run estimate of the same config beside the measurements, with the error of each (--compare-model=false: measurements alone)")
	f.DurationVar(&o.joinTimeout, "join-timeout", rendezvous.DefaultJoinTimeout, "how long ranks wait for each other at the start")
	cliflag.DefaultInUsage(f, "warmup", "iterations")
	o.addTransportFlag(f)
	o.addBindFlag(f)
}

// runLauncherOnly are the `run` flags a child rank of `run --nproc` is not
// given, each for its reason; every other flag set on the command line is
// forwarded as given (launchflags.Forward), so a new flag reaches the ranks
// without an edit here (TestRankArgsForwardEveryRunFlag holds the list to
// the command's flag set).
var runLauncherOnly = map[string]string{
	"nproc-per-node": "the launcher's: the child is one rank",
	"nproc":          "alias of --nproc-per-node",
	"nnodes":         "given by Nodes.ChildArgs, checked first",
	"node-rank":      "given by Nodes.ChildArgs, checked first",
	"rdzv-id":        "becomes the children's job id (launch.SpawnOptions.JobID)",
	"master-addr":    "becomes the children's MASTER_ADDR",
	"master-port":    "becomes the children's MASTER_PORT (a picked port, not 0)",
	"rdzv-endpoint":  "becomes the children's MASTER_ADDR:MASTER_PORT",
	"rendezvous":     "alias of --rdzv-endpoint",
	"check":          "runs in process: `run --check` never launches",
	"emulate-ranks":  "runs in process: `run --emulate-ranks` never launches",
	"model-dir":      "only with --check, which never launches",
	"encoder":        "only with --check --model-dir, which never launches",
	"dtype":          "only with --check, which never launches",
	"host-window":    "only with --check --model-dir, which never launches",
}

// rankArgs is the command line of a child rank of `run --nproc`: `run` and
// every flag of flags set on the launcher's command line but those in
// runLauncherOnly.
func rankArgs(flags *pflag.FlagSet) []string {
	skip := make([]string, 0, len(runLauncherOnly))
	for name := range runLauncherOnly {
		skip = append(skip, name)
	}
	return append([]string{"run"}, launchflags.Forward(flags, skip...)...)
}

func addRunFlags(root *cobra.Command) {
	o := &runOptions{backends: backend.Default()}
	o.addFlags(root.Flags())
	cliflag.Underscores(root.Flags())
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if o.config == "" {
			return cmd.Help()
		}
		if err := launchflags.Check(cmd.Flags()); err != nil {
			return err
		}
		if err := o.checkTransport(); err != nil {
			return err
		}
		if err := o.checkBind(cmd.Flags()); err != nil {
			return err
		}
		return o.runRank(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
	}
}

func newRunCmd() *cobra.Command {
	o := &runOptions{backends: backend.Default()}
	cmd := &cobra.Command{
		Use:   "run --config FILE [--nproc-per-node N [--nnodes M --node-rank K --rdzv-endpoint HOST:PORT] | --check | --emulate-ranks N]",
		Short: "Run a config for real and print measured against modeled",
		Long: `Run every rank's shard of the model, count every communication call, and print
(on rank 0) the measurements beside the dry-run estimate of the same config.

  mpirun -np 16 partbench --config configs/tp8pp2.toml    one process per rank (also srun, torchrun-style env)
  partbench run --nproc-per-node 4 --config test/tp2pp2-tiny      start 4 local ranks, no MPI needed
  partbench run --check --config test/tp2pp2-tiny        outputs of the partitioning equal a single rank's

Two nodes as torchrun does it (node 0 prints the port it picked for --master-port 0):
  partbench run --nnodes 2 --node-rank 0 --nproc-per-node 2 --master-addr HOST0 --master-port 0 --config test/tp2pp2-tiny
  partbench run --nnodes 2 --node-rank 1 --nproc-per-node 2 --rdzv-endpoint HOST0:PORT --config test/tp2pp2-tiny`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := launchflags.Check(cmd.Flags()); err != nil {
				return err
			}
			if err := o.checkTransport(); err != nil {
				return err
			}
			if err := o.checkBind(cmd.Flags()); err != nil {
				return err
			}
			if o.modelDir != "" {
				return o.runCheckModelDir(cmd.Context(), cmd.OutOrStdout())
			}
			if o.encoder {
				return errors.New("run: --encoder: only with --check --model-dir (a config gives model.encoder itself)")
			}
			if o.hostWindow != "" {
				return fmt.Errorf("run: --host-window %q: only with --check --model-dir --backend cuda (a config's run generates its weights on the device)", o.hostWindow)
			}
			if o.config == "" {
				return errors.New("run: --config (or --check --model-dir) is required")
			}
			switch {
			case o.emulate > 0:
				return o.runEmulate(cmd.Context(), cmd.OutOrStdout())
			case o.check:
				return o.runCheck(cmd.Context(), cmd.OutOrStdout())
			case cliflag.Changed(cmd.Flags(), "nproc-per-node", "nproc"):
				return o.launch(cmd.Context(), cmd.Flags(), cmd.ErrOrStderr())
			}
			return o.runRank(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().IntVar(&o.nproc, "nproc-per-node", 0, "start this many local ranks (the built-in launcher) and wait for all")
	cliflag.Alias(cmd.Flags(), "nproc", "nproc-per-node", false)
	o.nodes.AddFlags(cmd.Flags())
	cliflag.Underscores(cmd.Flags())
	cmd.Flags().IntVar(&o.emulate, "emulate-ranks", 0, "play all N ranks in turn on this one device (compute measured, communication modeled)")
	cmd.Flags().StringVar(&o.dtype, "dtype", "", "with --check --backend cuda: the GPU's storage type, fp32 (default), fp16 or bf16")
	cmd.Flags().BoolVar(&o.check, "check", false, "run single-rank and partitioned in-process and compare outputs (against the CPU reference)")
	cmd.Flags().StringVar(&o.modelDir, "model-dir", "", "with --check: a Hugging Face model directory; every partitioning its shape allows (up to 8 ranks) against one rank, with its weights")
	cmd.Flags().BoolVar(&o.encoder, "encoder", false, "with --check --model-dir: run the model as an encoder (bidirectional attention, one forward pass)")
	cmd.Flags().StringVar(&o.hostWindow, "host-window", "", "with --check --model-dir --backend cuda: float32 bytes of checkpoint tensors read ahead of their upload, e.g. 256M (default 1G; the host holds at most two windows)")
	return cmd
}

// loadRunConfig checks --tolerance, then loads the config with the
// iteration and calibration overrides (configs.LoadRun).
func (o *runOptions) loadRunConfig() (*configs.Config, error) {
	if !(o.tolerance > 0) {
		return nil, fmt.Errorf("--tolerance: must be positive (got %g)", o.tolerance)
	}
	// -1 (the default) means the config's; any other negative is a mistake.
	for _, c := range []struct {
		flag string
		v    int
	}{{"warmup", o.warmup}, {"iterations", o.iterations}} {
		if c.v < -1 {
			return nil, fmt.Errorf("--%s: must be ≥ 0 (got %d; leave it out for the config's run.%s)", c.flag, c.v, c.flag)
		}
	}
	cfg, notes, err := configs.LoadRun(o.config, configs.RunOverrides{Warmup: o.warmup, Iterations: o.iterations, Calibration: o.calibration})
	o.notes = append(o.notes, notes...)
	return cfg, err
}

// runRank runs this process as one rank of a launched job.
func (o *runOptions) runRank(ctx context.Context, stdout, stderr io.Writer) (ret error) {
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
	setup, err := o.backends.Setup(o.backend, cfg, env)
	if err != nil {
		return launchflags.RankError(env.Rank, o.verbose, err)
	}
	name, plan, rank := setup.Name, setup.Plan, setup.Rank
	if rank.NewComm, err = o.transportComm(name, rank.NewComm); err != nil {
		return launchflags.RankError(env.Rank, o.verbose, err)
	}
	if err := o.bindRank(name, env, plan.TP); err != nil {
		return launchflags.RankError(env.Rank, o.verbose, err)
	}
	var prog func(done, total int)
	if env.Rank == 0 && !o.quiet {
		prog = progress.Lines(cfg.Name + " iterations")
	}
	results, err := pexec.Run(ctx, pexec.RunOptions{
		Plan: plan, Env: env, Backend: name, JoinTimeout: o.joinTimeout, NewCompute: rank.NewCompute, Progress: prog,
		TraceDecodeSteps: traceSteps(o.trace),
		NewComm:          rank.NewComm,
		LinkProbeCalls:   pexec.LinkProbeCalls,
		PaceGC:           true,
	})
	// A communicator that failed to close after the run leaves the results
	// whole: rank 0 still reports and writes them, and the rank then fails.
	var closeErr *pexec.CloseError
	if errors.As(err, &closeErr) {
		err = nil
	}
	if err != nil {
		return launchflags.RankError(env.Rank, o.verbose, err)
	}
	if closeErr != nil {
		defer func() {
			if ret == nil {
				ret = launchflags.RankError(env.Rank, o.verbose, closeErr)
			} else {
				fmt.Fprintf(stderr, "partbench: %v\n", closeErr)
			}
		}()
	}
	if o.verbose {
		fmt.Fprintf(stderr, "rank %d of %d (%s): done\n", env.Rank, env.Size, env.Source)
	}
	if env.Rank != 0 {
		return nil
	}
	doc, err := compare.NewRunDoc(compare.Run{Plan: plan, Backend: name, Launcher: string(env.Source), Version: version,
		Results: results, Tolerance: o.tolerance, Started: started, Collectives: collectiveOptionsFromEnv(), EveryRank: o.trace != "",
		Unbound: o.bindTo == launch.BindNone.String()})
	if err != nil {
		return err
	}
	doc.Notes = append(append(o.notes, setup.Notes...), doc.Notes...)
	if o.trace != "" {
		if err := report.WriteRunTrace(o.trace, cfg.Name, results, doc.Estimate); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
	}
	doc.Notes = append(doc.Notes, report.TraceSumNotes(traceSummaries(results))...)
	if !o.compare {
		doc.Comparison, doc.Estimate = compare.MeasuredOnly(doc.Comparison), nil
	}
	return o.finish(stdout, doc)
}

// finish prints rank 0's report and writes the results files.
func (o *runOptions) finish(stdout io.Writer, doc *report.RunDoc) error {
	// The files are written even when printing failed (and the other way
	// round): a run's results are never lost to one formatting error.
	printErr := report.WriteRun(stdout, o.format, doc, o.perRank)
	if printErr != nil {
		printErr = fmt.Errorf("run: cannot print the results as %s: %w", o.format, printErr)
	}
	fileErr := report.WriteRunFiles(o.outDir, doc, stdout, o.format == report.FormatJSON && printErr == nil)
	if err := errors.Join(printErr, fileErr); err != nil {
		return err
	}
	return compare.Verdict(doc, o.strict)
}

// runCheck compares the partitioned run with a single rank, in process.
func (o *runOptions) runCheck(ctx context.Context, stdout io.Writer) error {
	cfg, err := o.loadRunConfig()
	if err != nil {
		return err
	}
	// auto and cpu: the CPU reference; cuda: every rank on this process's
	// GPU against the CPU reference, in the GPU's storage type.
	b, err := o.backends.ForCheck(o.backend)
	if err != nil {
		return err
	}
	res, err := pexec.Check(ctx, cfg, b.Check(o.dtype))
	if err != nil {
		return err
	}
	return report.WriteChecks(stdout, o.format, "run --check", version, res)
}

// runEmulate plays every rank in turn on one device and rebuilds the
// system's timeline from the measured compute.
func (o *runOptions) runEmulate(ctx context.Context, stdout io.Writer) error {
	cfg, err := o.loadRunConfig()
	if err != nil {
		return err
	}
	setup, err := o.backends.Setup(o.backend, cfg, launch.Env{})
	if err != nil {
		return err
	}
	e, err := compare.EmulateRun(ctx, setup.Plan, o.emulate, setup.Rank.NewCompute, collectiveOptionsFromEnv())
	if err != nil {
		return err
	}
	doc := report.EmulationDoc{Version: version, Backend: setup.Name, Config: cfg, Ranks: o.emulate,
		Emulated: e.Emulated, Modeled: e.Modeled, AllocatedBytes: e.AllocatedBytes, Measured: e.Measured}
	notes := append(setup.Notes, e.Measured.TimingNote())
	if n := e.HostPaceNote(setup.Plan); n != "" {
		notes = append(notes, n)
	}
	return report.WriteEmulation(stdout, o.format, o.outDir, &doc, notes)
}

// traceSummaries are the traced steps' op sums of the ranks whose steps
// make TTFT and TPOT (last stage, TP index 0).
func traceSummaries(results []pexec.RankResult) []pexec.TraceSummary {
	var out []pexec.TraceSummary
	for _, r := range results {
		if !r.LastStage || r.TPIndex != 0 {
			continue
		}
		if t, ok := pexec.SummarizeTrace(r); ok {
			out = append(out, t)
		}
	}
	return out
}

// traceSteps is how many decode steps a run records for --trace.
func traceSteps(trace string) int {
	if trace == "" {
		return 0
	}
	return 4
}
