package configs

import (
	"strings"
	"testing"
)

func TestWorkloadOverrides(t *testing.T) {
	cfg, err := Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	prompt := cfg.Workload.Context - cfg.Workload.OutputTokens
	out := cfg.Workload.OutputTokens
	// Only the output length: the prompt stays, the context grows by the difference.
	c := *cfg
	if err := (WorkloadOverrides{OutputLen: out + 3}).Apply(&c); err != nil {
		t.Fatal(err)
	}
	if c.Workload.OutputTokens != out+3 || c.Workload.Context != prompt+out+3 || c.Workload.Batch != cfg.Workload.Batch {
		t.Errorf("--output-len %d: workload %+v (prompt %d)", out+3, c.Workload, prompt)
	}
	// All three: batch 4, prompt 7, output 5 → context 12.
	c = *cfg
	c.Parallel.Microbatches = 1
	if err := (WorkloadOverrides{Batch: 4, InputLen: 7, OutputLen: 5}).Apply(&c); err != nil {
		t.Fatal(err)
	}
	if c.Workload.Batch != 4 || c.Workload.Context != 12 || c.Workload.OutputTokens != 5 {
		t.Errorf("workload %+v, want batch 4, context 12, output 5", c.Workload)
	}
	// None: nothing changes.
	c = *cfg
	if err := (WorkloadOverrides{}).Apply(&c); err != nil || c.Workload.Context != cfg.Workload.Context {
		t.Errorf("no override: %v, %+v", err, c.Workload)
	}
	for _, bad := range []struct {
		w    WorkloadOverrides
		mb   int
		want string
	}{
		{WorkloadOverrides{Batch: -1}, 1, "--batch-size: must be ≥ 1 (got -1"},
		{WorkloadOverrides{InputLen: -2}, 1, "--input-len: must be ≥ 1 (got -2"},
		{WorkloadOverrides{Batch: 3}, 2, "--batch-size 3: config"},
		{WorkloadOverrides{OutputLen: 1}, 1, "output"},
	} {
		c = *cfg
		c.Parallel.Microbatches = bad.mb
		c.Workload.Batch = 4
		if err := bad.w.Apply(&c); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.w, err, bad.want)
		}
	}
}

// A dry-run config needs no [run]: without one it gets DefaultRun; a [run]
// that is there is still checked (iterations = 0 is refused).
func TestRunSectionOptional(t *testing.T) {
	data, err := ReadFile("test/single-tiny.toml")
	if err != nil {
		data2, err2 := Files.ReadFile("test/single-tiny.toml")
		if err2 != nil {
			t.Fatal(err, err2)
		}
		data = data2
	}
	text := string(data)
	i := strings.Index(text, "[run]")
	if i < 0 {
		t.Fatal("test/single-tiny has no [run] to cut")
	}
	cfg, err := Parse(strings.NewReader(text[:i]), "norun.toml")
	if err != nil {
		t.Fatalf("a config without [run]: %v", err)
	}
	if cfg.Run != DefaultRun {
		t.Errorf("run %+v, want the default %+v", cfg.Run, DefaultRun)
	}
	_, err = Parse(strings.NewReader(text[:i]+"[run]\niterations = 0\n"), "zero.toml")
	if err == nil || !strings.Contains(err.Error(), "run.iterations") {
		t.Errorf("explicit iterations = 0: %v", err)
	}
}
