package report

import (
	"reflect"
	"testing"

	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/sim"
)

func TestOpCheckGrid(t *testing.T) {
	g := OpCheckGrid([]compare.OpCheckRow{
		{Phase: "prefill", Kind: "gemm", Ranks: 2, MeasuredS: 3.5e-3, ModeledS: 3e-3, Ratio: 3.0 / 3.5, TableOps: 1, RooflineOps: 1, Clock: "host"},
		{Phase: "decode", Kind: "attention", Ranks: 1, MeasuredS: 80e-6, ModeledS: 86.6e-6, Ratio: 1.0825, TableOps: 8, Clock: "device"},
		{Phase: "decode", Kind: "all_reduce", Ranks: 1, ModeledS: 1e-6, RooflineOps: 2},
		{Phase: "decode", Kind: "gemm", Ranks: 1, ModeledS: 98.72e-3, TableOps: 4, Clock: "enqueue"},
	})
	want := [][]string{
		{"prefill", "gemm", "2", "3500.0", "host", "3000.0", "0.86", "table 1, roofline 1"},
		{"decode", "attention", "1", "80.0", "device", "86.6", "1.08", "table"},
		{"decode", "all_reduce", "1", "0.0", "—", "1.0", "n/a", "roofline"},
		{"decode", "gemm", "1", "—", "enqueue", "98720.0", "—", "table"}, // an async device's enqueue: no measured time, no ratio
	}
	if !reflect.DeepEqual(g.Rows, want) {
		t.Errorf("rows %q, want %q", g.Rows, want)
	}
}

func TestPricingColumn(t *testing.T) {
	g := Grid{Header: []string{"rank"}, Rows: [][]string{{"0"}, {"1"}}}
	e := &sim.Estimate{Ranks: sim.RanksOf([]sim.RankEstimate{{Rank: 0, TableOps: 40, ModelOps: 3}, {Rank: 1, ModelOps: 43}})}
	pricingColumn(&g, e)
	if want := [][]string{{"0", "40 / 3"}, {"1", "0 / 43"}}; !reflect.DeepEqual(g.Rows, want) || len(g.Header) != 2 || len(g.Notes) != 1 {
		t.Errorf("grid %+v, want rows %q", g, want)
	}
	// No op from a table: the grid stays as it was.
	plain := Grid{Header: []string{"rank"}, Rows: [][]string{{"0"}}}
	pricingColumn(&plain, &sim.Estimate{Ranks: sim.RanksOf([]sim.RankEstimate{{Rank: 0, ModelOps: 43}})})
	if len(plain.Header) != 1 || len(plain.Rows[0]) != 1 || plain.Notes != nil {
		t.Errorf("no table: grid changed to %+v", plain)
	}
}
