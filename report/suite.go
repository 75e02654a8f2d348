package report

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/partbench/partbench/stats"
	"github.com/partbench/partbench/suite"
)

// Suite output files.
const (
	SuiteResultsJSON = "results.json"
	SuiteTable       = "speedup_table.tex"
	SuiteLatencyPDF  = "latency_comparison.pdf"
	SuiteTrafficPDF  = "network_traffic.pdf"
	SuiteUtilPDF     = "gpu_utilization.pdf"
)

// SuiteFiles lists every file WriteSuite writes.
var SuiteFiles = []string{SuiteResultsJSON, SuiteTable, SuiteLatencyPDF, SuiteTrafficPDF, SuiteUtilPDF}

// okabeIto is the Okabe–Ito colour-blind-safe palette (black last).
var okabeIto = []color.RGBA{
	{0xE6, 0x9F, 0x00, 0xFF}, {0x56, 0xB4, 0xE9, 0xFF}, {0x00, 0x9E, 0x73, 0xFF}, {0x00, 0x72, 0xB2, 0xFF},
	{0xD5, 0x5E, 0x00, 0xFF}, {0xCC, 0x79, 0xA7, 0xFF}, {0xF0, 0xE4, 0x42, 0xFF}, {0x00, 0x00, 0x00, 0xFF},
}

// WriteSuite writes results.json, the LaTeX table and the three figures.
func WriteSuite(dir string, r *suite.Results) error {
	if err := WriteFileAtomic(filepath.Join(dir, SuiteResultsJSON), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}); err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(dir, SuiteTable), func(w io.Writer) error { return SuiteLaTeX(w, r) }); err != nil {
		return err
	}
	figs := []struct {
		file, title, unit string
		log               bool
		val               func(suite.CellResult) stats.Summary
		scale             float64
	}{
		{SuiteLatencyPDF, "Latency per workload's unit (mean, 95 % CI on the log scale)", "latency (ms, log scale)", true, func(c suite.CellResult) stats.Summary { return c.LatencyS }, 1e3},
		{SuiteTrafficPDF, "Network payload per workload's unit (measured = model)", "payload (B, log; local 0: not drawn)", true, func(c suite.CellResult) stats.Summary { return c.NetBytes }, 1},
		{SuiteUtilPDF, "Device utilization over the server's span (mean, 95 % CI on the logit scale, inside 0–100 %)", "utilization (%)", false, func(c suite.CellResult) stats.Summary { return c.Util }, 100},
	}
	for _, f := range figs {
		fig, err := suiteFigure(r, f.title, f.unit, f.log, f.val, f.scale)
		if err != nil {
			return fmt.Errorf("%s: %w", f.file, err)
		}
		path := filepath.Join(dir, f.file)
		if err := WriteFileAtomic(path, func(w io.Writer) error { return fig.Write(w, "pdf") }); err != nil {
			return err
		}
	}
	return nil
}

// errPoints are points with asymmetric vertical error bars.
type errPoints struct {
	plotter.XYs
	lo, hi []float64
}

func (e errPoints) YError(i int) (float64, float64) { return e.lo[i], e.hi[i] }

// ClippedLabel marks a point whose interval a figure cannot draw whole: an
// interval stats clipped at its scale's bound, or a bound at or below 0 on
// a log axis.
const ClippedLabel = "CI clipped"

// suiteErrBar is the point (s's mean × scale) and the lengths of its bar
// below and above, drawn from s's interval as it is. clipped says the bar
// stops at a bound rather than at the interval's end; ok is false for a
// point a log axis cannot show (mean ≤ 0).
func suiteErrBar(s stats.Summary, scale float64, logY bool) (y, below, above float64, clipped, ok bool) {
	y = s.Mean * scale
	if logY && y <= 0 {
		return 0, 0, 0, false, false
	}
	below, above, clipped = (s.Mean-s.CILow)*scale, (s.CIHigh-s.Mean)*scale, s.CIClipped
	if logY && y-below <= 0 {
		// A log axis has no 0: the bar ends at the point and says why.
		below, clipped = 0, true
	}
	return y, below, above, clipped, true
}

