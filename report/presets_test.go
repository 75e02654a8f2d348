package report

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
)

// TestPresetsGrid: one row per kind, test strategies prefixed "test/".
func TestPresetsGrid(t *testing.T) {
	g := PresetsGrid()
	if len(g.Rows) != 6 {
		t.Fatalf("rows = %d, want 6 kinds", len(g.Rows))
	}
	if rt := g.Rows[5]; rt[0] != "runtime" || rt[1] != "[runtime] preset, --runtime" || !strings.Contains(rt[2], "vllm") {
		t.Errorf("runtime row = %q", rt)
	}
	test := g.Rows[1]
	if test[0] != "test strategy" || test[1] != "--config test/NAME" {
		t.Errorf("row 2 = %q", test)
	}
	names := configs.Presets("test")
	if len(names) == 0 || !strings.HasPrefix(test[2], "test/"+names[0]) {
		t.Errorf("test strategies %q, want test/%v first", test[2], names)
	}
}
