package report

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The LaTeX compiles with pdflatex (texlive-latex-recommended), in a
// two-column article whose column the table must fit.
func TestLaTeXCompiles(t *testing.T) {
	pdflatex, err := exec.LookPath("pdflatex")
	if err != nil {
		t.Skipf("pdflatex not installed (apt-get install texlive-latex-recommended): %v", err)
	}
	g := Grid{Title: "Comparison of tp8_pp2 & layerwise16 (Δ in %)", Header: []string{"record", "metric", "unit", "a.json", "b.json", "Δ b.json (%)"},
		Rows: [][]string{
			{"tp8pp2", "max_total_bytes_per_gpu", "B", "2.99192e+10", "3.1e+10", "+3.61"},
			{"tp8pp2", "tpot_s", "s", "0.0141793", "0.0139", "-1.97"},
			{"layerwise16", "tokens_per_s", "tok/s", "1120.2", "—", "n/a"},
		},
		Notes: []string{"µbatches ≤ 64 → 100% checked"}}
	dir := t.TempDir()
	var b strings.Builder
	if err := WriteLaTeX(&b, g); err != nil {
		t.Fatal(err)
	}
	doc := "\\documentclass[twocolumn]{article}\n\\usepackage{booktabs,graphicx}\n\\begin{document}\n" + b.String() + "\\end{document}\n"
	if err := os.WriteFile(filepath.Join(dir, "t.tex"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pdflatex, "-interaction=nonstopmode", "-halt-on-error", "t.tex")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pdflatex: %v\n%s\n%s", err, doc, out)
	}
	if strings.Contains(string(out), "Overfull \\hbox") {
		t.Errorf("the table does not fit the column:\n%s", out)
	}
}
