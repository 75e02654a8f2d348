package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestModelDryRunDefaultTable(t *testing.T) {
	out, err := runCLI(t, "model", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tp8pp2", "layerwise16", "TTFT (s)", "TPOT (ms)", "TPS (tok/s)", "KV cache (GB)",
		"L2 residency (%)", "collectives/µbatch", "NVLink (GB)", "bubble (%)", "bottleneck", "Relative to tp8pp2"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

// The keys later tools parse, exactly as written in docs/json-schema.md.
func TestModelJSONKeys(t *testing.T) {
	out, err := runCLI(t, "model", "--dry-run", "--config", "configs/tp8pp2.toml", "--compare", "configs/layerwise16.toml", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["schema"] != "partbench.model/v1" {
		t.Fatalf("schema %v", doc["schema"])
	}
	strategies := doc["strategies"].([]any)
	if len(strategies) != 2 {
		t.Fatalf("%d strategies", len(strategies))
	}
	for _, s := range strategies {
		st := s.(map[string]any)
		for _, k := range []string{"name", "gpus", "tp", "pp", "microbatches", "params_total", "ranks", "prefill", "decode", "comm", "l2"} {
			if _, ok := st[k]; !ok {
				t.Errorf("strategy lacks %q", k)
			}
		}
		rank0 := st["ranks"].([]any)[0].(map[string]any)
		for _, k := range []string{"rank", "weights_bytes", "kv_cache_bytes", "activation_bytes", "total_bytes"} {
			if _, ok := rank0[k]; !ok {
				t.Errorf("rank lacks %q", k)
			}
		}
		for obj, keys := range map[string][]string{
			"prefill": {"ttft_s", "bubble_fraction"},
			"decode":  {"tpot_s", "tokens_per_s", "bubble_fraction"},
			"comm":    {"collective_calls_per_microbatch", "p2p_sends_per_microbatch", "bytes_by_link"},
			"l2":      {"weight_residency"},
		} {
			m := st[obj].(map[string]any)
			for _, k := range keys {
				if _, ok := m[k]; !ok {
					t.Errorf("%s lacks %q", obj, k)
				}
			}
		}
		bl := st["comm"].(map[string]any)["bytes_by_link"].(map[string]any)
		for _, k := range []string{"nvlink", "pcie", "network"} {
			if _, ok := bl[k]; !ok {
				t.Errorf("bytes_by_link lacks %q", k)
			}
		}
	}
	tp := strategies[0].(map[string]any)
	if tp["name"] != "tp8pp2" || tp["comm"].(map[string]any)["collective_calls_per_microbatch"].(float64) != 32 {
		t.Errorf("first strategy %v comm %v", tp["name"], tp["comm"])
	}
	if ranks := tp["ranks"].([]any); len(ranks) != 16 {
		t.Errorf("%d ranks", len(ranks))
	}
}

func TestModelCSVPerRank(t *testing.T) {
	out, err := runCLI(t, "model", "--dry-run", "--config", "tp8pp2", "--format", "csv", "--per-rank")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// Header, prefill, decode, 16 rank rows, then one row per modeled
	// collective; every row as wide as the header.
	if len(rows) < 1+2+16 || rows[0][0] != "strategy" || rows[3][1] != "rank" {
		t.Fatalf("%d rows; first %v", len(rows), rows[:min(4, len(rows))])
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	phases := map[string]int{}
	for _, r := range rows[1:] {
		phases[r[1]]++
		switch r[1] {
		case "rank":
			// tp8pp2: 16 layers over 2 stages, rank 9 is stage 1, TP index 1, layers 8–15.
			if r[col["rank"]] == "9" && (r[col["stage"]] != "1" || r[col["tp_index"]] != "1" || r[col["first_layer"]] != "8" || r[col["last_layer"]] != "15" ||
				r[col["decode_busy_s"]] == "" || r[col["decode_fixed_s"]] == "") {
				t.Errorf("rank 9 row %v", r)
			}
		case "collective":
			if r[col["collective_op"]] == "" || r[col["algo"]] == "" || r[col["collective_time_s"]] == "" {
				t.Errorf("collective row %v", r)
			}
		}
	}
	if phases["prefill"] != 1 || phases["decode"] != 1 || phases["rank"] != 16 || phases["collective"] == 0 {
		t.Errorf("rows by phase %v", phases)
	}
}

func TestModelMarkdownToFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.md")
	if _, err := runCLI(t, "model", "--dry-run", "--format", "markdown", "-o", path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "| tp8pp2") || !strings.Contains(string(b), "### Estimate") {
		t.Fatalf("markdown file: %v\n%s", err, b)
	}
}

func TestModelErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"model"}, "model needs --dry-run"},
		{[]string{"model", "--dry-run", "--format", "yaml"}, "--format: must be one of table, markdown, csv, json"},
		{[]string{"model", "--dry-run", "--config", "nope.toml"}, `config "nope.toml": no such file`},
		{[]string{"model", "--dry-run", "--decode-steps", "2"}, "decode steps must be at least 3"},
	} {
		_, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestConfigFileErrorNamesFileAndField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.toml")
	data, _ := os.ReadFile("../../configs/tp8pp2.toml")
	bad := strings.Replace(string(data), "tp = 8", "tp = 5", 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runCLI(t, "model", "--dry-run", "--config", path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "parallel.tp: must divide model.heads = 32 (got 5)") {
		t.Fatalf("error %v", err)
	}
}

func TestModelTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	if _, err := runCLI(t, "model", "--dry-run", "--config", "test/tp2pp2-tiny", "--trace", path, "--trace-full"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Ph   string `json:"ph"`
			Name string `json:"name"`
			Tid  int    `json:"tid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	tracks, flows, names := map[int]bool{}, 0, map[string]bool{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			tracks[e.Tid] = true
			names[e.Name] = true
		}
		if e.Ph == "s" {
			flows++
		}
	}
	// 4 ranks; the Program's op names; a flow per message whose send and
	// recv both lie in the timeline: 2 ranks × 2 micro-batches × (1 prefill
	// + 16 decode steps) activations and as many token returns, less the 4
	// last token returns, which the next step (not simulated) would receive.
	if len(tracks) != 4 || !names["L00.wqkv"] || !names["x.send"] || flows != 2*2*17*2-4 {
		t.Fatalf("tracks %d flows %d names %d", len(tracks), flows, len(names))
	}
	// Without --trace-full: prefill and 3 decode steps, 2 × 2 × (1 + 3) × 2 flows.
	small := filepath.Join(t.TempDir(), "small.json")
	if _, err := runCLI(t, "model", "--dry-run", "--config", "test/tp2pp2-tiny", "--trace", small); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(small); err != nil {
		t.Fatal(err)
	}
	// Cut after 3 decode steps: the 4 token returns of step 2 are received
	// in step 3, past the cut, so they carry no arrow.
	if n := strings.Count(string(b), `"ph":"s"`); n != 2*2*4*2-4 {
		t.Errorf("default trace: %d flows, want %d", n, 2*2*4*2-4)
	}
}

func TestSweepSkipsInvalidPointsAndNamesThem(t *testing.T) {
	// 48 micro-batches do not divide the batch of 128: the point is skipped with the reason.
	out, err := runCLI(t, "model", "--dry-run", "--config", "tp8pp2", "--sweep", "microbatches=8,48")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "microbatches = 48: tp8pp2") || !strings.Contains(out, "parallel.microbatches: must divide workload.batch = 128 (got 48)") {
		t.Fatalf("sweep output:\n%s", out)
	}
}

// --batch-size, --input-len and --output-len set the workload of model and
// search as benchmark_latency's flags do: the prompt is --input-len, the
// context prompt + output.
func TestWorkloadFlags(t *testing.T) {
	out, err := runCLI(t, "model", "--dry-run", "--config", "test/single-tiny", "--batch-size", "8", "--input-len", "100", "--output-len", "10", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Strategies []struct {
			Batch        int `json:"batch"`
			PromptTokens int `json:"prompt_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Strategies) != 1 {
		t.Fatalf("%d strategies", len(doc.Strategies))
	}
	if w := doc.Strategies[0]; w.Batch != 8 || w.PromptTokens != 100 || w.OutputTokens != 10 {
		t.Errorf("workload %+v, want batch 8, prompt 100, output 10", w)
	}
	if _, err := runCLI(t, "search", "--config", "test/single-tiny", "--batch-size", "4", "--output-len", "1"); err == nil || !strings.Contains(err.Error(), "output") {
		t.Errorf("search --output-len 1: %v", err)
	}
	if _, err := runCLI(t, "model", "--dry-run", "--config", "test/single-tiny", "--input-len", "-5"); err == nil || !strings.Contains(err.Error(), "--input-len: must be ≥ 1 (got -5") {
		t.Errorf("--input-len -5: %v", err)
	}
}
