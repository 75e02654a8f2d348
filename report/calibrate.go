package report

import (
	"fmt"
	"strconv"

	"github.com/partbench/partbench/configs"
)

// CalibrationGrids summarize a calibration: every figure with its spread,
// the GEMM table, the link samples and the op check.
func CalibrationGrids(cal *configs.Calibration, path string) []Grid {
	g := cal.Hardware
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	quick := ""
	if cal.Info.Quick {
		quick = ", quick"
	}
	load := ""
	if la := cal.Info.LoadAverage; len(la) == 2 {
		load = fmt.Sprintf(", load average %.2f → %.2f", la[0], la[1])
	}
	figs := Grid{Title: fmt.Sprintf("Calibration of %s (%d cores%s, %d repeats%s, %s), written to %s", g.Name, cal.Info.Cores, load, cal.Info.Repeats, quick, cal.Info.Date, path),
		Header: []string{"figure", "value", "min", "median", "max", "unit"}, Notes: append(append([]string{}, cal.Info.Notes...), prefixed("warning: ", cal.Info.Warnings)...)}
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
		{"remote_request_overhead_s", remoteOverhead(cal), "s"},
		// A GPU calibration's own figures (calib, --backend cuda).
		{"fp16_flops_per_s", g.FP16FLOPsPerS, "FLOP/s"},
		{"bf16_flops_per_s", g.BF16FLOPsPerS, "FLOP/s"},
		{"hbm_copy_bytes_per_s", spreadMedian(cal, "hbm_copy_bytes_per_s"), "B/s"},
		{"graph_launch_s", g.GraphLaunchS, "s"},
		{"graph_kernel_s", g.GraphKernelS, "s"},
		{"nccl_all_reduce_s", spreadMedian(cal, "nccl_all_reduce_s"), "s"},
		{"step_overhead_s", g.StepOverheadS, "s"},
		{"graph_op_saved_s", g.GraphOpSavedS, "s"},
		{"host_op_s", g.HostOpS, "s"},
	} {
		if s, ok := cal.Spread[r.key]; ok {
			figs.Rows = append(figs.Rows, []string{r.key, f(r.v), f(s.Min), f(s.Median), f(s.Max), r.unit})
		}
	}
	if e := cal.Engine; e != nil {
		// the serving engine's host cost per launch ([engine]): a median over
		// repeats whose spread the file keeps in its comment
		figs.Rows = append(figs.Rows, []string{"engine.launch_host_s", f(e.LaunchHostS), "—", f(e.LaunchHostS), "—", "s"})
	}
	grids := []Grid{figs}

	gemmTitle := "GEMM shapes of the Programs through cpu.MatMul (measured M×N where the shape was cut to the budget)"
	if cal.Info.Backend == configs.BackendCUDA {
		gemmTitle = fmt.Sprintf("GEMM shapes of the Programs (fp16, bf16, fp32) and the small-M sweep through cublasGemmEx on %s, %s", cal.Info.Device, cal.Info.Driver)
	}
	gemm := Grid{Title: gemmTitle,
		Header: []string{"source", "M×N×K", "measured M×N", "median (s)", "min (s)", "max (s)", "GFLOP/s", "model / measured"}}
	for _, s := range cal.GEMM {
		meas := "same"
		if s.MeasuredM != s.M || s.MeasuredN != s.N {
			meas = fmt.Sprintf("%d×%d", s.MeasuredM, s.MeasuredN)
		}
		src := s.Source
		if s.DType != "" {
			src += " (" + s.DType + ")"
		}
		gemm.Rows = append(gemm.Rows, []string{src, fmt.Sprintf("%d×%d×%d", s.M, s.N, s.K), meas, f(s.TimeMedianS), f(s.TimeMinS), f(s.TimeMaxS),
			strconv.FormatFloat(s.FLOPsPerS/1e9, 'f', 2, 64), strconv.FormatFloat(s.ModelTimeS/s.TimeMedianS, 'f', 2, 64)})
	}
	grids = append(grids, gemm)

	if len(cal.Comm) > 0 {
		comm := Grid{Title: "Link samples over exec/tcpcomm (sendrecv: one-way time of a ping-pong) and the collective model with the fitted link",
			Header: []string{"op", "ranks", "bytes", "median (s)", "min (s)", "max (s)", "model (s)", "algo/proto", "model / measured"}}
		for _, s := range cal.Comm {
			comm.Rows = append(comm.Rows, []string{s.Op, strconv.Itoa(s.Ranks), strconv.FormatInt(s.Bytes, 10), f(s.TimeMedianS), f(s.TimeMinS), f(s.TimeMaxS),
				f(s.ModelTimeS), string(s.Algo) + "/" + s.Proto, strconv.FormatFloat(s.ModelTimeS/s.TimeMedianS, 'f', 2, 64)})
		}
		grids = append(grids, comm)
	}
	if len(cal.Ops) > 0 {
		ops := Grid{Title: fmt.Sprintf("Compute ops of %s through exec/cpu against the calibrated model (one prefill; one decode step)", cal.Ops[0].Config),
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

func remoteOverhead(cal *configs.Calibration) float64 {
	if cal.Remote == nil {
		return 0
	}
	return cal.Remote.RequestOverheadS
}

func prefixed(p string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = p + x
	}
	return out
}

// spreadMedian is the median of a figure's spread (0 when not measured).
func spreadMedian(cal *configs.Calibration, key string) float64 { return cal.Spread[key].Median }
