package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// Plot kinds.
const (
	PlotBreakdown   = "breakdown"
	PlotSweep       = "sweep"
	PlotCollectives = "collectives"
	PlotScatter     = "scatter"
	PlotRemote      = "remote"
)

// PlotKinds lists the kinds `partbench plot --kind` accepts.
var PlotKinds = []string{PlotBreakdown, PlotSweep, PlotCollectives, PlotScatter, PlotRemote}

// PlotFormat is the image format of an output path: svg or png.
func PlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("--output: must end in .svg or .png (got %q)", path)
	}
}

// Figure is one or more plots in a grid under a title.
type Figure struct {
	// Title names what is drawn, the config(s) and the hardware.
	Title  string
	Panels []*plot.Plot
	// PanelWidth and Height size each panel.
	PanelWidth, Height vg.Length
	// Cols is the panels per row (0: all in one row, up to 3; more wrap).
	Cols int
	// Legend, when set, is drawn once under the title for every panel
	// (panels then carry no legend of their own).
	Legend []LegendEntry
}

// Write renders the figure as svg or png.
func (f *Figure) Write(w io.Writer, format string) error {
	if len(f.Panels) == 0 {
		return fmt.Errorf("plot: nothing to draw")
	}
	pw, h := f.PanelWidth, f.Height
	if pw == 0 {
		pw = 6 * vg.Inch
	}
	if h == 0 {
		h = 4 * vg.Inch
	}
	cols := f.Cols
	if cols <= 0 {
		cols = min(len(f.Panels), 3)
	}
	rows := (len(f.Panels) + cols - 1) / cols
	titleH, width := vg.Length(0), pw*vg.Length(cols)
	sty := text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, 14), Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop}
	if f.Title != "" {
		titleH = max(0.45*vg.Inch, sty.Height(f.Title)+0.2*vg.Inch) // a title may run over two lines
		width = max(width, sty.Width(f.Title)+0.4*vg.Inch)          // the title is never cut
	}
	var legendH vg.Length
	if len(f.Legend) > 0 {
		probe := draw.Canvas{} // measuring text needs no surface
		legendH = figureLegendHeight(probe, f.Legend)
		width = max(width, figureLegendWidth(probe, f.Legend)+0.4*vg.Inch)
	}
	c, err := draw.NewFormattedCanvas(width, h*vg.Length(rows)+titleH+legendH, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	if f.Title != "" {
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Millimeter*2}, f.Title)
		dc.Max.Y -= titleH
	}
	if legendH > 0 {
		drawFigureLegend(dc, f.Legend)
		dc.Max.Y -= legendH
	}
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range f.Panels {
		grid[i/cols][i%cols] = p
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6, PadTop: vg.Millimeter * 2,
		PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(grid, tiles, dc)
	for i, p := range f.Panels {
		drawPanel(p, canvases[i/cols][i%cols])
	}
	_, err = c.WriteTo(w)
	return err
}

// systemOf names the strategies and the hardware of estimates for a title.
func systemOf(es []*sim.Estimate) string {
	var names, systems []string
	seen := map[string]bool{}
	for _, e := range es {
		names = append(names, e.Name)
		if sys := e.Topology + ", " + e.Hardware; !seen[sys] {
			seen[sys] = true
			systems = append(systems, sys)
		}
	}
	return strings.Join(names, " vs ") + " on " + strings.Join(systems, "; ")
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// boundColors gives every bound a fixed Okabe–Ito color across plots;
// the bubble (idle time) is light grey.
var boundColors = map[sim.Bound]color.Color{
	sim.BoundCompute: okabeIto[3],
	sim.BoundHBM:     okabeIto[0],
	sim.BoundL2:      okabeIto[2],
	sim.BoundNVLink:  okabeIto[5],
	sim.BoundPCIe:    okabeIto[1],
	sim.BoundNetwork: okabeIto[4],
	sim.BoundLatency: okabeIto[6],
	sim.BoundBubble:  color.RGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff},
}

// breakdownBounds is the stacking order, bottom to top.
var breakdownBounds = []sim.Bound{sim.BoundCompute, sim.BoundHBM, sim.BoundL2, sim.BoundNVLink, sim.BoundPCIe,
	sim.BoundNetwork, sim.BoundLatency, sim.BoundBubble}

