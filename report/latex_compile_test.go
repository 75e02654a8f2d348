package report

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/report/latextest"
)

// The LaTeX compiles with pdflatex in a two-column article whose column or
// page the table must fit, without being scaled: a narrow table sits in a
// column, a wide one spans the page, type never smaller than \scriptsize.
func TestLaTeXCompiles(t *testing.T) {
	narrow := Grid{Title: "Comparison of tp8_pp2 & layerwise16 (Δ in %)", Header: []string{"record", "metric", "a", "b", "Δ (%)"},
		Rows: [][]string{
			{"tp8pp2", "memory (B)", "2.99192e+10", "3.1e+10", "+3.61"},
			{"tp8pp2", "TPOT (s)", "0.0141793", "0.0139", "-1.97"},
			{"layerwise16", "TPS", "1120.2", "—", "n/a"},
		},
		Notes: []string{"µbatches ≤ 64 → 100% checked"}}
	wide := Grid{Title: "Twelve columns", Header: []string{"strategy", "phase", "GPUs", "TP", "PP", "µbatches", "TTFT (s)", "TPOT (ms)", "TPS (tok/s)", "HBM floor TPOT (ms)", "bubble (%)", "bottleneck"}}
	for i := range 12 {
		wide.Rows = append(wide.Rows, []string{fmt.Sprintf("layerwise%d", i), "decode", "16", "1", "16", "16", "2.357", "32.03", "3996", "9.12", "24.97", "latency"})
	}
	var b strings.Builder
	if err := WriteLaTeX(&b, narrow, wide); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if strings.Contains(s, "resizebox") || !strings.Contains(s, "\\begin{table}[htbp]") || !strings.Contains(s, "\\begin{table*}[htbp]") {
		t.Errorf("want the narrow table in a column, the wide one across the page, nothing scaled:\n%s", s)
	}
	latextest.Compile(t, "grids", s, "booktabs")
}

// compare --format latex on two dry runs: 22 rows, metrics in words, files
// by base name, no paths in the caption; it fits without scaling.
func TestCompareLaTeXCompiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "sub", "before.json"), filepath.Join(dir, "after.json")
	es := tinyEstimates(t, "test/tp2pp2-tiny", "test/single-tiny")
	var docs []*Doc
	for _, name := range []string{a, b} {
		var buf strings.Builder
		if err := ModelJSON(&buf, "dev", es); err != nil {
			t.Fatal(err)
		}
		d, err := ReadDoc(strings.NewReader(buf.String()), name)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	c, err := Compare(docs)
	if err != nil {
		t.Fatal(err)
	}
	g := c.LaTeXGrid()
	var tex strings.Builder
	if err := WriteLaTeX(&tex, g); err != nil {
		t.Fatal(err)
	}
	s := tex.String()
	if len(g.Rows) < 20 || strings.Contains(s, dir) || strings.Contains(s, "max\\_total\\_bytes") || !strings.Contains(s, "memory per GPU (max) (B)") ||
		!strings.Contains(s, "\\caption{after against before") {
		t.Errorf("%d rows; want ≥ 20, no paths, metrics in words, files by base name:\n%s", len(g.Rows), s)
	}
	latextest.Compile(t, "compare", s, "booktabs")
}