// suiteFigure is one of the suite's figures: a point per baseline and
// workload with its interval, the legend once above the panel, and a y
// axis that spans the data (on a log axis: no empty decades).
func suiteFigure(r *suite.Results, title, unit string, logY bool, val func(suite.CellResult) stats.Summary, scale float64) (*Figure, error) {
	p := plot.New()
	// The title names what was run and where, as every partbench figure does.
	figTitle := fmt.Sprintf("%s\nsuite %s, %s backend (modeled for %s, link %s)", title, r.Spec, r.Backend, r.Hardware, r.Link)
	p.Y.Label.Text = unit
	p.X.Label.Text = "workload"
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	} else {
		p.Y.Tick.Marker = engTicks{inner: plot.DefaultTicks{}}
	}
	fig := &Figure{Title: figTitle, Panels: []*plot.Plot{p}, PanelWidth: 7 * vg.Inch, Height: 3.6 * vg.Inch}
	dataLo, dataHi := math.Inf(1), math.Inf(-1) // the data's extent, intervals included
	nb := len(r.Baselines)
	width := 0.8
	for bi, b := range r.Baselines {
		var pts errPoints
		var clips plotter.XYLabels
		for wi, w := range r.Workloads {
			for _, c := range r.Cells {
				if c.Baseline != b.Name || c.Workload != w.Name || c.LatencyS.N == 0 {
					continue
				}
				m, lo, hi, clipped, ok := suiteErrBar(val(c), scale, logY)
				if !ok {
					continue
				}
				x := float64(wi) - width/2 + width*(float64(bi)+0.5)/float64(nb)
				pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: m})
				pts.lo, pts.hi = append(pts.lo, lo), append(pts.hi, hi)
				dataLo, dataHi = math.Min(dataLo, m-lo), math.Max(dataHi, m+hi)
				if clipped {
					clips.XYs = append(clips.XYs, plotter.XY{X: x, Y: m})
					clips.Labels = append(clips.Labels, ClippedLabel)
				}
			}
		}
		if len(pts.XYs) == 0 {
			continue
		}
		col := okabeIto[bi%len(okabeIto)]
		sc, err := plotter.NewScatter(pts.XYs)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: plotutil.Shape(bi)}
		eb, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, err
		}
		eb.LineStyle.Color, eb.LineStyle.Width = col, vg.Points(1)
		p.Add(eb, sc)
		if len(clips.XYs) > 0 {
			l, err := plotter.NewLabels(clips)
			if err != nil {
				return nil, err
			}
			for i := range l.TextStyle {
				l.TextStyle[i].Color = col
				l.TextStyle[i].Font.Size = vg.Points(6)
				l.TextStyle[i].XAlign = draw.XLeft
			}
			l.Offset = vg.Point{X: vg.Points(4)}
			p.Add(l)
		}
		label := b.Name
		if b.Seed != "" {
			label += " (" + b.Seed + ")"
		}
		fig.Legend = append(fig.Legend, LegendEntry{label, []plot.Thumbnailer{sc}})
	}
	names := make([]string, len(r.Workloads))
	for i, w := range r.Workloads {
		names[i] = w.Name
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Add(plotter.NewGrid())
	// The legend is the figure's, above the panel: the axis spans the data
	// with a small margin (on a log axis, a factor of 1.25 either side).
	switch {
	case dataHi < dataLo: // nothing drawn
	case logY:
		p.Y.Min, p.Y.Max = dataLo/1.25, dataHi*1.25
	default:
		p.Y.Min, p.Y.Max = 0, math.Max(dataHi*1.05, 1)
	}
	return fig, nil
}

