package cliflag

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestFormatOutputAliasesAndDefaults(t *testing.T) {
	var format, out, dir string
	var warm int
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	Format(fs, &format, TableFormats...)
	Output(fs, &out, "file", "o", "out")
	OutputDir(fs, &dir, ".", "dir", "results")
	fs.IntVar(&warm, "warmup", -1, "warm-up iterations (default: the config's)")
	DefaultInUsage(fs, "warmup")
	if format != Table || dir != "." {
		t.Fatalf("defaults: format %q dir %q", format, dir)
	}
	if err := fs.Parse([]string{"--format", "csv", "--out", "a.json", "--results", "r"}); err != nil {
		t.Fatal(err)
	}
	if format != CSV || out != "a.json" || dir != "r" {
		t.Errorf("format %q out %q dir %q", format, out, dir)
	}
	if !Changed(fs, "output", "out") || Changed(fs, "output") {
		t.Error("Changed: the alias, not --output, was set")
	}
	err := fs.Parse([]string{"--format", "yaml"})
	if err == nil || !strings.Contains(err.Error(), `--format: must be one of table, markdown, csv, json (got "yaml")`) {
		t.Errorf("--format yaml: %v", err)
	}
	if e := FlagErrorFunc(nil, err); e.Error() != `--format: must be one of table, markdown, csv, json (got "yaml")` {
		t.Errorf("FlagErrorFunc kept the preamble: %v", e)
	}
	help := fs.FlagUsages()
	for _, hidden := range []string{"--out ", "--results", "-o,"} {
		if strings.Contains(help, hidden) {
			t.Errorf("help shows the old spelling %q:\n%s", hidden, help)
		}
	}
	if strings.Contains(help, "(default -1)") || !strings.Contains(help, `(default ".")`) {
		t.Errorf("help defaults:\n%s", help)
	}
}

func TestUnderscores(t *testing.T) {
	var n int
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	Underscores(fs)
	fs.IntVar(&n, "warmup-iters", 5, "")
	if err := fs.Parse([]string{"--warmup_iters", "7"}); err != nil || n != 7 {
		t.Errorf("--warmup_iters 7: %d %v", n, err)
	}
}
