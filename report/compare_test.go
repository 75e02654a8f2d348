package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

func TestLaTeXEscaping(t *testing.T) {
	got := LaTeXEscape(`tp_8 50% a&b #1 $x {y} a\b ~^ µbatches Δ`)
	want := `tp\_8 50\% a\&b \#1 \$x \{y\} a\textbackslash{}b \textasciitilde{}\textasciicircum{} \textmu{}batches $\Delta$`
	if got != want {
		t.Fatalf("escaped\n%s\nwant\n%s", got, want)
	}
	var b bytes.Buffer
	g := Grid{Title: "T_1", Header: []string{"name", "TPOT (ms)"}, Rows: [][]string{{"tp8_pp2", "14.2"}, {"a&b", "+3.5"}}, Notes: []string{"100% sure"}}
	if err := WriteLaTeX(&b, g); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{`\caption{T\_1}`, `\begin{tabular}{@{}lr@{}}`, `\toprule`, `name & TPOT (ms) \\`, `\midrule`,
		`tp8\_pp2 & 14.20 \\`, `a\&b & $+$3.500 \\`, `\bottomrule`, `100\% sure`} {
		if !strings.Contains(out, w) {
			t.Errorf("LaTeX lacks %q:\n%s", w, out)
		}
	}
	if strings.Index(out, `\toprule`) > strings.Index(out, `\midrule`) || strings.Index(out, `\midrule`) > strings.Index(out, `\bottomrule`) {
		t.Error("booktabs rules out of order")
	}
}

// estimate builds a strategy with chosen headline numbers.
func estimate(name string, ttft, tpot, tps float64, mem int64, nvlink int64) *sim.Estimate {
	return &sim.Estimate{Name: name,
		Prefill: sim.PhaseEstimate{TTFTS: ttft},
		Decode:  sim.PhaseEstimate{TPOTS: tpot, TokensPerS: tps},
		Ranks:   sim.RanksOf([]sim.RankEstimate{{Memory: partition.Memory{TotalBytes: mem}}}),
		Comm:    sim.CommEstimate{CollectiveCallsPerMicrobatch: 32, BytesByLink: map[topology.LinkClass]int64{topology.NVLink: nvlink}},
	}
}

func docOf(t *testing.T, name string, es ...*sim.Estimate) *Doc {
	t.Helper()
	var b bytes.Buffer
	if err := ModelJSON(&b, "test", es); err != nil {
		t.Fatal(err)
	}
	d, err := ReadDoc(&b, name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCompareTwoModelFiles(t *testing.T) {
	a := docOf(t, "a.json", estimate("tp8pp2", 2.0, 0.010, 12800, 30e9, 1e9), estimate("only-a", 1, 1, 1, 1, 0))
	b := docOf(t, "b.json", estimate("tp8pp2", 1.5, 0.0125, 10240, 33e9, 0), estimate("layerwise16", 1, 1, 1, 1, 0))
	c, err := Compare([]*Doc{a, b})
	if err != nil {
		t.Fatal(err)
	}
	get := func(key, metric string) ComparisonRow {
		for _, r := range c.Rows {
			if r.Key == key && r.Metric == metric {
				return r
			}
		}
		t.Fatalf("no row %s %s", key, metric)
		return ComparisonRow{}
	}
	// Hand-computed (b − a)/a: TTFT (1.5 − 2)/2 = −25 %; TPOT (0.0125 − 0.010)/0.010 = +25 %;
	// TPS (10240 − 12800)/12800 = −20 %; memory (33 − 30)/30 = +10 %; collectives 32 → 32: 0;
	// NVLink bytes 1e9 → 0: −100 %; PCIe 0 → 0: 0.
	for _, w := range []struct {
		metric string
		diff   float64
	}{{"ttft_s", -0.25}, {"tpot_s", 0.25}, {"tokens_per_s", -0.20}, {"max_total_bytes_per_gpu", 0.10},
		{"collective_calls_per_microbatch", 0}, {"bytes_nvlink", -1}, {"bytes_pcie", 0}} {
		r := get("tp8pp2", w.metric)
		if r.RelDiff[1] == nil || math.Abs(*r.RelDiff[1]-w.diff) > 1e-12 {
			t.Errorf("%s: diff %v, want %g", w.metric, r.RelDiff[1], w.diff)
		}
	}
	// Unmatched strategies are listed and have no difference.
	if r := get("only-a", "tpot_s"); r.Values[1] != nil || r.RelDiff[1] != nil {
		t.Errorf("only-a in b: %+v", r)
	}
	if len(c.Unmatched) != 2 || !strings.Contains(c.Unmatched[0], "only-a: not in b.json") || !strings.Contains(c.Unmatched[1], "layerwise16: not in a.json") {
		t.Errorf("unmatched %q", c.Unmatched)
	}
	var md bytes.Buffer
	if err := WriteGrids(&md, FormatMarkdown, c.Grid()); err != nil {
		t.Fatal(err)
	}
	// Markdown pads cells; compare with runs of spaces collapsed.
	flat := strings.Join(strings.FieldsFunc(md.String(), func(r rune) bool { return r == ' ' }), " ")
	for _, w := range []string{"| Δ b.json (%) |", "| tp8pp2 | tpot_s | s | 0.01 | 0.0125 | +25.00 |", "| -25.00 |", "- only-a: not in b.json"} {
		if !strings.Contains(flat, w) {
			t.Errorf("markdown lacks %q:\n%s", w, md.String())
		}
	}
}

func TestReadDocErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"a": 1}`:                         `x.json: not a partbench result: no "schema" key`,
		`{"schema": "partbench.other/v2"}`: `x.json: unknown schema "partbench.other/v2" (known: partbench.model/v1`,
		`[1, 2]`:                           `x.json: not a JSON object`,
		`{"schema": "partbench.model/v1", "strategies": []}`: "no strategies",
	} {
		if _, err := ReadDoc(strings.NewReader(in), "x.json"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	a := docOf(t, "a.json", estimate("x", 1, 1, 1, 1, 0))
	s, _ := ReadDoc(strings.NewReader(compareFixture), "f.json")
	if _, err := Compare([]*Doc{a, s}); err == nil || !strings.Contains(err.Error(), "compare needs files of one schema") {
		t.Fatalf("mixed schemas: %v", err)
	}
}

// Metric keys read in words, a run's and an emulation's sides named.
func TestMetricLabelSides(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{"tpot_s", "TPOT"},
		{"ttft_s_measured", "TTFT (measured)"},
		{"tokens_per_s_modeled", "TPS (modeled)"},
		{"ttft_s_emulated", "TTFT (emulated)"},
		{"some_new_key", "some new key"},
	} {
		if got := MetricLabel(c.key); got != c.want {
			t.Errorf("MetricLabel(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}
