package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/serving"
	"github.com/partbench/partbench/sim"
)

// maxEngineBytes bounds what --measure allocates on this machine.
const maxEngineBytes = 4e9

// runMeasure runs one workload twice: for real, through the scheduler
// driving the CPU engine on the wall clock, and modeled, through the same
// scheduler with each iteration priced as the engine runs it; it prints
// both with the error of each metric.
func (o *servingOptions) runMeasure(fs *pflag.FlagSet, stdout io.Writer, cfg *configs.Config, rates []float64, ps []float64, slo serving.Goodput) error {
	switch {
	case len(rates) != 1:
		return fmt.Errorf("--measure: one --request-rate at a time (got %d)", len(rates))
	case o.remoteLink != "":
		return fmt.Errorf("--measure: the engine runs in this process; --remote-link cannot act with it")
	case o.preemption == serving.PreemptSwap:
		return fmt.Errorf("--measure: the engine preempts by recompute only")
	case o.plot != "":
		return fmt.Errorf("--plot: draws a --request-rate sweep, not a measured run")
	case !(o.measureTime > 0):
		return fmt.Errorf("--measure-timeout: must be > 0 seconds (got %g)", o.measureTime)
	case cliflag.Changed(fs, "num-gpu-blocks-override", "gpu-memory-utilization", "block-size"):
		return fmt.Errorf("--measure: the engine's KV cache is --max-num-seqs slots of the longest request; --num-gpu-blocks-override, --gpu-memory-utilization and --block-size cannot act with it")
	}
	var reqs []serving.Request
	var err error
	workload := ""
	if o.trace != "" {
		if reqs, err = serving.ReadTrace(o.trace); err != nil {
			return err
		}
		workload = "trace " + o.trace
	} else {
		process := o.arrival
		if process == serving.ArrivalPoisson && o.burstiness != 1 {
			process = serving.ArrivalGamma
		}
		spec := serving.Spec{NumPrompts: o.numPrompts, Seed: o.seed,
			Arrivals: serving.Arrivals{Process: process, Burstiness: o.burstiness, RequestRate: rates[0]},
			Lengths:  serving.Lengths{InputLen: o.inputLen, OutputLen: o.outputLen, RangeRatio: o.rangeRatio}}
		workload = fmt.Sprintf("random %d/%d tokens ±%g, %s arrivals", o.inputLen, o.outputLen, o.rangeRatio, process)
		if o.datasetName == "sharegpt" {
			if spec.Dataset, err = serving.ReadShareGPT(o.datasetPath, o.shareGPTOut); err != nil {
				return err
			}
			workload = fmt.Sprintf("sharegpt %s, %s arrivals", o.datasetPath, process)
		}
		if reqs, err = serving.Generate(spec); err != nil {
			return err
		}
	}
	longest := 0
	for _, r := range reqs {
		longest = max(longest, r.InputLen+r.OutputLen)
	}
	ec, err := serving.EngineConfig(cfg, o.maxNumSeqs, longest, o.maxBatched)
	if err != nil {
		return err
	}
	plan, err := partition.NewPlan(ec)
	if err != nil {
		return fmt.Errorf("--measure: the engine (%d slots of %d tokens): %w", o.maxNumSeqs, longest, err)
	}
	// The CPU backend holds float32: 4 B per element whatever the dtype.
	if need := plan.Ranks[0].Memory.TotalBytes / int64(plan.DTypeBytes) * 4; need > maxEngineBytes {
		return fmt.Errorf("--measure: the engine would hold %.2f GB on this machine (weights and %d slots of %d tokens, float32); the CPU engine is for small models (at most %.0f GB: test/single-tiny, fewer --max-num-seqs)",
			float64(need)/1e9, o.maxNumSeqs, longest, float64(maxEngineBytes)/1e9)
	}
	// Each slot holds a whole request: blocks of one token account exactly.
	sc := serving.SchedulerConfig{Policy: o.scheduler, MaxNumSeqs: o.maxNumSeqs, MaxNumBatchedTokens: min(o.maxBatched, plan.PrefillChunk),
		BlockSize: 1, NumBlocks: o.maxNumSeqs * longest}
	scfg := serving.Config{Scheduler: sc, Replicas: 1, Router: o.router, MaxConcurrency: o.maxConcurrency}
	if err := scfg.Validate(); err != nil {
		return err
	}
	im, err := sim.NewIterationModel(plan, sim.Options{})
	if err != nil {
		return err
	}
	modeled, err := serving.Simulate(reqs, scfg, serving.PerSequenceCost{M: im})
	if err != nil {
		return err
	}
	ex, err := serving.NewCPUExecutor(plan)
	if err != nil {
		return err
	}
	defer ex.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.measureTime*float64(time.Second)))
	defer cancel()
	measured, err := serving.Measure(ctx, reqs, scfg, ex)
	if err != nil {
		return err
	}
	mm, dm := serving.Summarize(measured, ps, slo), serving.Summarize(modeled, ps, slo)
	rate := rates[0]
	if o.trace != "" {
		rate = math.NaN()
	}
	doc := &report.ServingMeasureDoc{Config: cfg.Name, Hardware: plan.System.GPU.Name, Calibration: o.calibration, Workload: workload, Rate: rate,
		Scheduler: sc, Measured: mm, Modeled: dm, Errors: serving.CompareMetrics(dm, mm)}
	return report.ToOutput(o.out, stdout, func(w io.Writer) error {
		if o.format == report.FormatJSON {
			return report.ServingMeasureJSON(w, version, doc)
		}
		return report.WriteTables(w, o.format, "serving", version, report.ServingMeasureGrid(doc))
	})
}
