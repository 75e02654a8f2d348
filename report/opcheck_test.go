package report

import (
	"reflect"
	"testing"

	"github.com/partbench/partbench/compare"
)

func TestOpCheckGrid(t *testing.T) {
	g := OpCheckGrid([]compare.OpCheckRow{
		{Phase: "prefill", Kind: "gemm", Ranks: 2, MeasuredS: 3.5e-3, ModeledS: 3e-3, Ratio: 3.0 / 3.5, TableOps: 1, RooflineOps: 1},
		{Phase: "decode", Kind: "attention", Ranks: 1, MeasuredS: 80e-6, ModeledS: 86.6e-6, Ratio: 1.0825, TableOps: 8},
		{Phase: "decode", Kind: "all_reduce", Ranks: 1, ModeledS: 1e-6, RooflineOps: 2},
	})
	want := [][]string{
		{"prefill", "gemm", "2", "3500.0", "3000.0", "0.86", "table 1, roofline 1"},
		{"decode", "attention", "1", "80.0", "86.6", "1.08", "table"},
		{"decode", "all_reduce", "1", "0.0", "1.0", "n/a", "roofline"},
	}
	if !reflect.DeepEqual(g.Rows, want) {
		t.Errorf("rows %q, want %q", g.Rows, want)
	}
}
