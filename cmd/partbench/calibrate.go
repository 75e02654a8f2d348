package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/calib"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/progress"
	"github.com/partbench/partbench/report"
)

type calibrateOptions struct {
	out     string
	backend string
	nproc   int
	quick   bool
	configs []string
	format  string
	opRanks []int
	opFrom  []string
	device  int
	maxWS   int64
	rounds  int
}

// calibrateMeasure measures the machine once (calib.Run; tests replace it).
var calibrateMeasure = calib.Run

// maxCalibrateRounds bounds --rounds.
const maxCalibrateRounds = 20

func newCalibrateCmd() *cobra.Command {
	o := &calibrateOptions{}
	cmd := &cobra.Command{
		Use:   "calibrate --output calib.toml [--backend cpu] [--nproc N] [--quick]",
		Short: "Measure this machine and write a hardware profile the model can load",
		Long: `Run microbenchmarks on this machine and write a hardware profile in the schema of
the hardware and topology presets, with the spread (min/median/max over repeats)
of every figure:

  GEMM throughput     cpu.MatMul (OpenBLAS when the system has it, else gonum's sgemm in serial tiles), the CPU backend's GEMM, over the Programs' GEMM shapes
  memory bandwidth    streaming read of a working set far beyond the last-level cache
  cache curve         read bandwidth from 16 KiB to beyond the last-level cache → l2_bytes, l2_bytes_per_s
  per-op overhead     exec/cpu Compute.Exec of the smallest op → kernel_launch_s
  link                all_reduce and sendrecv among N local process ranks over exec/tcpcomm → latency, bandwidth;
                      all_gather among the same ranks, kept out of that fit
  op times            every compute op of the test configs' Programs through exec/cpu, at their shapes,
                      with 1, 2 and N workers sharing the cores; collectives (the all_gather its own)
                      and transfers from the link samples → the [[op_time]] table sim prices ops from

With --backend cuda it measures one GPU through exec/cuda instead (docs/gpu.md,
"GPU calibration"): cuBLAS GEMMs over the Programs' shapes in fp16, bf16 and fp32
and a small-M sweep, the L2 curve from 1 MiB to 1 GiB (its top is HBM), device
copies, kernel and CUDA-graph launches, a one-rank NCCL all_reduce when libnccl
loads, and the op-time table of seed4-1gpu's Programs through the GPU backend,
each op timed on the device between events. Its defaults: --shapes-from
seed4-1gpu, tp8pp2, layerwise16; --op-configs seed4-1gpu (embedded: the seed
layers at 4 layers on one GPU, as scripts/gpu-check.sh runs them).

With --rounds N it measures the machine N times, one after another, writes each
round's profile beside --output (calib.toml: calib.round-1.toml, ...) and the
rounds merged into --output, as 'calibrate merge' pools them: on a small shared
host one calibration describes the state the host was in while it ran, and the
median of three prices a run closer than any one of them (docs/calibration.md,
"Several calibrations, merged").

Load it with --calibration in 'model --dry-run' and 'run'; see docs/calibration.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	cliflag.Output(f, &o.out, "file to write the calibration to (required)", "out")
	f.StringVar(&o.backend, "backend", configs.BackendCPU, "backend to calibrate: cpu (this host) or cuda (one GPU)")
	f.IntVar(&o.nproc, "nproc", 4, "local ranks the link is measured among (cpu; cuda measures one GPU: 1)")
	f.IntVar(&o.device, "device", 0, "GPU ordinal --backend cuda measures")
	f.Int64Var(&o.maxWS, "max-working-set", 0, "largest working set of the cache curve in bytes (default: cpu 4 × the last-level cache, cuda 1 GiB)")
	f.IntVar(&o.rounds, "rounds", 1, fmt.Sprintf("calibrate this many times, one after another, and write the rounds merged (each round's profile beside --output as NAME.round-K.toml; 1 to %d)", maxCalibrateRounds))
	f.BoolVar(&o.quick, "quick", false, "fewer repeats, shorter samples and fewer sizes (seconds instead of tens of seconds)")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	f.StringArrayVar(&o.opFrom, "op-configs", nil, "configs whose compute ops are timed into the op-time table (repeatable; default: "+strings.Join(calib.DefaultOpConfigs, ", ")+
		"; cuda: configs of one dtype, timed one rank per pipeline stage, default "+strings.Join(calib.DefaultCUDAOpConfigs, ", ")+")")
	f.IntSliceVar(&o.opRanks, "op-ranks", nil, "concurrent workers the op-time table is measured with, one table each (default 1,2,N for --nproc N; a run picks the one of its ranks per host; cuda: 1)")
	f.StringArrayVar(&o.configs, "shapes-from", nil, "configs whose GEMM shapes are timed (repeatable; default: "+strings.Join(calib.DefaultShapeConfigs, ", ")+
		"; cuda: "+strings.Join(calib.DefaultCUDAShapeConfigs, ", ")+")")
	cmd.AddCommand(newCalibrateMergeCmd(), newCalibrateDiffCmd())
	return cmd
}

// writeCalibration writes cal to path and its warnings on stderr, as the
// command name says them.
func writeCalibration(cmd *cobra.Command, name, path string, cal *configs.Calibration) error {
	if err := report.WriteCalibration(path, cal); err != nil {
		return fmt.Errorf("%s: write %s: %w", name, path, err)
	}
	for _, w := range cal.Info.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "partbench %s: warning: %s\n", name, w)
	}
	return nil
}

type calibrateDiffOptions struct {
	threshold float64
	format    string
}

func newCalibrateDiffCmd() *cobra.Command {
	o := &calibrateDiffOptions{}
	cmd := &cobra.Command{
		Use:   "diff A.toml B.toml [--threshold 0.1]",
		Short: "Two calibrations' figures side by side, furthest apart first",
		Long: `Set two calibrations side by side: every numeric figure of the hardware and the
link, every spread's median, and every op-time entry of B against A's curve read
at B's point (as 'calibrate merge' reads it), with B/A, ordered by how far apart
(|ln B/A|); groups of op times only one of them measured last. Rows within
--threshold of 1 are counted, not listed. Where two calibrations of one host
price a config differently, the top rows say which figures moved it.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := cmd.Flags()
	f.Float64Var(&o.threshold, "threshold", 0.1, "list figures whose B/A differs from 1 by more than this (0: every figure that differs)")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	return cmd
}

func (o *calibrateDiffOptions) run(cmd *cobra.Command, paths []string) error {
	if !(o.threshold >= 0) || math.IsInf(o.threshold, 0) {
		return fmt.Errorf("calibrate diff: --threshold: must be a finite fraction ≥ 0 (got %g)", o.threshold)
	}
	var cals [2]*configs.Calibration
	for i, p := range paths {
		c, err := configs.LoadCalibration(p)
		if err != nil {
			return fmt.Errorf("calibrate diff: %w", err)
		}
		cals[i] = c
	}
	g := report.Grid{Title: fmt.Sprintf("A = %s (%s, %s), B = %s (%s, %s)", paths[0], cals[0].Info.Host, cals[0].Info.Date, paths[1], cals[1].Info.Host, cals[1].Info.Date),
		Header: []string{"figure", "A", "B", "B/A"}}
	within := 0
	for _, r := range calib.Diff(cals[0], cals[1]) {
		if r.Only != "" {
			g.Rows = append(g.Rows, []string{r.Figure, map[bool]string{true: "measured", false: "—"}[r.Only == "A"], map[bool]string{true: "measured", false: "—"}[r.Only == "B"], "only in " + r.Only})
			continue
		}
		if math.Abs(r.Ratio-1) <= o.threshold {
			within++
			continue
		}
		ratio := "—"
		if !math.IsNaN(r.Ratio) {
			ratio = fmt.Sprintf("%.3g", r.Ratio)
		}
		g.Rows = append(g.Rows, []string{r.Figure, fmt.Sprintf("%.4g", r.A), fmt.Sprintf("%.4g", r.B), ratio})
	}
	g.Notes = append(g.Notes, fmt.Sprintf("%d more figures differ by %g or less either way; equal ones are not counted", within, o.threshold))
	return report.WriteTables(cmd.OutOrStdout(), o.format, "calibrate diff", version, g)
}

type calibrateMergeOptions struct {
	out    string
	format string
}

func newCalibrateMergeCmd() *cobra.Command {
	o := &calibrateMergeOptions{}
	cmd := &cobra.Command{
		Use:   "merge --output calib.toml CALIBRATION CALIBRATION...",
		Short: "Pool several calibrations of this host into one profile",
		Long: `Pool two or more calibrations of one host, taken with the same flags, into one
profile: every measured figure (hardware, link, spreads, the op-time table, the
GEMM, cache and link samples, the op check's measured side) the median of the
calibrations' figures, its extremes the least and greatest any of them measured,
its sample count their sum; the model times derived from them (the samples' and
the op check's) computed again from the pooled profile.

One calibration describes the state the host was in while it ran; on a small
shared machine the waits for a core at more ranks than cores vary from one
calibration to the next by more than their own repeats show. Several
calibrations taken minutes apart, merged, price a run closer than any one of
them (docs/calibration.md, "Several calibrations"):

  for i in 1 2 3; do partbench calibrate --output calib-$i.toml; done
  partbench calibrate merge --output calib.toml calib-1.toml calib-2.toml calib-3.toml`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := cmd.Flags()
	cliflag.Output(f, &o.out, "file to write the pooled calibration to (required; not one of the inputs)")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	return cmd
}

func (o *calibrateMergeOptions) run(cmd *cobra.Command, paths []string) error {
	if o.out == "" {
		return errors.New("calibrate merge: --output is required (the file to write, e.g. calib.toml)")
	}
	outInfo, outErr := os.Stat(o.out)
	cals := make([]*configs.Calibration, len(paths))
	for i, p := range paths {
		if in, err := os.Stat(p); err == nil && outErr == nil && os.SameFile(in, outInfo) {
			return fmt.Errorf("calibrate merge: --output %s: is the input %s; write the pooled profile to another file", o.out, p)
		}
		c, err := configs.LoadCalibration(p)
		if err != nil {
			return fmt.Errorf("calibrate merge: %w", err)
		}
		cals[i] = c
	}
	names := calib.MergeNames(paths)
	cal, err := calib.Merge(cals, names)
	if err != nil {
		return fmt.Errorf("calibrate %w", err)
	}
	if err := writeCalibration(cmd, "calibrate merge", o.out, cal); err != nil {
		return err
	}
	return report.WriteTables(cmd.OutOrStdout(), o.format, "calibrate merge", version, mergedGrids(cal, names, o.out)...)
}

// mergedGrids are the tables of a merged calibration written to out: the
// merge's own notes shown; the calibrations' own, each under its name
// (names), counted and left in the file.
func mergedGrids(cal *configs.Calibration, names []string, out string) []report.Grid {
	shown := *cal
	shown.Info.Notes = nil
	inputs := 0
	for _, n := range cal.Info.Notes {
		if slices.ContainsFunc(names, func(name string) bool { return strings.HasPrefix(n, name+": ") }) {
			inputs++
			continue
		}
		shown.Info.Notes = append(shown.Info.Notes, n)
	}
	if inputs > 0 {
		shown.Info.Notes = append(shown.Info.Notes, fmt.Sprintf("%d notes of the calibrations merged, each under its file's name, are in %s", inputs, out))
	}
	return report.CalibrationGrids(&shown, out)
}

func (o *calibrateOptions) run(cmd *cobra.Command, stdout io.Writer) error {
	if spec := os.Getenv(calib.LinkWorkerEnv); spec != "" { // one rank of the link measurement (below)
		return calib.LinkWorker(cmd.Context(), spec, stdout)
	}
	if o.out == "" {
		return errors.New("calibrate: --output is required (the file to write, e.g. calib.toml)")
	}
	nproc := o.nproc
	if o.backend == configs.BackendCUDA {
		// The driver first, as `run --backend cuda` checks it.
		if err := backend.Default().Available(configs.BackendCUDA); err != nil {
			return fmt.Errorf("calibrate --backend cuda: the GPU backend cannot run here: %w", err)
		}
		if !cmd.Flags().Changed("nproc") {
			nproc = 1 // one GPU
		}
	} else if cmd.Flags().Changed("device") {
		return fmt.Errorf("calibrate: --device: selects a GPU for --backend cuda (got --backend %s)", o.backend)
	}
	if nproc < 1 || nproc > 64 {
		return fmt.Errorf("calibrate: --nproc: must be in [1, 64] (got %d)", nproc)
	}
	if o.rounds < 1 || o.rounds > maxCalibrateRounds {
		return fmt.Errorf("calibrate: --rounds: must be in [1, %d] (got %d)", maxCalibrateRounds, o.rounds)
	}
	if o.maxWS < 0 {
		return fmt.Errorf("calibrate: --max-working-set: must be a size in bytes > 0 (got %d)", o.maxWS)
	}
	opts := calib.Options{Backend: o.backend, Ranks: nproc, Quick: o.quick, Configs: o.configs, OpRanks: o.opRanks, OpConfigs: o.opFrom,
		Device: o.device, MaxWorkingSetBytes: o.maxWS, Version: version}
	// The link among process ranks, as a run's: this program re-run as each
	// rank. A Go test binary (NAME.test) cannot be re-run as partbench; its
	// ranks stay goroutines.
	if exe, err := os.Executable(); err == nil && nproc > 1 && !strings.HasSuffix(exe, ".test") {
		opts.LinkArgv = []string{exe, "calibrate"}
	}
	if o.rounds == 1 {
		opts.Progress = progress.Bar("calibrating")
		cal, err := calibrateMeasure(cmd.Context(), opts)
		if err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		if err := writeCalibration(cmd, "calibrate", o.out, cal); err != nil {
			return err
		}
		return report.WriteTables(stdout, o.format, "calibrate", version, report.CalibrationGrids(cal, o.out)...)
	}
	// Several rounds: each written as it ends (an interrupted set keeps
	// the rounds it finished, and no merged file claims more), then merged.
	paths := roundPaths(o.out, o.rounds)
	cals := make([]*configs.Calibration, o.rounds)
	for k := range cals {
		opts.Progress = progress.Bar(fmt.Sprintf("calibrating, round %d of %d", k+1, o.rounds))
		cal, err := calibrateMeasure(cmd.Context(), opts)
		if err != nil {
			return fmt.Errorf("calibrate: round %d of %d: %w (the rounds before it are in %s; --output %s was not written)", k+1, o.rounds, err, strings.Join(paths[:k], ", "), o.out)
		}
		if err := writeCalibration(cmd, fmt.Sprintf("calibrate (round %d)", k+1), paths[k], cal); err != nil {
			return err
		}
		cals[k] = cal
	}
	names := calib.MergeNames(paths)
	cal, err := calib.Merge(cals, names)
	if err != nil {
		return fmt.Errorf("calibrate: the %d rounds (%s): %w", o.rounds, strings.Join(paths, ", "), err)
	}
	if err := writeCalibration(cmd, "calibrate", o.out, cal); err != nil {
		return err
	}
	return report.WriteTables(stdout, o.format, "calibrate", version, mergedGrids(cal, names, o.out)...)
}

// roundPaths are the files the rounds of a calibration to out are written
// to: out's name with .round-K before its extension (.toml where it has
// none), K from 1.
func roundPaths(out string, n int) []string {
	ext := filepath.Ext(out)
	stem := strings.TrimSuffix(out, ext)
	if ext == "" {
		ext = ".toml"
	}
	paths := make([]string, n)
	for k := range paths {
		paths[k] = fmt.Sprintf("%s.round-%d%s", stem, k+1, ext)
	}
	return paths
}
