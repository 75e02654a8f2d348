package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
)

const measuredFixtures = "../../sim/testdata/measured/"

func TestModelMeasuredTableAndFitTOML(t *testing.T) {
	// Llama-2-13B's widths with 4 of its layers: the same terms, a fast fit.
	small := filepath.Join(t.TempDir(), "small.toml")
	if err := os.WriteFile(small, []byte(`version = 1
[model]
preset = "llama-2-13b"
layers = 4
[workload]
batch = 1
context = 256
output_tokens = 128
[parallel]
tp = 1
pp = 1
[hardware]
preset = "h100-sxm"
[topology]
name = "one"
nodes = 1
gpus_per_node = 1
[run]
iterations = 1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "model", "--config", small, "--runtime", "tensorrt-llm", "--measured", measuredFixtures+"trtllm_session.txt", "--fit", "--decode-steps", "3")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"runtime tensorrt-llm", "E2E (ms)", "tok/s", "1500.000", "error (%)", "dominant term",
		"# runtime fitted to 4 values (compute_efficiency, step_overhead_s, step_per_seq_s)", "[runtime]", "[hardware]"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The printed sections are a config's: appended to one, it loads.
	toml := out[strings.Index(out, "[runtime]"):]
	base := `version = 1
[model]
preset = "llama-2-13b"
[workload]
batch = 1
context = 256
output_tokens = 128
[parallel]
tp = 1
pp = 1
[topology]
name = "one"
nodes = 1
gpus_per_node = 1
[run]
iterations = 1
`
	cfg, err := configs.Parse(strings.NewReader(base+strings.Replace(toml, "[hardware]", "[hardware]\npreset = \"h100-sxm\"", 1)), "fit.toml")
	if err != nil {
		t.Fatalf("the fit does not load: %v\n%s", err, toml)
	}
	if cfg.Runtime.Name != "fitted-trtllm_session.txt" || cfg.Hardware.StepOverheadS != cfg.Runtime.StepOverheadS {
		t.Errorf("runtime %+v, GPU step %g", cfg.Runtime, cfg.Hardware.StepOverheadS)
	}
}

func TestModelMeasuredJSON(t *testing.T) {
	out, err := runCLI(t, "model", "--config", "llama2-13b-2k", "--measured", measuredFixtures+"points.csv", "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var doc struct {
		Schema  string `json:"schema"`
		Compare struct {
			Rows []struct {
				Metric string  `json:"metric"`
				RelErr float64 `json:"rel_err"`
			} `json:"rows"`
		} `json:"compare"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	// points.csv: 2 + 2 + 2 measured values.
	if doc.Schema != "partbench.model-measured/v1" || len(doc.Compare.Rows) != 6 || doc.Compare.Rows[0].Metric != "ttft_s" {
		t.Errorf("document %+v", doc)
	}
}

func TestModelMeasuredAndRuntimeFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"model", "--dry-run", "--runtime", "trt"}, `--runtime: unknown runtime "trt" (available: deepspeed-inference`},
		{[]string{"model", "--config", "llama2-13b-2k", "--fit"}, "--fit: needs --measured FILE"},
		{[]string{"model", "--measured", measuredFixtures + "points.csv"}, "--measured: compares one config with the file (got 2"},
		{[]string{"model", "--config", "llama2-13b-2k", "--measured", "no-such-file.csv"}, "--measured: "},
		{[]string{"model", "--config", "llama2-13b-2k", "--measured", measuredFixtures + "points.csv", "--per-rank"}, "--measured: cannot be combined with"},
		{[]string{"model", "--config", "llama2-13b-2k", "--measured", measuredFixtures + "points.csv", "--fit", "--format", "csv"}, "--fit with --format csv"},
		{[]string{"search", "--config", "llama2-13b-2k", "--runtime", "trt"}, `--runtime: unknown runtime "trt"`},
	} {
		out, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q\n%s", c.args, err, c.want, out)
		}
	}
}
