package main

import (
	"errors"
	"fmt"
	"io"
	"os"
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
}

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
  link                all_reduce and sendrecv among N local process ranks over exec/tcpcomm → latency, bandwidth
  op times            every compute op of the test configs' Programs through exec/cpu, at their shapes,
                      with 1, 2 and N workers sharing the cores; collectives and transfers from the
                      link samples → the [[op_time]] table sim prices ops from

Load it with --calibration in 'model --dry-run' and 'run'; see docs/calibration.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	cliflag.Output(f, &o.out, "file to write the calibration to (required)", "out")
	f.StringVar(&o.backend, "backend", configs.BackendCPU, "backend to calibrate: cpu (cuda: refused, naming what is missing)")
	f.IntVar(&o.nproc, "nproc", 4, "local ranks the link is measured among")
	f.BoolVar(&o.quick, "quick", false, "fewer repeats, shorter samples and fewer sizes (seconds instead of tens of seconds)")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	f.StringArrayVar(&o.opFrom, "op-configs", nil, "configs whose compute ops are timed into the op-time table (repeatable; default: "+strings.Join(calib.DefaultOpConfigs, ", ")+")")
	f.IntSliceVar(&o.opRanks, "op-ranks", nil, "concurrent workers the op-time table is measured with, one table each (default 1,2,N for --nproc N; a run picks the one of its ranks per host)")
	f.StringArrayVar(&o.configs, "shapes-from", nil, "configs whose GEMM shapes are timed (repeatable; default: "+strings.Join(calib.DefaultShapeConfigs, ", ")+")")
	return cmd
}

func (o *calibrateOptions) run(cmd *cobra.Command, stdout io.Writer) error {
	if spec := os.Getenv(calib.LinkWorkerEnv); spec != "" { // one rank of the link measurement (below)
		return calib.LinkWorker(cmd.Context(), spec, stdout)
	}
	if o.out == "" {
		return errors.New("calibrate: --output is required (the file to write, e.g. calib.toml)")
	}
	if o.backend == configs.BackendCUDA {
		return gpuDriverRefusal(backend.Default(), "calibrate", calibrateCUDAMissing)
	}
	if o.nproc < 1 || o.nproc > 64 {
		return fmt.Errorf("calibrate: --nproc: must be in [1, 64] (got %d)", o.nproc)
	}
	opts := calib.Options{Backend: o.backend, Ranks: o.nproc, Quick: o.quick, Configs: o.configs, OpRanks: o.opRanks, OpConfigs: o.opFrom, Version: version}
	// The link among process ranks, as a run's: this program re-run as each
	// rank. A Go test binary (NAME.test) cannot be re-run as partbench; its
	// ranks stay goroutines.
	if exe, err := os.Executable(); err == nil && o.nproc > 1 && !strings.HasSuffix(exe, ".test") {
		opts.LinkArgv = []string{exe, "calibrate"}
	}
	opts.Progress = progress.Bar("calibrating")
	cal, err := calib.Run(cmd.Context(), opts)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	if err := report.WriteCalibration(o.out, cal); err != nil {
		return fmt.Errorf("calibrate: write %s: %w", o.out, err)
	}
	for _, w := range cal.Info.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "partbench calibrate: warning: %s\n", w)
	}
	return report.WriteTables(stdout, o.format, "calibrate", version, report.CalibrationGrids(cal, o.out)...)
}