// SuiteLaTeX is the speedup table: booktabs rules, siunitx columns, one
// column wide (\small, five columns) for a two-column paper.
func SuiteLaTeX(w io.Writer, r *suite.Results) error {
	var b strings.Builder
	b.WriteString("% Generated by partbench suite report from runs.jsonl; needs \\usepackage{booktabs,siunitx}.\n")
	b.WriteString("\\begin{table}[t]\n\\centering\n\\small\n\\setlength{\\tabcolsep}{3pt}\n")
	fmt.Fprintf(&b, "\\caption{Latency and speedup, %d runs per cell after %d warm-up (%s). Speedup: the reference's latency over this one's, the ratio of geometric means (Welch's $t$ on log latencies).}\n",
		r.Runs, r.Warmup, LaTeXEscape(r.Spec))
	b.WriteString("\\label{tab:suite-speedup}\n")
	b.WriteString("\\begin{tabular}{@{}llS[table-format=4.3]S[table-format=2.2]S[table-format=2.2]@{}}\n\\toprule\n")
	b.WriteString("Workload & Baseline & {Latency (\\si{\\milli\\second})} & {vs local} & {vs naive} \\\\\n\\midrule\n")
	for wi, wl := range r.Workloads {
		if wi > 0 {
			b.WriteString("\\addlinespace\n")
		}
		first := true
		for _, c := range r.Cells {
			if c.Workload != wl.Name || c.LatencyS.N == 0 {
				continue
			}
			name := ""
			if first {
				name = LaTeXEscape(wl.Name)
				first = false
			}
			sp := func(cmp *suite.Comparison) string {
				if cmp == nil {
					return "{--}"
				}
				return fmt.Sprintf("%.2f", cmp.Speedup)
			}
			fmt.Fprintf(&b, "%s & %s & %s & %s & %s \\\\\n", name, LaTeXEscape(c.Baseline), siNum(c.LatencyS.Mean*1e3), sp(c.VsLocal), sp(c.VsNaive))
		}
	}
	b.WriteString("\\bottomrule\n\\end{tabular}\n\\end{table}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// siNum prints a number with 4 significant digits for an S column.
func siNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "{--}"
	}
	return fmt.Sprintf("%.4g", v)
}

// SuiteMarkdown is the terminal summary: per cell measured mean ± CI,
// modeled value and its error, bytes, speedups with p-values.
func SuiteMarkdown(w io.Writer, r *suite.Results) error {
	fmt.Fprintf(w, "## Suite %s: %d warm-up + %d measured runs per cell (modeled on %s over %s)\n\n", r.Spec, r.Warmup, r.Runs, r.Hardware, r.Link)
	if !r.Complete {
		fmt.Fprintln(w, "**Incomplete**: some cells have fewer runs than the spec asks (`partbench suite --resume` continues).")
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "| cell | n | latency ms (mean [95 %% CI, log scale]) | median ms | modeled ms | model error %s | payload B (model B) | util %% | vs local [95 %% CI] (p) | vs naive [95 %% CI] (p) |\n", stats.ErrorDefinition)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	cmp := func(c *suite.Comparison) string {
		if c == nil {
			return "—"
		}
		return fmt.Sprintf("%.2f× [%.2f, %.2f] (p %.2g, d %.2g)", c.Speedup, c.SpeedupCILow, c.SpeedupCIHigh, c.PValue, c.CohensD)
	}
	for _, c := range r.Cells {
		l := c.LatencyS
		fmt.Fprintf(w, "| %s | %d | %.4g [%.4g, %.4g] | %.4g | %.4g | %+.0f %% | %.0f (%.0f) | %.0f | %s | %s |\n",
			c.Cell, l.N, l.Mean*1e3, l.CILow*1e3, l.CIHigh*1e3, l.P50*1e3, c.ModeledS*1e3, c.ModelErr*100,
			c.NetBytes.Mean, c.ModelBytes, c.Util.Mean*100, cmp(c.VsLocal), cmp(c.VsNaive))
	}
	fmt.Fprintf(w, "\nThe model prices %s; measured cells ran on the %s backend, so a large model error on a CPU run is the hardware gap, not a fault.\n", r.Hardware, r.Backend)
	return nil
}
