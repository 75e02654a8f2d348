package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// Published nccl-tests busbw (GB/s, out-of-place) at 1 MiB … 8 GiB, doubling.
// Sources and settings: docs/validation.md.
var (
	// VP: 8×H100 80GB HBM3 SXM (HGX), NCCL 2.24.3, all_reduce, default algorithm (NVLS).
	publishedVP8AllReduce = []float64{47.37, 84.89, 131.77, 173.79, 233.25, 293.02, 357.44, 399.19, 422.38, 436.40, 468.53, 474.62, 477.12, 479.72}
	// WH: 4 of 8 H100 80GB HBM3 (NV18), NCCL 2.29, all_reduce (NVLS) and all_gather (ring).
	publishedWH4AllReduce = []float64{58.18, 100.59, 144.94, 200.12, 246.47, 285.66, 308.92, 325.89, 340.82, 348.36, 357.03, 361.00, 363.25, 366.37}
	publishedWH4AllGather = []float64{35.00, 69.65, 81.09, 110.23, 186.64, 229.34, 258.16, 287.39, 305.51, 317.53, 325.27, 334.16, 339.82, 343.92}
)

// heldOut: the split fixed before the first fit — every third size from
// 2 MiB (2, 16, 128 MiB, 1, 8 GiB) of each table is held out. The WH
// all_reduce table was at first held out whole; its errors at 1–16 MiB led to
// the group-size term of the NVLS overhead, after which its other sizes joined
// the fit, so its held-out sizes are not blind (docs/validation.md).
func heldOut(i int) bool { return i%3 == 1 }

type collPoint struct {
	table     string
	op        commcount.Op
	n         int
	bytes     int64
	published float64
	fit       bool
}

// knownMiss is the one point ≥ 1 MiB the model misses by more than 15 %, with
// the bound it is held to: WH all_gather at 2 MiB takes 22.58 µs, the same as
// at 1 MiB (22.47 µs), then 38.79 µs at 4 MiB — a step in NCCL's choice that
// a model monotone in size does not follow (docs/validation.md).
func knownMiss(p collPoint) (bound float64, ok bool) {
	if p.table == "WH 4×H100 all_gather" && p.bytes == 2<<20 {
		return 0.25, true
	}
	return 0, false
}

