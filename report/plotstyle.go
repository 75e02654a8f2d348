package report

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/partbench/partbench/sim"
)

// The palette is okabeIto (report/suite.go): Okabe & Ito, "Color Universal
// Design" (2002), told apart with every common form of colour blindness.

// paletteColor is the i-th series colour.
func paletteColor(i int) color.Color { return okabeIto[i%len(okabeIto)] }

// boundLabels explain each bound in a legend.
var boundLabels = map[sim.Bound]string{
	sim.BoundCompute: "compute (tensor-core FLOP/s)",
	sim.BoundHBM:     "HBM bandwidth",
	sim.BoundL2:      "L2 bandwidth",
	sim.BoundNVLink:  "NVLink transfer",
	sim.BoundPCIe:    "PCIe transfer",
	sim.BoundNetwork: "network transfer",
	sim.BoundLatency: "latency (launch, link)",
	sim.BoundBubble:  "bubble (idle, waiting)",
}

// engTicks relabels another ticker's major ticks in engineering notation:
// 500, 1K, 2.5M, 8G. binary uses powers of 1024 (byte sizes as nccl-tests
// prints them), else powers of 1000.
type engTicks struct {
	inner  plot.Ticker
	binary bool
}

func (t engTicks) Ticks(min, max float64) []plot.Tick {
	ts := t.inner.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = engLabel(ts[i].Value, t.binary)
		}
	}
	return ts
}

// engLabel writes v with a K/M/G/T suffix and at most 3 significant figures.
func engLabel(v float64, binary bool) string {
	base := 1000.0
	if binary {
		base = 1024
	}
	neg := v < 0
	a := math.Abs(v)
	suffix := ""
	for _, s := range []string{"K", "M", "G", "T", "P"} {
		if a < base {
			break
		}
		a /= base
		suffix = s
	}
	if !binary && suffix == "" && a != 0 && a < 1e-2 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	out := strconv.FormatFloat(a, 'g', 3, 64)
	if neg {
		out = "−" + out
	}
	return out + suffix
}

// useEng puts engineering-notation labels on both axes of p, keeping each
// axis's ticker (log or linear); xBinary marks an x axis of byte sizes.
func useEng(p *plot.Plot, xBinary bool) {
	if _, exact := p.X.Tick.Marker.(plot.ConstantTicks); !exact { // a sweep's values keep their own labels
		p.X.Tick.Marker = engTicks{inner: p.X.Tick.Marker, binary: xBinary}
	}
	p.Y.Tick.Marker = engTicks{inner: p.Y.Tick.Marker}
}

// binaryTicks puts major ticks on a log axis of byte sizes at powers of 32
// (32, 1K, 32K, 1M, 32M, 1G: nccl-tests' sizes) and minor ticks at every
// power of 2, labelled with engLabel.
type binaryTicks struct{}

func (binaryTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log2(math.Max(min, 1))); math.Pow(2, e) <= max; e++ {
		v := math.Pow(2, e)
		if v < min {
			continue
		}
		t := plot.Tick{Value: v}
		if int(e)%5 == 0 {
			t.Label = engLabel(v, true)
		}
		ts = append(ts, t)
	}
	return ts
}

// LegendEntry is one line of a figure's legend: its text and the
// thumbnails (line, glyph, fill) of what it names.
type LegendEntry struct {
	Label  string
	Thumbs []plot.Thumbnailer
}

// legendPad is the room between a legend's box and its entries.
const legendPad = vg.Length(3)

// Legend boxes are opaque: white, with a thin grey border.
var (
	legendFill   = color.White
	legendBorder = color.Gray{Y: 0x80}
)

// legendBox fills r white and draws its thin border.
func legendBox(c draw.Canvas, r vg.Rectangle) {
	c.SetColor(legendFill)
	c.Fill(r.Path())
	c.SetLineStyle(draw.LineStyle{Color: legendBorder, Width: vg.Points(0.5)})
	c.Stroke(r.Path())
}

// drawPanel draws p on c with its legend (if any) on an opaque box: the
// legend is taken out while the plot draws, then drawn last on white, so
// no grid line or data shows through it.
func drawPanel(p *plot.Plot, c draw.Canvas) {
	leg := p.Legend
	if leg.Rectangle(c).Size().Y == 0 { // no entries
		p.Draw(c)
		return
	}
	empty := plot.NewLegend()
	p.Legend = empty
	p.Draw(c)
	p.Legend = leg
	drawLegendBox(p.DataCanvas(c), leg)
}

// drawLegendBox draws l inside the data area c on a white, bordered box
// placed where l.Top, l.Left, l.XOffs and l.YOffs put it.
func drawLegendBox(c draw.Canvas, l plot.Legend) {
	size := l.Rectangle(c).Size()
	descent := l.TextStyle.FontExtents().Descent
	w, h := size.X+2*legendPad, size.Y+2*legendPad+descent
	var box vg.Rectangle
	if l.Left {
		box.Min.X = c.Min.X + l.XOffs
		box.Max.X = box.Min.X + w
		l.XOffs += legendPad
	} else {
		box.Max.X = c.Max.X + l.XOffs
		box.Min.X = box.Max.X - w
		l.XOffs -= legendPad
	}
	if l.Top {
		box.Max.Y = c.Max.Y + l.YOffs
		box.Min.Y = box.Max.Y - h
		l.YOffs -= legendPad
	} else {
		box.Min.Y = c.Min.Y + l.YOffs
		box.Max.Y = box.Min.Y + h
		l.YOffs += legendPad + descent
	}
	legendBox(c, box)
	l.Draw(c)
}

