package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/stats"
	"github.com/partbench/partbench/suite"
	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/topologytest"
)

// tickLabels are the labels of an axis's labelled ticks over its range.
func tickLabels(a plot.Axis) []string {
	var out []string
	for _, t := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

func legendLabels(es []LegendEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Label)
	}
	return out
}

// hasPanelLegend says whether a panel draws a legend of its own.
func hasPanelLegend(p *plot.Plot) bool { return p.Legend.Rectangle(draw.Canvas{}).Size().Y > 0 }

func TestBreakdownAxisEndsNearTheData(t *testing.T) {
	es := tinyEstimates(t, "test/tp2pp2-tiny", "test/pp4-tiny")
	f, err := BreakdownPlot(es)
	if err != nil {
		t.Fatal(err)
	}
	// Independently: prefill bars stack to Σ time_by_bound (s); decode bars to TPOT (ms).
	var prefill, decode float64
	for _, e := range es {
		var s float64
		for _, v := range e.Prefill.TimeByBound {
			s += v
		}
		prefill = math.Max(prefill, s)
		decode = math.Max(decode, e.Decode.TPOTS*1e3)
	}
	for i, tallest := range []float64{prefill, decode} {
		p := f.Panels[i]
		if r := p.Y.Max / tallest; r < 1 || r > 1.1 {
			t.Errorf("panel %d: y axis ends at %g, %.3g× the tallest bar %g (want 1–1.1×)", i, p.Y.Max, r, tallest)
		}
		if hasPanelLegend(p) {
			t.Errorf("panel %d has its own legend; the figure's is drawn once", i)
		}
	}
	// The figure's legend names the bounds drawn, in stacking order, each once.
	var want []string
	for _, b := range breakdownBounds {
		for _, e := range es {
			if e.Prefill.TimeByBound[b] > 0 || e.Decode.TimeByBound[b] > 0 {
				want = append(want, boundLabels[b])
				break
			}
		}
	}
	if got := legendLabels(f.Legend); len(want) == 0 || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("figure legend %q, want %q", got, want)
	}
}

func TestSweptLabels(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want string
	}{
		{[]float64{1024, 2048, 4096, 8192}, "1024|2048|4096|8192"},
		{[]float64{16384, 65536, 1 << 20}, "16 Ki|64 Ki|1 Mi"}, // 1 Mi is above 100 000: binary units for all
		{[]float64{1, 8, 64}, "1|8|64"},
		{[]float64{150000, 300000}, "150K|300K"}, // not multiples of 1024
	} {
		if got := strings.Join(sweptLabels(c.xs), "|"); got != c.want {
			t.Errorf("sweptLabels(%v) = %q, want %q", c.xs, got, c.want)
		}
	}
	d := &SweepDoc{Schema: SweepSchema, Key: "batch"}
	es := tinyEstimates(t, "test/tp2pp2-tiny", "test/tp2pp2-tiny")
	d.Points = []SweepPoint{{Value: 1024, Strategies: es[:1]}, {Value: 8192, Strategies: es[1:]}}
	f, err := SweepPlot(d)
	if err != nil {
		t.Fatal(err)
	}
	if f.Title != "Sweep of batch: tp2pp2-tiny on "+es[0].Topology+", "+es[0].Hardware {
		t.Errorf("title %q", f.Title)
	}
	for _, p := range f.Panels {
		if got := strings.Join(tickLabels(p.X), "|"); got != "1024|8192" {
			t.Errorf("%s: x ticks %q, want 1024|8192", p.Title.Text, got)
		}
		if hasPanelLegend(p) {
			t.Errorf("%s has its own legend", p.Title.Text)
		}
	}
	if got := legendLabels(f.Legend); len(got) != 1 || got[0] != "tp2pp2-tiny" {
		t.Errorf("figure legend %q, want the one strategy", got)
	}
}

