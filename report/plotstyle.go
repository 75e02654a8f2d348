package report

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"

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
	p.X.Tick.Marker = engTicks{inner: p.X.Tick.Marker, binary: xBinary}
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
