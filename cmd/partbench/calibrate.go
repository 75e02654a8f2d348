package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/partbench/partbench/calib"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/report"
)

type calibrateOptions struct {
	out     string
	backend string
	nproc   int
	quick   bool
	configs []string
	format  string
}

func newCalibrateCmd() *cobra.Command {
	o := &calibrateOptions{}
	cmd := &cobra.Command{
		Use:   "calibrate --out calib.toml [--backend cpu] [--nproc N] [--quick]",
		Short: "Measure this machine and write a hardware profile the model can load",
		Long: `Run microbenchmarks on this machine and write a hardware profile in the schema of
the hardware and topology presets, with the spread (min/median/max over repeats)
of every figure:

  GEMM throughput     blas32.Gemm, the CPU backend's call, over the Programs' GEMM shapes
  memory bandwidth    streaming read of a working set far beyond the last-level cache
  cache curve         read bandwidth from 16 KiB to beyond the last-level cache → l2_bytes, l2_bytes_per_s
  per-op overhead     exec/cpu Compute.Exec of the smallest op → kernel_launch_s
  link                all_reduce and sendrecv among N local ranks over exec/tcpcomm → latency, bandwidth

Load it with --calibration in 'model --dry-run' and 'run'; see docs/calibration.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "file to write the calibration to (required)")
	f.StringVar(&o.backend, "backend", configs.BackendCPU, "backend to calibrate: cpu (cuda needs a GPU backend build)")
	f.IntVar(&o.nproc, "nproc", 4, "local ranks the link is measured among")
	f.BoolVar(&o.quick, "quick", false, "fewer repeats, shorter samples and fewer sizes (seconds instead of tens of seconds)")
	f.StringVar(&o.format, "format", report.FormatTable, "how the summary is printed: table, markdown")
	f.StringArrayVar(&o.configs, "shapes-from", nil, "configs whose GEMM shapes are timed (repeatable; default: "+strings.Join(calib.DefaultShapeConfigs, ", ")+")")
	return cmd
}

func (o *calibrateOptions) run(cmd *cobra.Command, stdout io.Writer) error {
	if err := report.CheckFormat(o.format, report.FormatTable, report.FormatMarkdown); err != nil {
		return err
	}
	if o.out == "" {
		return errors.New("calibrate: --out is required (the file to write, e.g. calib.toml)")
	}
	if o.nproc < 1 || o.nproc > 64 {
		return fmt.Errorf("calibrate: --nproc: must be in [1, 64] (got %d)", o.nproc)
	}
	opts := calib.Options{Backend: o.backend, Ranks: o.nproc, Quick: o.quick, Configs: o.configs, Version: version}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		// The bar is made on the first step, when Run knows the total.
		var bar func(done, total int)
		opts.Progress = func(done, total int) {
			if bar == nil {
				bar = newProgress("calibrating", total)
			}
			if bar != nil {
				bar(done, total)
			}
		}
	}
	cal, err := calib.Run(cmd.Context(), opts)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	header := []string{fmt.Sprintf("partbench calibration: host %s, backend %s, date %s, partbench version %s",
		cal.Info.Host, cal.Info.Backend, cal.Info.Date, cal.Info.Version),
		"Load it with --calibration FILE (model --dry-run, run, l2); docs/calibration.md says how each figure is fitted."}
	if err := writeFileAtomic(o.out, func(w io.Writer) error { return cal.WriteTOML(w, header) }); err != nil {
		return fmt.Errorf("calibrate: write %s: %w", o.out, err)
	}
	return report.WriteGrids(stdout, o.format, calibrationGrids(cal, o.out)...)
}

// calibrationGrids summarize a calibration: every figure with its spread,
// the GEMM table, the link samples and the op check.
func calibrationGrids(cal *configs.Calibration, path string) []report.Grid {
	g := cal.Hardware
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	quick := ""
	if cal.Info.Quick {
		quick = ", quick"
	}
	figs := report.Grid{Title: fmt.Sprintf("Calibration of %s (%d cores, %d repeats%s, %s), written to %s", g.Name, cal.Info.Cores, cal.Info.Repeats, quick, cal.Info.Date, path),
		Header: []string{"figure", "value", "min", "median", "max", "unit"}, Notes: cal.Info.Notes}
	for _, r := range []struct {
		key  string
		v    float64
		unit string
	}{
		{"fp32_flops_per_s", g.FP32FLOPsPerS, "FLOP/s"},
		{"hbm_bytes_per_s", g.HBMBytesPerS, "B/s"},
		{"l2_bytes", float64(g.L2Bytes), "B"},
		{"l2_bytes_per_s", g.L2BytesPerS, "B/s"},
		{"kernel_launch_s", g.KernelLaunchS, "s"},
		{"link_latency_s", cal.Topology.Intra.LatencyS, "s"},
		{"link_bytes_per_s", cal.Topology.Intra.BytesPerS, "B/s"},
	} {
		if s, ok := cal.Spread[r.key]; ok {
			figs.Rows = append(figs.Rows, []string{r.key, f(r.v), f(s.Min), f(s.Median), f(s.Max), r.unit})
		}
	}
	grids := []report.Grid{figs}

	gemm := report.Grid{Title: "GEMM shapes of the Programs through blas32.Gemm (measured M×N where the shape was cut to the budget)",
		Header: []string{"source", "M×N×K", "measured M×N", "median (s)", "min (s)", "max (s)", "GFLOP/s", "model / measured"}}
	for _, s := range cal.GEMM {
		meas := "same"
		if s.MeasuredM != s.M || s.MeasuredN != s.N {
			meas = fmt.Sprintf("%d×%d", s.MeasuredM, s.MeasuredN)
		}
		gemm.Rows = append(gemm.Rows, []string{s.Source, fmt.Sprintf("%d×%d×%d", s.M, s.N, s.K), meas, f(s.TimeMedianS), f(s.TimeMinS), f(s.TimeMaxS),
			strconv.FormatFloat(s.FLOPsPerS/1e9, 'f', 2, 64), strconv.FormatFloat(s.ModelTimeS/s.TimeMedianS, 'f', 2, 64)})
	}
	grids = append(grids, gemm)

	if len(cal.Comm) > 0 {
		comm := report.Grid{Title: "Link samples over exec/tcpcomm (sendrecv: one-way time of a ping-pong) and the collective model with the fitted link",
			Header: []string{"op", "ranks", "bytes", "median (s)", "min (s)", "max (s)", "model (s)", "algo/proto", "model / measured"}}
		for _, s := range cal.Comm {
			comm.Rows = append(comm.Rows, []string{s.Op, strconv.Itoa(s.Ranks), strconv.FormatInt(s.Bytes, 10), f(s.TimeMedianS), f(s.TimeMinS), f(s.TimeMaxS),
				f(s.ModelTimeS), s.Algo + "/" + s.Proto, strconv.FormatFloat(s.ModelTimeS/s.TimeMedianS, 'f', 2, 64)})
		}
		grids = append(grids, comm)
	}
	if len(cal.Ops) > 0 {
		ops := report.Grid{Title: fmt.Sprintf("Compute ops of %s through exec/cpu against the calibrated model (one prefill; one decode step)", cal.Ops[0].Config),
			Header: []string{"phase", "kind", "calls", "measured (µs)", "model (µs)", "model / measured"}}
		var mt, mm float64
		for _, s := range cal.Ops {
			mt, mm = mt+s.MeasuredS, mm+s.ModelS
			ops.Rows = append(ops.Rows, []string{s.Phase, s.Kind, strconv.Itoa(s.Calls), strconv.FormatFloat(s.MeasuredS*1e6, 'f', 1, 64),
				strconv.FormatFloat(s.ModelS*1e6, 'f', 1, 64), strconv.FormatFloat(s.ModelS/s.MeasuredS, 'f', 2, 64)})
		}
		ops.Rows = append(ops.Rows, []string{"all", "", "", strconv.FormatFloat(mt*1e6, 'f', 1, 64), strconv.FormatFloat(mm*1e6, 'f', 1, 64), strconv.FormatFloat(mm/mt, 'f', 2, 64)})
		grids = append(grids, ops)
	}
	return grids
}

// applyCalibration loads the calibration at path and applies it to cfg (its
// hardware, and its links as configs.Calibration.Apply says), then validates
// cfg. The notes say what was replaced; the caller shows them.
func applyCalibration(cfg *configs.Config, path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	cal, err := configs.LoadCalibration(path)
	if err != nil {
		return nil, fmt.Errorf("--calibration: %w", err)
	}
	notes := cal.Apply(cfg)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("--calibration %s: the calibrated config is not valid: %w", path, err)
	}
	return notes, nil
}
