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
)

// maxEngineBytes bounds what the CPU engine allocates on this machine.
const maxEngineBytes = 4e9

// checkEngineFlags refuses what the CPU engine cannot honour.
func (o *servingOptions) checkEngineFlags(fs *pflag.FlagSet, what string) error {
	switch {
	case o.remoteLink != "":
		return fmt.Errorf("%s: the engine runs on this machine; --remote-link cannot act with it", what)
	case o.preemption == serving.PreemptSwap:
		return fmt.Errorf("%s: the engine preempts by recompute only", what)
	case o.plot != "":
		return fmt.Errorf("--plot: draws a --request-rate sweep, not a measured run")
	case !(o.measureTime > 0):
		return fmt.Errorf("--measure-timeout: must be > 0 seconds (got %g)", o.measureTime)
	case cliflag.Changed(fs, "num-gpu-blocks-override", "gpu-memory-utilization", "block-size"):
		return fmt.Errorf("%s: the engine's KV cache is --max-num-seqs slots of the longest request; --num-gpu-blocks-override, --gpu-memory-utilization and --block-size cannot act with it", what)
	}
	return nil
}

// requests is the workload of one rate (or the trace), and its description.
func (o *servingOptions) requests(rates []float64) ([]serving.Request, string, error) {
	if o.trace != "" {
		reqs, err := serving.ReadTrace(o.trace)
		return reqs, "trace " + o.trace, err
	}
	if len(rates) != 1 {
		return nil, "", fmt.Errorf("--request-rate: a measured run takes one rate at a time (got %d)", len(rates))
	}
	process := o.arrival
	if process == serving.ArrivalPoisson && o.burstiness != 1 {
		process = serving.ArrivalGamma
	}
	spec := serving.Spec{NumPrompts: o.numPrompts, Seed: o.seed,
		Arrivals: serving.Arrivals{Process: process, Burstiness: o.burstiness, RequestRate: rates[0]},
		Lengths:  serving.Lengths{InputLen: o.inputLen, OutputLen: o.outputLen, RangeRatio: o.rangeRatio}}
	workload := fmt.Sprintf("random %d/%d tokens ±%g, %s arrivals", o.inputLen, o.outputLen, o.rangeRatio, process)
	if o.datasetName == "sharegpt" {
		var err error
		if spec.Dataset, err = serving.ReadShareGPT(o.datasetPath, o.shareGPTOut); err != nil {
			return nil, "", err
		}
		workload = fmt.Sprintf("sharegpt %s, %s arrivals", o.datasetPath, process)
	}
	reqs, err := serving.Generate(spec)
	return reqs, workload, err
}

func longestOf(reqs []serving.Request) int {
	n := 0
	for _, r := range reqs {
		n = max(n, r.InputLen+r.OutputLen)
	}
	return n
}

// enginePlan is the CPU engine's plan (--max-num-seqs slots of context
// tokens) and its scheduler, checked against what this machine may hold.
func (o *servingOptions) enginePlan(cfg *configs.Config, context int) (*partition.Plan, serving.Config, error) {
	ec, err := serving.EngineConfig(cfg, o.maxNumSeqs, context)
	if err != nil {
		return nil, serving.Config{}, err
	}
	plan, err := partition.NewPlan(ec)
	if err != nil {
		return nil, serving.Config{}, fmt.Errorf("the engine (%d slots of %d tokens): %w", o.maxNumSeqs, context, err)
	}
	// The CPU backend holds float32: 4 B per element whatever the dtype.
	if need := plan.Ranks[0].Memory.TotalBytes / int64(plan.DTypeBytes) * 4; need > maxEngineBytes {
		return nil, serving.Config{}, fmt.Errorf("the engine would hold %.2f GB on this machine (weights and %d slots of %d tokens, float32); the CPU engine is for small models (at most %.0f GB: test/single-tiny, fewer --max-num-seqs)",
			float64(need)/1e9, o.maxNumSeqs, context, float64(maxEngineBytes)/1e9)
	}
	// Each slot holds a whole request: blocks of one token account exactly.
	sc := serving.SchedulerConfig{Policy: o.scheduler, MaxNumSeqs: o.maxNumSeqs, MaxNumBatchedTokens: o.maxBatched,
		BlockSize: 1, NumBlocks: o.maxNumSeqs * context}
	scfg := serving.Config{Scheduler: sc, Replicas: 1, Router: o.router, MaxConcurrency: o.maxConcurrency}
	return plan, scfg, scfg.Validate()
}

