package suite

import (
	"strings"
	"testing"
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
