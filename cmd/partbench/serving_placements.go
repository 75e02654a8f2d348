package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/serving"
)

// runPlacements ranks every placement of the GPUs by the highest request
// rate per GPU that meets the SLO.
func (o *servingOptions) runPlacements(fs *pflag.FlagSet, stdout io.Writer, cfg *configs.Config, ps []float64, slo serving.Goodput) error {
	switch {
	case o.trace != "":
		return fmt.Errorf("--search-placements: searches the request rate of a generated workload; --trace cannot act with it")
	case o.remoteLink != "":
		return fmt.Errorf("--search-placements: remote placements are single-rank; --remote-link cannot act with it")
	case cliflag.Changed(fs, "request-rate"):
		return fmt.Errorf("--request-rate: --search-placements searches the rate itself")
	case o.plot != "":
		return fmt.Errorf("--plot: draws a --request-rate sweep, not a placement search")
	case !slo.Set():
		return fmt.Errorf("--goodput: --search-placements needs an SLO (ttft:MS, tpot:MS or e2el:MS)")
	}
	sys, err := configs.SystemOverride{Hardware: o.hardware, Topology: o.topo, Nodes: o.nodes, GPUs: o.gpus}.Resolve(cfg)
	if err != nil {
		return err
	}
	process := o.arrival
	if process == serving.ArrivalPoisson && o.burstiness != 1 {
		process = serving.ArrivalGamma
	}
	spec := serving.Spec{NumPrompts: o.numPrompts, Seed: o.seed, Arrivals: serving.Arrivals{Process: process, Burstiness: o.burstiness},
		Lengths: serving.Lengths{InputLen: o.inputLen, OutputLen: o.outputLen, RangeRatio: o.rangeRatio}}
	workload := fmt.Sprintf("random %d/%d tokens ±%g, %s arrivals, %d requests", o.inputLen, o.outputLen, o.rangeRatio, process, o.numPrompts)
	if o.datasetName == "sharegpt" {
		if spec.Dataset, err = serving.ReadShareGPT(o.datasetPath, o.shareGPTOut); err != nil {
			return err
		}
		workload = fmt.Sprintf("sharegpt %s, %s arrivals, %d requests", o.datasetPath, process, o.numPrompts)
	}
	if o.preemption == serving.PreemptSwap {
		return fmt.Errorf("--preemption-mode swap: --search-placements uses recompute (the swap space differs per placement)")
	}
	sc := serving.SchedulerConfig{Policy: o.scheduler, MaxNumSeqs: o.maxNumSeqs, MaxNumBatchedTokens: o.maxBatched, BlockSize: o.blockSize, NumBlocks: o.blocksOverride}
	pls, err := serving.SearchPlacements(serving.PlacementSpec{Config: cfg, System: sys, Workload: spec, BlockSize: o.blockSize, MemUtil: o.memUtil,
		Percentiles: ps, SLO: slo, Attainment: o.attainment,
		Serving: serving.Config{Scheduler: sc, Router: o.router, MaxConcurrency: o.maxConcurrency}})
	if err != nil {
		return err
	}
	doc := &report.ServingPlacementsDoc{Config: cfg.Name, System: fmt.Sprintf("%d × %s, %s", sys.Topology.Size(), sys.GPU.Name, sys.Topology.Name),
		Workload: workload, SLO: slo, Attainment: o.attainment, Scheduler: sc, Placements: pls}
	return report.ToOutput(o.out, stdout, func(w io.Writer) error {
		if o.format == report.FormatJSON {
			return report.ServingPlacementsJSON(w, version, doc)
		}
		return report.WriteTables(w, o.format, "serving", version, report.ServingPlacementsGrid(doc))
	})
}
