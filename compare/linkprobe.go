package compare

import (
	"fmt"
	"math"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/stats"
)

// LinkStateFactor is how far a link probe's call may sit from the modeled
// call (either way) before its note says the link was in another state
// than the one the model prices.
const LinkStateFactor = 1.5

// linkProbeNotes say, per collective kind and group (from its lowest rank's probe,
// exec.LinkProbe), what its collective took back to back after the
// measured iterations, beside the same kind's decode calls in the run on
// that rank, the modeled call (the op check's decode row over its calls,
// the mean over ranks) and the profile's back-to-back call (table's entry
// at the probe's kind, group and payload, where it has one); where the
// probe is over LinkStateFactor from the back-to-back call (else the
// modeled one: a call in place costs more, sim/optable_inplace.go), that
// the link was in another state than the one priced — only where the
// model's times are this machine's (calibrated: uncalibrated CPU runs get
// no such verdict) and the rank's host runs no more ranks than it has
// CPUs: there the model prices a call from the profile's back-to-back
// one; above, it adds the waits for a core, which ranks taking turns at a
// probe do not meet alike.
func linkProbeNotes(results []exec.RankResult, rows []OpCheckRow, table *sim.OpTable, calibrated bool) []string {
	var notes []string
	seen := map[string]bool{}
	onHost := map[string]int{}
	for _, res := range results {
		onHost[res.Host]++
	}
	for _, res := range results {
		ownCore := res.HostState != nil && onHost[res.Host] <= res.HostState.CPUs
		for _, p := range res.LinkProbes {
			key := exec.GroupKey(p.Ranks)
			probed := p.Kind + " " + key
			if seen[probed] {
				continue
			}
			seen[probed] = true
			how := fmt.Sprintf("median of %d; least %s", p.Calls, microseconds(p.MinS))
			if p.Batched {
				how = fmt.Sprintf("the mean of %d queued on the device, synced once", p.Calls)
			}
			n := fmt.Sprintf("link probe after the measured iterations: %s of %d B over ranks %s, %s a call back to back (%s)",
				p.Kind, p.Bytes, key, microseconds(p.MedianS), how)
			inRun, calls := decodeCall(res, p.Kind)
			if inRun > 0 {
				n += fmt.Sprintf("; the run's decode %s calls %s a call on rank %d", p.Kind, microseconds(inRun), res.Rank)
			}
			ref, refName := 0.0, ""
			if modeled := modeledCall(rows, res, p.Kind, calls); modeled > 0 {
				n += fmt.Sprintf(", modeled %s", microseconds(modeled))
				ref, refName = modeled, "the modeled call"
			}
			if b2b, ok := table.Time(&partition.Op{Kind: partition.Kind(p.Kind), Group: p.Ranks, Bytes: p.Bytes}); ok {
				n += fmt.Sprintf(", %s back to back in the profile", microseconds(b2b))
				ref, refName = b2b, "the profile's back-to-back call"
			}
			if r := p.MedianS / ref; ref > 0 && calibrated && ownCore && math.Abs(math.Log(r)) > math.Log(LinkStateFactor) {
				n += fmt.Sprintf(" — the probe is %.2g× %s: the link was in another state than the one the profile measured", r, refName)
			}
			notes = append(notes, n)
		}
	}
	return notes
}

// decodeCall is rank res's mean time per decode call of kind — the median
// over measured iterations of the kind's decode time, over its calls per
// iteration (0 on an asynchronous device, whose host timers saw only the
// enqueue) — and its calls per iteration (0: none measured).
func decodeCall(res exec.RankResult, kind string) (float64, float64) {
	its := res.PhaseBusyS[string(partition.Decode)][kind]
	calls := res.DecodeCounts.Calls[commcount.Op(kind)]
	if len(its) == 0 || calls == 0 {
		return 0, 0
	}
	perIt := float64(calls) / float64(len(its))
	if res.Async {
		return 0, perIt
	}
	return stats.Median(its) / perIt, perIt
}

// modeledCall is the op check's modeled decode time of kind per call: the
// row's time per decode step over rank res's calls per step (callsPerIt
// over its decode steps); 0 where either is missing.
func modeledCall(rows []OpCheckRow, res exec.RankResult, kind string, callsPerIt float64) float64 {
	if callsPerIt == 0 || len(res.StepEndS) == 0 || len(res.StepEndS[0]) == 0 {
		return 0
	}
	for _, r := range rows {
		if r.Phase == string(partition.Decode) && r.Kind == kind && r.ModeledS > 0 {
			return r.ModeledS / (callsPerIt / float64(len(res.StepEndS[0])))
		}
	}
	return 0
}

// microseconds is a time in s as "1.22 µs".
func microseconds(s float64) string {
	return fmt.Sprintf("%.3g µs", s*1e6)
}
