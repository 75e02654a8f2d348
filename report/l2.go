package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/partbench/partbench/compare"
)

// L2Schema names the JSON layout of partbench l2.
const L2Schema = "partbench.l2/v1"

// L2JSON writes the strategies' L2 figures as JSON, version being partbench's.
func L2JSON(w io.Writer, version string, ss []compare.L2Strategy) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Schema     string               `json:"schema"`
		Version    string               `json:"partbench_version"`
		Strategies []compare.L2Strategy `json:"strategies"`
	}{L2Schema, version, ss})
}

// L2Grids lays out the summary of every strategy and one grid per strategy
// with its ranks (measured columns when measured).
func L2Grids(ss []compare.L2Strategy, measured bool) []Grid {
	mb := func(b int64) string { return strconv.FormatFloat(float64(b)/1e6, 'f', 3, 64) }
	pct := func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) }
	sum := Grid{Title: "L2 residency by strategy (modeled)",
		Header: []string{"strategy", "hardware", "usable L2 (MB)", "reused working set, largest rank (MB)", "weight residency (%)", "one layer (MB)", "whole-layer residency (%)"}}
	var grids []Grid
	for _, s := range ss {
		sum.Rows = append(sum.Rows, []string{s.Name, s.Hardware, mb(s.L2.UsableL2Bytes), mb(s.L2.WorkingSetBytes),
			pct(s.L2.WeightResidency), mb(s.L2.WholeLayerBytes), pct(s.L2.WholeLayerResidency)})
		g := Grid{Title: fmt.Sprintf("%s: per rank", s.Name),
			Header: []string{"rank", "stage", "tp", "layers", "reused working set (MB)", "modeled residency (%)"}, Notes: s.Notes}
		window := measured && hasWindow(s)
		if measured {
			g.Header = append(g.Header, "measured at (MB)", "re-read (GB/s)", "stream (GB/s)", "re-read / stream", "implied residency (%)")
		}
		if window {
			g.Header = append(g.Header, "re-read, persisting L2 window (GB/s)", "window / stream")
		}
		dash := false
		for _, r := range s.Ranks {
			row := []string{strconv.Itoa(r.Rank), strconv.Itoa(r.Stage), strconv.Itoa(r.TPIndex), layerRange(r.Layers), mb(r.WorkingSetBytes), pct(r.ModeledResidency)}
			if m := r.Measured; m != nil {
				implied := "—"
				if r.ImpliedResidency != nil {
					implied = pct(*r.ImpliedResidency)
				} else {
					dash = true
				}
				row = append(row, mb(m.MeasuredBytes), strconv.FormatFloat(m.ReuseBytesPerS/1e9, 'f', 1, 64),
					strconv.FormatFloat(m.StreamBytesPerS/1e9, 'f', 1, 64), strconv.FormatFloat(m.Ratio, 'f', 2, 64), implied)
				if window {
					row = append(row, strconv.FormatFloat(m.WindowBytesPerS/1e9, 'f', 1, 64), strconv.FormatFloat(m.WindowRatio, 'f', 2, 64))
				}
			}
			g.Rows = append(g.Rows, row)
		}
		if dash {
			g.Notes = append(g.Notes, "implied residency —: it needs the cache bandwidth of a calibration of this machine (--calibration FILE from partbench calibrate) and a stream bandwidth below it")
		}
		grids = append(grids, g)
	}
	sum.Notes = []string{"residency = usable L2 / reused working set (≤ 100 %); whole-layer residency = usable L2 / one whole layer's weights"}
	if measured {
		sum.Notes = append(sum.Notes, "re-read / stream: bandwidth of the working set read again and again over that of as many uncached bytes (1 = no reuse); implied residency solves 1/re-read = f/L2 BW + (1−f)/stream BW")
	}
	return append([]Grid{sum}, grids...)
}

// hasWindow says whether a rank of s was measured with a persisting-L2
// access-policy window (the GPU probe).
func hasWindow(s compare.L2Strategy) bool {
	for _, r := range s.Ranks {
		if r.Measured != nil && r.Measured.WindowBytesPerS > 0 {
			return true
		}
	}
	return false
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
