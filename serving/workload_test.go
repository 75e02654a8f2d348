package serving

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"
)

func gaps(times []float64) []float64 {
	g := make([]float64, len(times)-1)
	for i := range g {
		g[i] = times[i+1] - times[i]
	}
	return g
}

// Gaps of gamma arrivals with shape k and mean 1/rate have a coefficient of
// variation 1/√k (Poisson: k = 1, CV 1). Over 200,000 gaps the sample mean
// and CV are within 1 % of these (standard errors: 1/√(k·n) ≈ 0.3 % of the
// mean at k = 0.25, less for the CV's ≈ 0.5 %; 1 % is two or more of them).
func TestArrivalProcesses(t *testing.T) {
	const n, rate = 200_001, 4.0
	for _, tc := range []struct {
		process string
		k, cv   float64
	}{{ArrivalPoisson, 1, 1}, {ArrivalGamma, 0.25, 2}, {ArrivalGamma, 4, 0.5}, {ArrivalFixed, 1, 0}} {
		a := Arrivals{Process: tc.process, RequestRate: rate, Burstiness: tc.k}
		times := a.Times(n, rand.New(rand.NewPCG(1, 2)))
		if times[0] != 0 {
			t.Errorf("%s: first arrival at %g, want 0", tc.process, times[0])
		}
		g := gaps(times)
		mean, sd := stat.MeanStdDev(g, nil)
		if math.Abs(mean*rate-1) > 0.01 {
			t.Errorf("%s k=%g: mean gap %g s, want %g", tc.process, tc.k, mean, 1/rate)
		}
		if math.Abs(sd/mean-tc.cv) > 0.01*max(tc.cv, 1) {
			t.Errorf("%s k=%g: CV %g, want %g", tc.process, tc.k, sd/mean, tc.cv)
		}
	}
	all := Arrivals{Process: ArrivalPoisson, RequestRate: math.Inf(1)}.Times(5, rand.New(rand.NewPCG(1, 2)))
	for _, x := range all {
		if x != 0 {
			t.Errorf("rate inf: arrival at %g", x)
		}
	}
}

