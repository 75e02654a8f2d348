package main

import (
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func atoiT(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSearchTableSeed(t *testing.T) {
	out, err := runCLI(t, "search", "--model", "tp8pp2", "--gpus", "16", "--top", "3", "--full", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Search: tp8pp2 on 16 × H100-SXM5-80GB (dgx-h100x2), objective tps", "rank", "layers/stage",
		"memory/GPU (GB)", "TPOT (ms)", "full TPOT (ms)", "TPOT quick vs full (%)",
		// 15 factorizations tp × pp × dp = 16 × 7 micro-batch counts; the 42
		// with replicas of ≤ 4 GPUs do not fit (sim's
		// TestSearchSeedCountsAndRanking derives both).
		"105 candidates enumerated: 63 feasible, 0 violating constraints, 42 pruned by memory", "candidates/s", "│ DP │"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Three ranked rows (1, 2, 3), no fourth.
	if !strings.Contains(out, "│ 3    │") || strings.Contains(out, "│ 4    │") {
		t.Errorf("want exactly ranks 1–3:\n%s", out)
	}
}

func TestSearchJSONAndConstraints(t *testing.T) {
	out, err := runCLI(t, "search", "--model", "configs/tp8pp2.toml", "--gpus", "16", "--max-tpot-ms", "20", "--full", "0", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema     string         `json:"schema"`
		Enumerated int            `json:"enumerated"`
		Feasible   int            `json:"feasible"`
		Violating  int            `json:"violating"`
		By         map[string]int `json:"violating_by"`
		Rows       []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	// 15 factorizations tp × pp × dp = 16 × 7 micro-batch counts, of which
	// the 42 with replicas of ≤ 4 GPUs do not fit (sim's
	// TestSearchSeedCountsAndRanking derives both).
	if doc.Schema != "partbench.search/v1" || doc.Enumerated != 105 || len(doc.Rows) != 105 || doc.Violating == 0 ||
		doc.Feasible+doc.Violating != 63 || doc.By["max_tpot"] != doc.Violating {
		t.Fatalf("schema %q enumerated %d rows %d feasible %d violating %d %v", doc.Schema, doc.Enumerated, len(doc.Rows), doc.Feasible, doc.Violating, doc.By)
	}
	for _, k := range []string{"rank", "status", "tp", "pp", "microbatches", "layer_variant", "stage_layers", "max_memory_bytes", "quick"} {
		if _, ok := doc.Rows[0][k]; !ok {
			t.Errorf("row lacks %q", k)
		}
	}
	q := doc.Rows[0]["quick"].(map[string]any)
	if q["tpot_s"].(float64) > 0.020 || doc.Rows[0]["status"] != "feasible" {
		t.Errorf("first row %v", doc.Rows[0])
	}
}

func TestSearchCSVAndNodes(t *testing.T) {
	// The config's DGX topology scaled to four nodes: 32 GPUs. tp 1 × pp 32
	// exceeds the 16 layers and is excluded; tp 2…32 divide 32 heads and ffn.
	// With replicas, tp 1 appears as tp 1 × pp ≤ 16 × dp = 32/pp.
	out, err := runCLI(t, "search", "--model", "tp8pp2", "--gpus", "32", "--nodes", "4", "--full", "0", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if recs[0][0] != "rank" || recs[0][10] != "quick_ttft_s" || len(recs) < 2 {
		t.Fatalf("csv header %v, %d records", recs[0], len(recs))
	}
	if dp := len(recs[0]) - 1; recs[0][dp] != "dp" {
		t.Fatalf("csv header %v: want dp last", recs[0])
	}
	for _, r := range recs[1:] {
		tp, pp, dp := atoiT(t, r[3]), atoiT(t, r[4]), atoiT(t, r[len(r)-1])
		if tp == 1 && dp == 1 || pp > 16 || tp*pp*dp != 32 {
			t.Fatalf("tp %d × pp %d × dp %d: want 32 GPUs and pp ≤ 16 layers (tp 1 × pp 32 needs 32 > 16): %v", tp, pp, dp, r)
		}
	}
}

func TestSearchErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"search", "--gpus", "16"}, "--model: required"},
		{[]string{"search", "--model", "tp8pp2"}, "--gpus: required"},
		{[]string{"search", "--model", "tp8pp2", "--gpus", "32"}, "--gpus: 32, but the topology from the config (dgx-h100x2) has 16 GPUs (nodes 2 × gpus_per_node 8); pass --topology with a preset of 32 GPUs or --nodes 4"},
		{[]string{"search", "--model", "tp8pp2", "--gpus", "16", "--objective", "speed"}, `--objective: must be one of tps, tpot, ttft (got "speed")`},
		{[]string{"search", "--model", "tp8pp2", "--gpus", "16", "--topology", "nope"}, `--topology: unknown topology preset "nope"`},
		{[]string{"search", "--model", "tp8pp2", "--gpus", "16", "--format", "yaml"}, "--format: must be one of table, markdown, csv, json"},
		{[]string{"search", "--model", "nope", "--gpus", "16"}, `--model: config "nope": no such file`},
	} {
		_, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestBenchCommand(t *testing.T) {
	out, err := runCLI(t, "bench", "--gpus", "64", "--runs", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Search benchmark: synthetic-dense128 on 64 GPUs (dgx-h100x8)", "candidates", "time (ms)", "rate (candidates/s)", "best rate"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	if _, err := runCLI(t, "bench", "--gpus", "12"); err == nil || !strings.Contains(err.Error(), "--gpus: must be a multiple of 8 in [8, 32768] (got 12)") {
		t.Errorf("bench --gpus 12: %v", err)
	}
}

// A search with nothing to recommend still prints its table (which says
// why) but exits non-zero, so a script cannot take it for an answer.
func TestSearchNothingFeasibleFails(t *testing.T) {
	out, err := runCLI(t, "search", "--model", "tp8pp2", "--gpus", "16", "--max-tpot-ms", "0.001", "--full", "0")
	if err == nil || !strings.Contains(err.Error(), "break a constraint") {
		t.Fatalf("err %v, want a constraint error", err)
	}
	if !strings.Contains(out, "Closest candidates") {
		t.Errorf("table lacks the closest candidates:\n%s", out)
	}
}