func collValidationPoints() []collPoint {
	var out []collPoint
	for _, tb := range []struct {
		name string
		op   commcount.Op
		n    int
		vals []float64
	}{
		{"VP 8×H100 all_reduce", commcount.AllReduce, 8, publishedVP8AllReduce},
		{"WH 4×H100 all_gather", commcount.AllGather, 4, publishedWH4AllGather},
		{"WH 4×H100 all_reduce", commcount.AllReduce, 4, publishedWH4AllReduce},
	} {
		for i, v := range tb.vals {
			out = append(out, collPoint{tb.name, tb.op, tb.n, int64(1<<20) << i, v, !heldOut(i)})
		}
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return SummarizeErrors(xs).Median
}

// TestCollectiveRampValidation prints docs/validation.md's collective table
// (run with -v) and asserts every point, fit and held-out, within 15 % (the
// issue's bar for sizes ≥ 1 MiB), except knownMiss, which is held to its own
// bound so that a change that makes it worse fails too.
func TestCollectiveRampValidation(t *testing.T) {
	var fitErr, testErr []float64
	t.Log("| table | size | set | algo/proto | modeled busbw | published | error |")
	for _, p := range collValidationPoints() {
		e := mustCollective(t, dgxH100(1), p.op, firstRanks(p.n), p.bytes, CollectiveOptions{})
		got := e.BusBWBytesPerS / 1e9
		rel := (got - p.published) / p.published
		set := "held-out"
		if p.fit {
			set = "fit"
			fitErr = append(fitErr, math.Abs(rel))
		} else {
			testErr = append(testErr, math.Abs(rel))
		}
		t.Logf("| %s | %s | %s | %s/%s | %.1f | %.2f | %+.1f %% |", p.table, sizeLabel(p.bytes), set, e.Algo, e.Proto, got, p.published, 100*rel)
		bound := 0.15
		if b, ok := knownMiss(p); ok {
			bound = b
		}
		if math.Abs(rel) > bound {
			t.Errorf("%s %s (%s): modeled %.1f GB/s, published %.2f: %+.1f %% beyond %.0f %%", p.table, sizeLabel(p.bytes), set, got, p.published, 100*rel, 100*bound)
		}
	}
	t.Log(fmt.Sprintf("median |error|: fit %.1f %% (%d points), held-out %.1f %% (%d points)", 100*median(fitErr), len(fitErr), 100*median(testErr), len(testErr)))
}

// inferencePoint is one published end-to-end latency: NVIDIA NeMo Framework
// user guide, "Llama-2 Results, Inference Performance" (Llama-2-7B, fp16,
// 128 input and 20 output tokens, static batch, TensorRT-LLM;
// docs.nvidia.com/nemo-framework/user-guide/latest/performance/llama.html).
type inferencePoint struct {
	gpu       string // hardware preset
	tp, batch int
	latencyMS float64
	row       int // row of the published table (0-based), for the split
}

// publishedNeMo7B: rows (batch, TP) in the page's order with the A100 and
// H100 columns. Held out before fitting: rows with row%3 == 2.
func publishedNeMo7B() []inferencePoint {
	rows := []struct {
		batch, tp  int
		a100, h100 float64
	}{
		{1, 1, 234.0, 153.8}, {2, 1, 249.6, 160.8}, {4, 1, 272.6, 174.8}, {8, 1, 329.5, 199.2},
		{1, 2, 171.7, 128.6}, {2, 2, 180.3, 132.0}, {4, 2, 202.9, 137.9}, {8, 2, 237.6, 156.2},
		{1, 4, 143.7, 107.4}, {2, 4, 149.9, 114.0}, {4, 4, 165.2, 120.4}, {8, 4, 196.4, 134.6},
		{1, 8, 136.5, 97.6}, {2, 8, 143.3, 109.1}, {4, 8, 158.6, 116.2}, {8, 8, 181.9, 129.1},
	}
	var out []inferencePoint
	for i, r := range rows {
		out = append(out, inferencePoint{"a100-sxm-80g", r.tp, r.batch, r.a100, i}, inferencePoint{"h100-sxm", r.tp, r.batch, r.h100, i})
	}
	return out
}

func inferenceConfig(gpu string, tp, batch, prompt, output int) string {
	return modelConfig("llama-2-7b", gpu, tp, batch, prompt, output)
}

// modelConfig is inferenceConfig for any model preset.
func modelConfig(model, gpu string, tp, batch, prompt, output int) string {
	link := `[topology.intra_node]
class = "nvlink"
name = "NVLink 4 via NVSwitch"
bytes_per_s = 450e9
latency_s = 1.0e-6
nvswitch = true
`
	if gpu == "a100-sxm-80g" {
		// DGX A100: NVLink 3, 600 GB/s per GPU = 300 per direction, NVSwitch
		// without in-switch reduction.
		link = `[topology.intra_node]
class = "nvlink"
name = "NVLink 3 via NVSwitch"
bytes_per_s = 300e9
latency_s = 1.0e-6
nvswitch = false
`
	}
	if tp == 1 {
		link = ""
	}
	return fmt.Sprintf(`version = 1
name = "validation"
[model]
preset = "%s"
[workload]
batch = %d
context = %d
output_tokens = %d
[parallel]
tp = %d
pp = 1
microbatches = 1
[hardware]
preset = "%s"
[topology]
name = "one-node"
nodes = 1
gpus_per_node = %d
%s[run]
iterations = 1
`, model, batch, prompt+output, output, tp, gpu, tp, link)
}

func estimateString(t *testing.T, toml string) *Estimate {
	t.Helper()
	c, err := configs.Parse(strings.NewReader(toml), "validation")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	e, err := EstimatePlan(pl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestInferenceValidation prints docs/validation.md's inference table (run
// with -v): modeled end-to-end latency TTFT + 19·TPOT against the published
// one, fit and held-out medians separately, and asserts both medians within
// inferenceBar.
func TestInferenceValidation(t *testing.T) {
	var fitE, testE []float64
	t.Log("| GPU | TP | batch | set | published (ms) | modeled (ms) [min, max] | error |")
	for _, p := range publishedNeMo7B() {
		e := estimateString(t, inferenceConfig(p.gpu, p.tp, p.batch, 128, 20))
		lat := 1e3 * (e.Prefill.TTFTS + 19*e.Decode.TPOTS)
		lo := 1e3 * (e.Range.TTFTS.Min + 19*e.Range.TPOTS.Min)
		hi := 1e3 * (e.Range.TTFTS.Max + 19*e.Range.TPOTS.Max)
		rel := (lat - p.latencyMS) / p.latencyMS
		set := "fit"
		if p.row%3 == 2 {
			set = "held-out"
			testE = append(testE, math.Abs(rel))
		} else {
			fitE = append(fitE, math.Abs(rel))
		}
		t.Logf("| %s | %d | %d | %s | %.1f | %.1f [%.1f, %.1f] | %+.1f %% |", p.gpu, p.tp, p.batch, set, p.latencyMS, lat, lo, hi, 100*rel)
	}
	mf, mt := median(fitE), median(testE)
	t.Logf("median |error|: fit %.1f %% (%d points), held-out %.1f %% (%d points)", 100*mf, len(fitE), 100*mt, len(testE))
	if mt > inferenceBar || mf > inferenceBar {
		t.Errorf("median |error| fit %.1f %%, held-out %.1f %%: beyond the %.0f %% bar", 100*mf, 100*mt, 100*inferenceBar)
	}
}

// firstTokenPoint is one published time to first token at batch 1:
// TensorRT-LLM docs/source/performance.md at commit 77d24b5 ("Low Latency",
// "A100 GPUs (FP16)", data from v0.5, whole milliseconds), measured as a
// request with one output token.
type firstTokenPoint struct {
	model      string
	tp, prompt int
	ms         float64
}

func publishedFirstToken() []firstTokenPoint {
	return []firstTokenPoint{
		{"llama-2-7b", 1, 128, 16}, {"llama-2-7b", 1, 2048, 133},
		{"llama-2-70b", 4, 128, 47}, {"llama-2-70b", 4, 2048, 377},
	}
}

// TestFirstTokenValidation prints docs/validation.md's first-token table (run
// with -v): the weakest regime, short prompts at batch 1. The points
// were added after every parameter was fixed (blind). It asserts each
// modeled TTFT is at or above its compute floor, 2·params·prompt/(TP·peak),
// and the median |error| within firstTokenBar.
func TestFirstTokenValidation(t *testing.T) {
	var errs []float64
	t.Log("| model | TP | prompt | published (ms) | modeled (ms) [min, max] | error |")
	for _, p := range publishedFirstToken() {
		// output 2: a config needs more than one output token; TTFT is the
		// prefill pass alone either way.
		e := estimateString(t, modelConfig(p.model, "a100-sxm-80g", p.tp, 1, p.prompt, 2))
		got := e.Prefill.TTFTS * 1e3
		floor := 2 * float64(e.ParamsTotal) * float64(p.prompt) / (float64(p.tp) * e.Plan.System.GPU.PeakFLOPsPerS("fp16")) * 1e3
		if !(got >= floor) {
			t.Errorf("%s tp%d prompt %d: modeled TTFT %.2f ms below the compute floor %.2f ms", p.model, p.tp, p.prompt, got, floor)
		}
		rel := (got - p.ms) / p.ms
		errs = append(errs, math.Abs(rel))
		t.Logf("| %s | %d | %d | %.0f | %.1f [%.1f, %.1f] | %+.1f %% |", p.model, p.tp, p.prompt, p.ms, got, e.Range.TTFTS.Min*1e3, e.Range.TTFTS.Max*1e3, 100*rel)
	}
	m := median(errs)
	t.Logf("median |error|: %.1f %% (%d blind points)", 100*m, len(errs))
	// docs/validation.md: 12.6 % without a runtime (the mean of the middle
	// two of 5.8, 8.2, 17.1 and 29.2 %), held to firstTokenBar.
	if m > firstTokenBar {
		t.Errorf("median |error| %.2f %% beyond the %.0f %% bar", 100*m, 100*firstTokenBar)
	}
}

// TestNoEstimateBelowPhysicalFloor sweeps model, GPU, TP, batch and prompt
// length and asserts every estimate (and its optimistic end) is at or above
// its physical floors: TPOT ≥ the HBM floor (bytes that must move over all
// GPUs' peak bandwidth), and TTFT ≥ the prefill FLOPs over all GPUs' peak.
func TestNoEstimateBelowPhysicalFloor(t *testing.T) {
	for _, gpu := range []string{"a100-sxm-80g", "h100-sxm"} {
		for _, tp := range []int{1, 2, 8} {
			for _, batch := range []int{1, 16} {
				for _, prompt := range []int{16, 512} {
					e := estimateString(t, inferenceConfig(gpu, tp, batch, prompt, 8))
					g := e.Plan.System.GPU
					// 2 FLOPs per parameter per prompt token is a floor on
					// prefill work (attention adds more).
					flopFloor := 2 * float64(e.ParamsTotal) * float64(batch*prompt) / (float64(tp) * g.PeakFLOPsPerS("fp16"))
					for _, c := range []struct {
						name       string
						tpot, ttft float64
					}{{"median", e.Decode.TPOTS, e.Prefill.TTFTS}, {"min", e.Range.TPOTS.Min, e.Range.TTFTS.Min}} {
						if c.tpot < e.Decode.HBMLowerBoundTPOTS {
							t.Errorf("%s tp%d b%d p%d %s: TPOT %g below HBM floor %g", gpu, tp, batch, prompt, c.name, c.tpot, e.Decode.HBMLowerBoundTPOTS)
						}
						if c.ttft < flopFloor {
							t.Errorf("%s tp%d b%d p%d %s: TTFT %g below FLOP floor %g", gpu, tp, batch, prompt, c.name, c.ttft, flopFloor)
						}
					}
					if !(e.Range.TPOTS.Min <= e.Decode.TPOTS && e.Decode.TPOTS <= e.Range.TPOTS.Max) {
						t.Errorf("%s tp%d b%d p%d: TPOT %g outside its range %+v", gpu, tp, batch, prompt, e.Decode.TPOTS, e.Range.TPOTS)
					}
				}
			}
		}
	}
}

// throughputPoint is one published static-batch generation throughput
// (output tokens/s) from TensorRT-LLM's performance tables, A100 80GB SXM,
// fp16, measured with gptSessionBenchmark (a fixed batch run to completion).
// Sources: docs/validation.md. None of these points was used to fit anything.
type throughputPoint struct {
	source        string // "TRT-LLM 0.5" or "TRT-LLM 0.6.1"
	model         string // model preset
	batch, tp     int
	input, output int
	reported      float64 // output tokens/s as published
	perGPU        bool    // the table reports tokens/s per GPU
}

func publishedThroughput() []throughputPoint {
	return []throughputPoint{
		// release/0.5.0 docs/source/performance.md, "A100 GPUs (FP16)", out tok/s.
		{"TRT-LLM 0.5", "llama-2-7b", 64, 1, 128, 128, 3486, false},
		{"TRT-LLM 0.5", "llama-2-7b", 32, 1, 128, 2048, 1459, false},
		{"TRT-LLM 0.5", "llama-2-7b", 32, 1, 2048, 128, 529, false},
		{"TRT-LLM 0.5", "llama-2-7b", 16, 1, 2048, 2048, 592, false},
		// docs/source/performance.md at 77d24b5 (data for v0.6.1), "A100 GPUs (FP16)", out tok/s/GPU.
		{"TRT-LLM 0.6.1", "llama-2-7b", 384, 1, 128, 128, 5586, true},
		{"TRT-LLM 0.6.1", "llama-2-7b", 60, 1, 128, 2048, 1928, true},
		{"TRT-LLM 0.6.1", "llama-2-7b", 52, 1, 2048, 128, 591, true},
		{"TRT-LLM 0.6.1", "llama-2-7b", 64, 2, 2048, 2048, 782, true},
		{"TRT-LLM 0.6.1", "llama-2-70b", 1280, 4, 128, 128, 670, true},
		{"TRT-LLM 0.6.1", "llama-2-70b", 240, 4, 128, 2048, 525, true},
		{"TRT-LLM 0.6.1", "llama-2-70b", 120, 4, 2048, 128, 79, true},
	}
}

// TestThroughputValidation prints docs/validation.md's held-out throughput
// table (run with -v). Modeled throughput of a static batch run to
// completion: batch·output / (TTFT + (output−1)·TPOT), divided by TP where
// the table is per GPU. It asserts each modeled value is finite and at or
// below its physical ceiling (the same run at the HBM floor for every decode
// step and zero prefill time), and the median |error| within throughputBar.
func TestThroughputValidation(t *testing.T) {
	var errs []float64
	t.Log("| source | model | TP | batch | in/out | reported (tok/s) | modeled (tok/s) | error |")
	for _, p := range publishedThroughput() {
		e := estimateString(t, modelConfig(p.model, "a100-sxm-80g", p.tp, p.batch, p.input, p.output))
		run := e.Prefill.TTFTS + float64(p.output-1)*e.Decode.TPOTS
		got := float64(p.batch*p.output) / run
		// Ceiling: no step can be faster than its HBM floor; prefill
		// takes at least zero time.
		ceil := float64(p.batch*p.output) / (float64(p.output-1) * e.Decode.HBMLowerBoundTPOTS)
		if p.perGPU {
			got /= float64(p.tp)
			ceil /= float64(p.tp)
		}
		if math.IsNaN(got) || math.IsInf(got, 0) || got <= 0 {
			t.Fatalf("%s %s tp%d b%d %d/%d: modeled throughput %g not finite and positive", p.source, p.model, p.tp, p.batch, p.input, p.output, got)
		}
		if got > ceil {
			t.Errorf("%s %s tp%d b%d %d/%d: modeled %g tok/s above the HBM ceiling %g", p.source, p.model, p.tp, p.batch, p.input, p.output, got, ceil)
		}
		rel := (got - p.reported) / p.reported
		errs = append(errs, math.Abs(rel))
		t.Logf("| %s | %s | %d | %d | %d/%d | %.0f | %.0f | %+.1f %% |", p.source, p.model, p.tp, p.batch, p.input, p.output, p.reported, got, 100*rel)
	}
	m := median(errs)
	t.Logf("median |error|: held-out %.1f %% (%d points)", 100*m, len(errs))
	// docs/validation.md: 6.1 % (the median of the 11 errors above, the 6th
	// smallest: |−6.1 %| for 0.6.1 7B b60 128/2048), held to throughputBar.
	if m > throughputBar {
		t.Errorf("median |error| %.2f %% beyond the %.0f %% bar", 100*m, 100*throughputBar)
	}
}
