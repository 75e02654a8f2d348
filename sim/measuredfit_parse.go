package sim

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ParseMeasured reads measured inference results in one of four layouts,
// told apart by their content:
//
//   - vLLM benchmarks/benchmark_latency.py --output-json: {"avg_latency",
//     "latencies", "percentiles"}: one batch of the config's workload, E2E =
//     avg_latency seconds;
//   - vLLM benchmarks/benchmark_throughput.py --output-json: {"elapsed_time",
//     "num_requests", "total_num_tokens", "requests_per_second",
//     "tokens_per_second"}: num_requests requests of the config's lengths in
//     batches of its batch, tokens_per_second over total_num_tokens;
//   - TensorRT-LLM benchmark output: gptSessionBenchmark's lines
//     "[BENCHMARK] batch_size B input_length I output_length O latency(ms) L
//     tokensPerSec T ..." (one point each), or gptManagerBenchmark's
//     "[BENCHMARK] key value" lines (one point: avg_sequence_latency(ms),
//     token_throughput(token/sec), avg_time_to_first_token(ms),
//     avg_inter_token_latency(ms));
//   - trtllm-bench's report (a "PERFORMANCE OVERVIEW" or, in early
//     releases, "STATISTICS" section; format as printed in TensorRT-LLM's
//     trtllm-bench documentation and its benchmark reports): one point
//     of the config's batch (standing for the run's concurrency) with
//     "Average time-to-first-token [TTFT] (ms)", "Average
//     time-per-output-token [TPOT] (ms)", "Average request latency (ms)" and,
//     with "Number of requests" and "Average Output Length (tokens)",
//     "Total Output Throughput (tokens/sec)" (earlier: "Token Throughput
//     (tokens/sec)", output tokens too) as a throughput run of that many
//     requests; "Average Input/Output Length (tokens)" set the lengths;
//   - CSV with the header batch,input,output,ttft_ms,tpot_ms,e2e_ms,tok_s
//     (columns in any order, empty cells: not measured; tok_s is output
//     tokens per second of the batch).
//
// name is the file's name in errors and in each point's Source.
func ParseMeasured(data []byte, name string) ([]MeasuredPoint, error) {
	trim := bytes.TrimSpace(data)
	switch {
	case len(trim) == 0:
		return nil, fmt.Errorf("%s: empty file", name)
	case trim[0] == '{':
		return parseVLLMJSON(trim, name)
	case bytes.Contains(trim, []byte("PERFORMANCE OVERVIEW")) || bytes.Contains(trim, []byte("= STATISTICS")):
		return parseTRTLLMBench(trim, name)
	case bytes.Contains(trim, []byte("[BENCHMARK]")):
		return parseTRTLLM(trim, name)
	}
	return parseMeasuredCSV(trim, name)
}

func parseVLLMJSON(data []byte, name string) ([]MeasuredPoint, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: not JSON: %w", name, err)
	}
	num := func(key string) (float64, error) {
		raw, ok := doc[key]
		if !ok {
			return 0, fmt.Errorf("%s: %s: missing", name, key)
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil || !(v > 0) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%s: %s: must be a positive number (got %s)", name, key, string(raw))
		}
		return v, nil
	}
	if _, ok := doc["avg_latency"]; ok {
		v, err := num("avg_latency")
		if err != nil {
			return nil, err
		}
		return []MeasuredPoint{{Source: name + ": avg_latency", E2ES: v}}, nil
	}
	if _, ok := doc["elapsed_time"]; ok {
		var p MeasuredPoint
		p.Source = name + ": tokens_per_second"
		n, err := num("num_requests")
		if err != nil {
			return nil, err
		}
		if n != math.Trunc(n) || n > maxMeasuredCount {
			return nil, fmt.Errorf("%s: num_requests: must be a whole number in [1, %d] (got %g)", name, maxMeasuredCount, n)
		}
		p.Requests = int(n)
		if p.TokensTotal, err = num("total_num_tokens"); err != nil {
			return nil, err
		}
		if p.TokensPerS, err = num("tokens_per_second"); err != nil {
			return nil, err
		}
		return []MeasuredPoint{p}, nil
	}
	return nil, fmt.Errorf("%s: a JSON file must be vLLM benchmark_latency output (avg_latency) or benchmark_throughput output (elapsed_time, num_requests, total_num_tokens, tokens_per_second)", name)
}