// BreakdownPlot stacks each strategy's critical-rank time by bound
// (time_by_bound_s), one panel per phase. Prefill bars stack to the prefill
// window (≈ TTFT), in seconds. The decode window spans several steps, so
// decode bars are scaled to stack to one step (TPOT), in milliseconds.
func BreakdownPlot(es []*sim.Estimate) (*Figure, error) {
	if len(es) == 0 {
		return nil, fmt.Errorf("breakdown: no strategies")
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name
	}
	phases := []struct {
		title, y string
		pe       func(*sim.Estimate) sim.PhaseEstimate
		scale    func(*sim.Estimate, float64) float64
	}{
		{"Prefill: critical rank's time by bound", "time in prefill (s)",
			func(e *sim.Estimate) sim.PhaseEstimate { return e.Prefill },
			func(_ *sim.Estimate, _ float64) float64 { return 1 }},
		{"Decode: critical rank's time by bound", "time per decode step (ms)",
			func(e *sim.Estimate) sim.PhaseEstimate { return e.Decode },
			func(e *sim.Estimate, sum float64) float64 {
				if sum == 0 {
					return 0
				}
				return 1e3 * e.Decode.TPOTS / sum
			}},
	}
	f := &Figure{Title: "Dry run: " + systemOf(es), PanelWidth: vg.Length(3.2+1.1*float64(len(es))) * vg.Inch, Height: 4.5 * vg.Inch}
	used := map[sim.Bound]*plotter.BarChart{} // the figure's legend: every bound drawn in any phase
	for _, ph := range phases {
		p := newPlot(ph.title, "strategy", ph.y)
		p.NominalX(names...)
		var below *plotter.BarChart
		top := make([]float64, len(es))
		for _, b := range breakdownBounds {
			vals := make(plotter.Values, len(es))
			nonzero := false
			for i, e := range es {
				pe := ph.pe(e)
				var sum float64
				for _, t := range pe.TimeByBound {
					sum += t
				}
				vals[i] = pe.TimeByBound[b] * ph.scale(e, sum)
				top[i] += vals[i]
				nonzero = nonzero || vals[i] > 0
			}
			if !nonzero {
				continue
			}
			bar, err := plotter.NewBarChart(vals, vg.Points(28))
			if err != nil {
				return nil, err
			}
			bar.Color = boundColors[b]
			bar.LineStyle.Width = vg.Length(0.5)
			if below != nil {
				bar.StackOn(below)
			}
			below = bar
			p.Add(bar)
			if used[b] == nil {
				used[b] = bar
			}
		}
		// The legend is the figure's, above the panels: the axis ends just
		// above the tallest bar.
		var tallest float64
		for _, t := range top {
			tallest = math.Max(tallest, t)
		}
		p.Y.Min, p.Y.Max = 0, breakdownTop*tallest
		p.Y.Tick.Marker = engTicks{inner: p.Y.Tick.Marker} // x names the strategies
		f.Panels = append(f.Panels, p)
	}
	for _, b := range breakdownBounds {
		if used[b] != nil {
			f.Legend = append(f.Legend, LegendEntry{boundLabels[b], []plot.Thumbnailer{used[b]}})
		}
	}
	return f, nil
}

// breakdownTop is where a breakdown's y axis ends, relative to its
// tallest bar.
const breakdownTop = 1.05

// sweepUnits labels a swept key with its unit.
var sweepUnits = map[string]string{
	"batch":        "batch (sequences)",
	"context":      "context (tokens)",
	"output":       "output tokens (tokens per sequence)",
	"hidden":       "hidden size (elements)",
	"microbatches": "micro-batches (count)",
	"l2_bytes":     "L2 size (B)",
}

// sweepKeyWords is a swept key in words for a title: its axis label
// without the unit ("L2 size" for l2_bytes).
func sweepKeyWords(key string) string {
	if l, ok := sweepUnits[key]; ok {
		if i := strings.Index(l, " ("); i > 0 {
			return l[:i]
		}
	}
	return strings.ReplaceAll(key, "_", " ")
}