// runMeasure runs one workload twice: for real, through the scheduler
// driving the CPU engine on the wall clock, and modeled, through the same
// scheduler with each iteration priced as the engine runs it; it prints
// both with the error of each metric.
func (o *servingOptions) runMeasure(fs *pflag.FlagSet, stdout io.Writer, cfg *configs.Config, rates []float64, ps []float64, slo serving.Goodput) error {
	if err := o.checkEngineFlags(fs, "--measure"); err != nil {
		return err
	}
	reqs, workload, err := o.requests(rates)
	if err != nil {
		return err
	}
	plan, scfg, err := o.enginePlan(cfg, longestOf(reqs))
	if err != nil {
		return fmt.Errorf("--measure: %w", err)
	}
	ex, err := serving.NewPassExecutor(plan, "cpu", o.perSequence)
	if err != nil {
		return err
	}
	defer ex.Close()
	ctx, cancel := context.WithTimeout(o.ctx, time.Duration(o.measureTime*float64(time.Second)))
	defer cancel()
	measured, err := serving.Measure(ctx, reqs, scfg, ex)
	if err != nil {
		return err
	}
	return o.printMeasured(stdout, cfg, plan, scfg, reqs, measured, workload, rates, ps, slo)
}

// printMeasured prints a measured run beside the model of the CPU engine
// that ran it.
func (o *servingOptions) printMeasured(stdout io.Writer, cfg *configs.Config, plan *partition.Plan, scfg serving.Config, reqs []serving.Request,
	measured *serving.Result, workload string, rates, ps []float64, slo serving.Goodput) error {
	// The model of the engine as it runs: one pass over the iteration's
	// rows, or (--per-sequence) the sum of each sequence's pass alone; a
	// spawned GPU engine's iterations are bound by its host's launches too.
	backendName, launchS := configs.BackendCPU, 0.0
	var err error
	if o.remoteTransport() && o.spawnServer && o.backend == configs.BackendCUDA {
		backendName = o.backend
		if launchS, err = configs.EngineLaunchHostS(o.calibration, plan.System.GPU.KernelLaunchS); err != nil {
			return err
		}
	}
	cost, how, err := serving.EngineCost(plan, backendName, !o.perSequence, launchS)
	if err != nil {
		return err
	}
	modeled, err := serving.Simulate(reqs, scfg, cost)
	if err != nil {
		return err
	}
	if o.saveRequests != "" {
		if err := o.writeRequests(measured.Requests); err != nil {
			return err
		}
	}
	mm, dm := serving.Summarize(measured, ps, slo), serving.Summarize(modeled, ps, slo)
	rate := math.NaN()
	if o.trace == "" {
		rate = rates[0]
	}
	doc := &report.ServingMeasureDoc{Config: cfg.Name, Hardware: plan.System.GPU.Name, Calibration: o.calibration, Workload: workload, Rate: rate,
		Scheduler: scfg.Scheduler, Measured: mm, Modeled: dm, Errors: serving.CompareMetrics(dm, mm)}
	doc.Engine = how
	switch {
	case o.remoteTransport() && o.spawnServer:
		doc.Backend = fmt.Sprintf("partbench-serve-%s-engine over %s", o.backend, o.transport)
	case o.remoteTransport():
		doc.Backend = "partbench-serve-engine over " + o.transport
	}
	return report.ToOutput(o.out, stdout, func(w io.Writer) error {
		if o.format == report.FormatJSON {
			return report.ServingMeasureJSON(w, version, doc)
		}
		return report.WriteTables(w, o.format, "serving", version, report.ServingMeasureGrid(doc))
	})
}
