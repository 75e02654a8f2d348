package report

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/partbench/partbench/fileio"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/resume"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/stats"
)

// ResumeSchema marks a saved `partbench resume` result.
const ResumeSchema = "partbench.resume/v1"

// ResumeDoc is resume.json: what was measured and, for the same config, the
// model.
type ResumeDoc struct {
	Schema   string              `json:"schema"`
	Version  string              `json:"version"`
	Measured *resume.Result      `json:"measured,omitempty"`
	Model    *sim.ResumeEstimate `json:"model,omitempty"`
}

// ResumeGrid is the measured table, one row per strategy and layer.
func ResumeGrid(r *resume.Result) Grid {
	g := Grid{Title: fmt.Sprintf("resume at layer N: %s on %s, %d trials after %d warm-up (activation %d B, modification %d B)",
		r.Config, r.Backend, r.Trials, r.Warmup, r.ActivationBytes, r.DeltaBytes),
		Header: []string{"strategy", "layer", "resume mean ms", "std ms", "p50 ms", "p95 ms", "to output mean ms", "to output p95 ms",
			"to host B", "to device B", "net up B", "net down B", "replayed layer ops", "restore ms", "compute ms", "framework ms", "mismatches"}}
	for _, row := range r.Results {
		opt := func(s *stats.Summary) string {
			if s == nil {
				return ""
			}
			return ms(s.Mean)
		}
		g.Rows = append(g.Rows, []string{row.Strategy, strconv.Itoa(row.Layer), ms(row.ResumeLatency.Mean), ms(row.ResumeLatency.Std),
			ms(row.ResumeLatency.P50), ms(row.ResumeLatency.P95), ms(row.TimeToOutput.Mean), ms(row.TimeToOutput.P95),
			strconv.FormatInt(row.ToHostBytes, 10), strconv.FormatInt(row.ToDeviceBytes, 10), strconv.FormatInt(row.NetUpBytes, 10),
			strconv.FormatInt(row.NetDownBytes, 10), strconv.Itoa(row.ReplayedLayerOps), opt(row.Restore), opt(row.Compute), opt(row.Framework),
			strconv.Itoa(row.Mismatches)})
	}
	if r.RawTCPRTT != nil {
		g.Notes = append(g.Notes, fmt.Sprintf("raw TCP round trip (connect) to the server: mean %s ms, p95 %s ms; framework = call − round trip − restore − compute",
			ms(r.RawTCPRTT.Mean), ms(r.RawTCPRTT.P95)))
	}
	g.Notes = append(g.Notes, r.Notes...)
	return g
}

// ResumeModelGrid is the modeled table and the crossover layers.
func ResumeModelGrid(e *sim.ResumeEstimate) Grid {
	g := Grid{Title: fmt.Sprintf("modeled resume at layer N: %s on %s (activation %d B over %s; modification %d B over %s)",
		e.Config, e.Hardware, e.ActivationBytes, e.HostLink.Name, e.DeltaBytes, e.Client.Name),
		Header: []string{"layer", "recompute ms", "compute floor ms", "offload ms", "stateful ms", "tail to output ms"}}
	for _, p := range e.Points {
		g.Rows = append(g.Rows, []string{strconv.Itoa(p.Layer), ms(p.RecomputeS), ms(p.ComputeFloorS), ms(p.OffloadS), ms(p.StatefulS), ms(p.TailS)})
	}
	for _, st := range []string{partition.ResumeOffload, partition.ResumeStateful} {
		n := e.Crossover[st]
		if n == 0 {
			g.Notes = append(g.Notes, fmt.Sprintf("recompute never takes longer than %s within %d layers", st, e.Layers))
		} else {
			g.Notes = append(g.Notes, fmt.Sprintf("crossover: recompute overtakes %s at layer %d", st, n))
		}
	}
	g.Notes = append(g.Notes,
		fmt.Sprintf("PCIe floor for the activation: %s ms; stateful = transfer %s ms + framework %s ms + restore %s ms + launch %s ms",
			ms(e.PCIeFloorS), ms(e.StatefulTransferS), ms(e.StatefulOverheadS), ms(e.RestoreS), ms(e.LaunchS)))
	return g
}

