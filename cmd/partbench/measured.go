package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
)

// addMeasuredFlags registers model's --measured FILE and --fit.
func addMeasuredFlags(f *pflag.FlagSet, file *string, fit *bool) {
	f.StringVar(file, "measured", "", "put the model beside measured inference results: vLLM benchmark_latency/benchmark_throughput JSON (batch and lengths: the config's workload), TensorRT-LLM [BENCHMARK] lines or trtllm-bench report, or CSV (batch,input,output,ttft_ms,tpot_ms,e2e_ms,tok_s)")
	f.BoolVar(fit, "fit", false, "with --measured: fit the runtime's host costs and the compute efficiency to the file and print them as TOML")
}

// runMeasured puts the first config beside the --measured file and, with
// --fit, fits the runtime to it.
func (o *modelOptions) runMeasured(stdout io.Writer, cfgs []*configs.Config) error {
	if o.measured == "" {
		return fmt.Errorf("--fit: needs --measured FILE, the measurements to fit to")
	}
	if len(cfgs) != 1 {
		return fmt.Errorf("--measured: compares one config with the file (got %d: give one --config and no --compare)", len(cfgs))
	}
	if o.sweep != "" || o.trace != "" || o.remoteLink != "" || o.resumeLayers != "" || o.perRank {
		return fmt.Errorf("--measured: cannot be combined with --sweep, --trace, --remote-link, --resume-layers or --per-rank")
	}
	if o.fit && o.format == report.FormatCSV {
		return fmt.Errorf("--fit with --format csv: the fit is no row of points; use table, markdown or json")
	}
	data, err := configs.ReadMeasuredFile(o.measured)
	if err != nil {
		return fmt.Errorf("--measured: %w", err)
	}
	pts, err := sim.ParseMeasured(data, o.measured)
	if err != nil {
		return fmt.Errorf("--measured: %w", err)
	}
	opts := sim.Options{DecodeSteps: o.decodeSteps, Collectives: collectiveOptionsFromEnv()}
	cmp, err := sim.CompareMeasured(cfgs[0], pts, opts)
	if err != nil {
		return fmt.Errorf("--measured: %w", err)
	}
	var fit *sim.RuntimeFit
	if o.fit {
		f, err := sim.FitRuntime(cfgs[0], pts, opts, "fitted-"+filepath.Base(o.measured))
		if err != nil {
			return fmt.Errorf("--fit: %w", err)
		}
		fit = &f
	}
	return report.ToOutput(o.out, stdout, func(w io.Writer) error {
		return report.WriteModelMeasured(w, o.format, o.measured, cmp, fit)
	})
}
