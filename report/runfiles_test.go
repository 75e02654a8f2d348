package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/stats"
)

func testRunDoc() *RunDoc {
	return &RunDoc{Schema: RunSchema, Backend: "cpu", Config: &configs.Config{Name: "tiny"},
		Comparison: []compare.Row{{Metric: "tpot", Label: "TPOT", Unit: "s", Measured: stats.Summary{N: 3, Mean: 2e-3}, Modeled: 1e-3, RelErr: -0.5}}}
}

func TestWriteRunFormats(t *testing.T) {
	d := testRunDoc()
	var want bytes.Buffer
	for format, write := range map[string]func(*bytes.Buffer) error{
		FormatJSON: func(b *bytes.Buffer) error { return RunJSON(b, d) },
		FormatCSV:  func(b *bytes.Buffer) error { return RunCSV(b, d) },
	} {
		want.Reset()
		if err := write(&want); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := WriteRun(&got, format, d, true); err != nil || got.String() != want.String() {
			t.Errorf("%s: %v\n%s\nwant\n%s", format, err, got.String(), want.String())
		}
	}
}

func TestWriteRunFiles(t *testing.T) {
	d := testRunDoc()
	var js, csv bytes.Buffer
	_ = RunJSON(&js, d)
	_ = RunCSV(&csv, d)
	dir := t.TempDir()
	var stdout bytes.Buffer
	if err := WriteRunFiles(dir, d, &stdout, false); err != nil || stdout.Len() != 0 {
		t.Fatalf("%v, stdout %q", err, stdout.String())
	}
	for name, want := range map[string]string{"results.json": js.String(), "results.csv": csv.String()} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
			t.Errorf("%s: %v\n%s\nwant\n%s", name, err, got, want)
		}
	}
	// A directory under a plain file cannot be made: the JSON goes to
	// stdout, unless it was printed there already.
	file := filepath.Join(dir, "results.json")
	for _, printed := range []bool{false, true} {
		stdout.Reset()
		err := WriteRunFiles(filepath.Join(file, "sub"), d, &stdout, printed)
		if err == nil {
			t.Fatalf("printed %v: no error for an impossible directory", printed)
		}
		if want := map[bool]string{false: js.String(), true: ""}[printed]; stdout.String() != want {
			t.Errorf("printed %v: stdout %q, want %q", printed, stdout.String(), want)
		}
	}
	if err := WriteRunFiles("", d, &stdout, false); err != nil {
		t.Errorf("no directory: %v", err)
	}
}

// Issue 24 item 11: a run whose document JSON cannot hold (a NaN) still
// writes results.csv; the error names results.json.
func TestWriteRunFilesNonFiniteKeepsWhatItCan(t *testing.T) {
	d := testRunDoc()
	d.Comparison[0].RelErr = math.NaN()
	dir := t.TempDir()
	var stdout bytes.Buffer
	err := WriteRunFiles(dir, d, &stdout, false)
	if err == nil || !strings.Contains(err.Error(), "cannot write [results.json]") || !strings.Contains(err.Error(), "[results.csv] written") {
		t.Fatalf("err = %v, want results.json named as missing", err)
	}
	if b, rerr := os.ReadFile(filepath.Join(dir, "results.csv")); rerr != nil || !strings.Contains(string(b), "tpot") {
		t.Errorf("results.csv: %v %q: lost with results.json", rerr, b)
	}
}

// Issue 24 item 5: a results.json in --output-dir that is a symlink stays
// one; the file it names gets the results.
func TestWriteRunFilesKeepsASymlinkedResultsFile(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(t.TempDir(), "kept.json")
	if err := os.WriteFile(keep, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "results.json")
	if err := os.Symlink(keep, link); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := WriteRunFiles(dir, testRunDoc(), &stdout, false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("results.json is no longer a symlink (%v)", err)
	}
	if b, _ := os.ReadFile(keep); !strings.Contains(string(b), RunSchema) {
		t.Errorf("the symlink's target holds %.60q, want the results", b)
	}
}