// SweepPlot draws TPOT and TPS against the swept key, one line per strategy.
func SweepPlot(d *SweepDoc) (*Figure, error) {
	if len(d.Points) == 0 {
		return nil, fmt.Errorf("sweep: no points")
	}
	xl := sweepUnits[d.Key]
	if xl == "" {
		xl = d.Key + " (value)"
	}
	var order []string
	tpot, tps := map[string]plotter.XYs{}, map[string]plotter.XYs{}
	var xs []float64
	for _, p := range d.Points {
		x := float64(p.Value)
		xs = append(xs, x)
		for _, e := range p.Strategies {
			if _, ok := tpot[e.Name]; !ok {
				order = append(order, e.Name)
			}
			tpot[e.Name] = append(tpot[e.Name], plotter.XY{X: x, Y: e.Decode.TPOTS * 1e3})
			tps[e.Name] = append(tps[e.Name], plotter.XY{X: x, Y: e.Decode.TokensPerS})
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("sweep: no strategy has an estimate at any point")
	}
	logX := spansDecades(xs)
	var strategies []*sim.Estimate
	for _, p := range d.Points {
		if len(p.Strategies) == len(order) {
			strategies = p.Strategies
			break
		}
	}
	key := sweepKeyWords(d.Key)
	title := "Sweep of " + key
	if strategies != nil {
		title += ": " + systemOf(strategies)
	}
	f := &Figure{Title: title, PanelWidth: 5.5 * vg.Inch, Height: 4 * vg.Inch}
	for _, m := range []struct {
		title, y string
		data     map[string]plotter.XYs
	}{
		{"TPOT vs " + key, "TPOT (ms)", tpot},
		{"TPS vs " + key, "TPS (tok/s)", tps},
	} {
		p := newPlot(m.title, xl, m.y)
		if logX {
			p.X.Scale = plot.LogScale{}
		}
		p.X.Tick.Marker = valueTicks(xs, logX)
		for i, name := range order {
			l, s, err := plotter.NewLinePoints(m.data[name])
			if err != nil {
				return nil, err
			}
			l.Color, s.Color, s.Shape = paletteColor(i), paletteColor(i), plotutil.Shape(i)
			l.Width = vg.Points(1.5)
			p.Add(l, s)
			if len(f.Legend) < len(order) {
				f.Legend = append(f.Legend, LegendEntry{name, []plot.Thumbnailer{l, s}})
			}
		}
		fitY(p, m.data) // the legend is the figure's, above the panels
		useEng(p, false)
		f.Panels = append(f.Panels, p)
	}
	return f, nil
}

// valueTicks labels the swept values themselves (log axes of doubling
// values otherwise get one label per decade).
func valueTicks(xs []float64, log bool) plot.Ticker {
	if len(xs) > 12 {
		if log {
			return engTicks{inner: plot.LogTicks{Prec: -1}}
		}
		return engTicks{inner: plot.DefaultTicks{}}
	}
	var t plot.ConstantTicks
	for i, l := range sweptLabels(xs) {
		t = append(t, plot.Tick{Value: xs[i], Label: l})
	}
	return t
}

// spansDecades says positive values cover at least a factor of 8: plot on
// a log axis.
func spansDecades(xs []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, x := range xs {
		if x <= 0 {
			return false
		}
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return hi >= 8*lo
}

// CollectivePoint is one bus bandwidth at one message size.
type CollectivePoint struct {
	Op        string  // all_reduce, all_gather
	Ranks     int     // group size
	Bytes     int64   // nccl-tests "size"
	BusBWGBps float64 // GB/s (10^9 B/s)
	Source    string  // short label of the source; URL in PublishedBusBW's comments
}

// CollectiveSeries is a modeled curve.
type CollectiveSeries struct {
	Label  string
	Points []CollectivePoint
}

// PublishedBusBW are the published nccl-tests bus bandwidths of
// docs/collectives.md's validation table (out-of-place, GB/s) on H100 SXM
// with NVSwitch. They are citations, not partbench results.
var PublishedBusBW = []CollectivePoint{
	// VP: Voltage Park / Georgia Tech, 8×H100 80GB HBM3 SXM, NCCL 2.24.3, nccl-tests 2.17.9:
	// https://github.com/ZiyanIshani/vpbenchmarking/blob/483959d960101f0cdf87fc0c962949c6a9975f77/results/nccl/nccl_allreduce_20260224_223444.txt
	{"all_reduce", 8, 8 << 20, 173.79, "VP"},
	{"all_reduce", 8, 64 << 20, 357.44, "VP"},
	{"all_reduce", 8, 1 << 30, 468.53, "VP"},
	{"all_reduce", 8, 8 << 30, 479.72, "VP"},
	// NV#212: NCCL maintainer, "an effective NVLink bandwidth of 370GB/s" for non-allreduce ops (peak statement):
	// https://github.com/NVIDIA/nccl-tests/issues/212
	{"all_gather", 8, 8 << 30, 370, "NV#212"},
	// WH: waynehacking8/nccl-collectives-bench, 4 of the 8 H100 80GB HBM3 of an HGX board, NCCL 2.29:
	// https://github.com/waynehacking8/nccl-collectives-bench/blob/f9883f88eb4337d3a2c515089b04a587cf104c83/results/all_reduce.txt
	// and results/all_gather.txt in the same commit.
	{"all_reduce", 4, 8 << 20, 200.12, "WH"},
	{"all_reduce", 4, 64 << 20, 308.92, "WH"},
	{"all_reduce", 4, 1 << 30, 357.03, "WH"},
	{"all_reduce", 4, 8 << 30, 366.37, "WH"},
	{"all_gather", 4, 8 << 20, 110.23, "WH"},
	{"all_gather", 4, 64 << 20, 258.16, "WH"},
	{"all_gather", 4, 1 << 30, 325.27, "WH"},
	{"all_gather", 4, 8 << 30, 343.92, "WH"},
	// NV#2409: a user's expectation of ~470 GB/s all_reduce busbw on 2 nodes × 8 H100 with 8×400G (second-hand):
	// https://github.com/NVIDIA/nccl/issues/2409
	{"all_reduce", 16, 8 << 30, 470, "NV#2409"},
}

// CollectivesPlot draws modeled bus bandwidth against message size beside
// published points for the same group size (ranks; 0 = all published).
func CollectivesPlot(title string, ranks int, modeled []CollectiveSeries, published []CollectivePoint) (*Figure, error) {
	if len(modeled) == 0 {
		return nil, fmt.Errorf("collectives: nothing modeled")
	}
	p := newPlot("modeled lines, published nccl-tests points", "message size (B; nccl-tests size, 1K = 1024)", "bus bandwidth (GB/s)")
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, binaryTicks{}
	p.Y.Tick.Marker = engTicks{inner: p.Y.Tick.Marker}
	var legend []LegendEntry // the figure's, above the panel
	for i, s := range modeled {
		pts := make(plotter.XYs, len(s.Points))
		for j, c := range s.Points {
			pts[j] = plotter.XY{X: float64(c.Bytes), Y: c.BusBWGBps}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = paletteColor(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		legend = append(legend, LegendEntry{s.Label, []plot.Thumbnailer{l}})
	}
	groups := map[string]plotter.XYs{}
	var keys []string
	for _, c := range published {
		if ranks != 0 && c.Ranks != ranks {
			continue
		}
		k := fmt.Sprintf("published %s, %d GPUs (%s)", c.Op, c.Ranks, publishedSources[c.Source])
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], plotter.XY{X: float64(c.Bytes), Y: c.BusBWGBps})
	}
	sort.Strings(keys)
	for i, k := range keys {
		s, err := plotter.NewScatter(groups[k])
		if err != nil {
			return nil, err
		}
		s.Shape = plotutil.Shape(i)
		s.Color = color.Black
		s.Radius = vg.Points(3.5)
		p.Add(s)
		legend = append(legend, LegendEntry{k, []plot.Thumbnailer{s}})
	}
	var tallest float64
	for _, s := range modeled {
		for _, c := range s.Points {
			tallest = math.Max(tallest, c.BusBWGBps)
		}
	}
	for _, c := range published {
		tallest = math.Max(tallest, c.BusBWGBps)
	}
	p.Y.Min, p.Y.Max = 0, 1.05*tallest // the legend is the figure's: the axis ends at the data
	return &Figure{Title: title, Panels: []*plot.Plot{p}, PanelWidth: 8 * vg.Inch, Height: 5 * vg.Inch, Legend: legend}, nil
}

func orElse(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// DocFigure draws a saved result read from path: kind "" chooses by its
// schema (model: breakdown, sweep: sweep, else scatter); a scatter's band is
// tolerance, else the document's, else compare.DefaultTolerance.
func DocFigure(d *Doc, path, kind string, tolerance float64) (*Figure, error) {
	if kind == "" {
		kind = map[string]string{ModelSchema: PlotBreakdown, SweepSchema: PlotSweep, RemoteSchema: PlotRemote}[d.Schema]
		if kind == "" {
			kind = PlotScatter
		}
	}
	wrong := func() (*Figure, error) {
		return nil, fmt.Errorf("--kind %s: %s is %s; %s", kind, path, d.Schema, map[string]string{
			PlotBreakdown: "breakdown needs " + ModelSchema,
			PlotSweep:     "sweep needs " + SweepSchema,
			PlotScatter: "scatter needs " + CompareSchema + ", " + RunSchema + ", " + SearchSchema + ", " + ComparisonSchema +
				" or " + EmulationSchema,
			PlotRemote: "remote needs " + RemoteSchema,
		}[kind])
	}
	switch kind {
	case PlotBreakdown:
		if d.Model == nil {
			return wrong()
		}
		return BreakdownPlot(d.Model.Strategies)
	case PlotSweep:
		if d.Sweep == nil {
			return wrong()
		}
		return SweepPlot(d.Sweep)
	case PlotRemote:
		if d.Remote == nil {
			return wrong()
		}
		return RemotePlot(d.Remote)
	}
	var c *CompareDoc
	switch {
	case d.Comparison != nil:
		return ComparisonPlot(d.Comparison)
	case d.Emulation != nil:
		var err error
		if c, err = CompareFromEmulation(d.Emulation); err != nil {
			return nil, err
		}
	case d.Compare != nil:
		c = d.Compare
	case d.Run != nil:
		c = CompareFromRun(d.Run)
	case d.Search != nil:
		c = CompareFromSearch(d.Search)
	default:
		return wrong()
	}
	if len(c.Rows) == 0 {
		return nil, fmt.Errorf("plot %s: no measured/modeled pairs to scatter", path)
	}
	tol := tolerance
	if tol == 0 && c.Tolerance == 0 {
		tol = compare.DefaultTolerance
	}
	return ScatterPlot(c, tol)
}

// CollectivesFigure draws modeled bus-bandwidth curves (one series per
// collective, computed by the caller over ranks 0..ranks−1 of sys) beside
// the published nccl-tests points.
func CollectivesFigure(sys topology.System, ranks int, modeled []CollectiveSeries) (*Figure, error) {
	title := fmt.Sprintf("Bus bandwidth on %s (%s), %d GPUs: model and published nccl-tests", sys.Topology.Name, sys.GPU.Name, ranks)
	return CollectivesPlot(title, ranks, modeled, PublishedBusBW)
}

// publishedSources spells out the short source labels of PublishedBusBW
// (their URLs are in its comments).
var publishedSources = map[string]string{
	"VP":      "VP: Voltage Park 8×H100, nccl-tests 2.17.9",
	"NV#212":  "NV#212: NCCL maintainer's peak figure",
	"WH":      "WH: 4 of an HGX H100's 8 GPUs, NCCL 2.29",
	"NV#2409": "NV#2409: a user's expectation, 2×8 H100",
}

// fitY sets a panel's y range from 0 (or the lowest value, if negative)
// to just above the highest value.
func fitY(p *plot.Plot, data map[string]plotter.XYs) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, xys := range data {
		for _, xy := range xys {
			lo, hi = math.Min(lo, xy.Y), math.Max(hi, xy.Y)
		}
	}
	if hi > lo || (hi == lo && hi > 0) {
		lo = math.Min(0, lo)
		p.Y.Min, p.Y.Max = lo, hi+0.05*(hi-lo)
	}
}
