package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
)

// RemoteSchema is `partbench remote`'s results.json.
const RemoteSchema = remote.ResultsSchema

// remoteRecords are a remote results file's comparable records: one per
// mode and phase (bytes and latency per trial and per request, throughput,
// utilization, the breakdown's execute and overhead), and the naive/stateful
// gap.
func remoteRecords(f *remote.ResultsFile) []Record {
	var out []Record
	for _, a := range f.Aggregates {
		req := float64(max(a.Requests, 1))
		b := a.Breakdown
		out = append(out, Record{Key: string(a.Mode) + " " + string(a.Phase), Metrics: []Metric{
			{Name: "net_bytes_per_trial", Unit: "B", Value: float64(a.NetBytes)},
			{Name: "model_bytes_per_trial", Unit: "B", Value: float64(a.ModelBytes)},
			{Name: "net_bytes_per_request", Unit: "B", Value: float64(a.NetBytes) / req},
			{Name: "latency_mean_s", Unit: "s", Value: a.LatencyS.Mean},
			{Name: "latency_p50_s", Unit: "s", Value: a.LatencyS.P50},
			{Name: "latency_p95_s", Unit: "s", Value: a.LatencyS.P95},
			{Name: "latency_per_request_s", Unit: "s", Value: a.LatencyS.Mean / req},
			{Name: "tokens_per_s", Unit: "tok/s", Value: a.TokensPS.Mean},
			{Name: "avg_util", Unit: "fraction", Value: a.AvgSM.Mean},
			{Name: "execute_s", Unit: "s", Value: b.ExecuteS},
			{Name: "overhead_s", Unit: "s", Value: b.OverheadS},
		}})
	}
	if f.GapBytesRatio > 0 {
		out = append(out, Record{Key: "naive/stateful decode", Metrics: []Metric{
			{Name: "gap_bytes_ratio", Unit: "ratio", Value: f.GapBytesRatio},
			{Name: "gap_latency_ratio", Unit: "ratio", Value: f.GapLatencyRatio},
		}})
	}
	return out
}

// RemotePlot draws a remote results file: payload bytes per request of
// each mode and phase (log axis; local mode ships none and is named in the
// title), and mean latency per request; the naive/stateful gap is in the
// titles.
func RemotePlot(f *remote.ResultsFile) (*Figure, error) {
	type cell struct{ bytes, latency float64 }
	cells := map[partition.RemoteMode]map[partition.Phase]cell{}
	var modes []partition.RemoteMode
	for _, a := range f.Aggregates {
		if a.Phase != partition.Prefill && a.Phase != partition.Decode {
			continue // kv's one-time load is in the table, not per request
		}
		if cells[a.Mode] == nil {
			cells[a.Mode] = map[partition.Phase]cell{}
			modes = append(modes, a.Mode)
		}
		req := float64(max(a.Requests, 1))
		cells[a.Mode][a.Phase] = cell{float64(a.NetBytes) / req, a.LatencyS.Mean / req}
	}
	if len(modes) == 0 {
		return nil, fmt.Errorf("plot: the remote result %s has no prefill or decode aggregates", f.Config)
	}
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = string(m)
	}
	phases := []partition.Phase{partition.Prefill, partition.Decode}
	gap := ""
	if f.GapBytesRatio > 0 {
		gap = fmt.Sprintf("\nnaive/stateful per decode request: %s× bytes, %s× latency", engLabel(f.GapBytesRatio, false), engLabel(f.GapLatencyRatio, false))
	}
	fig := &Figure{PanelWidth: vg.Length(2.5+0.9*float64(len(modes))) * vg.Inch, Height: 4.5 * vg.Inch}

	// Bytes: on a log axis each bar is a rectangle from 1 B up (a bar chart
	// rises from 0, which a log axis cannot show), so a mode shipping bytes
	// and one shipping gigabytes both show.
	bp := newPlot(fmt.Sprintf("%s: payload per request\n(model bytes, counted in the transport)", f.Config), "mode"+gap, "payload per request (B, log)")
	bp.NominalX(names...)
	// The axis holds log10(bytes), labelled 10, 1K, 1M (gonum places a log
	// axis's label box at the linear midpoint of its range, which squeezes
	// the panel).
	bp.Y.Tick.Marker = log10Ticks{}
	top, zero := 1.0, []string{}
	for pi, ph := range phases {
		var legend *plotter.Polygon
		for i, m := range modes {
			b := cells[m][ph].bytes
			if b <= 1 {
				if pi == 1 {
					zero = append(zero, string(m))
				}
				continue
			}
			top = math.Max(top, b)
			x0 := float64(i) - 0.36 + 0.36*float64(pi)
			lb := math.Log10(b)
			r, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x0 + 0.34, Y: 0}, {X: x0 + 0.34, Y: lb}, {X: x0, Y: lb}})
			if err != nil {
				return nil, err
			}
			r.Color = phaseColor(ph)
			r.LineStyle.Width = vg.Length(0.5)
			bp.Add(r)
			legend = r
		}
		if legend != nil {
			bp.Legend.Add(string(ph), legend)
		}
	}
	bp.Y.Min, bp.Y.Max = 0, math.Ceil(math.Log10(top))+0.7
	bp.X.Min, bp.X.Max = -0.5, float64(len(modes))-0.5
	bp.Legend.Left, bp.Legend.Top = true, false // low left: local mode's empty column
	bp.Legend.YOffs = vg.Points(8)
	if len(zero) > 0 {
		bp.X.Label.Text = fmt.Sprintf("mode (no bytes: %s)", strings.Join(zero, ", ")) + gap
	}
	fig.Panels = append(fig.Panels, bp)

	lp := newPlot(fmt.Sprintf("%s: latency per request\n(%s, %s)", f.Config, orElse(f.Transport, "transport not recorded"), orElse(f.Server, "server not recorded")), "mode\n(mean over the recorded trials)", "mean latency per request (ms)")
	lp.NominalX(names...)
	tallest := 0.0
	for pi, ph := range phases {
		vals := make(plotter.Values, len(modes))
		for i, m := range modes {
			vals[i] = cells[m][ph].latency * 1e3
			tallest = math.Max(tallest, vals[i])
		}
		w := vg.Points(16)
		bar, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		bar.Offset = w * vg.Length(2*pi-1) / 2
		bar.Color = phaseColor(ph)
		bar.LineStyle.Width = vg.Length(0.5)
		lp.Add(bar)
		lp.Legend.Add(string(ph), bar)
	}
	lp.Y.Min, lp.Y.Max = 0, 1.4*math.Max(tallest, 1e-3)
	lp.Y.Tick.Marker = engTicks{inner: plot.DefaultTicks{}}
	lp.X.Min, lp.X.Max = -0.5, float64(len(modes))-0.5
	lp.Legend.Left = true
	fig.Panels = append(fig.Panels, lp)
	return fig, nil
}

// phaseColor is a phase's Okabe–Ito colour: blue for prefill, orange for
// decode.
func phaseColor(ph partition.Phase) color.Color {
	if ph == partition.Prefill {
		return okabeIto[3]
	}
	return okabeIto[0]
}
