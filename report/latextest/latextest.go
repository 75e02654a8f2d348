// Package latextest compiles LaTeX that partbench writes the way a paper
// would use it: in a two-column article, with pdflatex, refusing overfull
// boxes (a table wider than its column or page) and errors.
//
// It owns the compile check only; what is compiled comes from the caller.
package latextest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// RequireEnv, set to 1 (CI sets it), turns a missing pdflatex or package
// into a failure instead of a skip.
const RequireEnv = "PARTBENCH_REQUIRE_LATEX"

var overfull = regexp.MustCompile(`Overfull \\[hv]box \(([0-9.]+)pt too (wide|high)\)`)

// Compile writes body into a two-column article that loads packages, runs
// pdflatex twice (captions and floats settle) and fails t on an error or
// any overfull box, quoting pdflatex's lines. It skips (or fails, with
// RequireEnv=1) when pdflatex or a package is missing.
func Compile(t *testing.T, name, body string, packages ...string) {
	t.Helper()
	missing := func(why string) {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1: %s", RequireEnv, why)
		}
		t.Skipf("%s: the LaTeX was written, its compile not checked (Debian: texlive-latex-recommended, texlive-science)", why)
	}
	pdflatex, err := exec.LookPath("pdflatex")
	if err != nil {
		missing("pdflatex not installed")
	}
	if kpse, err := exec.LookPath("kpsewhich"); err == nil {
		for _, p := range packages {
			out, err := exec.Command(kpse, p+".sty").Output()
			if err != nil || strings.TrimSpace(string(out)) == "" {
				missing("LaTeX package " + p + " not installed")
			}
		}
	}
	dir := t.TempDir()
	doc := "\\documentclass[twocolumn]{article}\n"
	if len(packages) > 0 {
		doc += "\\usepackage{" + strings.Join(packages, ",") + "}\n"
	}
	doc += "\\begin{document}\n" + body + "\n\\end{document}\n"
	tex := filepath.Join(dir, name+".tex")
	if err := os.WriteFile(tex, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	var out []byte
	for range 2 {
		cmd := exec.Command(pdflatex, "-interaction=nonstopmode", "-halt-on-error", name+".tex")
		cmd.Dir = dir
		if out, err = cmd.CombinedOutput(); err != nil {
			t.Fatalf("pdflatex %s: %v\n%s\n--- document ---\n%s", name, err, tail(string(out), 3000), doc)
		}
	}
	if m := overfull.FindAllString(string(out), -1); len(m) > 0 {
		t.Errorf("pdflatex %s: %s\n--- document ---\n%s", name, strings.Join(m, "; "), doc)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
