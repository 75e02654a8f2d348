package main

import (
	"bytes"
	"encoding/json"
	"github.com/partbench/partbench/report/latextest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/stats"
	"github.com/partbench/partbench/suite"
)

// TestSuiteKillResume runs the embedded quick suite with spawned servers on
// loopback, SIGKILLs it mid-suite, resumes, and checks the log and every
// output file.
func TestSuiteKillResume(t *testing.T) {
	bin := partbenchBinary(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "results")
	cmd := exec.Command(bin, "suite", "--out", out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the spawned servers die with it
	cmd.Env = cleanEnv()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(out, suite.RunsFile)
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(log)
		if bytes.Count(b, []byte("\n")) >= 30 {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("the suite logged %d runs in 60 s", bytes.Count(b, []byte("\n")))
		}
		time.Sleep(5 * time.Millisecond)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	before, _, err := suite.ReadLog(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) >= 100 {
		// The suite finished before the kill landed (a fast machine): leave
		// the log as a kill during run 31 leaves it, 30 whole lines and a
		// torn one, so the resume below is tested on every machine.
		before = killedLog(t, log, 30)
	}
	res := exec.Command(bin, "suite", "--out", out, "--resume")
	res.Env = cleanEnv()
	stdout, err := res.Output()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, stdout)
	}
	complete := 0
	for _, n := range countCells(before) {
		if n >= 3 {
			complete++
		}
	}
	if want := regexp.MustCompile(`resume: (\d+) of 25 cells were complete`).FindStringSubmatch(string(stdout)); want == nil || want[1] != itoa(complete) {
		t.Errorf("resume says %q, want %d complete cells", want, complete)
	}
	after, _, err := suite.ReadLog(log)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range before {
		if a, _ := json.Marshal(after[i]); string(a) != string(mustJSON(r)) {
			t.Fatalf("run %d changed on resume", i)
		}
	}
	m, err := suite.Measured(after)
	if err != nil {
		t.Fatal(err) // a duplicate (cell, run)
	}
	if len(m) != 75 {
		t.Errorf("%d measured runs, want 25 cells × 3", len(m))
	}
	for c, n := range countCells(m) {
		if n != 3 {
			t.Errorf("cell %s: %d measured runs", c, n)
		}
	}
	checkSuiteFiles(t, out)
}

// killedLog cuts the run log at path to its first n lines and half of the
// next (a write the kill tore), and returns the records it then holds.
func killedLog(t *testing.T, path string, n int) []suite.Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) <= n {
		t.Fatalf("%s: %d lines, want more than %d to cut", path, len(lines), n)
	}
	cut := append(bytes.Join(lines[:n], nil), lines[n][:len(lines[n])/2]...)
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	recs, _, err := suite.ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("%s cut to %d lines reads as %d runs", path, n, len(recs))
	}
	return recs
}

func countCells(rs []suite.Record) map[string]int {
	n := map[string]int{}
	for _, r := range rs {
		if !r.Warmup {
			n[r.Cell]++
		}
	}
	return n
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

var pageRE = regexp.MustCompile(`/Type\s*/Page[^s]`)

func checkSuiteFiles(t *testing.T, dir string) {
	t.Helper()
	for _, f := range report.SuiteFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		switch filepath.Ext(f) {
		case ".pdf":
			if !bytes.HasPrefix(b, []byte("%PDF-")) || !bytes.Contains(b, []byte("%%EOF")) {
				t.Errorf("%s: not a whole PDF", f)
			}
			if n := len(pageRE.FindAll(b, -1)); n != 1 {
				t.Errorf("%s: %d pages, want 1", f, n)
			}
		case ".json":
			var r suite.Results
			if err := json.Unmarshal(b, &r); err != nil || !r.Complete || len(r.Cells) != 25 {
				t.Errorf("%s: %v, complete %v, %d cells", f, err, r.Complete, len(r.Cells))
			}
			for _, c := range r.Cells {
				if c.LatencyS.N != 3 || !(c.LatencyS.CILow <= c.LatencyS.Mean && c.LatencyS.Mean <= c.LatencyS.CIHigh) || c.Mismatches != 0 {
					t.Errorf("%s: %s: %+v", f, c.Cell, c.LatencyS)
				}
				if c.Mode != "local" && c.VsLocal == nil {
					t.Errorf("%s: %s has no comparison with local", f, c.Cell)
				}
			}
		case ".tex":
			checkLaTeX(t, f, string(b))
		}
	}
}

// checkLaTeX checks balanced braces and environments and the packages'
// commands (TestSuiteLaTeXCompiles compiles a table with pdflatex).
func checkLaTeX(t *testing.T, name, s string) {
	t.Helper()
	depth := 0
	for i, r := range s {
		if r == '{' && (i == 0 || s[i-1] != '\\') {
			depth++
		}
		if r == '}' && (i == 0 || s[i-1] != '\\') {
			depth--
		}
		if depth < 0 {
			t.Fatalf("%s: unbalanced } at byte %d", name, i)
		}
	}
	if depth != 0 {
		t.Errorf("%s: %d unclosed braces", name, depth)
	}
	for _, env := range []string{"table", "tabular"} {
		if strings.Count(s, `\begin{`+env+`}`) != 1 || strings.Count(s, `\end{`+env+`}`) != 1 {
			t.Errorf("%s: \\begin/\\end{%s} unbalanced", name, env)
		}
	}
	for _, cmd := range []string{`\toprule`, `\midrule`, `\bottomrule`, `S[table-format=`} {
		if !strings.Contains(s, cmd) {
			t.Errorf("%s: no %s", name, cmd)
		}
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasSuffix(line, `\\`) && strings.Count(line, "&") != 4 {
			t.Errorf("%s: row %q has %d cells, want 5", name, line, strings.Count(line, "&")+1)
		}
	}
}

// The speedup table from fixed results: the syntax checks always run; the
// compile needs pdflatex with siunitx and says so when it is missing.
func TestSuiteLaTeXCompiles(t *testing.T) {
	lat := func(xs ...float64) stats.Summary { return stats.Summarize(xs, stats.Positive) }
	loc, nai := lat(1e-3, 2e-3, 3e-3), lat(2e-3, 4e-3, 6e-3)
	cmp, err := suite.Compare("local", []float64{1e-3, 2e-3, 3e-3}, []float64{2e-3, 4e-3, 6e-3})
	if err != nil {
		t.Fatal(err)
	}
	r := &suite.Results{Spec: "fixed_spec", Runs: 3, Warmup: 1,
		Workloads: []suite.Workload{{Name: "smoke"}, {Name: "long_prompt"}},
		Cells: []suite.CellResult{
			{Cell: "local/smoke", Baseline: "local", Workload: "smoke", LatencyS: loc},
			{Cell: "naive/smoke", Baseline: "naive", Workload: "smoke", LatencyS: nai, VsLocal: &cmp},
			{Cell: "local/long_prompt", Baseline: "local", Workload: "long_prompt", LatencyS: loc},
		}}
	var b strings.Builder
	if err := report.SuiteLaTeX(&b, r); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	checkLaTeX(t, "fixed", s)
	// naive against local: the ratio of geometric means, exactly 0.5.
	if !strings.Contains(s, ` & naive & 4 & 0.50 & {--}`) || !strings.Contains(s, `fixed\_spec`) {
		t.Errorf("table lacks the naive row (4 ms, 0.50 vs local) or the escaped spec name:\n%s", s)
	}
	latextest.Compile(t, "suite", s, "booktabs", "siunitx")
}
