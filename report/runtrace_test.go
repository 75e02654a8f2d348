package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/exec"
)

func TestWriteModelTraceEqualsTheSpansOfEachEstimate(t *testing.T) {
	es := tinyEstimates(t, "test/tp2pp2-tiny", "test/single-tiny")
	for _, full := range []bool{false, true} {
		steps := TraceDecodeSteps
		if full {
			steps = -1
		}
		var spans []Span
		for _, e := range es {
			spans = append(spans, EstimateSpansUpTo(e, steps)...)
		}
		var want bytes.Buffer
		if err := ChromeTrace(&want, spans); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "trace.json")
		if err := WriteModelTrace(p, es, full); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("full %v: the file differs from ChromeTrace of the estimates' spans (%v)", full, err)
		}
	}
}

func TestWriteChecksJoinsFailures(t *testing.T) {
	pass := exec.CheckResult{Config: "a", Pass: true}
	fail := exec.CheckResult{Config: "b", Failures: []string{"logits differ"}}
	var out bytes.Buffer
	err := WriteChecks(&out, FormatTable, "run --check", "dev", pass, fail)
	if err == nil || err.Error() != "check b failed: logits differ" {
		t.Errorf("error %v, want b's failure alone", err)
	}
	if s := out.String(); !strings.Contains(s, "Check a:") || !strings.Contains(s, "PASS") || !strings.Contains(s, "Check b:") || !strings.Contains(s, "FAIL") {
		t.Errorf("tables:\n%s", s)
	}
	out.Reset()
	if err := WriteChecks(&out, FormatTable, "run --check", "dev", pass); err != nil || !strings.Contains(out.String(), "Check a:") {
		t.Errorf("all pass: %v\n%s", err, out.String())
	}
}

// A trace cut after a few decode steps holds no half message: every flow
// id that remains has its send and its recv, and cutting removed some
// (pp2's stage 0 sends step 3's activations, whose recv lies past the cut).
func TestModelTraceFlowsArePaired(t *testing.T) {
	e := tinyEstimates(t, "test/tp2pp2-tiny")[0]
	count := func(spans []Span) (paired, dangling int) {
		ends := map[int]int{}
		for _, s := range spans {
			if s.Flow == 0 {
				continue
			}
			if s.Cat == "send" {
				ends[s.Flow] |= 1
			} else {
				ends[s.Flow] |= 2
			}
		}
		for _, v := range ends {
			if v == 3 {
				paired++
			} else {
				dangling++
			}
		}
		return
	}
	fullPaired, _ := count(EstimateSpans(e))
	cutPaired, dangling := count(EstimateSpansUpTo(e, 1))
	if dangling != 0 {
		t.Errorf("%d flows with one end after cutting at 1 decode step", dangling)
	}
	if cutPaired == 0 || cutPaired >= fullPaired {
		t.Errorf("paired flows: %d cut, %d full: want some, and fewer than the whole trace's", cutPaired, fullPaired)
	}
}

// A run's trace holds the model for the decode steps the run recorded, not
// every simulated step: measured steps 0 and 1 → modeled steps up to 1.
func TestRunTraceModelsTheMeasuredSteps(t *testing.T) {
	e := tinyEstimates(t, "test/single-tiny")[0]
	ranks := []exec.RankResult{{Rank: 0, Spans: []exec.Span{
		{Name: "L00.wqkv", Kind: "gemm", Phase: "prefill", Step: -1, DurS: 1e-6},
		{Name: "L00.wqkv", Kind: "gemm", Phase: "decode", Step: 0, DurS: 1e-6},
		{Name: "L00.wqkv", Kind: "gemm", Phase: "decode", Step: 1, DurS: 1e-6},
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
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	maxStep := -1.0
	for _, ev := range doc.TraceEvents {
		if s, ok := ev.Args["step"].(float64); ok && ev.Ph == "X" {
			maxStep = max(maxStep, s)
		}
	}
	if maxStep != 1 {
		t.Errorf("latest step in the trace %v, want 1 (the run recorded steps 0 and 1)", maxStep)
	}
}

// Ranks that recorded their starts on rank 0's clock are drawn from them:
// rank 1 left the barrier of the last measured iteration 2 ms after rank 0
// (starts 5.000 and 5.002 s; the first iteration's 1.000 and 1.0005 are
// not the traced one), so its span at 0.1 ms of its own iteration is drawn
// at 2.1 ms, rank 0's at its own 0.3 ms. Without starts on every rank, each
// rank is drawn from its own start.
func TestRunSpansFromOneStart(t *testing.T) {
	ranks := []exec.RankResult{
		{Rank: 0, StartS: []float64{1.0, 5.0}, Spans: []exec.Span{{Name: "a", Kind: "gemm", StartS: 0.3e-3, DurS: 1e-3}}},
		{Rank: 1, StartS: []float64{1.0005, 5.002}, Spans: []exec.Span{{Name: "b", Kind: "gemm", StartS: 0.1e-3, DurS: 1e-3}}},
	}
	got := map[int]float64{}
	for _, s := range RunSpans("p", ranks) {
		got[s.Rank] = s.StartS
	}
	if d := got[0] - 0.3e-3; d > 1e-12 || d < -1e-12 {
		t.Errorf("rank 0 drawn at %g s, want 0.3 ms", got[0])
	}
	if d := got[1] - 2.1e-3; d > 1e-9 || d < -1e-9 {
		t.Errorf("rank 1 drawn at %g s, want 2.1 ms", got[1])
	}
	ranks[1].StartS = nil
	for _, s := range RunSpans("p", ranks) {
		if s.Rank == 1 && s.StartS != 0.1e-3 {
			t.Errorf("without rank 1's starts it is drawn at %g s, want its own 0.1 ms", s.StartS)
		}
	}
}