func parseTRTLLM(data []byte, name string) ([]MeasuredPoint, error) {
	var pts []MeasuredPoint
	summary := MeasuredPoint{Source: name + ": [BENCHMARK] summary"}
	summarySeen := false
	for i, line := range strings.Split(string(data), "\n") {
		at := strings.Index(line, "[BENCHMARK]")
		if at < 0 {
			continue
		}
		f := strings.Fields(line[at+len("[BENCHMARK]"):])
		kv := map[string]float64{}
		for j := 0; j+1 < len(f); j += 2 {
			v, err := strconv.ParseFloat(f[j+1], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("%s:%d: %s: must be a number ≥ 0 (got %q)", name, i+1, f[j], f[j+1])
			}
			kv[f[j]] = v
		}
		if _, ok := kv["batch_size"]; ok {
			p := MeasuredPoint{Source: fmt.Sprintf("%s:%d", name, i+1)}
			for _, k := range []struct {
				key string
				to  *int
			}{{"batch_size", &p.Batch}, {"input_length", &p.Input}, {"output_length", &p.Output}} {
				v, ok := kv[k.key]
				if !ok || v < 1 || v > maxMeasuredCount || v != math.Trunc(v) {
					return nil, fmt.Errorf("%s:%d: %s: must be a whole number in [1, %d] (got %q)", name, i+1, k.key, maxMeasuredCount, fmt.Sprint(kv[k.key]))
				}
				*k.to = int(v)
			}
			p.E2ES = kv["latency(ms)"] / 1e3
			p.TokensPerS = kv["tokensPerSec"]
			pts = append(pts, p)
			continue
		}
		for key, to := range map[string]*float64{"avg_sequence_latency(ms)": &summary.E2ES, "avg_time_to_first_token(ms)": &summary.TTFTS,
			"avg_inter_token_latency(ms)": &summary.TPOTS, "token_throughput(token/sec)": &summary.TokensPerS} {
			if v, ok := kv[key]; ok {
				if strings.HasSuffix(key, "(ms)") {
					v /= 1e3
				}
				*to, summarySeen = v, true
			}
		}
	}
	if summarySeen {
		pts = append(pts, summary)
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%s: no [BENCHMARK] line with batch_size, latency(ms), avg_sequence_latency(ms), token_throughput(token/sec) or the first-token and inter-token averages", name)
	}
	return pts, nil
}

// maxMeasuredCount bounds a batch, a length or a request count read from a
// file (far above any run; it keeps the int conversion exact).
const maxMeasuredCount = 1 << 30

// measuredCSVColumns are the CSV's columns and their scale to partbench's units.
var measuredCSVColumns = []string{"batch", "input", "output", "ttft_ms", "tpot_ms", "e2e_ms", "tok_s"}

