package exec

import (
	"math"
	"testing"
)

// TraceSums holds each traced step's span sum beside the host's time of
// that step in the last iteration: prefill 10 ms (its end); decode step 0
// from 10 to 12 ms (2 ms), step 1 from 12 to 15 ms (3 ms). Spans: prefill
// 4 + 5 = 9 ms; step 0 1.5 ms (a graph of two ops: 1.5 and 0); step 1
// 1 + 1.5 = 2.5 ms; op by op, step 0 0.9 + 1.1 = 2 ms.
func TestTraceSums(t *testing.T) {
	r := RankResult{Rank: 3, SpanClock: "device",
		PrefillS: []float64{99, 10e-3}, StepEndS: [][]float64{{0, 0}, {12e-3, 15e-3}},
		Spans: []Span{
			{Phase: "prefill", Step: -1, DurS: 4e-3}, {Phase: "prefill", Step: -1, DurS: 5e-3},
			{Phase: "decode", Step: 0, DurS: 1.5e-3, Graph: 2}, {Phase: "decode", Step: 0, DurS: 0, Graph: -1},
			{Phase: "decode", Step: 1, DurS: 1e-3}, {Phase: "decode", Step: 1, DurS: 1.5e-3},
		},
		OpSpans: []Span{{Phase: "decode", Step: 0, DurS: 0.9e-3}, {Phase: "decode", Step: 0, DurS: 1.1e-3}},
	}
	want := []TraceSum{
		{Rank: 3, Phase: "prefill", Step: -1, OpSumS: 9e-3, OpByOpSumS: -1, HostS: 10e-3},
		{Rank: 3, Phase: "decode", Step: 0, OpSumS: 1.5e-3, OpByOpSumS: 2e-3, HostS: 2e-3, GraphOps: 2},
		{Rank: 3, Phase: "decode", Step: 1, OpSumS: 2.5e-3, OpByOpSumS: -1, HostS: 3e-3},
	}
	got := TraceSums(r)
	if len(got) != len(want) {
		t.Fatalf("%d sums, want %d: %+v", len(got), len(want), got)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	for i, w := range want {
		g := got[i]
		if g.Rank != w.Rank || g.Phase != w.Phase || g.Step != w.Step || g.GraphOps != w.GraphOps ||
			!near(g.OpSumS, w.OpSumS) || !near(g.OpByOpSumS, w.OpByOpSumS) || !near(g.HostS, w.HostS) {
			t.Errorf("sum %d = %+v, want %+v", i, g, w)
		}
	}
	// Summary: decode medians of {1.5, 2.5} and {2, 3} ms are the lower
	// middles, 1.5 and 2 ms; op by op only step 0's 2 ms.
	s, ok := SummarizeTrace(r)
	if !ok || !near(s.PrefillOpS, 9e-3) || !near(s.PrefillHostS, 10e-3) || s.DecodeSteps != 2 ||
		!near(s.DecodeOpS, 1.5e-3) || !near(s.DecodeHostS, 2e-3) || !near(s.DecodeOpByOpS, 2e-3) || s.GraphOps != 2 || !s.Device {
		t.Errorf("summary %+v", s)
	}
	if _, ok := SummarizeTrace(RankResult{}); ok {
		t.Error("a result without spans has a trace summary")
	}
}
