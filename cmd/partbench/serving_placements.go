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

// servingObjective is `partbench search`'s request-level objective.
const servingObjective = "request-rate"

// runServingObjective is `search --objective request-rate`: every
// placement of the GPUs ranked by the highest request rate per GPU at
// which 99 % of requests meet --max-ttft-s and --max-tpot-ms, under
// `partbench serving`'s default workload and scheduler (1,000 Poisson
// requests of 1,024 + 128 tokens, chunked prefill, 256 sequences, 8,192
// batched tokens); `serving --search-placements` sets them all.
func (o *searchOptions) runServingObjective(stdout io.Writer) error {
	switch {
	case o.Config == "":
		return fmt.Errorf("--config: required: a config file or embedded preset whose model is placed (see 'partbench presets')")
	case o.MaxTTFTs <= 0 && o.MaxTPOTms <= 0:
		return fmt.Errorf("--objective %s: needs an SLO: --max-ttft-s and/or --max-tpot-ms", servingObjective)
	case o.MaxTTFTs < 0 || o.MaxTPOTms < 0:
		return fmt.Errorf("--max-ttft-s and --max-tpot-ms: must be ≥ 0")
	}
	cfg, err := configs.Load(o.Config)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	sys, err := configs.SystemOverride{Hardware: o.Hardware, Topology: o.Topology, Nodes: o.Nodes, GPUs: o.GPUs}.Resolve(cfg)
	if err != nil {
		return err
	}
	slo := serving.Goodput{TTFTMs: o.MaxTTFTs * 1e3, TPOTMs: o.MaxTPOTms}
	spec := serving.Spec{NumPrompts: 1000, Arrivals: serving.Arrivals{Process: serving.ArrivalPoisson}, Lengths: serving.Lengths{InputLen: 1024, OutputLen: 128}}
	sc := serving.SchedulerConfig{Policy: serving.PolicyChunked, MaxNumSeqs: 256, MaxNumBatchedTokens: 8192, BlockSize: 16}
	pls, err := serving.SearchPlacements(serving.PlacementSpec{Config: cfg, System: sys, Workload: spec, BlockSize: 16, MemUtil: 0.9,
		Percentiles: []float64{99}, SLO: slo, Attainment: 0.99, Serving: serving.Config{Scheduler: sc, Router: serving.RouterLeastOutstanding}})
	if err != nil {
		return err
	}
	doc := &report.ServingPlacementsDoc{Config: cfg.Name, System: fmt.Sprintf("%d × %s, %s", sys.Topology.Size(), sys.GPU.Name, sys.Topology.Name),
		Workload: "random 1024/128 tokens, poisson arrivals, 1000 requests", SLO: slo, Attainment: 0.99, Scheduler: sc, Placements: pls}
	if n := 0; o.Top > 0 {
		kept := pls[:0]
		for _, p := range pls {
			if p.Excluded == "" {
				if n == o.Top {
					continue
				}
				n++
			}
			kept = append(kept, p)
		}
		doc.Placements = kept
	}
	return report.ToOutput(o.out, stdout, func(w io.Writer) error {
		if o.format == report.FormatJSON {
			return report.ServingPlacementsJSON(w, version, doc)
		}
		return report.WriteTables(w, o.format, "search", version, report.ServingPlacementsGrid(doc))
	})
}
