package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command that prints a table takes --format table|markdown|csv|json
// and refuses anything else with the same message.
func TestEveryTableCommandTakesTheFourFormats(t *testing.T) {
	for _, name := range []string{"model", "search", "claims", "compare", "bench", "l2", "calibrate", "topo", "presets", "collectives", "run", "remote", "resume"} {
		cmd, _, err := newRootCmd().Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		f := cmd.Flags().Lookup("format")
		if f == nil {
			t.Errorf("%s: no --format", name)
			continue
		}
		for _, v := range []string{"table", "markdown", "csv", "json"} {
			if err := f.Value.Set(v); err != nil {
				t.Errorf("%s --format %s: %v", name, v, err)
			}
		}
		err = f.Value.Set("yaml")
		if err == nil || !strings.HasPrefix(err.Error(), "--format: must be one of table, markdown, csv, json") || !strings.HasSuffix(err.Error(), `(got "yaml")`) {
			t.Errorf("%s --format yaml: %v", name, err)
		}
	}
	// Through the root, the message is the whole error (no pflag preamble).
	if _, err := runCLI(t, "presets", "--format", "yaml"); err == nil || err.Error() != `--format: must be one of table, markdown, csv, json (got "yaml")` {
		t.Errorf("presets --format yaml: %v", err)
	}
}

// Help shows each default once: no flag's line carries both a "(default: …)"
// of its own and cobra's "(default …)".
func TestHelpShowsEachDefaultOnce(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(c.Flags().FlagUsages(), "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("%s: %s", c.CommandPath(), strings.TrimSpace(line))
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
}

// The same concept has the same flag, and the old spellings still work.
func TestOneNamePerConceptWithOldSpellings(t *testing.T) {
	for _, c := range []struct{ cmd, flag string }{
		{"search", "config"}, {"search", "topology"}, {"topo", "topology"}, {"plot", "topology"}, {"collectives", "topology"},
		{"model", "output"}, {"search", "output"}, {"compare", "output"}, {"calibrate", "output"}, {"plot", "output"},
		{"run", "output-dir"}, {"run", "nproc-per-node"}, {"run", "nnodes"}, {"run", "node-rank"}, {"run", "master-addr"}, {"run", "master-port"},
		{"run", "rdzv-endpoint"}, {"run", "quiet"},
	} {
		cmd, _, _ := newRootCmd().Find([]string{c.cmd})
		if cmd.Flags().Lookup(c.flag) == nil {
			t.Errorf("%s has no --%s", c.cmd, c.flag)
		}
	}
	// search --model (old) and --gpus left out: the topology's 16 GPUs.
	out, err := runCLI(t, "search", "--model", "tp8pp2", "--full", "0", "--top", "1", "--format", "csv")
	if err != nil {
		t.Fatalf("search --model without --gpus: %v\n%s", err, out)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) < 2 || recs[0][3] != "tp" || recs[0][4] != "pp" {
		t.Fatalf("search csv: %v\n%s", err, out)
	}
	dpCol := slices.Index(recs[0], "dp")
	if dpCol < 0 {
		t.Fatalf("search csv has no dp column: %v", recs[0])
	}
	for _, r := range recs[1:] {
		tp, _ := strconv.Atoi(r[3])
		pp, _ := strconv.Atoi(r[4])
		dp, _ := strconv.Atoi(r[dpCol])
		if r[1] == "feasible" && tp*pp*dp != 16 { // dgx-h100x2: 2 nodes × 8 GPUs
			t.Errorf("candidate tp %d × pp %d × dp %d is not the topology's 16 GPUs", tp, pp, dp)
		}
	}
	// Defaults agree across commands.
	m, _, _ := newRootCmd().Find([]string{"model"})
	s, _, _ := newRootCmd().Find([]string{"search"})
	if a, b := m.Flags().Lookup("decode-steps").DefValue, s.Flags().Lookup("decode-steps").DefValue; a != b {
		t.Errorf("--decode-steps: model %s, search %s", a, b)
	}
	// torchrun's underscore spellings reach the same flags.
	r, _, _ := newRootCmd().Find([]string{"run"})
	if err := r.Flags().Parse([]string{"--nproc_per_node", "3", "--node_rank", "1", "--nnodes", "2", "--rdzv_endpoint", "h:5"}); err != nil {
		t.Fatal(err)
	}
	if v := r.Flags().Lookup("nproc-per-node").Value.String(); v != "3" {
		t.Errorf("--nproc_per_node 3 gave %s", v)
	}
	if v := r.Flags().Lookup("rendezvous").Value.String(); v != "h:5" {
		t.Errorf("--rdzv_endpoint h:5 gave --rendezvous %s", v)
	}
}

// model --sweep writes to --output, not to stdout.
func TestModelSweepHonoursOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sweep.json")
	out, err := runCLI(t, "model", "--dry-run", "--config", "test/tp2pp2-tiny", "--sweep", "batch=1:4", "--format", "json", "--output", path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "partbench.sweep/v1") {
		t.Errorf("sweep went to stdout:\n%s", out)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `"schema": "partbench.sweep/v1"`) {
		t.Errorf("--output file: %v\n%.200s", err, b)
	}
}

