package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/sim"
)

// ReadDocFile reads a saved model document as ReadDoc reads its bytes, and a
// missing file is an error starting "compare: " that names it.
func TestReadDocFile(t *testing.T) {
	var b strings.Builder
	if err := ModelJSON(&b, "test", []*sim.Estimate{estimate("a", 1, 0.01, 100, 1<<30, 0)}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDocFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReadDoc(strings.NewReader(b.String()), path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Schema != want.Schema || len(Records(got)) != 1 || len(Records(want)) != 1 || got.Model == nil || got.Name != path {
		t.Errorf("ReadDocFile: %+v, want %+v", got, want)
	}
	missing := filepath.Join(t.TempDir(), "none.json")
	if _, err := ReadDocFile(missing); err == nil || !strings.HasPrefix(err.Error(), "compare: ") || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
}
