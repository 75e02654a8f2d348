package sim

import (
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
)

func readMeasuredFixture(t *testing.T, name string) []MeasuredPoint {
	t.Helper()
	data, err := os.ReadFile("testdata/measured/" + name)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := ParseMeasured(data, name)
	if err != nil {
		t.Fatal(err)
	}
	return pts
}

func TestParseMeasuredFormats(t *testing.T) {
	for _, c := range []struct {
		file string
		want []MeasuredPoint
	}{
		{"vllm_latency.json", []MeasuredPoint{{Source: "vllm_latency.json: avg_latency", E2ES: 1.25}}},
		{"vllm_throughput.json", []MeasuredPoint{{Source: "vllm_throughput.json: tokens_per_second", Requests: 64, TokensTotal: 40960, TokensPerS: 2048}}},
		{"trtllm_session.txt", []MeasuredPoint{
			{Source: "trtllm_session.txt:2", Batch: 1, Input: 128, Output: 128, E2ES: 1.5, TokensPerS: 85.33},
			{Source: "trtllm_session.txt:3", Batch: 8, Input: 128, Output: 128, E2ES: 1.8, TokensPerS: 568.89}}},
		{"trtllm_manager.txt", []MeasuredPoint{{Source: "trtllm_manager.txt: [BENCHMARK] summary", E2ES: 2.5, TTFTS: 0.06, TPOTS: 0.019, TokensPerS: 409.6}}},
		{"trtllm_bench.txt", []MeasuredPoint{{Source: "trtllm_bench.txt: PERFORMANCE OVERVIEW", Input: 512, Output: 128, Requests: 64, TokensTotal: 64 * 128,
			TTFTS: 0.06, TPOTS: 0.0192, E2ES: 2.5, TokensPerS: 409.6}}},
		{"trtllm_bench_early.txt", []MeasuredPoint{{Source: "trtllm_bench_early.txt: PERFORMANCE OVERVIEW", Input: 128, Output: 128, Requests: 3000, TokensTotal: 3000 * 128,
			TokensPerS: 18886.813971319196}}},
		{"points.csv", []MeasuredPoint{
			{Source: "points.csv:3", Batch: 1, Input: 512, Output: 32, TTFTS: 0.040, TPOTS: 0.025},
			{Source: "points.csv:4", Batch: 4, Input: 512, Output: 32, TTFTS: 0.150, TPOTS: 0.026},
			{Source: "points.csv:5", Batch: 16, Input: 512, Output: 32, TPOTS: 0.030, E2ES: 1.5}}},
	} {
		got := readMeasuredFixture(t, c.file)
		// Milliseconds become seconds: compare within rounding.
		if len(got) == len(c.want) {
			for i := range got {
				for _, f := range []*float64{&got[i].TTFTS, &got[i].TPOTS, &got[i].E2ES} {
					*f = math.Round(*f*1e9) / 1e9
				}
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", c.file, got, c.want)
		}
	}
}

func TestParseMeasuredRefusesBadInput(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"empty", "  \n", "f: empty file"},
		{"json without known keys", `{"mean": 1}`, "f: a JSON file must be vLLM benchmark_latency output (avg_latency)"},
		{"latency not a number", `{"avg_latency": "fast"}`, `f: avg_latency: must be a positive number (got "fast")`},
		{"negative latency", `{"avg_latency": -1}`, "f: avg_latency: must be a positive number (got -1)"},
		{"throughput missing tokens", `{"elapsed_time": 1, "num_requests": 2, "tokens_per_second": 3}`, "f: total_num_tokens: missing"},
		{"fractional requests", `{"elapsed_time": 1, "num_requests": 2.5, "total_num_tokens": 9, "tokens_per_second": 3}`, "f: num_requests: must be a whole number in [1, 1073741824] (got 2.5)"},
		{"trtllm bad value", "[BENCHMARK] batch_size 1 input_length 8 output_length 8 latency(ms) NaN", `f:1: latency(ms): must be a number ≥ 0 (got "NaN")`},
		{"trtllm no batch size value", "[BENCHMARK] batch_size 0 input_length 8 output_length 8 latency(ms) 1", "f:1: batch_size: must be a whole number in [1, 1073741824]"},
		{"trtllm nothing known", "[BENCHMARK] num_samples 3", "f: no [BENCHMARK] line with batch_size"},
		{"csv unknown column", "batch,ttft_s\n1,2\n", `f: header: unknown column "ttft_s" (columns: batch,input,output,ttft_ms,tpot_ms,e2e_ms,tok_s)`},
		{"csv bad number", "batch,tpot_ms\n1,fast\n", `f:2: tpot_ms: must be a positive number (got "fast")`},
		{"csv fractional batch", "batch,tpot_ms\n1.5,3\n", "f:2: batch: must be a whole number in [1, 1073741824] (got 1.5)"},
		{"csv no measurement", "batch,input,output,tpot_ms\n1,8,8,\n", "f:2: no measurement: give at least one of ttft_ms, tpot_ms, e2e_ms, tok_s"},
		{"csv huge batch", "batch,tpot_ms\n1e300,3\n", "f:2: batch: must be a whole number in [1, 1073741824] (got 1e+300)"},
		{"trtllm huge batch", "[BENCHMARK] batch_size 1e300 input_length 8 output_length 8 latency(ms) 1", "f:1: batch_size: must be a whole number in [1, 1073741824]"},
		{"trtllm-bench bad value", "= PERFORMANCE OVERVIEW\nAverage request latency (ms): fast\n", `f:2: Average request latency (ms): must be a number ≥ 0 (got "fast")`},
		{"trtllm-bench nothing known", "= PERFORMANCE OVERVIEW\nRequest Throughput (req/sec): 3\n", "f: a PERFORMANCE OVERVIEW without the average TTFT"},
		{"csv header only", "batch,tpot_ms\n", "f: a CSV needs the header"},
	} {
		_, err := ParseMeasured([]byte(c.data), "f")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// The error of one row, by hand. Llama-2-13B on one H100 (nemo numbers),
// batch 1, 512 + 32 tokens: a decode step reads the weights but the
// embedding table, 2 × (13,015,864,320 − 32,000 × 5,120) B = 25.70 GB, and
// the KV cache, 2 × 40 layers × ≈ 544 tokens × 5,120 × 2 B ≈ 0.45 GB, less
// the 52 MB of weights L2 holds: ≈ 26.10 GB over 3.35 TB/s × 0.9 = 8.66 ms;
// plus 404 kernels × 6 µs + 2 ms of host step = 4.42 ms: TPOT ≈ 13.08 ms.
// Measured 15.0 ms (hand.csv): error (13.08 − 15.0) / 15.0 = −12.8 %.
func TestMeasuredRowErrorHandChecked(t *testing.T) {
	cfg, err := configs.Load("llama2-13b-2k")
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := CompareMeasured(cfg, readMeasuredFixture(t, "hand.csv"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Rows) != 1 {
		t.Fatalf("rows %+v", cmp.Rows)
	}
	r := cmp.Rows[0]
	if r.Metric != "tpot_s" || r.Batch != 1 || r.Input != 512 || r.Output != 32 || r.Measured != 0.015 {
		t.Errorf("row %+v", r)
	}
	if math.Abs(r.Modeled-13.08e-3) > 0.01*13.08e-3 || math.Abs(r.RelErr-(-0.128)) > 0.002 || r.Term != "hbm" {
		t.Errorf("modeled %g s, error %+.2f %%, term %s; want ≈ 13.08 ms, −12.8 %%, hbm", r.Modeled, 100*r.RelErr, r.Term)
	}
	if cmp.Errors.Median != math.Abs(r.RelErr) {
		t.Errorf("median %g of one row %g", cmp.Errors.Median, r.RelErr)
	}
}

// A throughput run: 64 requests of the config's lengths in batches of its
// batch take ⌈64 / batch⌉ × E2E; the rate counts total_num_tokens.
func TestMeasuredThroughputRate(t *testing.T) {
	cfg, err := configs.Load("llama2-13b-2k")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workload.Batch, cfg.Workload.Context, cfg.Workload.OutputTokens = 16, 640, 128
	cmp, err := CompareMeasured(cfg, readMeasuredFixture(t, "vllm_throughput.json"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := pointConfig(cfg, MeasuredPoint{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := EstimateConfig(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := 40960 / (4 * (e.Prefill.TTFTS + 127*e.Decode.TPOTS))
	if len(cmp.Rows) != 1 || cmp.Rows[0].Metric != "tokens_per_s" || math.Abs(cmp.Rows[0].Modeled-want) > 1e-9*want {
		t.Errorf("rows %+v, want a rate of %g tok/s", cmp.Rows, want)
	}
}
