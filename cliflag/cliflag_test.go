package cliflag

import (
	"errors"
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

func TestFiniteFloat(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want float64
		err  string
	}{
		{"0.25", 0.25, ""},
		{"-3", -3, ""},
		{"1e3", 1000, ""},
		{"nan", 0, `--tol: must be a finite number (got "nan")`},
		{"NaN", 0, `--tol: must be a finite number (got "NaN")`},
		{"inf", 0, `--tol: must be a finite number (got "inf")`},
		{"-Inf", 0, `--tol: must be a finite number (got "-Inf")`},
		{"1e999", 0, `--tol: must be a finite number (got "1e999")`}, // ParseFloat: ±Inf with ErrRange
		{"x", 0, `--tol: must be a number (got "x")`},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var v float64
		FiniteFloat(fs, &v, "tol", 0.5, "tolerance")
		err := fs.Parse([]string{"--tol=" + c.arg})
		if c.err == "" {
			if err != nil || v != c.want {
				t.Errorf("%s: got %v, %v; want %v", c.arg, v, err, c.want)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Error() != c.err {
			t.Errorf("%s: err = %v, want %q", c.arg, err, c.err)
		}
		if v != 0.5 {
			t.Errorf("%s: value changed to %v on a refused flag", c.arg, v)
		}
	}
	// The default shows in help as a number.
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var v float64
	FiniteFloat(fs, &v, "tol", 0.05, "tolerance")
	if f := fs.Lookup("tol"); f.DefValue != "0.05" || f.Value.Type() != "float64" {
		t.Errorf("DefValue %q, Type %q", f.DefValue, f.Value.Type())
	}
}
