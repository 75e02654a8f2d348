package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/exec"
)

// Decode steps that ran as graphs are traced as they ran (the launching
// op marked with the graph's op count, the other marked inside it) and op
// by op in a third process; the model's track is unchanged.
func TestRunTraceOpByOpProcess(t *testing.T) {
	e := tinyEstimates(t, "test/single-tiny")[0]
	ranks := []exec.RankResult{{Rank: 0, SpanClock: "device",
		Spans: []exec.Span{
			{Name: "L00.wqkv", Kind: "gemm", Phase: "decode", Step: 0, DurS: 2e-6, Device: true, Graph: 2},
			{Name: "L00.attn", Kind: "attention", Phase: "decode", Step: 0, StartS: 2e-6, Device: true, Graph: -1},
		},
		OpSpans: []exec.Span{
			{Name: "L00.wqkv", Kind: "gemm", Phase: "decode", Step: 0, DurS: 1.5e-6, Device: true},
			{Name: "L00.attn", Kind: "attention", Phase: "decode", Step: 0, StartS: 1.5e-6, DurS: 1e-6, Device: true},
		}}}
	p := filepath.Join(t.TempDir(), "run.json")
	if err := WriteRunTrace(p, "single-tiny", ranks, e); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Ph   string         `json:"ph"`
			Pid  any            `json:"pid"`
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	procs := map[string]any{} // process name → pid
	for _, ev := range doc.TraceEvents {
		if ev.Ph == "M" && ev.Name == "process_name" {
			procs[ev.Args["name"].(string)] = ev.Pid
		}
	}
	var byOpPid any
	for name, pid := range procs {
		if strings.Contains(name, "(op by op") {
			byOpPid = pid
		}
	}
	if byOpPid == nil || len(procs) != 3 {
		t.Fatalf("processes %v: want measured, modeled and op by op", procs)
	}
	var graphOps, inGraph, byOp int
	for _, ev := range doc.TraceEvents {
		if ev.Ph != "X" {
			continue
		}
		if ev.Pid == byOpPid {
			byOp++
			if _, ok := ev.Args["graph_ops"]; ok {
				t.Errorf("op-by-op span %s has graph_ops", ev.Name)
			}
			continue
		}
		if n, ok := ev.Args["graph_ops"].(float64); ok && n == 2 && ev.Name == "L00.wqkv" {
			graphOps++
		}
		if ev.Args["in_graph"] == true && ev.Name == "L00.attn" {
			inGraph++
		}
	}
	if graphOps != 1 || inGraph != 1 || byOp != 2 {
		t.Errorf("graph_ops on %d spans, in_graph on %d, %d op-by-op spans; want 1, 1, 2", graphOps, inGraph, byOp)
	}
}
