package report

import (
	"fmt"

	"github.com/partbench/partbench/exec"
)

// TraceSumNotes are a traced run's notes: for each summary, the traced
// ops' summed durations beside the step times the run measured on the
// host, with the gap and where it comes from.
func TraceSumNotes(sums []exec.TraceSummary) []string {
	var out []string
	gap := func(op, host float64) string {
		if host <= 0 {
			return "n/a"
		}
		return fmt.Sprintf("%+.3f ms, %+.1f %%", (op-host)*1e3, 100*(op-host)/host)
	}
	for _, t := range sums {
		clock, why, whyDecode := "host", "the run loop's own work between the ops", "the run loop's own work between the ops"
		if t.Device {
			clock = "device"
			why = "host work before the first op reaches the device, and the wait after the last"
			whyDecode = "the step's launch before its first op reaches the device, and the wait after its last"
		}
		if t.PrefillOpS >= 0 {
			out = append(out, fmt.Sprintf("trace, rank %d prefill: the ops' %s times sum to %.3f ms, the run measured %.3f ms on the host (gap %s: %s)",
				t.Rank, clock, t.PrefillOpS*1e3, t.PrefillHostS*1e3, gap(t.PrefillOpS, t.PrefillHostS), why))
		}
		if t.DecodeSteps == 0 {
			continue
		}
		s := fmt.Sprintf("trace, rank %d decode (median of %d traced steps): the ops' %s times sum to %.3f ms, the run measured %.3f ms per token on the host (gap %s: %s)",
			t.Rank, t.DecodeSteps, clock, t.DecodeOpS*1e3, t.DecodeHostS*1e3, gap(t.DecodeOpS, t.DecodeHostS), whyDecode)
		if t.GraphOps > 0 {
			s += fmt.Sprintf("; %d traced ops ran inside CUDA graphs, each graph's time on the op that launched it", t.GraphOps)
		}
		if t.DecodeOpByOpS >= 0 {
			s += fmt.Sprintf("; the same steps op by op in one more iteration (graphs suspended, the trace's \"op by op\" process): %.3f ms (against the host's %s: launch gaps the graphs remove, and the marks between ops)",
				t.DecodeOpByOpS*1e3, gap(t.DecodeOpByOpS, t.DecodeHostS))
		}
		out = append(out, s)
	}
	return out
}