// figureLegendCols lays entries out in at most three columns, filled
// column by column.
func figureLegendCols(entries []LegendEntry) [][]LegendEntry {
	if len(entries) == 0 {
		return nil
	}
	cols := min(len(entries), 3)
	rows := (len(entries) + cols - 1) / cols
	var out [][]LegendEntry
	for i := 0; i < len(entries); i += rows {
		out = append(out, entries[i:min(i+rows, len(entries))])
	}
	return out
}

// figureLegends is one plot.Legend per column of a figure's legend.
func figureLegends(entries []LegendEntry) []plot.Legend {
	var out []plot.Legend
	for _, col := range figureLegendCols(entries) {
		l := plot.NewLegend()
		l.TextStyle.Font.Size = vg.Points(11)
		l.Top, l.Left = true, true
		for _, e := range col {
			l.Add(e.Label, e.Thumbs...)
		}
		out = append(out, l)
	}
	return out
}

// figureLegendHeight is the height of the strip a figure's legend takes.
func figureLegendHeight(c draw.Canvas, entries []LegendEntry) vg.Length {
	var h vg.Length
	for _, l := range figureLegends(entries) {
		h = max(h, l.Rectangle(c).Size().Y+l.TextStyle.FontExtents().Descent)
	}
	if h == 0 {
		return 0
	}
	return h + 2*legendPad + vg.Millimeter*3
}

// figureLegendWidth is the width of a figure's legend, columns side by side.
func figureLegendWidth(c draw.Canvas, entries []LegendEntry) vg.Length {
	var w vg.Length
	for i, l := range figureLegends(entries) {
		if i > 0 {
			w += vg.Millimeter * 6
		}
		w += l.Rectangle(c).Size().X
	}
	return w + 2*legendPad
}

// drawFigureLegend draws entries centred at the top of c, columns side by
// side on one white, bordered box.
func drawFigureLegend(c draw.Canvas, entries []LegendEntry) {
	legs := figureLegends(entries)
	if len(legs) == 0 {
		return
	}
	w := figureLegendWidth(c, entries)
	h := figureLegendHeight(c, entries) - vg.Millimeter*3
	x := c.Center().X - w/2
	legendBox(c, vg.Rectangle{Min: vg.Point{X: x, Y: c.Max.Y - h}, Max: vg.Point{X: x + w, Y: c.Max.Y}})
	x += legendPad
	for _, l := range legs {
		col := c
		col.Min.X, col.Max.Y = x, c.Max.Y-legendPad
		l.Draw(col)
		x += l.Rectangle(c).Size().X + vg.Millimeter*6
	}
}

// intTicks puts ticks on whole numbers only (counts: no 2.5 calls).
type intTicks struct{}

func (intTicks) Ticks(min, max float64) []plot.Tick { return niceTicks(min, max, 1) }

// linTicks puts ticks at a step of 1, 2 or 5 × 10^k, labelled in
// engineering notation.
type linTicks struct{}

func (linTicks) Ticks(min, max float64) []plot.Tick { return niceTicks(min, max, 0) }

// niceTicks are ticks from min to max at a step of 1, 2 or 5 × 10^k (at
// least minStep) giving at most about six ticks.
func niceTicks(min, max, minStep float64) []plot.Tick {
	if !(max > min) {
		return nil
	}
	raw := (max - min) / 6
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * p
	for _, m := range []float64{1, 2, 5} {
		if m*p >= raw {
			step = m * p
			break
		}
	}
	step = math.Max(step, minStep)
	var ts []plot.Tick
	for k := math.Ceil(min/step - 1e-9); k*step <= max+1e-9*step; k++ {
		v := k * step
		if v == 0 {
			v = 0 // no −0
		}
		ts = append(ts, plot.Tick{Value: v, Label: engLabel(v, false)})
	}
	return ts
}

// sweptLabels labels a sweep's values exactly: whole numbers below 100 000
// as they are (1024, 2048), larger multiples of 1024 in binary units
// (16 Ki, 1 Mi), anything else in engineering notation.
func sweptLabels(xs []float64) []string {
	whole, big, kibi := true, false, true
	for _, x := range xs {
		whole = whole && x == math.Trunc(x)
		big = big || x >= 1e5
		kibi = kibi && math.Mod(x, 1024) == 0
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		switch {
		case whole && !big:
			out[i] = strconv.FormatFloat(x, 'f', -1, 64)
		case whole && kibi:
			out[i] = binaryUnitLabel(x)
		default:
			out[i] = engLabel(x, false)
		}
	}
	return out
}

// binaryUnitLabel writes a multiple of 1024 as "16 Ki", "1 Mi", "3 Gi".
func binaryUnitLabel(x float64) string {
	suffix := ""
	for _, s := range []string{"Ki", "Mi", "Gi", "Ti"} {
		if x < 1024 || math.Mod(x, 1024) != 0 {
			break
		}
		x /= 1024
		suffix = s
	}
	return strconv.FormatFloat(x, 'f', -1, 64) + " " + suffix
}

// logTicks labels a log axis in engineering notation: at 1, 2 and 5 × 10^k
// when the axis spans at most two decades (so a short axis shows more than
// one label), else at the powers of ten, with minor ticks at the other
// whole multiples.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	if !(min > 0 && max > min) {
		return nil
	}
	dense := max/min <= 100
	var ts []plot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || dense && (m == 2 || m == 5) {
				t.Label = engLabel(v, false)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// log10Ticks labels a linear axis that holds log10 of the values: a label
// at every power of ten (1, 10, 100, 1K, …), minor ticks at the whole
// multiples between.
type log10Ticks struct{}

func (log10Ticks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(min); e <= max; e++ {
		for m := 1.0; m < 10; m++ {
			v := e + math.Log10(m)
			if v < min-1e-9 || v > max+1e-9 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 {
				t.Label = engLabel(math.Pow(10, e), false)
			}
			ts = append(ts, t)
		}
	}
	return ts
}
