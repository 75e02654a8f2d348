package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docCommand is one partbench command line found in a document.
type docCommand struct {
	file string
	line int
	args []string
	text string
}

// placeholder matches the synopsis forms of a usage line: optional parts,
// alternatives, ellipses and upper-case names the reader replaces.
var placeholder = regexp.MustCompile(`\[|\||…|\.\.\.|\b[A-Z][A-Z0-9_]*[A-Z0-9]\b|\bN\b|\bK\b|\bT\b|PORT`)

// docCommands extracts the partbench command lines of a Markdown file's
// code (fenced blocks and four-space indented blocks): comments after " #"
// dropped, continuation lines joined.
func docCommands(t *testing.T, path string) []docCommand {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docCommand
	sc := bufio.NewScanner(f)
	fenced, indented, blank, n := false, false, true, 0
	var pending *docCommand
	for sc.Scan() {
		n++
		raw := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(raw), "```") {
			fenced = !fenced
			continue
		}
		// An indented block starts after a blank line (an indented line after
		// prose continues a list item) and ends at an unindented one.
		isIndented := strings.HasPrefix(raw, "    ") || strings.HasPrefix(raw, "\t")
		indented = isIndented && (indented || blank)
		blank = strings.TrimSpace(raw) == ""
		code := fenced || indented
		line := strings.TrimSpace(raw)
		if pending != nil {
			pending.text = strings.TrimSpace(pending.text) + " " + strings.TrimSuffix(line, "\\")
			if !strings.HasSuffix(line, "\\") {
				out = append(out, *pending)
				pending = nil
			}
			continue
		}
		line = strings.TrimPrefix(line, "$ ")
		if !code || !strings.HasPrefix(line, "partbench ") {
			continue
		}
		c := docCommand{file: filepath.Base(path), line: n, text: strings.TrimSuffix(line, "\\")}
		if strings.HasSuffix(line, "\\") {
			pending = &c
			continue
		}
		out = append(out, c)
	}
	for i := range out {
		if j := strings.Index(out[i].text, " #"); j >= 0 {
			out[i].text = out[i].text[:j]
		}
		out[i].text = strings.TrimSpace(out[i].text)
		out[i].args = strings.Fields(out[i].text)[1:]
	}
	return out
}

// why says why a documented command is not run here ("" to run it).
func whyNotRun(c docCommand) string {
	s := " " + c.text + " "
	switch {
	case placeholder.MatchString(strings.TrimPrefix(c.text, "partbench ")):
		return "a synopsis"
	case strings.Contains(s, "--backend cuda"), strings.Contains(s, " nccl-check"),
		strings.HasPrefix(c.text, "partbench topo") && !strings.Contains(s, "--topology"):
		return "needs a GPU"
	case strings.Contains(s, "--nnodes"), strings.Contains(s, " serve "), strings.Contains(s, "--server "), strings.Contains(s, "--serve-engine"):
		return "needs a second machine or a running server"
	case strings.Contains(s, " suite ") && strings.Contains(s, "--spec seed-"), strings.Contains(s, "--gpus 4096"),
		strings.Contains(s, "--emulate-ranks 16"):
		return "takes minutes"
	case strings.Contains(s, "--config tp8pp2 ") && strings.HasPrefix(c.text, "partbench run"):
		return "runs the 16-rank seed for real"
	}
	for _, in := range []string{"results.json", "a.json", "b.json", "all_reduce.txt", "ar8.txt", "results/", "my.toml", "latency.json", "calib-1.toml"} {
		if strings.Contains(s, " "+in) && !strings.Contains(s, "--output-dir "+in) {
			return "reads the user's " + in
		}
	}
	return ""
}

// Every command the README and docs/*.md show runs as written: each
// document's commands run in order in one fresh directory (so a command can
// use the file an earlier one wrote, as a reader following along would), and
// each must exit 0. Commands that need a GPU, a second machine, the user's
// own files or minutes are listed by the test, not run.
func TestDocumentedCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented command (-short skips it)")
	}
	bin := partbenchBinary(t)
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{"../../README.md"}, docs...)
	ran, skipped := 0, map[string]int{}
	for _, doc := range docs {
		cmds := docCommands(t, doc)
		if len(cmds) == 0 {
			continue
		}
		dir := docDir(t)
		for _, c := range cmds {
			if why := whyNotRun(c); why != "" {
				skipped[why]++
				t.Logf("not run (%s): %s:%d %s", why, c.file, c.line, c.text)
				continue
			}
			args := c.args
			r := runIn(t, dir, 3*time.Minute, bin, args...)
			ran++
			if r.code != 0 {
				t.Errorf("%s:%d %q exited %d:\n%s", c.file, c.line, c.text, r.code, tail(r.out, 2000))
			}
		}
	}
	t.Logf("ran %d documented commands; not run: %v", ran, skipped)
	if ran < 20 {
		t.Errorf("ran only %d documented commands: the extraction lost them", ran)
	}
}

// docDir is a fresh directory laid out as a reader's checkout would be
// for the documents' examples: the repository's checkpoint and serving
// fixtures at checkpoint/ and serving/, and the prompts file the README's
// echo line writes.
func docDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"checkpoint", "serving"} { // fixtures the examples name by repository path
		abs, err := filepath.Abs(filepath.Join("../..", d))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts.json"), []byte("[[1, 2, 3, 4], [5, 6, 7, 8]]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// runIn runs the binary in dir with a clean launcher environment.
func runIn(t *testing.T, dir string, timeout time.Duration, bin string, args ...string) runResult {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	return runCmd(t, timeout, cleanEnv(), bin, args...)
}

func TestDocCommandExtraction(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "x.md")
	text := "Intro partbench model --dry-run (prose, not run)\n\n```sh\npartbench model --dry-run   # a comment\n$ partbench presets\npartbench l2 [--config FILE]\n```\n\n" +
		"    partbench collectives all_reduce -b 8 \\\n        -e 1M\n"
	if err := os.WriteFile(md, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got := docCommands(t, md)
	want := []string{"partbench model --dry-run", "partbench presets", "partbench l2 [--config FILE]", "partbench collectives all_reduce -b 8 -e 1M"}
	if len(got) != len(want) {
		t.Fatalf("got %d commands %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].text != w {
			t.Errorf("command %d = %q, want %q", i, got[i].text, w)
		}
	}
	if got[0].line != 4 || whyNotRun(got[2]) != "a synopsis" || whyNotRun(got[0]) != "" {
		t.Errorf("line %d, synopsis %q, plain %q", got[0].line, whyNotRun(got[2]), whyNotRun(got[0]))
	}
}
