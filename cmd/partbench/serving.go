package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/serving"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

type servingOptions struct {
	ctx          context.Context // ends on SIGINT/SIGTERM
	dryRun       bool
	config       string
	calibration  string
	format       string
	out          string
	plot         string
	saveRequests string
	// workload
	requestRate    string
	arrival        string
	burstiness     float64
	numPrompts     int
	maxConcurrency int
	seed           uint64
	datasetName    string
	datasetPath    string
	shareGPTOut    int
	inputLen       int
	outputLen      int
	rangeRatio     float64
	trace          string
	// scheduler
	scheduler      string
	maxNumSeqs     int
	maxBatched     int
	blockSize      int
	memUtil        float64
	blocksOverride int
	preemption     string
	swapSpaceGiB   float64
	router         string
	// metrics
	percentiles string
	goodput     []string
	attainment  float64
	// a remote placement
	remoteLink      string
	remoteMode      string
	remoteOverheadS float64
	// the placement search
	searchPlacements bool
	hardware, topo   string
	nodes, gpus      int
	// the measured side
	measure       bool
	measureTime   float64
	server        string
	spawnServer   bool
	serveEngine   string
	engineContext int
	perSequence   bool
	transport     string
	tokenFile     string
	tlsCA         string
	backend       string
	modelName     string
}