func TestSweepKeyWords(t *testing.T) {
	for key, want := range map[string]string{"l2_bytes": "L2 size", "microbatches": "micro-batches", "batch": "batch", "new_key": "new key"} {
		if got := sweepKeyWords(key); got != want {
			t.Errorf("sweepKeyWords(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestLinTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{0.38, 0.64, "0.4|0.45|0.5|0.55|0.6"},                      // span 0.26: 0.26/6 = 0.043 → step 0.05
		{780, 1130, "800|900|1K|1.1K"},                             // 350/6 = 58 → step 100
		{0.0045, 0.0072, "0.0045|0.005|0.0055|0.006|0.0065|0.007"}, // 0.0027/6 = 0.00045 → step 0.0005; 0.0045 = 9 steps
	} {
		var got []string
		for _, tk := range (linTicks{}).Ticks(c.lo, c.hi) {
			got = append(got, tk.Label)
		}
		if strings.Join(got, "|") != c.want {
			t.Errorf("linTicks(%g, %g) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

func TestIntTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{17, 23, "17|18|19|20|21|22|23"}, // span 6: step 1
		{1.8, 2.2, "2"},
		{0, 100, "0|20|40|60|80|100"}, // span 100: 1, 2, 5, 10, 20 → 5 steps
		{-3, 3, "−3|−2|−1|0|1|2|3"},
	} {
		var got []string
		for _, tk := range (intTicks{}).Ticks(c.lo, c.hi) {
			got = append(got, tk.Label)
		}
		if strings.Join(got, "|") != c.want {
			t.Errorf("intTicks(%g, %g) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

const runScatterFixture = `{"schema": "partbench.compare/v1", "title": "fixture run", "tolerance": 0.15, "rows": [
  {"metric": "ttft", "unit": "s", "measured": 0.0077, "modeled": 0.0053},
  {"metric": "tpot", "unit": "s", "measured": 0.0017, "modeled": 0.0048},
  {"metric": "collective_calls_per_microbatch", "unit": "calls", "measured": 18, "modeled": 18},
  {"metric": "max_nccl_calls_per_rank_per_decode_step", "unit": "calls", "measured": 22, "modeled": 22},
  {"metric": "decode_step_bytes_nvlink", "unit": "B", "measured": 40000, "modeled": 40000}]}`

func TestRunScatterReadsWell(t *testing.T) {
	d, err := ReadDoc(strings.NewReader(runScatterFixture), "run.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ScatterPlot(d.Compare, 0)
	if err != nil {
		t.Fatal(err)
	}
	titles := map[string]bool{}
	for _, p := range f.Panels {
		titles[p.Title.Text] = true
		if strings.Contains(p.Title.Text, "_") {
			t.Errorf("panel title in snake_case: %q", p.Title.Text)
		}
		if hasPanelLegend(p) {
			t.Errorf("%q has its own legend; the figure's is drawn once", p.Title.Text)
		}
	}
	for _, want := range []string{"time (s): TTFT, TPOT", "calls: collectives per µbatch and 1 more", "bytes (B): decode step bytes NVLink"} {
		if !titles[want] {
			t.Errorf("no panel titled %q (have %v)", want, titles)
		}
	}
	// Counts tick at whole numbers only, and the data (18, 22) lies inside.
	calls := f.Panels[1]
	for _, a := range []plot.Axis{calls.X, calls.Y} {
		labels := tickLabels(a)
		if len(labels) < 3 {
			t.Errorf("count axis ticks %q", labels)
		}
		for _, tk := range a.Tick.Marker.Ticks(a.Min, a.Max) {
			if tk.Value != math.Trunc(tk.Value) {
				t.Errorf("count axis tick at %g", tk.Value)
			}
		}
		if a.Min > 18 || a.Max < 22 {
			t.Errorf("count axis %g…%g leaves out the data", a.Min, a.Max)
		}
	}
	// One legend for the figure: the band, y = x, the points.
	if got := legendLabels(f.Legend); len(got) != 3 || !strings.HasPrefix(got[0], "±15 %") || got[1] != "measured = modeled" {
		t.Errorf("figure legend %q", got)
	}
	// Every point is labelled with its metric in words.
	render(t, f, ">TTFT<", ">TPOT<", ">collectives per µbatch<", ">decode step bytes NVLink<")
}

// TestLegendBoxIsOpaque draws a panel on a recorder and checks that its
// legend is drawn last, on a white box with a thin grey border.
func TestLegendBoxIsOpaque(t *testing.T) {
	p := newPlot("panel", "x", "y")
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(l)
	p.Legend.Add("the line", l)
	var rec recorder.Canvas
	drawPanel(p, draw.NewCanvas(&rec, 4*vg.Inch, 3*vg.Inch))
	var sawWhite, sawBorder, sawText bool
	var lastColor color.Color
	for _, a := range rec.Actions {
		switch a := a.(type) {
		case *recorder.SetColor:
			lastColor = a.Color
		case *recorder.Fill:
			sawWhite = sawWhite || lastColor == legendFill
		case *recorder.SetLineWidth:
			sawBorder = sawBorder || sawWhite && a.Width == vg.Points(0.5)
		case *recorder.FillString:
			if a.String == "the line" {
				sawText = true
				if !sawWhite || !sawBorder {
					t.Error("legend text drawn before its white, bordered box")
				}
			}
		}
	}
	if !sawText {
		t.Fatal("legend not drawn")
	}
}

// compare --format json writes partbench.comparison/v1; plot reads it back
// and draws each later file against the first.
func TestComparisonDocRoundTripAndPlot(t *testing.T) {
	c := &Comparison{Schema: ModelSchema, Files: []string{"dir/base.json", "dir/new.json", "dir/third.json"}, Rows: []ComparisonRow{
		{Key: "tp2pp2", Metric: "tpot_s", Unit: "s", Values: []*float64{ptr(0.002), ptr(0.003), ptr(0.001)}},
		{Key: "tp2pp2", Metric: "ttft_s", Unit: "s", Values: []*float64{ptr(0.004), ptr(0.004), nil}},
		{Key: "tp2pp2", Metric: "collective_calls_per_microbatch", Unit: "count", Values: []*float64{ptr(18), ptr(20), ptr(18)}},
	}}
	for i := range c.Rows {
		c.Rows[i].RelDiff = make([]*float64, 3)
		for j := 1; j < 3; j++ {
			c.Rows[i].RelDiff[j] = relDiff(c.Rows[i].Values[0], c.Rows[i].Values[j])
		}
	}
	var b strings.Builder
	if err := WriteComparisonJSON(&b, c, "test"); err != nil {
		t.Fatal(err)
	}
	d, err := ReadDoc(strings.NewReader(b.String()), "cmp.json")
	if err != nil {
		t.Fatal(err)
	}
	cd := d.Comparison
	if cd == nil || cd.Of != ModelSchema || len(cd.Rows) != 3 || len(cd.Files) != 3 {
		t.Fatalf("decoded %+v", cd)
	}
	// (0.003 − 0.002)/0.002 = +50 %; the first file's difference and a missing value's are null.
	if r := cd.Rows[0].RelDiff; r[0] != nil || r[1] == nil || math.Abs(*r[1]-0.5) > 1e-12 || math.Abs(*r[2]+0.5) > 1e-12 {
		t.Errorf("rel_diff %v", r)
	}
	if cd.Rows[1].Values[2] != nil || cd.Rows[1].RelDiff[2] != nil {
		t.Error("a missing value is not null")
	}
	f, err := DocFigure(d, "cmp.json", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Panels) != 2 {
		t.Fatalf("%d panels, want 2 (s and count)", len(f.Panels))
	}
	s := f.Panels[0]
	if s.X.Label.Text != "base (s)" || s.Y.Label.Text != "new, third (s)" {
		t.Errorf("axes %q / %q, want the files' base names", s.X.Label.Text, s.Y.Label.Text)
	}
	if s.X.Min > 0.001 || s.X.Max < 0.004 || s.Y.Min > 0.001 || s.Y.Max < 0.004 {
		t.Errorf("time axes %g…%g × %g…%g leave out the data", s.X.Min, s.X.Max, s.Y.Min, s.Y.Max)
	}
	if got := strings.Join(legendLabels(f.Legend), "|"); got != "new, third = base|new against base|third against base" {
		t.Errorf("legend %q", got)
	}
	if !strings.Contains(f.Title, "dry-run estimates") || strings.Contains(f.Title, "dir/") {
		t.Errorf("title %q", f.Title)
	}
	render(t, f, ">TPOT<", ">TTFT<", ">collectives per µbatch<")

	// A comparison of one file is refused with the field named.
	_, err = ReadDoc(strings.NewReader(`{"schema": "partbench.comparison/v1", "files": ["a.json"], "rows": []}`), "one.json")
	if err == nil || !strings.Contains(err.Error(), "files: a comparison names at least two files (got 1)") {
		t.Errorf("one file: %v", err)
	}
}

// run --emulate-ranks' results.json draws as emulated against modeled.
func TestEmulationScatter(t *testing.T) {
	es := tinyEstimates(t, "test/tp2pp2-tiny", "test/tp2pp2-tiny")
	doc := &EmulationDoc{Schema: EmulationSchema, Backend: "cpu", Ranks: 4, Emulated: es[0], Modeled: es[1], AllocatedBytes: []int64{1000, 5000, 3000}}
	var b strings.Builder
	if err := json.NewEncoder(&b).Encode(doc); err != nil {
		t.Fatal(err)
	}
	d, err := ReadDoc(strings.NewReader(b.String()), "results.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := CompareFromEmulation(d.Emulation)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 6 || c.Rows[5].Measured != 5000 { // memory: the largest rank's allocation
		t.Fatalf("rows %+v", c.Rows)
	}
	// compare reads it too: one record, each of the six metrics emulated and modeled.
	if recs := Records(d); len(recs) != 1 || len(recs[0].Metrics) != 12 || recs[0].Metrics[11].Name != "max_total_bytes_per_gpu_modeled" {
		t.Errorf("records %+v", recs)
	}
	f, err := DocFigure(d, "results.json", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	hw := es[1].Hardware
	for _, p := range f.Panels {
		if !strings.HasPrefix(p.Y.Label.Text, "emulated (") || !strings.HasPrefix(p.X.Label.Text, "modeled ("+hw+") (") {
			t.Errorf("axes %q / %q", p.X.Label.Text, p.Y.Label.Text)
		}
	}
	if len(f.Panels) != 4 { // s, tok/s, fraction, B
		t.Errorf("%d panels, want 4", len(f.Panels))
	}
	render(t, f, ">TTFT<", ">TPS<", ">decode bubble<", ">memory per GPU (max)<")
	if _, err := ReadDoc(strings.NewReader(`{"schema": "partbench.emulate/v1", "backend": "cpu"}`), "e.json"); err == nil || !strings.Contains(err.Error(), `"emulated" and "modeled"`) {
		t.Errorf("no estimates: %v", err)
	}
}

// The remote figure: engineering ticks (no 1e+06) and Okabe–Ito colours.
func TestRemotePlotTicksAndPalette(t *testing.T) {
	d, err := ReadDoc(strings.NewReader(string(remoteResults(t, 0.010))), "a.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := DocFigure(d, "a.json", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Bytes per request: 1 B … 1,400,000 B on a log axis, labelled at the powers of ten.
	got := strings.Join(tickLabels(f.Panels[0].Y), "|")
	if !strings.HasPrefix(got, "1|10|100|1K|10K|100K|1M") || strings.Contains(got, "e+") {
		t.Errorf("bytes ticks %q", got)
	}
	for _, l := range tickLabels(f.Panels[1].Y) {
		if strings.Contains(l, "e+") || strings.Contains(l, "e-") {
			t.Errorf("latency tick %q", l)
		}
	}
	inPalette := func(c color.Color) bool {
		for _, o := range okabeIto {
			if c == color.Color(o) {
				return true
			}
		}
		return false
	}
	for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
		if !inPalette(phaseColor(ph)) {
			t.Errorf("%s drawn in %v, not an Okabe–Ito colour", ph, phaseColor(ph))
		}
	}
	if phaseColor(partition.Prefill) == phaseColor(partition.Decode) {
		t.Error("prefill and decode share a colour")
	}
}

// suiteFixture: two baselines over two workloads, latencies 2 ms to 40 ms
// with intervals of ±10 %.
func suiteFixture() *suite.Results {
	r := &suite.Results{Spec: "fixture", Hardware: "h100", Link: "loopback", Backend: "cpu", Runs: 3,
		Baselines: []suite.Baseline{{Name: "local"}, {Name: "naive", Seed: "naive_disaggregation"}},
		Workloads: []suite.Workload{{Name: "decode"}, {Name: "prefill"}}}
	for i, c := range []struct {
		b, w string
		s    float64
	}{{"local", "decode", 0.002}, {"naive", "decode", 0.008}, {"local", "prefill", 0.010}, {"naive", "prefill", 0.040}} {
		sum := stats.Summary{N: 3, Mean: c.s, CILow: 0.9 * c.s, CIHigh: 1.1 * c.s}
		r.Cells = append(r.Cells, suite.CellResult{Cell: c.b + "/" + c.w, Baseline: c.b, Workload: c.w, LatencyS: sum,
			NetBytes: stats.Summary{N: 3, Mean: float64(i * 1000)}, Util: stats.Summary{N: 3, Mean: 0.5, CILow: 0.4, CIHigh: 0.6}})
	}
	return r
}

// The suite's log axis spans the data: from 1.8 ms / 1.25 to 44 ms × 1.25,
// not two empty decades above it; the legend is drawn once, above.
func TestSuiteFigureSpansTheData(t *testing.T) {
	f, err := suiteFigure(suiteFixture(), "Latency", "latency (ms, log scale)", true,
		func(c suite.CellResult) stats.Summary { return c.LatencyS }, 1e3)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Panels[0]
	lo, hi := 0.9*2.0, 1.1*40.0 // ms: the lowest interval's bottom, the highest's top
	if math.Abs(p.Y.Min-lo/1.25) > 1e-9 || math.Abs(p.Y.Max-hi*1.25) > 1e-9 {
		t.Errorf("y axis %g…%g ms, want %g…%g", p.Y.Min, p.Y.Max, lo/1.25, hi*1.25)
	}
	if decades := math.Log10(p.Y.Max / p.Y.Min); decades > 1.6 {
		t.Errorf("y axis spans %.2f decades for data spanning %.2f", decades, math.Log10(hi/lo))
	}
	if got := strings.Join(legendLabels(f.Legend), "|"); got != "local|naive (naive_disaggregation)" {
		t.Errorf("legend %q", got)
	}
	if hasPanelLegend(p) {
		t.Error("the panel has its own legend")
	}
	for _, l := range tickLabels(p.Y) {
		if strings.Contains(l, "e+") || strings.Contains(l, "e-") {
			t.Errorf("tick %q", l)
		}
	}
	var b bytes.Buffer
	if err := f.Write(&b, "pdf"); err != nil || !bytes.HasPrefix(b.Bytes(), []byte("%PDF")) {
		t.Fatalf("pdf: %v", err)
	}
}

// topo --format dot: NICs named by index, GPUs written (and so drawn) in
// order under each NVSwitch, one same-rank row of GPUs per node, node 0's
// box ordered before node 1's.
func TestTopoDOTLabelsAndOrder(t *testing.T) {
	g := topologytest.DGXH100(2).Topology.Graph()
	var b strings.Builder
	if err := TopoDOT(&b, g); err != nil {
		t.Fatal(err)
	}
	src := b.String()
	for _, want := range []string{"ordering=out", "rankdir=TB", `label="NIC 0"`, `label="NIC 7"`, "rank=same",
		"_group_order -- n0nvswitch", "_group_order -- n1nvswitch"} {
		if !strings.Contains(src, want) {
			t.Errorf("DOT lacks %q", want)
		}
	}
	if strings.Contains(src, "label=NIC\n") {
		t.Error("a NIC is labelled only \"NIC\"")
	}
	// The hub's links to its GPUs come in GPU order, the hub first (the tail).
	last := -1
	for i := 0; i < 8; i++ {
		at := strings.Index(src, fmt.Sprintf("n0nvswitch -- n0gpu%d ", i))
		if at < 0 || at < last {
			t.Fatalf("n0nvswitch -- n0gpu%d missing or out of order", i)
		}
		last = at
	}
	if strings.Index(src, "_group_order -- n0nvswitch") > strings.Index(src, "_group_order -- n1nvswitch") {
		t.Error("node 1's hub linked before node 0's")
	}
	for _, c := range []struct {
		n    topology.GraphNode
		want string
	}{
		{topology.GraphNode{ID: "n0nic3", Label: "NIC", Kind: topology.NodeNIC}, "NIC 3"},
		{topology.GraphNode{ID: "nic12", Label: "mlx5_12", Kind: topology.NodeNIC}, "NIC 12 (mlx5_12)"},
		{topology.GraphNode{ID: "nic", Label: "NIC", Kind: topology.NodeNIC}, "NIC"},
		{topology.GraphNode{ID: "gpu0", Label: "GPU0", Kind: topology.NodeGPU}, "GPU0"},
	} {
		if got := dotLabel(c.n); got != c.want {
			t.Errorf("dotLabel(%+v) = %q, want %q", c.n, got, c.want)
		}
	}
}
