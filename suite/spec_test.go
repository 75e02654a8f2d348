package suite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/topology"
)

func TestEmbeddedSpecsParse(t *testing.T) {
	for _, name := range EmbeddedSpecs() {
		s, err := Load(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(s.Cells()) != len(s.Baselines)*len(s.Workloads) {
			t.Errorf("%s: %d cells, want baselines × workloads", name, len(s.Cells()))
		}
	}
}

func TestSpecErrors(t *testing.T) {
	base := `version = 1
name = "t"
runs = 3
[[baseline]]
name = "local"
mode = "local"
[[workload]]
name = "w"
kind = "smoke"
model = "tiny-gpt2"
context = 12
output_tokens = 4
`
	for _, tc := range []struct{ name, add, want string }{
		{"unknown top key", "bogus = 1\n", "unknown key bogus"},
		{"unknown nested key", "[[baseline]]\nname = \"x\"\nmode = \"naive\"\ncolour = \"red\"\n", "unknown key baseline.colour"},
		{"resnet", "[[workload]]\nname = \"cnn\"\nkind = \"vision-cnn\"\nmodel = \"resnet-50\"\n", "not a transformer Program"},
		{"vqa", "[[workload]]\nname = \"vqa\"\nkind = \"multimodal-vqa\"\n", "not a transformer Program"},
		{"ray", "[[baseline]]\nname = \"ray_baseline\"\nmode = \"naive\"\n", "no Ray executor"},
		{"mode", "[[baseline]]\nname = \"x\"\nmode = \"semantic\"\n", "baseline[1].mode: remote mode \"semantic\""},
		{"local server", "[[baseline]]\nname = \"x\"\nmode = \"local\"\nserver = \"spawn\"\n", "baseline[1]: mode local runs in this process"},
		{"dup", "[[baseline]]\nname = \"local\"\nmode = \"naive\"\n", "\"local\" appears twice"},
		{"kind", "[[workload]]\nname = \"v\"\nkind = \"video\"\nmodel = \"tiny-gpt2\"\n", "workload[1].kind: must be one of"},
		{"model", "[[workload]]\nname = \"v\"\nkind = \"smoke\"\nmodel = \"gpt5\"\ncontext = 8\noutput_tokens = 2\n", "unknown model preset \"gpt5\""},
		{"one token", "[[workload]]\nname = \"v\"\nkind = \"llm-decode\"\nmodel = \"tiny-gpt2\"\ncontext = 8\noutput_tokens = 1\n", "workload.output_tokens: must be ≥ 2"},
		{"prefill tokens", "[[workload]]\nname = \"v\"\nkind = \"llm-prefill\"\nmodel = \"tiny-gpt2\"\ncontext = 8\noutput_tokens = 5\n", "measures the prefill request"},
		{"metric", "metrics = [\"joules\"]\n", "metrics[0]: unknown metric \"joules\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := base + tc.add
			if !strings.HasPrefix(tc.add, "[[") {
				src = tc.add + base
			}
			_, err := Parse(strings.NewReader(src), "t.toml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "t.toml") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
	if _, err := Parse(strings.NewReader(base), "t.toml"); err != nil {
		t.Fatalf("base spec: %v", err)
	}
}

// TestSeed001ModelOnly: on the CPU backend the two Llama-2-7B workloads are
// priced, not run: 3 baselines × 4 workloads = 12 cells, 6 run, 6 modeled;
// with backend cuda all 12 run.
func TestSeed001ModelOnly(t *testing.T) {
	s, err := Load("seed-001")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cells()) != 12 || len(s.RunCells()) != 6 {
		t.Fatalf("%d cells, %d run", len(s.Cells()), len(s.RunCells()))
	}
	for _, c := range s.RunCells() {
		if strings.HasPrefix(c.Workload.Name, "llama") {
			t.Errorf("%s runs on the cpu backend", c.ID())
		}
	}
	dir := t.TempDir()
	link, _ := topology.ParseClientLink("link", s.Link)
	if err := writeModeled(dir, s, link); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ModeledFile))
	if err != nil {
		t.Fatal(err)
	}
	var cells []ModeledCell
	if err := json.Unmarshal(data, &cells); err != nil {
		t.Fatal(err)
	}
	if len(cells) != 6 {
		t.Fatalf("%d modeled cells", len(cells))
	}
	got := map[string]ModeledCell{}
	for _, c := range cells {
		got[c.Cell] = c
		if !(c.ModeledS > 0) {
			t.Errorf("%s: modeled %g s", c.Cell, c.ModeledS)
		}
	}
	// Stateful prefill: 1,024 int32 ids up, one sampled id back: 4,100 B; a
	// decode step: 4 B each way. Local crosses no network. Naive's decode step
	// carries at least Llama-2-7B's fp32 weights, 6,738,415,616 × 4 B.
	for cell, want := range map[string]float64{"full/llama-prefill-1k": 4100, "full/llama-decode-1tok": 8, "native/llama-decode-1tok": 0} {
		if got[cell].Bytes != want {
			t.Errorf("%s: %g B, want %g", cell, got[cell].Bytes, want)
		}
	}
	if b := got["semantic-blind/llama-decode-1tok"].Bytes; b <= 0 || b >= 6_738_415_616*4 {
		t.Errorf("kv decode step: %g B: the KV cache both ways, not the weights", b)
	}
	s.Backend = "cuda"
	if len(s.RunCells()) != 12 {
		t.Errorf("cuda: %d cells run, want 12", len(s.RunCells()))
	}
	if m, _ := Modeled(s, link); len(m) != 0 {
		t.Errorf("cuda: %d model-only cells", len(m))
	}
}
