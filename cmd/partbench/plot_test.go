package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlotFromModelJSONAndCollectives(t *testing.T) {
	dir := t.TempDir()
	est := filepath.Join(dir, "est.json")
	if _, err := runCLI(t, "model", "--dry-run", "--config", "test/tp2pp2-tiny", "--compare", "test/pp4-tiny", "--format", "json", "-o", est); err != nil {
		t.Fatal(err)
	}
	svg := filepath.Join(dir, "b.svg")
	if _, err := runCLI(t, "plot", est, "--out", svg); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "time in prefill (s)", "time per decode step (ms)", "tp2pp2-tiny"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("breakdown SVG lacks %q", want)
		}
	}
	png := filepath.Join(dir, "c.png")
	if _, err := runCLI(t, "plot", "--kind", "collectives", "--preset", "dgx-h100x2", "--ranks", "8", "--out", png); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) {
		t.Fatalf("collectives PNG: %v", err)
	}
	// Errors name the flag and what is allowed.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", est}, "--output: required"},
		{[]string{"plot", est, "--out", filepath.Join(dir, "x.pdf")}, "--output: must end in .svg or .png"},
		{[]string{"plot", est, "--kind", "pie", "--out", svg}, "--kind: must be one of breakdown, sweep, collectives, scatter"},
		{[]string{"plot", est, "--kind", "sweep", "--out", svg}, "--kind sweep: " + est + " is partbench.model/v1; sweep needs partbench.sweep/v1"},
		{[]string{"plot", "--out", svg}, "plot: FILE required"},
		{[]string{"plot", "--kind", "collectives", "--ranks", "99", "--out", svg}, "--ranks: must be in [2, 16]"},
	} {
		_, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestPlotScatterAndUnknownSchema(t *testing.T) {
	dir := t.TempDir()
	fix := filepath.Join(dir, "cmp.json")
	os.WriteFile(fix, []byte(`{"schema":"partbench.compare/v1","rows":[{"metric":"tpot","unit":"s","measured":0.015,"modeled":0.014},{"metric":"ttft","unit":"s","measured":2.4,"modeled":2.3}]}`), 0o644)
	svg := filepath.Join(dir, "s.svg")
	if _, err := runCLI(t, "plot", fix, "--out", svg, "--tolerance", "0.05"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(svg); !bytes.Contains(data, []byte("modeled (s)")) || !bytes.Contains(data, []byte("±5 %")) {
		t.Error("scatter SVG lacks its axis label or band")
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"schema":"partbench.measured/v7"}`), 0o644)
	if _, err := runCLI(t, "plot", bad, "--out", svg); err == nil || !strings.Contains(err.Error(), `unknown schema "partbench.measured/v7"`) {
		t.Errorf("unknown schema: %v", err)
	}
}

// run --emulate-ranks' results.json (partbench.emulate/v1) plots as
// emulated against modeled on the config's hardware.
func TestPlotEmulation(t *testing.T) {
	dir := t.TempDir()
	if _, err := runCLI(t, "run", "--emulate-ranks", "4", "--config", "test/tp2pp2-tiny", "--backend", "cpu", "--iterations", "1", "--warmup", "0",
		"--output-dir", dir); err != nil {
		t.Fatal(err)
	}
	svg := filepath.Join(dir, "emu.svg")
	if _, err := runCLI(t, "plot", filepath.Join(dir, "results.json"), "--output", svg); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"emulated (s)", "modeled (H100", "Rank emulation: tp2pp2-tiny", ">TPOT<", ">memory per GPU (max)<"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("emulation scatter lacks %q", want)
		}
	}
}
