package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteEmulation(t *testing.T) {
	es := tinyEstimates(t, "test/tp2pp2-tiny", "test/tp2pp2-tiny")
	allocated := []int64{1, 2, 3, 4}
	g := EmulationGrid("cpu", es[0], es[1], allocated)
	g.Notes = append(g.Notes, "a backend note")
	var want bytes.Buffer
	if err := WriteTables(&want, FormatTable, "run --emulate-ranks", "dev", g); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d := EmulationDoc{Version: "dev", Backend: "cpu", Ranks: 4, Emulated: es[0], Modeled: es[1], AllocatedBytes: allocated}
	var got bytes.Buffer
	if err := WriteEmulation(&got, FormatTable, dir, &d, []string{"a backend note"}); err != nil || got.String() != want.String() {
		t.Fatalf("%v\n%s\nwant\n%s", err, got.String(), want.String())
	}
	if js, err := os.ReadFile(filepath.Join(dir, "results.json")); err != nil || !strings.Contains(string(js), `"schema": "`+EmulationSchema+`"`) {
		t.Errorf("results.json: %v\n%s", err, js)
	}
	var csv bytes.Buffer
	_ = WriteCSV(&csv, g)
	if c, err := os.ReadFile(filepath.Join(dir, "results.csv")); err != nil || string(c) != csv.String() {
		t.Errorf("results.csv: %v\n%s\nwant\n%s", err, c, csv.String())
	}
	// A directory under a plain file: the error names --output-dir.
	bad := filepath.Join(dir, "results.csv", "sub")
	if err := WriteEmulation(&got, FormatTable, bad, &d, nil); err == nil || !strings.HasPrefix(err.Error(), "--output-dir: ") {
		t.Errorf("bad dir: %v", err)
	}
}
