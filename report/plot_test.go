package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

func tinyEstimates(t *testing.T, names ...string) []*sim.Estimate {
	t.Helper()
	var es []*sim.Estimate
	for _, n := range names {
		c, err := configs.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		p, err := partition.NewPlan(c)
		if err != nil {
			t.Fatal(err)
		}
		e, err := sim.EstimatePlan(p, sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return es
}

// render writes a figure as SVG and checks it names every label.
func render(t *testing.T, f *Figure, labels ...string) string {
	t.Helper()
	var b bytes.Buffer
	if err := f.Write(&b, "svg"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if !strings.HasPrefix(strings.TrimSpace(svg), "<?xml") || !strings.Contains(svg, "<svg") || len(svg) < 1000 {
		t.Fatalf("not an SVG document (%d bytes)", len(svg))
	}
	for _, l := range labels {
		if !strings.Contains(svg, l) {
			t.Errorf("SVG lacks %q", l)
		}
	}
	return svg
}

func TestBreakdownPlot(t *testing.T) {
	f, err := BreakdownPlot(tinyEstimates(t, "test/tp2pp2-tiny", "test/pp4-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	render(t, f, "time in prefill (s)", "time per decode step (ms)", "strategy", "tp2pp2-tiny", "pp4-tiny", "latency")
	if _, err := BreakdownPlot(nil); err == nil {
		t.Fatal("no error for no strategies")
	}
}

func TestSweepPlot(t *testing.T) {
	d := &SweepDoc{Schema: SweepSchema, Key: "batch"}
	es := tinyEstimates(t, "test/tp2pp2-tiny", "test/pp4-tiny", "test/tp2pp2-tiny", "test/pp4-tiny")
	d.Points = []SweepPoint{{Value: 4, Strategies: es[:2]}, {Value: 64, Strategies: es[2:]}}
	f, err := SweepPlot(d)
	if err != nil {
		t.Fatal(err)
	}
	// 4 and 64 span more than ×8: a log axis labelled at the swept values.
	render(t, f, "batch (sequences)", "TPOT (ms)", "TPS (tok/s)", ">64<")
}

func TestCollectivesPlot(t *testing.T) {
	series := []CollectiveSeries{{Label: "modeled all_reduce, 8 GPUs", Points: []CollectivePoint{
		{"all_reduce", 8, 1 << 20, 100, ""}, {"all_reduce", 8, 1 << 30, 480, ""}}}}
	f, err := CollectivesPlot("busbw", 8, series, PublishedBusBW)
	if err != nil {
		t.Fatal(err)
	}
	svg := render(t, f, "message size (B; nccl-tests size, 1K = 1024)", "bus bandwidth (GB/s)", "published all_reduce, 8 GPUs (VP: Voltage Park", ">1M<", ">1G<")
	// Only 8-GPU citations are drawn for an 8-GPU group.
	if strings.Contains(svg, "(WH:") {
		t.Error("4-GPU points drawn on an 8-GPU plot")
	}
	// Every citation carries a source label.
	for _, p := range PublishedBusBW {
		if p.Source == "" || p.BusBWGBps <= 0 {
			t.Errorf("published point without source or value: %+v", p)
		}
	}
}

const compareFixture = `{"schema": "partbench.compare/v1", "title": "fixture run", "tolerance": 0.1, "rows": [
  {"metric": "tpot", "unit": "s", "measured": 0.0142, "modeled": 0.0141},
  {"metric": "ttft", "unit": "s", "measured": 2.5, "modeled": 2.3},
  {"metric": "decode_calls", "unit": "count", "measured": 144, "modeled": 144}]}`

func TestScatterPlotFromFixture(t *testing.T) {
	d, err := ReadDoc(strings.NewReader(compareFixture), "fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	if d.Compare == nil || len(d.Compare.Rows) != 3 || d.Compare.Tolerance != 0.1 {
		t.Fatalf("decoded %+v", d.Compare)
	}
	f, err := ScatterPlot(d.Compare, 0)
	if err != nil {
		t.Fatal(err)
	}
	// One panel per unit, each axis with its unit; the band from the file's tolerance.
	if len(f.Panels) != 2 {
		t.Fatalf("%d panels, want 2 (s and count)", len(f.Panels))
	}
	render(t, f, "modeled (s)", "measured (s)", "modeled (count)", "measured (count)", "measured = modeled", "±10 %")
	var png bytes.Buffer
	if err := f.Write(&png, "png"); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png.Bytes(), []byte("\x89PNG\r\n\x1a\n")) || png.Len() < 1000 {
		t.Fatalf("not a PNG (%d bytes)", png.Len())
	}
	if _, err := ScatterPlot(d.Compare, 1.5); err == nil || !strings.Contains(err.Error(), "--tolerance") {
		t.Fatalf("tolerance error: %v", err)
	}
}

func TestPlotFormat(t *testing.T) {
	for path, want := range map[string]string{"a.svg": "svg", "dir/B.PNG": "png"} {
		if got, err := PlotFormat(path); err != nil || got != want {
			t.Errorf("%s: %q %v", path, got, err)
		}
	}
	if _, err := PlotFormat("a.pdf"); err == nil || !strings.Contains(err.Error(), "--output: must end in .svg or .png") {
		t.Fatalf("pdf: %v", err)
	}
}

func TestEngLabel(t *testing.T) {
	for _, c := range []struct {
		v      float64
		binary bool
		want   string
	}{
		{500000, false, "500K"}, {2.5e6, false, "2.5M"}, {1e9, false, "1G"}, {20000, false, "20K"}, {0, false, "0"}, {0.001, false, "0.001"},
		{1 << 10, true, "1K"}, {32 << 20, true, "32M"}, {8 << 30, true, "8G"}, {8, true, "8"}, {-4000, false, "−4K"},
	} {
		if got := engLabel(c.v, c.binary); got != c.want {
			t.Errorf("engLabel(%g, %v) = %q, want %q", c.v, c.binary, got, c.want)
		}
	}
	// Major ticks of a byte axis from 8 B to 8 GiB: 32, 1K, 32K, 1M, 32M, 1G (powers of 32).
	var labels []string
	for _, tk := range (binaryTicks{}).Ticks(8, 8<<30) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "32 1K 32K 1M 32M 1G" {
		t.Errorf("binary ticks %q", got)
	}
}
