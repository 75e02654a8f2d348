package report

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/partbench/partbench/serving"
)

// ServingPlotFormat is the image format of a --plot path: png, svg or pdf.
func ServingPlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png", ".pdf":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("--plot: must end in .png, .svg or .pdf (got %q)", path)
	}
}

// ServingPlot draws the latency–throughput curve: TTFT (median and the
// last percentile) and mean TPOT against the offered rate, each with its
// SLO line, the knee and the best rate marked. Rate inf has no place on a
// rate axis and is left out.
func ServingPlot(d *ServingDoc) (*Figure, error) {
	var pts []serving.Point
	for _, p := range d.Sweep.Points {
		if !math.IsInf(p.RequestRate, 1) {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("--plot: no finite request rate to draw (rate inf has no place on the axis)")
	}
	pc := 99.0
	if ps := pts[0].Metrics.Ps; len(ps) > 0 {
		pc = ps[len(ps)-1]
	}
	pw := "p" + percentileWord(pc)
	series := func(get func(serving.Metrics) float64) plotter.XYs {
		var xy plotter.XYs
		for _, p := range pts {
			xy = append(xy, plotter.XY{X: p.RequestRate, Y: get(p.Metrics)})
		}
		return xy
	}
	last := func(x serving.Dist) float64 { return x.Percentiles[len(x.Percentiles)-1] }
	f := &Figure{Title: fmt.Sprintf("Latency vs request rate: %s, %s (modeled)", d.Config, d.Hardware), PanelWidth: 5.5 * vg.Inch, Height: 4 * vg.Inch}
	for _, panel := range []struct {
		title, y string
		names    []string
		data     []plotter.XYs
		slo      float64
	}{
		{"TTFT", "TTFT (ms)", []string{"median TTFT", pw + " TTFT"},
			[]plotter.XYs{series(func(m serving.Metrics) float64 { return m.TTFT.MedianMs }), series(func(m serving.Metrics) float64 { return last(m.TTFT) })}, d.Sweep.SLO.TTFTMs},
		{"TPOT", "TPOT (ms)", []string{"mean TPOT", pw + " TPOT"},
			[]plotter.XYs{series(func(m serving.Metrics) float64 { return m.TPOT.MeanMs }), series(func(m serving.Metrics) float64 { return last(m.TPOT) })}, d.Sweep.SLO.TPOTMs},
	} {
		p := newPlot(panel.title+" vs request rate", "request rate (req/s)", panel.y)
		p.Legend.Left = true
		ymax, ymin := panel.slo, math.Inf(1)
		if panel.slo > 0 {
			ymin = panel.slo
		}
		for _, xy := range panel.data {
			for _, v := range xy {
				if v.Y > 0 {
					ymin = math.Min(ymin, v.Y)
				}
			}
		}
		// Latencies that span two decades (past the knee) go on a log axis,
		// so the SLO line and the curve below the knee stay readable.
		logY := ymin > 0 && !math.IsInf(ymin, 1)
		for _, xy := range panel.data {
			for _, v := range xy {
				logY = logY && v.Y > 0
				ymax = math.Max(ymax, v.Y)
			}
		}
		logY = logY && ymax >= 100*ymin
		if logY {
			p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		}
		for i, xy := range panel.data {
			l, s, err := plotter.NewLinePoints(xy)
			if err != nil {
				return nil, err
			}
			l.Color, s.Color, s.Shape = paletteColor(i), paletteColor(i), plotutil.Shape(i)
			l.Width = vg.Points(1.5)
			p.Add(l, s)
			p.Legend.Add(panel.names[i], l, s)
			for _, v := range xy {
				ymax = math.Max(ymax, v.Y)
			}
		}
		xmin, xmax := pts[0].RequestRate, pts[len(pts)-1].RequestRate
		for _, q := range pts {
			xmin, xmax = math.Min(xmin, q.RequestRate), math.Max(xmax, q.RequestRate)
		}
		if panel.slo > 0 {
			l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: panel.slo}, {X: xmax, Y: panel.slo}})
			if err != nil {
				return nil, err
			}
			l.Color, l.Dashes, l.Width = paletteColor(5), []vg.Length{vg.Points(6), vg.Points(3)}, vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("SLO %g ms", panel.slo), l)
		}
		for _, mark := range []struct {
			x     float64
			label string
			color int
		}{{d.Sweep.Knee, "knee", 7}, {d.Sweep.BestRate, "best rate meeting SLO", 2}} {
			if math.IsNaN(mark.x) || math.IsInf(mark.x, 0) {
				continue
			}
			lo := 0.0
			if logY {
				lo = ymin / 1.5
			}
			l, err := plotter.NewLine(plotter.XYs{{X: mark.x, Y: lo}, {X: mark.x, Y: ymax * 1.05}})
			if err != nil {
				return nil, err
			}
			l.Color, l.Dashes, l.Width = paletteColor(mark.color), []vg.Length{vg.Points(2), vg.Points(2)}, vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s %s req/s", mark.label, rateLabel(mark.x)), l)
		}
		p.Y.Min, p.Y.Max = 0, ymax*1.1
		if logY {
			p.Y.Min, p.Y.Max = ymin/1.5, ymax*1.5
		}
		useEng(p, false)
		f.Panels = append(f.Panels, p)
	}
	// Achieved against offered: on the diagonal below the knee, flat past it.
	p := newPlot("Throughput vs request rate", "request rate (req/s)", "achieved (req/s)")
	p.Legend.Left = true
	got := series(func(m serving.Metrics) float64 { return m.RequestThroughput })
	var diag plotter.XYs
	for _, q := range got {
		diag = append(diag, plotter.XY{X: q.X, Y: q.X})
	}
	dl, err := plotter.NewLine(diag)
	if err != nil {
		return nil, err
	}
	dl.Color, dl.Dashes, dl.Width = paletteColor(7), []vg.Length{vg.Points(2), vg.Points(3)}, vg.Points(1)
	l, sc, err := plotter.NewLinePoints(got)
	if err != nil {
		return nil, err
	}
	l.Color, sc.Color, sc.Shape = paletteColor(2), paletteColor(2), plotutil.Shape(2)
	l.Width = vg.Points(1.5)
	p.Add(dl, l, sc)
	p.Legend.Add("achieved", l, sc)
	p.Legend.Add("offered", dl)
	if k := d.Sweep.Knee; !math.IsNaN(k) {
		kl, err := plotter.NewLine(plotter.XYs{{X: k, Y: 0}, {X: k, Y: k}})
		if err != nil {
			return nil, err
		}
		kl.Color, kl.Dashes, kl.Width = paletteColor(7), []vg.Length{vg.Points(2), vg.Points(2)}, vg.Points(1.5)
		p.Add(kl)
		p.Legend.Add(fmt.Sprintf("knee %s req/s", rateLabel(k)), kl)
	}
	p.Y.Min = 0
	useEng(p, false)
	f.Panels = append(f.Panels, p)
	return f, nil
}
