package report

import (
	"fmt"
	"strconv"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/sim"
)

func remoteMS(s float64) string { return strconv.FormatFloat(s*1e3, 'f', 3, 64) }
func remoteB(b int64) string    { return strconv.FormatInt(b, 10) }

// RemoteEstimateGrids lays out a remote dry run: bytes per request of each
// mode exactly, modeled latency per request and per generation, and the
// naive/stateful gap. highlight marks one mode's row ("" for none).
func RemoteEstimateGrids(e *sim.RemoteEstimate, highlight partition.RemoteMode) []Grid {
	link := fmt.Sprintf("link %s: %.4g B/s, %.3g µs latency; request overhead %.3g µs", e.Link.Name, e.Link.BytesPerS, e.Link.LatencyS*1e6, e.RequestOverheadS*1e6)
	bytes := Grid{Title: "Remote modes: payload bytes per request (exact, from the Program)",
		Header: []string{"mode", "open B", "prefill up B", "prefill down B", fmt.Sprintf("decode step %d up B", e.DecodeStep), "decode down B", "generation B"}}
	lat := Grid{Title: "Remote modes: modeled latency (ms) over " + e.Link.Name,
		Header: []string{"mode", "prefill", "prefill transfer", "decode step", "decode transfer", "decode compute", "generation"}}
	for _, m := range e.Modes {
		name := string(m.Mode)
		if m.Mode == highlight {
			name += " *"
		}
		du, dd, dt, dtr, dc := "-", "-", "-", "-", "-"
		if d := m.Decode; d != nil {
			du, dd, dt, dtr, dc = remoteB(d.UpBytes), remoteB(d.DownBytes), remoteMS(d.TotalS), remoteMS(d.TransferS), remoteMS(d.ComputeS)
		}
		bytes.Rows = append(bytes.Rows, []string{name, remoteB(m.OpenBytes), remoteB(m.Prefill.UpBytes), remoteB(m.Prefill.DownBytes), du, dd, remoteB(m.GenerationBytes)})
		lat.Rows = append(lat.Rows, []string{name, remoteMS(m.Prefill.TotalS), remoteMS(m.Prefill.TransferS), dt, dtr, dc, remoteMS(m.GenerationS)})
	}
	lat.Notes = []string{link, fmt.Sprintf("naive/stateful per decode step: %.4g× the bytes, %.4g× the latency", e.GapBytesRatio, e.GapLatencyRatio)}
	return []Grid{bytes, lat}
}

// RemoteResultsGrids lays out measured remote trials: per mode and phase the
// latency statistics, bytes (measured and modeled), utilization and the
// breakdown of the mean trial.
func RemoteResultsGrids(f *remote.ResultsFile) []Grid {
	lat := Grid{Title: "Remote modes: measured per trial and phase (" + f.Config + ")",
		Header: []string{"mode", "phase", "trials", "latency mean ms", "std", "p50", "p95", "p99", "tokens/s", "net B", "model B", "util", "source"}}
	br := Grid{Title: "Where the time goes (ms, mean trial)",
		Header: []string{"mode", "phase", "client ser", "c→s", "queue", "import", "execute", "server ser", "s→c", "client deser", "overhead"}}
	for _, a := range f.Aggregates {
		l := a.LatencyS
		lat.Rows = append(lat.Rows, []string{string(a.Mode), string(a.Phase), strconv.Itoa(a.Trials), remoteMS(l.Mean), remoteMS(l.Std), remoteMS(l.P50),
			remoteMS(l.P95), remoteMS(l.P99), strconv.FormatFloat(a.TokensPS.Mean, 'f', 0, 64), remoteB(a.NetBytes), remoteB(a.ModelBytes),
			strconv.FormatFloat(a.AvgSM.Mean, 'f', 3, 64), a.UtilSource})
		b := a.Breakdown
		br.Rows = append(br.Rows, []string{string(a.Mode), string(a.Phase), remoteMS(b.ClientSerializeS), remoteMS(b.ClientToServerS), remoteMS(b.QueueWaitS),
			remoteMS(b.ServerImportS), remoteMS(b.ExecuteS), remoteMS(b.ServerSerializeS), remoteMS(b.ServerToClientS), remoteMS(b.ClientDeserializeS), remoteMS(b.OverheadS)})
	}
	if f.GapBytesRatio > 0 {
		lat.Notes = append(lat.Notes, fmt.Sprintf("naive/stateful per decode trial: %.4g× the bytes, %.4g× the latency", f.GapBytesRatio, f.GapLatencyRatio))
	}
	br.Notes = []string{fmt.Sprintf("overhead = latency − execute − payload / %s bandwidth (%.4g B/s)", f.Trials.Link.Name, f.Trials.Link.BytesPerS)}
	return []Grid{lat, br}
}