var resumeColors = map[string]color.Color{
	partition.ResumeRecompute: color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	partition.ResumeOffload:   color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	partition.ResumeStateful:  color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// ResumePlot is the crossover figure: resume latency against the pause
// layer, measured (solid, points) and modeled (dashed) per strategy, on a
// log axis; one panel each when both are present.
func ResumePlot(d *ResumeDoc) (*Figure, error) {
	f := &Figure{PanelWidth: 6 * vg.Inch, Height: 4.5 * vg.Inch}
	if d.Measured != nil && len(d.Measured.Results) > 0 {
		p := newPlot(fmt.Sprintf("measured: %s (%s backend)", d.Measured.Config, d.Measured.Backend), "pause layer N", "resume latency (ms, mean)")
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Left = true
		for _, st := range partition.ResumeStrategies {
			var xy plotter.XYs
			for _, r := range d.Measured.Results {
				if r.Strategy == st && r.ResumeLatency.Mean > 0 {
					xy = append(xy, plotter.XY{X: float64(r.Layer), Y: r.ResumeLatency.Mean * 1e3})
				}
			}
			if err := addLine(p, st, xy, false); err != nil {
				return nil, err
			}
		}
		widenLog(p)
		f.Panels = append(f.Panels, p)
	}
	if e := d.Model; e != nil && len(e.Points) > 0 {
		p := newPlot(fmt.Sprintf("modeled: %s on %s", e.Config, e.Hardware), "pause layer N", "resume latency (ms)")
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		lines := map[string]plotter.XYs{}
		var floor plotter.XYs
		for _, pt := range e.Points {
			x := float64(pt.Layer)
			lines[partition.ResumeRecompute] = append(lines[partition.ResumeRecompute], plotter.XY{X: x, Y: pt.RecomputeS * 1e3})
			lines[partition.ResumeOffload] = append(lines[partition.ResumeOffload], plotter.XY{X: x, Y: pt.OffloadS * 1e3})
			lines[partition.ResumeStateful] = append(lines[partition.ResumeStateful], plotter.XY{X: x, Y: pt.StatefulS * 1e3})
			floor = append(floor, plotter.XY{X: x, Y: pt.ComputeFloorS * 1e3})
		}
		for _, st := range partition.ResumeStrategies {
			label := st
			if n := e.Crossover[st]; n > 0 {
				label = fmt.Sprintf("%s (recompute overtakes it at layer %d)", st, n)
			}
			if err := addLine(p, label, lines[st], true); err != nil {
				return nil, err
			}
			p.Legend.Left = true
		}
		l, err := plotter.NewLine(floor)
		if err != nil {
			return nil, err
		}
		l.Color = color.Gray{Y: 0x80}
		l.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("compute floor of layers 1..N", l)
		widenLog(p)
		f.Panels = append(f.Panels, p)
	}
	if len(f.Panels) == 0 {
		return nil, fmt.Errorf("plot: the resume result holds neither measurements nor a model")
	}
	return f, nil
}

// widenLog gives a log axis at least a factor of 4 of range (one point, or
// flat lines only, would leave it empty), and a positive minimum.
func widenLog(p *plot.Plot) {
	if p.Y.Min <= 0 || p.Y.Max/p.Y.Min < 4 {
		mid := p.Y.Max
		if mid <= 0 {
			mid = 1
		}
		p.Y.Min, p.Y.Max = mid/2, mid*2
		if p.Y.Min > 0 && p.Y.Max/p.Y.Min < 4 {
			p.Y.Min = mid / 4
		}
	}
}

func addLine(p *plot.Plot, label string, xy plotter.XYs, dashed bool) error {
	if len(xy) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(xy)
	if err != nil {
		return err
	}
	c := color.Color(color.Black)
	for st, col := range resumeColors {
		if len(label) >= len(st) && label[:len(st)] == st {
			c = col
		}
	}
	l.Color, s.Color = c, c
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(l, s)
	p.Legend.Add(label, l, s)
	return nil
}

// ResumeFigureFile draws path when it is a resume result: ok is false (and
// err nil) for any other document, which the caller then reads as usual.
func ResumeFigureFile(path string) (fig *Figure, ok bool, err error) {
	data, err := fileio.ReadSmall(path, "results file", MaxDocBytes)
	if err != nil {
		return nil, false, err
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(data, &probe) != nil || probe.Schema != ResumeSchema {
		return nil, false, nil
	}
	var d ResumeDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, err)
	}
	fig, err = ResumePlot(&d)
	return fig, true, err
}

// WriteResumeFiles writes dir/resume.json (the document) and dir/resume.csv
// (the measured table), each atomically.
func WriteResumeFiles(dir string, d *ResumeDoc) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--output-dir %s: %w", dir, err)
	}
	d.Schema = ResumeSchema
	if err := WriteFileAtomic(filepath.Join(dir, "resume.json"), func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(d)
	}); err != nil {
		return err
	}
	if d.Measured == nil {
		return nil
	}
	return WriteFileAtomic(filepath.Join(dir, "resume.csv"), func(w io.Writer) error { return WriteCSV(w, ResumeGrid(d.Measured)) })
}
