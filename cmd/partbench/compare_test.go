package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompareModelFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if _, err := runCLI(t, "model", "--dry-run", "--config", "test/tp2pp2-tiny", "--compare", "test/pp4-tiny", "--format", "json", "-o", a); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, "model", "--dry-run", "--config", "test/tp2pp2-tiny", "--format", "json", "-o", b); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "compare", a, b)
	if err != nil {
		t.Fatal(err)
	}
	// The same strategy estimated twice differs by 0; pp4-tiny is only in a.
	for _, want := range []string{"tp2pp2-tiny", "tpot_s", "0.00", "pp4-tiny: not in " + b, "Δ " + b + " (%)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	tex, err := runCLI(t, "compare", a, b, "--format", "latex")
	if err != nil {
		t.Fatal(err)
	}
	// For a paper: metrics in words, files by base name, no directory.
	for _, want := range []string{`\toprule`, `\midrule`, `\bottomrule`, `TPOT (s)`, `(\%)`, `pp4-tiny: not in b`, `\caption{b against a`} {
		if !strings.Contains(tex, want) {
			t.Errorf("latex lacks %q:\n%s", want, tex)
		}
	}
	if strings.Contains(tex, dir) || strings.Contains(tex, `tpot\_s`) {
		t.Errorf("latex shows a path or a snake_case key:\n%s", tex)
	}
	if _, err := runCLI(t, "compare", a, b, "--format", "html"); err == nil || !strings.Contains(err.Error(), "--format: must be one of table, markdown, csv, json, latex") {
		t.Errorf("format error: %v", err)
	}
	if _, err := runCLI(t, "compare", a); err == nil {
		t.Error("one file accepted")
	}
}

// compare --format json writes partbench.comparison/v1, which plot draws.
func TestCompareJSONPlots(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	for _, p := range []string{a, b} {
		if _, err := runCLI(t, "model", "--dry-run", "--config", "test/tp2pp2-tiny", "--format", "json", "-o", p); err != nil {
			t.Fatal(err)
		}
	}
	cmp := filepath.Join(dir, "cmp.json")
	if _, err := runCLI(t, "compare", a, b, "--format", "json", "-o", cmp); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cmp)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Schema string   `json:"schema"`
		Of     string   `json:"of"`
		Files  []string `json:"files"`
		Rows   []struct {
			Record  string     `json:"record"`
			Values  []*float64 `json:"values"`
			RelDiff []*float64 `json:"rel_diff"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &d); err != nil || d.Schema != "partbench.comparison/v1" || d.Of != "partbench.model/v1" || len(d.Files) != 2 || len(d.Rows) == 0 {
		t.Fatalf("compare json: %v %+v", err, d)
	}
	// The same strategy estimated twice: every difference is 0.
	for _, r := range d.Rows {
		if r.Record != "tp2pp2-tiny" || len(r.Values) != 2 || r.RelDiff[0] != nil || r.RelDiff[1] != nil && *r.RelDiff[1] != 0 {
			t.Errorf("row %+v", r)
		}
	}
	png := filepath.Join(dir, "cmp.png")
	if _, err := runCLI(t, "plot", cmp, "--output", png); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
		t.Fatalf("plot of the comparison: %v", err)
	}
}