func newServingCmd() *cobra.Command {
	o := &servingOptions{}
	cmd := &cobra.Command{
		Use:   "serving --dry-run --config FILE [--request-rate R[,R…]] [flags]",
		Short: "Requests under load: a batching scheduler over the modeled iteration cost, benchmark_serving's metrics",
		Long: `Simulate a serving deployment of a config request by request: arrivals and
lengths (vLLM benchmark_serving's flags), an iteration-level scheduler
(continuous batching, chunked prefill or static batches) over a paged KV cache
sized by the memory model, data-parallel replicas (parallel.dp) behind a
router, and every iteration priced by sim from the plan's own ops for that
iteration's mixed prefill/decode shape. Prints benchmark_serving's metrics
(TTFT, TPOT, ITL, E2EL, throughput, goodput) under its names.

A comma list of --request-rate values is a sweep: one row per rate, the knee,
and with --goodput the highest rate at which --slo-attainment of requests
meet the SLO; --plot draws the curve.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.ctx = cmd.Context()
			return o.run(cmd.Flags(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.dryRun, "dry-run", false, "simulate with the cost model (required: the measured side is not built yet)")
	f.StringVar(&o.config, "config", "", "strategy config: a TOML file or an embedded preset name (required)")
	f.StringVar(&o.calibration, "calibration", "", "hardware profile from 'partbench calibrate' to use instead of the config's hardware")
	cliflag.Format(f, &o.format, report.FormatTable, report.FormatMarkdown, report.FormatCSV, report.FormatJSON)
	cliflag.Output(f, &o.out, "write the result to this file instead of standard output")
	f.StringVar(&o.saveRequests, "save-requests", "", "write every request's timeline (arrival, sent, first token, end, preemptions, error) to this file as JSON Lines (one --request-rate)")
	f.StringVar(&o.plot, "plot", "", "draw the latency–throughput curve to this file (.png, .svg or .pdf)")
	cliflag.MarkOutputFile(f, "save-requests", "plot")

	f.StringVar(&o.requestRate, "request-rate", "inf", "requests per second, a comma list for a sweep; inf sends every request at once")
	cliflag.Choice(f, &o.arrival, "arrival", "arrival process: poisson (gamma when --burstiness ≠ 1), gamma, fixed (a gap of exactly 1/rate)",
		serving.ArrivalPoisson, serving.ArrivalGamma, serving.ArrivalFixed)
	cliflag.FiniteFloat(f, &o.burstiness, "burstiness", 1, "gamma shape of the gaps (1: Poisson; < 1 burstier; > 1 more regular), as vLLM's")
	f.IntVar(&o.numPrompts, "num-prompts", 1000, "requests to send")
	f.IntVar(&o.maxConcurrency, "max-concurrency", 0, "cap on requests sent and not finished (0: none)")
	f.Uint64Var(&o.seed, "seed", 0, "seed of arrivals, lengths and dataset order")
	cliflag.Choice(f, &o.datasetName, "dataset-name", "lengths: random (uniform, --random-*) or sharegpt (--dataset-path)", "random", "sharegpt")
	f.StringVar(&o.datasetPath, "dataset-path", "", "ShareGPT-format JSON file (with --dataset-name sharegpt)")
	f.IntVar(&o.shareGPTOut, "sharegpt-output-len", 0, "replace every ShareGPT completion's length (0: the completion's own)")
	f.IntVar(&o.inputLen, "random-input-len", 1024, "prompt tokens per request (random dataset)")
	f.IntVar(&o.outputLen, "random-output-len", 128, "output tokens per request (random dataset)")
	cliflag.FiniteFloat(f, &o.rangeRatio, "random-range-ratio", 0, "lengths uniform in [len·(1−r), len·(1+r)], r in [0, 1)")
	f.StringVar(&o.trace, "trace", "", "replay a JSONL trace of {arrival_s, input_len, output_len} instead of generating requests")

	cliflag.Choice(f, &o.scheduler, "scheduler", "batching: continuous (vLLM, prefills first), chunked (chunked prefill, Sarathi), static (whole batches)",
		serving.PolicyChunked, serving.PolicyContinuous, serving.PolicyStatic)
	f.IntVar(&o.maxNumSeqs, "max-num-seqs", 256, "sequences per iteration (vLLM --max-num-seqs)")
	f.IntVar(&o.maxBatched, "max-num-batched-tokens", 8192, "new tokens per iteration (vLLM --max-num-batched-tokens)")
	f.IntVar(&o.blockSize, "block-size", 16, "tokens per KV cache block")
	cliflag.FiniteFloat(f, &o.memUtil, "gpu-memory-utilization", 0.9, "share of the HBM left after weights and activations that holds the KV cache")
	f.IntVar(&o.blocksOverride, "num-gpu-blocks-override", 0, "KV blocks per replica instead of the memory model's (0: the model's)")
	cliflag.Choice(f, &o.preemption, "preemption-mode", "when KV blocks run out, the last admitted sequence is preempted: recompute (its tokens again later) or swap (its KV entries to host memory and back over PCIe)",
		serving.PreemptRecompute, serving.PreemptSwap)
	cliflag.FiniteFloat(f, &o.swapSpaceGiB, "swap-space", 4, "with --preemption-mode swap: host memory per GPU for swapped KV blocks, GiB (vLLM's)")
	cliflag.Choice(f, &o.router, "router", "how requests are spread over parallel.dp replicas", serving.RouterRoundRobin, serving.RouterLeastOutstanding)

	f.StringVar(&o.percentiles, "metric-percentiles", "99", "percentiles to report, a comma list (vLLM's)")
	f.StringArrayVar(&o.goodput, "goodput", nil, "SLO per request, KEY:MS for ttft, tpot, e2el (repeatable or space separated); adds request_goodput")
	cliflag.FiniteFloat(f, &o.attainment, "slo-attainment", 0.99, "share of requests that must meet the --goodput SLO for a rate to count as sustained")

	f.StringVar(&o.remoteLink, "remote-link", "", "serve from a remote GPU over this client link (as 'model --remote-link'): "+strings.Join(topology.ClientLinkNames(), ", ")+", or bytes_per_s=…,latency_s=…")
	f.StringVar(&o.remoteMode, "mode", "stateful", "with --remote-link: naive, kv, stateful or local")
	cliflag.FiniteFloat(f, &o.remoteOverheadS, "remote-overhead", 0, "with --remote-link: fixed seconds per iteration's request besides link and compute (default: the --calibration file's, else 0)")

	f.BoolVar(&o.searchPlacements, "search-placements", false, "rank every tp × pp × dp of the GPUs by the highest request rate per GPU that meets --goodput (the workload's --request-rate is searched)")
	f.StringVar(&o.hardware, "hardware", "", "with --search-placements: GPU preset (default: the config's hardware)")
	f.StringVar(&o.topo, "topology", "", "with --search-placements: topology preset (default: the config's topology)")
	f.IntVar(&o.nodes, "nodes", 0, "with --search-placements: scale the topology to this many nodes")
	f.IntVar(&o.gpus, "gpus", 0, "with --search-placements: number of GPUs (default: the topology's; else must equal it)")

	f.BoolVar(&o.measure, "measure", false, "also run the workload for real: the same scheduler driving an engine on this machine's CPU backend (single-rank configs), measured beside the model")
	cliflag.FiniteFloat(f, &o.measureTime, "measure-timeout", 600, "with --measure: seconds after which unfinished requests are failed")
	f.StringVar(&o.server, "server", "", "send the workload to this OpenAI-style completions server (http://HOST:PORT: 'serving --serve-engine', or vLLM) and measure it at the client; with --config, beside the model of partbench's CPU engine run with these flags")
	f.BoolVar(&o.spawnServer, "spawn-server", false, "start 'serving --serve-engine' on a loopback port with this config and these flags, measure it as --server does, stop it")
	f.StringVar(&o.serveEngine, "serve-engine", "", "serve the config on this machine's CPU engine at HOST:PORT (OpenAI-style POST /v1/completions, streamed) until SIGINT/SIGTERM")
	f.BoolVar(&o.perSequence, "per-sequence", false, "with --measure, --serve-engine, --spawn-server: run each scheduled sequence's pass in turn instead of one batched pass per iteration (and model it so)")
	f.IntVar(&o.engineContext, "engine-context", 512, "with --serve-engine: tokens one sequence may reach (prompt + output): the engine's KV slot")
	f.StringVar(&o.transport, "transport", "", "with --server or --spawn-server: http (OpenAI-style completions; the default for an http:// URL and for --spawn-server), or grpc or tcp (a 'partbench serve --engine-config' at HOST:PORT; grpc is the default for HOST:PORT)")
	f.StringVar(&o.tokenFile, "token-file", "", "with --transport grpc|tcp: file holding the server's bearer token")
	f.StringVar(&o.tlsCA, "tls-ca", "", "with --transport grpc|tcp: PEM CA that signed the server's TLS certificate (turns TLS on)")
	f.StringVar(&o.backend, "backend", "cpu", "with --spawn-server --transport grpc|tcp: the spawned 'partbench serve --engine-config' engine's backend (cpu or cuda)")
	f.StringVar(&o.modelName, "served-model-name", "", "with --server: the \"model\" field sent (default: the config's name)")
	return cmd
}

func (o *servingOptions) run(fs *pflag.FlagSet, stdout io.Writer) error {
	modes := 0
	for _, on := range []bool{o.dryRun, o.measure, o.server != "", o.spawnServer, o.serveEngine != ""} {
		if on {
			modes++
		}
	}
	if modes != 1 {
		return fmt.Errorf("one of --dry-run (simulate), --measure (run the CPU engine in this process), --server URL or --spawn-server (load a server), --serve-engine ADDR (be one) is required, and only one")
	}
	if !(o.swapSpaceGiB >= 0) || o.swapSpaceGiB > 1<<20 {
		return fmt.Errorf("--swap-space: must be in [0, %d] GiB (got %g)", 1<<20, o.swapSpaceGiB)
	}
	if cliflag.Changed(fs, "swap-space") && o.preemption != serving.PreemptSwap {
		return fmt.Errorf("--swap-space: acts with --preemption-mode swap only")
	}
	if o.trace != "" && cliflag.Changed(fs, "request-rate", "arrival", "burstiness", "num-prompts", "dataset-name", "dataset-path",
		"random-input-len", "random-output-len", "random-range-ratio", "sharegpt-output-len") {
		return fmt.Errorf("--trace: the trace gives arrivals and lengths; --request-rate, --arrival, --burstiness, --num-prompts and the dataset flags cannot act with it")
	}
	if o.datasetName == "sharegpt" && o.datasetPath == "" {
		return fmt.Errorf("--dataset-path: required with --dataset-name sharegpt")
	}
	if o.datasetName != "sharegpt" && o.datasetPath != "" {
		return fmt.Errorf("--dataset-path: only read with --dataset-name sharegpt (got --dataset-name %s)", o.datasetName)
	}
	if o.blocksOverride < 0 {
		return fmt.Errorf("--num-gpu-blocks-override: must be ≥ 0, 0 for the memory model's (got %d)", o.blocksOverride)
	}
	if o.plot != "" {
		if _, err := report.ServingPlotFormat(o.plot); err != nil {
			return err
		}
	}
	rates, err := serving.ParseRates(o.requestRate)
	if err != nil {
		return err
	}
	ps, err := serving.ParsePercentiles(o.percentiles)
	if err != nil {
		return err
	}
	slo, err := serving.ParseGoodput(o.goodput)
	if err != nil {
		return err
	}
	if o.serveEngine != "" && cliflag.Changed(fs, "request-rate", "arrival", "burstiness", "num-prompts", "max-concurrency", "seed", "trace",
		"dataset-name", "dataset-path", "random-input-len", "random-output-len", "random-range-ratio", "sharegpt-output-len",
		"goodput", "metric-percentiles", "slo-attainment", "calibration", "format", "output", "search-placements", "save-requests") {
		return fmt.Errorf("--serve-engine: serves whatever requests come; the workload, metric, --calibration and output flags act on the client (--server, --spawn-server)")
	}
	if err := o.checkTransport(fs); err != nil {
		return err
	}
	if o.config == "" {
		if o.calibration != "" {
			return fmt.Errorf("--calibration: describes the hardware of --config's model; give --config too")
		}
		if o.server != "" && !o.searchPlacements {
			return o.runLoad(fs, stdout, nil, rates, ps, slo) // a server partbench does not model
		}
		return fmt.Errorf("--config: required (a TOML file or an embedded preset name; see 'partbench presets')")
	}
	cfgs, _, err := configs.LoadCalibrated([]string{o.config}, o.calibration)
	if err != nil {
		return err
	}
	if o.searchPlacements {
		if !o.dryRun {
			return fmt.Errorf("--search-placements: a dry run only (--dry-run)")
		}
		if o.saveRequests != "" {
			return fmt.Errorf("--save-requests: writes one run's requests, not a placement search's probes")
		}
		return o.runPlacements(fs, stdout, cfgs[0], ps, slo)
	}
	switch {
	case o.measure:
		return o.runMeasure(fs, stdout, cfgs[0], rates, ps, slo)
	case o.serveEngine != "":
		return o.runServeEngine(fs, stdout, cfgs[0])
	case o.server != "" || o.spawnServer:
		return o.runLoad(fs, stdout, cfgs[0], rates, ps, slo)
	}
	if cliflag.Changed(fs, "hardware", "topology", "nodes", "gpus") {
		return fmt.Errorf("--hardware, --topology, --nodes and --gpus act with --search-placements only (a single run uses the config's system)")
	}
	plan, err := partition.NewPlan(cfgs[0])
	if err != nil {
		return err
	}
	one := plan.OneReplica()
	var im serving.Coster
	if o.remoteLink != "" {
		if im, err = o.remoteModel(fs, one); err != nil {
			return err
		}
	} else {
		if cliflag.Changed(fs, "mode", "remote-overhead") {
			return fmt.Errorf("--mode and --remote-overhead price a remote placement: give --remote-link too")
		}
		if im, err = sim.NewIterationModel(one, sim.Options{}); err != nil {
			return err
		}
	}
	kv, err := serving.KVBlocks(one, o.blockSize, o.memUtil)
	if err != nil {
		return err
	}
	if o.blocksOverride > 0 {
		kv.NumBlocks = o.blocksOverride
	}
	cfg := serving.Config{
		Scheduler: serving.SchedulerConfig{Policy: o.scheduler, MaxNumSeqs: o.maxNumSeqs, MaxNumBatchedTokens: o.maxBatched,
			BlockSize: o.blockSize, NumBlocks: kv.NumBlocks, Preemption: o.preemption, SwapBlocks: o.swapBlocks(kv)},
		Replicas: plan.DP, Router: o.router, MaxConcurrency: o.maxConcurrency,
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	process := o.arrival
	if process == serving.ArrivalPoisson && o.burstiness != 1 {
		process = serving.ArrivalGamma
	}
	planText := plan.String()
	if o.remoteLink != "" {
		planText += fmt.Sprintf("; remote %s over %s", o.remoteMode, o.remoteLink)
	}
	doc := &report.ServingDoc{Config: plan.Config.Name, Plan: planText, Hardware: plan.System.GPU.Name, Replicas: plan.DP,
		Router: o.router, Scheduler: cfg.Scheduler, KV: kv, NumPrompts: o.numPrompts, Burstiness: o.burstiness,
		MaxConcurrency: o.maxConcurrency, Seed: o.seed}
	if o.trace != "" {
		reqs, err := serving.ReadTrace(o.trace)
		if err != nil {
			return err
		}
		doc.NumPrompts, doc.Workload = len(reqs), "trace "+o.trace
		if doc.Sweep, err = serving.RunTrace(reqs, cfg, im, ps, slo, o.attainment); err != nil {
			return err
		}
	} else {
		spec := serving.Spec{NumPrompts: o.numPrompts, Seed: o.seed,
			Arrivals: serving.Arrivals{Process: process, Burstiness: o.burstiness, RequestRate: rates[0]},
			Lengths:  serving.Lengths{InputLen: o.inputLen, OutputLen: o.outputLen, RangeRatio: o.rangeRatio}}
		doc.Workload = fmt.Sprintf("random %d/%d tokens ±%g, %s arrivals", o.inputLen, o.outputLen, o.rangeRatio, process)
		if o.datasetName == "sharegpt" {
			if spec.Dataset, err = serving.ReadShareGPT(o.datasetPath, o.shareGPTOut); err != nil {
				return err
			}
			doc.Workload = fmt.Sprintf("sharegpt %s (%d conversations), %s arrivals", o.datasetPath, len(spec.Dataset), process)
		}
		if doc.Sweep, err = serving.RunSweep(rates, spec, cfg, im, ps, slo, o.attainment); err != nil {
			return err
		}
	}
	if o.saveRequests != "" {
		if len(doc.Sweep.Points) != 1 {
			return fmt.Errorf("--save-requests: one --request-rate at a time (got %d)", len(doc.Sweep.Points))
		}
		if err := o.writeRequests(doc.Sweep.Points[0].Requests); err != nil {
			return err
		}
	}
	if o.plot != "" {
		fig, err := report.ServingPlot(doc)
		if err != nil {
			return err
		}
		format, _ := report.ServingPlotFormat(o.plot)
		if err := report.WriteFileAtomic(o.plot, func(w io.Writer) error { return fig.Write(w, format) }); err != nil {
			return fmt.Errorf("--plot %s: %w", o.plot, err)
		}
	}
	return report.ToOutput(o.out, stdout, func(w io.Writer) error {
		switch {
		case o.format == report.FormatJSON:
			return report.ServingJSON(w, version, doc)
		case o.format == report.FormatTable && len(doc.Sweep.Points) == 1:
			return report.ServingText(w, doc, doc.Sweep.Points[0])
		}
		return report.WriteTables(w, o.format, "serving", version, report.ServingGrid(doc))
	})
}

// remoteModel prices each iteration on a remote server over --remote-link
// in --mode, as 'model --remote-link' prices one request.
func (o *servingOptions) remoteModel(fs *pflag.FlagSet, plan *partition.Plan) (serving.Coster, error) {
	link, err := topology.ParseClientLink("--remote-link", o.remoteLink)
	if err != nil {
		return nil, err
	}
	mode, err := partition.ParseRemoteMode(o.remoteMode)
	if err != nil {
		return nil, fmt.Errorf("--mode: %w", err)
	}
	overhead, err := configs.RequestOverhead(o.remoteOverheadS, cliflag.Changed(fs, "remote-overhead"), o.calibration)
	if err != nil {
		return nil, err
	}
	return sim.NewRemoteIterationModel(plan, mode, sim.RemoteOptions{Link: link, RequestOverheadS: overhead}, sim.Options{})
}

// swapBlocks is --swap-space in KV blocks of the tightest rank.
func (o *servingOptions) swapBlocks(kv serving.KVCache) int {
	if o.preemption != serving.PreemptSwap || kv.BytesPerToken <= 0 {
		return 0
	}
	return int(o.swapSpaceGiB * (1 << 30) / float64(int64(kv.BlockSize)*kv.BytesPerToken))
}

// writeRequests writes --save-requests.
func (o *servingOptions) writeRequests(reqs []serving.RequestResult) error {
	if err := report.WriteFileAtomic(o.saveRequests, func(w io.Writer) error { return report.ServingRequestsJSONL(w, reqs) }); err != nil {
		return fmt.Errorf("--save-requests %s: %w", o.saveRequests, err)
	}
	return nil
}
