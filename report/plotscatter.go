package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/partbench/partbench/stats"
)

// scatterSeries is one set of points of a scatter panel: y against x, each
// point labelled with its metric in words.
type scatterSeries struct {
	name   string // legend entry
	pts    plotter.XYs
	labels []string
}

// unitWords names a panel's unit in words for its title.
var unitWords = map[string]string{
	"s":     "time (s)",
	"B":     "bytes (B)",
	"tok/s": "throughput (tok/s)",
	"":      "unitless",
}

// countUnits are units of whole things: their axes tick at whole numbers.
var countUnits = map[string]bool{"count": true, "calls": true, "sends": true, "messages": true,
	"steps": true, "requests": true, "ops": true}

// scatterPanelTitle is a panel's unit in words and the metrics it shows,
// short enough for its title.
func scatterPanelTitle(unit string, metrics []string) string {
	words := unitWords[unit]
	if words == "" {
		words = unit
	}
	var seen []string
	for _, m := range metrics {
		if l := plotMetricLabel(m); !containsString(seen, l) {
			seen = append(seen, l)
		}
	}
	all := strings.Join(seen, ", ")
	if len(all) > 45 && len(seen) > 1 {
		all = fmt.Sprintf("%s and %d more", seen[0], len(seen)-1)
	}
	return words + ": " + all
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// scatterPanel draws series against one unit's axes with the line y = x
// and, when tol > 0, the band of |stats.ModelError| ≤ tol. It returns the
// panel and the plotters to name in the figure's legend.
func scatterPanel(title, unit, xName, yName string, series []scatterSeries, tol float64) (*plot.Plot, []LegendEntry, error) {
	label := orElse(unit, "unitless")
	p := newPlot(title, xName+" ("+label+")", yName+" ("+label+")")
	lo, hi := math.Inf(1), math.Inf(-1)
	var xs []float64
	for _, s := range series {
		for _, pt := range s.pts {
			xs = append(xs, pt.X, pt.Y)
			lo, hi = math.Min(lo, math.Min(pt.X, pt.Y)), math.Max(hi, math.Max(pt.X, pt.Y))
		}
	}
	if len(xs) == 0 {
		return nil, nil, fmt.Errorf("scatter: no points in the %s panel", label)
	}
	logAxes := spansDecades(xs)
	switch {
	case logAxes:
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
		lo, hi = lo/1.5, hi*1.5
	case countUnits[unit]:
		// Whole numbers, at least one either side of the data.
		lo, hi = math.Floor(lo-math.Max(1, 0.1*(hi-lo))), math.Ceil(hi+math.Max(1, 0.1*(hi-lo)))
		p.X.Tick.Marker, p.Y.Tick.Marker = intTicks{}, intTicks{}
	default:
		pad := 0.1 * (hi - lo)
		if pad == 0 {
			pad = 0.1 * math.Max(math.Abs(hi), 1)
		}
		lo, hi = lo-pad, hi+pad
		p.X.Tick.Marker, p.Y.Tick.Marker = linTicks{}, linTicks{}
	}
	var legend []LegendEntry
	if tol > 0 {
		// The measurements a row is not flagged for: |stats.ModelError| ≤ tol.
		loLow, loHigh := stats.MeasuredBand(lo, tol)
		hiLow, hiHigh := stats.MeasuredBand(hi, tol)
		band, err := plotter.NewPolygon(plotter.XYs{{X: lo, Y: loLow}, {X: hi, Y: hiLow}, {X: hi, Y: hiHigh}, {X: lo, Y: loHigh}})
		if err != nil {
			return nil, nil, err
		}
		band.Color = color.NRGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0x50} // Okabe–Ito sky blue
		band.LineStyle.Width = 0
		p.Add(band)
		legend = append(legend, LegendEntry{fmt.Sprintf("±%g %% error %s", 100*tol, stats.ErrorDefinition), []plot.Thumbnailer{band}})
	}
	diag, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return nil, nil, err
	}
	diag.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(diag)
	legend = append(legend, LegendEntry{yName + " = " + xName, []plot.Thumbnailer{diag}})
	for i, s := range series {
		if len(s.pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.pts)
		if err != nil {
			return nil, nil, err
		}
		sc.Color = scatterColor(i)
		sc.Shape = plotutil.Shape(i)
		sc.Radius = vg.Points(3)
		p.Add(sc)
		legend = append(legend, LegendEntry{s.name, []plot.Thumbnailer{sc}})
		if err := addPointLabels(p, s, lo, hi, logAxes); err != nil {
			return nil, nil, err
		}
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
	return p, legend, nil
}

// scatterColor is the i-th series of a scatter: vermillion first, then the
// rest of the Okabe–Ito palette.
func scatterColor(i int) color.Color {
	order := []int{4, 3, 2, 5, 0, 1, 7}
	return okabeIto[order[i%len(order)]]
}