func parseMeasuredCSV(data []byte, name string) ([]MeasuredPoint, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.TrimLeadingSpace = true
	var recs [][]string
	var lines []int // each record's line in the file (comments skipped)
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: not CSV, vLLM JSON or TensorRT-LLM [BENCHMARK] output: %w", name, err)
		}
		line, _ := r.FieldPos(0)
		recs, lines = append(recs, rec), append(lines, line)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("%s: a CSV needs the header %s and at least one row", name, strings.Join(measuredCSVColumns, ","))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		h = strings.ToLower(strings.TrimSpace(h))
		known := false
		for _, c := range measuredCSVColumns {
			known = known || c == h
		}
		if !known {
			return nil, fmt.Errorf("%s: header: unknown column %q (columns: %s)", name, h, strings.Join(measuredCSVColumns, ","))
		}
		col[h] = i
	}
	var pts []MeasuredPoint
	for n, rec := range recs[1:] {
		line := lines[n+1]
		p := MeasuredPoint{Source: fmt.Sprintf("%s:%d", name, line)}
		get := func(c string) (float64, bool, error) {
			i, ok := col[c]
			if !ok || i >= len(rec) || strings.TrimSpace(rec[i]) == "" {
				return 0, false, nil
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return 0, false, fmt.Errorf("%s:%d: %s: must be a positive number (got %q)", name, line, c, rec[i])
			}
			return v, true, nil
		}
		for _, c := range []struct {
			key string
			to  *int
		}{{"batch", &p.Batch}, {"input", &p.Input}, {"output", &p.Output}} {
			v, ok, err := get(c.key)
			if err != nil {
				return nil, err
			}
			if ok && (v != math.Trunc(v) || v > maxMeasuredCount) {
				return nil, fmt.Errorf("%s:%d: %s: must be a whole number in [1, %d] (got %g)", name, line, c.key, maxMeasuredCount, v)
			}
			*c.to = int(v)
		}
		any := false
		for _, c := range []struct {
			key   string
			to    *float64
			scale float64
		}{{"ttft_ms", &p.TTFTS, 1e-3}, {"tpot_ms", &p.TPOTS, 1e-3}, {"e2e_ms", &p.E2ES, 1e-3}, {"tok_s", &p.TokensPerS, 1}} {
			v, ok, err := get(c.key)
			if err != nil {
				return nil, err
			}
			*c.to, any = v*c.scale, any || ok
		}
		if !any {
			return nil, fmt.Errorf("%s:%d: no measurement: give at least one of ttft_ms, tpot_ms, e2e_ms, tok_s", name, line)
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// trtllmBenchKeys maps trtllm-bench's report labels (before the colon) to
// what they fill; ms marks milliseconds.
var trtllmBenchKeys = map[string]struct {
	field string
	ms    bool
}{
	"Average time-to-first-token [TTFT] (ms)":   {"ttft", true},
	"Average time-per-output-token [TPOT] (ms)": {"tpot", true},
	"Average request latency (ms)":              {"e2e", true},
	"Total Output Throughput (tokens/sec)":      {"rate", false},
	"Token Throughput (tokens/sec)":             {"rate", false}, // earlier releases: output tokens / total latency
	"Number of requests":                        {"requests", false},
	"Average Input Length (tokens)":             {"input", false},
	"Average Output Length (tokens)":            {"output", false},
}

func parseTRTLLMBench(data []byte, name string) ([]MeasuredPoint, error) {
	v := map[string]float64{}
	for i, line := range strings.Split(string(data), "\n") {
		label, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, known := trtllmBenchKeys[strings.TrimSpace(label)]
		if !known {
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return nil, fmt.Errorf("%s:%d: %s: must be a number ≥ 0 (got %q)", name, i+1, strings.TrimSpace(label), strings.TrimSpace(value))
		}
		if k.ms {
			x /= 1e3
		}
		v[k.field] = x
	}
	p := MeasuredPoint{Source: name + ": PERFORMANCE OVERVIEW", TTFTS: v["ttft"], TPOTS: v["tpot"], E2ES: v["e2e"]}
	for _, c := range []struct {
		key string
		to  *int
	}{{"input", &p.Input}, {"output", &p.Output}, {"requests", &p.Requests}} {
		if x := math.Round(v[c.key]); x >= 1 && x <= maxMeasuredCount {
			*c.to = int(x)
		}
	}
	if p.Requests > 0 && p.Output > 0 && v["rate"] > 0 {
		p.TokensPerS, p.TokensTotal = v["rate"], float64(p.Requests*p.Output)
	} else {
		p.Requests = 0
	}
	if p.TTFTS == 0 && p.TPOTS == 0 && p.E2ES == 0 && p.TokensPerS == 0 {
		return nil, fmt.Errorf("%s: a PERFORMANCE OVERVIEW without the average TTFT, TPOT or request latency (ms), or the output throughput with the number of requests and output length", name)
	}
	return []MeasuredPoint{p}, nil
}
