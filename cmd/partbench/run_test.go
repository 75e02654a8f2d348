package main

import (
	"slices"
	"testing"
	"time"
)

// A child of `run --nproc` gets every flag that changes what it runs or prints.
func TestRankArgsCarryTheFlags(t *testing.T) {
	o := &runOptions{config: "test/tp2pp2-tiny", backend: "cpu", outDir: "/tmp/x", format: "json", tolerance: 0.2,
		joinTimeout: 5 * time.Second, warmup: 0, iterations: 7, calibration: "c.toml", trace: "t.json", strict: true, compare: false}
	got := o.rankArgs()
	for _, want := range [][]string{
		{"--config", "test/tp2pp2-tiny"}, {"--backend", "cpu"}, {"--output-dir", "/tmp/x"}, {"--format", "json"},
		{"--tolerance", "0.2"}, {"--join-timeout", "5s"}, {"--warmup", "0"}, {"--iterations", "7"},
		{"--calibration", "c.toml"}, {"--trace", "t.json"}, {"--strict"}, {"--compare-model=false"},
	} {
		i := slices.Index(got, want[0])
		if i < 0 || (len(want) == 2 && (i+1 >= len(got) || got[i+1] != want[1])) {
			t.Errorf("child args %v lack %v", got, want)
		}
	}
	if got[0] != "run" || slices.Contains(got, "--nproc") {
		t.Errorf("child args %v: want a plain `run` without --nproc", got)
	}
	// Defaults stay out: the config's warm-up and iterations, and the comparison on.
	o = &runOptions{config: "c", backend: "cpu", warmup: -1, iterations: -1, compare: true}
	for _, f := range []string{"--warmup", "--iterations", "--compare-model=false", "--calibration", "--trace"} {
		if slices.Contains(o.rankArgs(), f) {
			t.Errorf("default child args carry %s", f)
		}
	}
}