// addPointLabels writes each point's metric beside it: to its right, or to
// its left in the right third of the panel so the text stays inside. Points
// at one spot share one label.
func addPointLabels(p *plot.Plot, s scatterSeries, lo, hi float64, log bool) error {
	pos := func(v float64) float64 {
		if log {
			return (math.Log(v) - math.Log(lo)) / (math.Log(hi) - math.Log(lo))
		}
		return (v - lo) / (hi - lo)
	}
	var right, left plotter.XYLabels
	var spots [][2]float64
	var texts []string
	var counts []int
	for i, pt := range s.pts {
		x, y := pos(pt.X), pos(pt.Y)
		joined := false
		for j, sp := range spots {
			if math.Abs(sp[0]-x) < 0.04 && math.Abs(sp[1]-y) < 0.04 {
				// Two names at one spot are written out; more read as the
				// first and a count, so a label stays short.
				if !containsString(strings.Split(texts[j], ", "), s.labels[i]) {
					counts[j]++
					if counts[j] == 2 {
						texts[j] += ", " + s.labels[i]
					}
				}
				joined = true
				break
			}
		}
		if !joined {
			spots = append(spots, [2]float64{x, y})
			texts = append(texts, s.labels[i])
			counts = append(counts, 1)
			xy := pt
			if x > 0.6 {
				left.XYs, left.Labels = append(left.XYs, xy), append(left.Labels, "")
			} else {
				right.XYs, right.Labels = append(right.XYs, xy), append(right.Labels, "")
			}
		}
	}
	for j, n := range counts {
		if n > 2 {
			texts[j] += fmt.Sprintf(" and %d more", n-2)
		}
	}
	// Fill the texts in in the order the spots were found.
	ri, li := 0, 0
	for j, sp := range spots {
		if sp[0] > 0.6 {
			left.Labels[li] = texts[j]
			li++
		} else {
			right.Labels[ri] = texts[j]
			ri++
		}
	}
	for _, side := range []struct {
		l     plotter.XYLabels
		align draw.XAlignment
		dx    vg.Length
	}{{right, draw.XLeft, vg.Points(5)}, {left, draw.XRight, -vg.Points(5)}} {
		if len(side.l.XYs) == 0 {
			continue
		}
		ls, err := plotter.NewLabels(side.l)
		if err != nil {
			return err
		}
		for i := range ls.TextStyle {
			ls.TextStyle[i].Font.Size = vg.Points(8)
			ls.TextStyle[i].XAlign = side.align
			ls.TextStyle[i].YAlign = draw.YCenter
		}
		ls.Offset = vg.Point{X: side.dx}
		p.Add(unpadded{ls})
	}
	return nil
}

// unpadded draws labels without widening the plot's margins for them
// (plotter.Labels' glyph boxes would shrink the data area to fit every
// label's text; a label may run to the panel's edge instead).
type unpadded struct{ l *plotter.Labels }

func (u unpadded) Plot(c draw.Canvas, p *plot.Plot)            { u.l.Plot(c, p) }
func (u unpadded) DataRange() (xmin, xmax, ymin, ymax float64) { return u.l.DataRange() }

// ScatterPlot draws measured (y) against modeled (x) with the line y = x and
// a ±tol band, one panel per unit so every axis carries its unit; every
// point is labelled with its metric in words, and the legend is drawn once
// for the figure.
func ScatterPlot(d *CompareDoc, tol float64) (*Figure, error) {
	if len(d.Rows) == 0 {
		return nil, fmt.Errorf("scatter: no rows")
	}
	if tol <= 0 {
		tol = d.Tolerance
	}
	if !(tol >= 0 && tol < 1) {
		return nil, fmt.Errorf("--tolerance: must be in [0, 1) (got %g)", tol)
	}
	f := &Figure{Title: orElse(d.Title, "Measured vs modeled"), PanelWidth: 4.5 * vg.Inch, Height: 4.5 * vg.Inch}
	units := d.units()
	if len(units) > 3 {
		f.Cols = min((len(units)+1)/2, 3)
	}
	xName, yName := orElse(d.ModeledLabel, "modeled"), orElse(d.MeasuredLabel, "measured")
	for _, unit := range units {
		s := scatterSeries{name: "each metric's " + yName + " against " + xName}
		var metrics []string
		for _, r := range d.Rows {
			if r.Unit == unit {
				s.pts = append(s.pts, plotter.XY{X: r.Modeled, Y: r.Measured})
				s.labels = append(s.labels, plotMetricLabel(r.Metric))
				metrics = append(metrics, r.Metric)
			}
		}
		p, legend, err := scatterPanel(scatterPanelTitle(unit, metrics), unit, xName, yName, []scatterSeries{s}, tol)
		if err != nil {
			return nil, err
		}
		if f.Legend == nil {
			f.Legend = legend
		}
		f.Panels = append(f.Panels, p)
	}
	return f, nil
}

// acronyms are written in capitals in a plot's metric labels.
var acronyms = map[string]string{"ttft": "TTFT", "tpot": "TPOT", "tps": "TPS", "nvlink": "NVLink", "pcie": "PCIe",
	"gpu": "GPU", "nccl": "NCCL", "kv": "KV", "hbm": "HBM", "l2": "L2"}

// plotMetricLabel is MetricLabel with acronyms in capitals (a run names its
// metrics ttft, tpot, decode_step_bytes_nvlink).
func plotMetricLabel(key string) string {
	words := strings.Fields(MetricLabel(key))
	for i, w := range words {
		if a, ok := acronyms[w]; ok {
			words[i] = a
		}
	}
	return strings.Join(words, " ")
}