// --random-range-ratio 0.5 around 100 draws from [50, 150] (vLLM's range),
// every value of it over 100,000 draws, nothing outside; ratio 0 is fixed.
func TestUniformLengths(t *testing.T) {
	reqs, err := Generate(Spec{NumPrompts: 100_000, Arrivals: Arrivals{Process: ArrivalPoisson, RequestRate: 1},
		Lengths: Lengths{InputLen: 100, OutputLen: 10, RangeRatio: 0.5}, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, r := range reqs {
		if r.InputLen < 50 || r.InputLen > 150 || r.OutputLen < 5 || r.OutputLen > 15 {
			t.Fatalf("lengths %d, %d outside [50,150], [5,15]", r.InputLen, r.OutputLen)
		}
		seen[r.InputLen] = true
	}
	if len(seen) != 101 {
		t.Errorf("%d distinct prompt lengths, want 101", len(seen))
	}
	fixed, _ := Generate(Spec{NumPrompts: 10, Arrivals: Arrivals{Process: ArrivalFixed, RequestRate: 2}, Lengths: Lengths{InputLen: 7, OutputLen: 3}})
	for i, r := range fixed {
		if r.InputLen != 7 || r.OutputLen != 3 || r.ArrivalS != float64(i)/2 {
			t.Errorf("fixed: request %d: %+v", i, r)
		}
	}
}

func TestWorkloadErrorsNameTheFlag(t *testing.T) {
	ok := Arrivals{Process: ArrivalPoisson, RequestRate: 1}
	okL := Lengths{InputLen: 1, OutputLen: 1}
	for _, tc := range []struct {
		s    Spec
		want string
	}{
		{Spec{NumPrompts: 0, Arrivals: ok, Lengths: okL}, "--num-prompts"},
		{Spec{NumPrompts: 1, Arrivals: Arrivals{Process: "uniform", RequestRate: 1}, Lengths: okL}, "--arrival"},
		{Spec{NumPrompts: 1, Arrivals: Arrivals{Process: ArrivalPoisson, RequestRate: -1}, Lengths: okL}, "--request-rate"},
		{Spec{NumPrompts: 1, Arrivals: Arrivals{Process: ArrivalGamma, RequestRate: 1}, Lengths: okL}, "--burstiness"},
		{Spec{NumPrompts: 1, Arrivals: ok, Lengths: Lengths{InputLen: 1, OutputLen: 1, RangeRatio: 1}}, "--random-range-ratio"},
		{Spec{NumPrompts: 1, Arrivals: ok, Lengths: Lengths{InputLen: 0, OutputLen: 1}}, "--random-input-len"},
	} {
		if _, err := Generate(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.s, err, tc.want)
		}
	}
}

// The sample holds 42 entries; the filter drops the one-turn entry and the
// 1-token prompt ("hi" is ⌈2/4⌉ = 1 token): 40 remain, each within vLLM's
// bounds; --sharegpt-output-len replaces every completion length.
func TestReadShareGPT(t *testing.T) {
	pairs, err := ReadShareGPT("testdata/sharegpt-synthetic.json", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 40 {
		t.Errorf("%d entries, want 40", len(pairs))
	}
	for _, p := range pairs {
		if p.InputLen < 4 || p.OutputLen < 4 || p.InputLen > 1024 || p.InputLen+p.OutputLen > 2048 {
			t.Errorf("entry %+v passes the filter", p)
		}
	}
	fixed, err := ReadShareGPT("testdata/sharegpt-synthetic.json", 33)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fixed {
		if p.OutputLen != 33 {
			t.Fatalf("output length %d, want 33", p.OutputLen)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("[\n{\"conversations\": [}\n]"), 0o644)
	if _, err := ReadShareGPT(bad, 0); err == nil || !strings.Contains(err.Error(), "bad.json:2") {
		t.Errorf("malformed JSON: %v, want file:line", err)
	}
}

func TestReadTrace(t *testing.T) {
	reqs, err := ReadTrace("testdata/trace-small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 5 || reqs[3].ArrivalS != 1.5 || reqs[3].InputLen != 2048 || reqs[4].OutputLen != 300 || reqs[4].ID != 4 {
		t.Errorf("trace: %+v", reqs)
	}
	for _, tc := range []struct{ text, want string }{
		{`{"arrival_s": 1, "input_len": 2, "output_len": 3}` + "\n" + `{"arrival_s": 0.5, "input_len": 2, "output_len": 3}`, "t.jsonl:2: arrival_s 0.5 is before"},
		{`{"arrival_s": 1, "input_len": 0, "output_len": 3}`, "t.jsonl:1: input_len must be ≥ 1"},
		{`{"arrival_s": 1, "input_len": 2}`, "t.jsonl:1: arrival_s, input_len and output_len are all required"},
		{`{"arrival_s": 1, "input_len": 2, "output_len": 3, "x": 1}`, "t.jsonl:1: want"},
		{"\n\n" + `not json`, "t.jsonl:3: want"},
		{`{"arrival_s": 1, "input_len": 2, "output_len": 3, "pad": "` + strings.Repeat("x", MaxTraceLineBytes) + `"}`, "t.jsonl:1: line longer than"},
		{"", "no requests"},
	} {
		_, err := parseTrace(strings.NewReader(tc.text), "t.jsonl")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("trace %.40q: error %v, want %q", tc.text, err, tc.want)
		}
	}
}

// Dataset lengths are drawn without replacement while they last, in a
// seeded order.
func TestDatasetSampling(t *testing.T) {
	ds := []LenPair{{10, 1}, {20, 2}, {30, 3}}
	a, _ := Generate(Spec{NumPrompts: 3, Arrivals: Arrivals{Process: ArrivalPoisson, RequestRate: 1}, Dataset: ds, Seed: 4})
	sum := 0
	for _, r := range a {
		sum += r.InputLen
		if r.OutputLen*10 != r.InputLen {
			t.Errorf("pair broken: %+v", r)
		}
	}
	if sum != 60 {
		t.Errorf("prompt lengths sum to %d, want 60 (each entry once)", sum)
	}
}

func TestGoodputAndPercentileFlags(t *testing.T) {
	g, err := ParseGoodput([]string{"ttft:200 tpot:50", "e2el:1000"})
	if err != nil || g != (Goodput{TTFTMs: 200, TPOTMs: 50, E2ELMs: 1000}) {
		t.Errorf("goodput %+v, %v", g, err)
	}
	for _, bad := range []string{"ttft", "ttft:-1", "itl:5", "ttft:x"} {
		if _, err := ParseGoodput([]string{bad}); err == nil || !strings.Contains(err.Error(), "--goodput") {
			t.Errorf("--goodput %q: %v", bad, err)
		}
	}
	ps, err := ParsePercentiles("50,90,99.9")
	if err != nil || len(ps) != 3 || ps[2] != 99.9 {
		t.Errorf("percentiles %v, %v", ps, err)
	}
	if _, err := ParsePercentiles("0,50"); err == nil {
		t.Error("percentile 0 accepted")
	}
}

// Summary on a hand-checkable sample: values 1..10 (weights 1) have mean
// 5.5, population sd √8.25, empirical median 5 (the smallest value with half
// the weight at or below it) and 90th percentile 9; the same data as
// (value, weight) pairs 1..5 weight 1 and 10 weight 5 has median 5, mean
// (15 + 50)/10 = 6.5.
func TestSummary(t *testing.T) {
	x := []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	d := Summary(x, nil, []float64{90})
	if d.MeanMs != 5.5 || math.Abs(d.StdMs-math.Sqrt(8.25)) > 1e-12 || d.MedianMs != 5 || d.Percentiles[0] != 9 {
		t.Errorf("%+v", d)
	}
	w := Summary([]float64{10, 1, 2, 3, 4, 5}, []float64{5, 1, 1, 1, 1, 1}, []float64{99})
	if w.MeanMs != 6.5 || w.MedianMs != 5 || w.Percentiles[0] != 10 {
		t.Errorf("weighted %+v", w)
	}
}