// presets as JSON carries a schema and lists the kinds.
func TestPresetsJSON(t *testing.T) {
	out, err := runCLI(t, "presets", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Schema string `json:"schema"`
		Tables []struct {
			Rows [][]string `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Schema != "partbench.tables/v1" || len(d.Tables) != 1 || len(d.Tables[0].Rows) != 6 {
		t.Fatalf("presets json: %v %+v\n%s", err, d, out)
	}
	if d.Tables[0].Rows[4][0] != "topology" || !strings.Contains(d.Tables[0].Rows[4][2], "dgx-h100x2") {
		t.Errorf("topology row: %v", d.Tables[0].Rows[4])
	}
	if d.Tables[0].Rows[5][0] != "runtime" || !strings.Contains(d.Tables[0].Rows[5][2], "tensorrt-llm") {
		t.Errorf("runtime row: %v", d.Tables[0].Rows[5])
	}
}

// run --check and --emulate-ranks honour --format; the emulation writes
// results.json and results.csv like any run.
func TestCheckAndEmulateHonourFormat(t *testing.T) {
	out, err := runCLI(t, "run", "--check", "--config", "test/tp2pp2-tiny", "--backend", "cpu", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 2 || recs[0][0] != "sequences" {
		t.Fatalf("check csv: %v\n%s", err, out)
	}
	dir := t.TempDir()
	out, err = runCLI(t, "run", "--emulate-ranks", "4", "--config", "test/tp2pp2-tiny", "--backend", "cpu", "--iterations", "1", "--warmup", "0",
		"--format", "json", "--output-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	var tables struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal([]byte(out), &tables); err != nil || tables.Schema != "partbench.tables/v1" {
		t.Errorf("emulate json on stdout: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema   string           `json:"schema"`
		Ranks    int              `json:"ranks"`
		Emulated *json.RawMessage `json:"emulated"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Schema != "partbench.emulate/v1" || doc.Ranks != 4 || doc.Emulated == nil {
		t.Errorf("results.json: %v %+v", err, doc)
	}
	if _, err := os.Stat(filepath.Join(dir, "results.csv")); err != nil {
		t.Error(err)
	}
}

// collectives prints nccl-tests' layout: "#" headers, 13 columns of data
// (size count type redop root, then time algbw busbw #wrong twice) plus
// algo and proto, and "# Avg bus bandwidth" equal to the mean busbw.
func TestCollectivesNCCLTestsLayout(t *testing.T) {
	out, err := runCLI(t, "collectives", "all_reduce_perf", "-b", "1K", "-e", "16K", "-f", "4", "-g", "8", "-d", "half", "-o", "max", "--topology", "dgx-h100x2")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	var avg string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "# Avg bus bandwidth") {
			avg = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
		}
		if !strings.HasPrefix(l, "#") {
			rows = append(rows, strings.Fields(l))
		}
	}
	// 1K, 4K, 16K: three sizes; 1024 B of half = 512 elements.
	if len(rows) != 3 || len(rows[0]) != 15 {
		t.Fatalf("rows %v\n%s", rows, out)
	}
	if got := strings.Join(rows[0][:5], " "); got != "1024 512 half max -1" {
		t.Errorf("first row starts %q", got)
	}
	var sum float64
	for _, r := range rows {
		if r[5] != r[9] || r[7] != r[11] || r[8] != "N/A" || r[12] != "N/A" {
			t.Errorf("out-of-place and in-place differ or #wrong is not N/A: %v", r)
		}
		bw, _ := strconv.ParseFloat(r[7], 64)
		sum += bw
	}
	a, err := strconv.ParseFloat(avg, 64)
	// The rows print busbw to 2 decimals; the average uses the full values.
	if err != nil || a < sum/3-0.01 || a > sum/3+0.01 {
		t.Errorf("Avg bus bandwidth %q, mean of rows %.3f", avg, sum/3)
	}
	if !regexp.MustCompile(`(?m)^# nThread 1 nGpus 8 minBytes 1024 maxBytes 16384 step: 4\(factor\)`).MatchString(out) {
		t.Errorf("header:\n%s", out)
	}
	// The old spelling (--op COLLECTIVE, --sizes, --preset) still works, and JSON names its schema and op.
	out, err = runCLI(t, "collectives", "--op", "all_gather", "--sizes", "1K:2K", "--ranks", "4", "--preset", "dgx-h100x2", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Schema, Op, Redop string
		Rows              []struct{ Ranks int }
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Schema != "partbench.collectives/v1" || d.Op != "all_gather" || d.Redop != "none" || len(d.Rows) != 2 {
		t.Errorf("json: %v %+v", err, d)
	}
	if _, err := runCLI(t, "collectives", "-o", "xor"); err == nil || !strings.Contains(err.Error(), "-o/--op: must be one of sum, prod, min, max, avg") {
		t.Errorf("-o xor: %v", err)
	}
}
