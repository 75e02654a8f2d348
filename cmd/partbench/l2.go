package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/calib"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
)

type l2Options struct {
	configs     []string
	calibration string
	measure     bool
	backend     string
	quick       bool
	format      string
}

func newL2Cmd() *cobra.Command {
	o := &l2Options{}
	cmd := &cobra.Command{
		Use:   "l2 [--config FILE]... [--calibration calib.toml] [--measure]",
		Short: "Modeled L2 residency per strategy and rank, and a measured reuse proxy",
		Long: `Print the estimate's L2 figures for each strategy: the usable L2, the reused
working set of every rank (the weights it re-reads each decode step), its modeled
residency, and the whole-layer residency ("does one layer fit in L2").

With --measure (CPU backend) every rank's working set is also read on this machine,
again and again, and compared with a streaming read of as many bytes: the ratio of
the two bandwidths is a counter-free proxy of how much of it the caches hold
(docs/l2.md). Give --calibration so the model describes this machine too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.configs, "config", nil, "strategy config: a TOML file or an embedded preset name (repeatable; default: the seed comparison)")
	f.StringVar(&o.calibration, "calibration", "", "hardware profile from 'partbench calibrate' to model instead of the config's hardware")
	f.BoolVar(&o.measure, "measure", false, "measure every rank's working set on this machine (reuse against streaming)")
	f.StringVar(&o.backend, "backend", configs.BackendCPU, "backend --measure runs on: cpu (cuda needs a GPU backend build)")
	f.BoolVar(&o.quick, "quick", false, "with --measure: fewer repeats and shorter samples")
	f.StringVar(&o.format, "format", report.FormatTable, "output format: table, markdown, json")
	return cmd
}

// l2Strategy is one strategy's L2 figures, modeled and (with --measure) measured.
type l2Strategy struct {
	Name     string         `json:"name"`
	Hardware string         `json:"hardware"`
	DType    string         `json:"dtype"`
	L2       sim.L2Estimate `json:"l2"`
	Ranks    []l2Rank       `json:"ranks"`
	Notes    []string       `json:"notes,omitempty"`
}

type l2Rank struct {
	Rank             int     `json:"rank"`
	Stage            int     `json:"stage"`
	TPIndex          int     `json:"tp_index"`
	Layers           []int   `json:"layers"`
	WorkingSetBytes  int64   `json:"working_set_bytes"`
	ModeledResidency float64 `json:"modeled_residency"`
	// Measured is the reuse probe of the rank's working set (--measure).
	Measured *calib.Reuse `json:"measured,omitempty"`
	// ImpliedResidency is the resident fraction the probe implies, given the
	// calibrated cache bandwidth (needs --calibration).
	ImpliedResidency *float64 `json:"implied_residency,omitempty"`
}

func (o *l2Options) run(stdout io.Writer) error {
	if err := report.CheckFormat(o.format, report.FormatTable, report.FormatMarkdown, report.FormatJSON); err != nil {
		return err
	}
	if o.measure {
		switch o.backend {
		case configs.BackendCPU:
		case configs.BackendCUDA:
			return fmt.Errorf("--backend cuda: the L2 probe needs a GPU backend build that can time kernels; not available yet (allowed: cpu; docs/l2.md has the plan)")
		default:
			return fmt.Errorf("--backend: must be cpu or cuda (got %q)", o.backend)
		}
	}
	names := o.configs
	if len(names) == 0 {
		names = configs.DefaultStrategies
	}
	probe := calib.ProbeOptions{}
	if o.quick {
		probe = calib.ProbeOptions{Repeats: calib.QuickRepeats, MinSample: 500 * time.Microsecond}
	}
	probed := map[int64]calib.Reuse{}
	var out []l2Strategy
	for _, name := range names {
		cfg, err := configs.Load(name)
		if err != nil {
			return err
		}
		st := l2Strategy{}
		var cacheBW float64
		if o.calibration != "" {
			notes, err := applyCalibration(cfg, o.calibration)
			if err != nil {
				return err
			}
			st.Notes = append(st.Notes, notes...)
			cacheBW = cfg.Hardware.L2BytesPerS
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return err
		}
		e, err := sim.EstimatePlan(plan, sim.Options{})
		if err != nil {
			return err
		}
		st.Name, st.Hardware, st.DType, st.L2 = e.Name, e.Hardware, e.DType, e.L2
		for _, r := range e.Ranks {
			lr := l2Rank{Rank: r.Rank, Stage: r.Stage, TPIndex: r.TPIndex, Layers: r.Layers, ModeledResidency: r.L2Residency,
				WorkingSetBytes: r.L2WorkingSetBytes}
			if o.measure {
				m, ok := probed[lr.WorkingSetBytes]
				if !ok {
					m = calib.ProbeReuse(lr.WorkingSetBytes, probe)
					probed[lr.WorkingSetBytes] = m
				}
				lr.Measured = &m
				if cacheBW > 0 {
					if f, ok := m.ImpliedResidency(cacheBW); ok {
						lr.ImpliedResidency = &f
					}
				}
			}
			st.Ranks = append(st.Ranks, lr)
		}
		if o.measure && o.calibration == "" {
			st.Notes = append(st.Notes, fmt.Sprintf("the modeled residency is for %s, the measured ratio for this machine: give --calibration to model this machine", e.Hardware))
		}
		if o.measure && cfg.Model.DType != "fp32" {
			st.Notes = append(st.Notes, fmt.Sprintf("working sets are the model's %s bytes; the CPU backend holds float32 weights, %d× as many", cfg.Model.DType, 4/partition.DTypeBytes(cfg.Model.DType)))
		}
		out = append(out, st)
	}
	if o.format == report.FormatJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Version    string       `json:"partbench_version"`
			Strategies []l2Strategy `json:"strategies"`
		}{version, out})
	}
	return report.WriteGrids(stdout, o.format, l2Grids(out, o.measure)...)
}

func l2Grids(ss []l2Strategy, measured bool) []report.Grid {
	mb := func(b int64) string { return strconv.FormatFloat(float64(b)/1e6, 'f', 3, 64) }
	pct := func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) }
	sum := report.Grid{Title: "L2 residency by strategy (modeled)",
		Header: []string{"strategy", "hardware", "usable L2 (MB)", "reused working set, largest rank (MB)", "weight residency (%)", "one layer (MB)", "whole-layer residency (%)"}}
	var grids []report.Grid
	for _, s := range ss {
		sum.Rows = append(sum.Rows, []string{s.Name, s.Hardware, mb(s.L2.UsableL2Bytes), mb(s.L2.WorkingSetBytes),
			pct(s.L2.WeightResidency), mb(s.L2.WholeLayerBytes), pct(s.L2.WholeLayerResidency)})
		g := report.Grid{Title: fmt.Sprintf("%s: per rank", s.Name),
			Header: []string{"rank", "stage", "tp", "layers", "reused working set (MB)", "modeled residency (%)"}, Notes: s.Notes}
		if measured {
			g.Header = append(g.Header, "measured at (MB)", "re-read (GB/s)", "stream (GB/s)", "re-read / stream", "implied residency (%)")
		}
		for _, r := range s.Ranks {
			row := []string{strconv.Itoa(r.Rank), strconv.Itoa(r.Stage), strconv.Itoa(r.TPIndex), layerRange(r.Layers), mb(r.WorkingSetBytes), pct(r.ModeledResidency)}
			if m := r.Measured; m != nil {
				implied := "—"
				if r.ImpliedResidency != nil {
					implied = pct(*r.ImpliedResidency)
				}
				row = append(row, mb(m.MeasuredBytes), strconv.FormatFloat(m.ReuseBytesPerS/1e9, 'f', 1, 64),
					strconv.FormatFloat(m.StreamBytesPerS/1e9, 'f', 1, 64), strconv.FormatFloat(m.Ratio, 'f', 2, 64), implied)
			}
			g.Rows = append(g.Rows, row)
		}
		grids = append(grids, g)
	}
	sum.Notes = []string{"residency = usable L2 / reused working set (≤ 100 %); whole-layer residency = usable L2 / one whole layer's weights"}
	if measured {
		sum.Notes = append(sum.Notes, "re-read / stream: bandwidth of the working set read again and again over that of as many uncached bytes (1 = no reuse); implied residency solves 1/re-read = f/L2 BW + (1−f)/stream BW")
	}
	return append([]report.Grid{sum}, grids...)
}

// layerRange writes consecutive layers as "a–b".
func layerRange(ls []int) string {
	if len(ls) == 0 {
		return ""
	}
	var parts []string
	start := ls[0]
	for i := 1; i <= len(ls); i++ {
		if i < len(ls) && ls[i] == ls[i-1]+1 {
			continue
		}
		if start == ls[i-1] {
			parts = append(parts, strconv.Itoa(start))
		} else {
			parts = append(parts, fmt.Sprintf("%d–%d", start, ls[i-1]))
		}
		if i < len(ls) {
			start = ls[i]
		}
	}
	return strings.Join(parts, ",")
}
