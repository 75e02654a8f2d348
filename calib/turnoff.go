package calib

import (
	"fmt"
	"strings"
	"time"

	"github.com/partbench/partbench/configs"
)

// A turn's time off its core. Taking turns (opprocs.go), the op table
// times each op by its time on a core (blockOpts.onCore), while a run's
// pipeline stage is timed on the wall clock: what its turn spends off
// the core — preempted by the rank it woke, by a sender that resumes its
// Send call, by the host's other work — is in a run's stage span and in
// no op time. Each turn therefore also reads its thread's CPU time where
// it begins (its receive's return) and where its hand-on begins; the
// wall time between the two reads less the CPU time between them is the
// turn's time off the core, at n ranks on the host's cores
// (configs.TurnOffKind; sim adds it to a stage's turn where the stage
// computes alone, sim/optable_turnoff.go).

// turnOffNs is a turn's time off its core (ns): its wall time less its
// thread's CPU time, at least 0 (the two clocks read a few ns apart).
func turnOffNs(wallNs int64, cpu time.Duration) int64 {
	return max(0, wallNs-int64(cpu))
}

// turnOffBin is the turns of one band of their time on the core: the
// pass is that time (the turn's wall less its time off the core: the
// compute sim prices, whose burst looks the entry up), MedS and MeanS the
// median and mean time off the core.
type turnOffBin = passBand

// turnOffs bands every turn of every rank that read its time off the core
// and its hand-on by the turn's time on the core (turnHopEdges); turns
// whose hand-on precedes their start are skipped. nil without any.
func turnOffs(ranks []rankOpTimes) []turnOffBin {
	var turns []passPoint
	for _, r := range ranks {
		for _, t := range r.Turns {
			wall := t.HandOn - t.Await
			if !t.OffOK || t.HandOn == 0 || wall < 0 {
				continue
			}
			turns = append(turns, passPoint{float64(wall-t.Off) * 1e-9, float64(t.Off) * 1e-9})
		}
	}
	return bandByPass(turns)
}

// describeTurnOffs is the calibration note's list of bands.
func describeTurnOffs(bins []turnOffBin) string {
	var parts []string
	for _, b := range bins {
		parts = append(parts, fmt.Sprintf("turns of %.3g s on the core (median; %d turns): %.3g s off it median, %.3g s mean (%.3g of the time on it)",
			b.PassS, b.N, b.MedS, b.MeanS, b.MeanS/b.PassS))
	}
	return strings.Join(parts, "; ")
}

// turnOrder is how the hand-ons between turns went: of N hops (rank
// r − 1's i-th hand-on and rank r's i-th turn, r ≥ 1, as turnHops pairs
// them, with the Send call's return read), how many times the receiver's
// return from its receive came before the sender's return from its Send
// call — the sender woke the receiver and lost its core to it, as a
// run's stages do — and the Send call's median and mean (s).
type turnOrder struct {
	N, ReceiverFirst int
	CallS, CallMeanS float64
}

// turnSendOrder reads ranks' turns as turnOrder says; ranks with unequal
// turn counts are skipped.
func turnSendOrder(ranks []rankOpTimes) turnOrder {
	by := map[int][]turnStamp{}
	for _, r := range ranks {
		by[r.Rank] = r.Turns
	}
	var o turnOrder
	var calls []float64
	sum := 0.0
	for r := 1; r < len(ranks); r++ {
		prev, cur := by[r-1], by[r]
		if len(prev) != len(cur) {
			continue
		}
		for i := range cur {
			p := prev[i]
			if p.HandOn == 0 || p.Sent < p.HandOn || cur[i].Await < p.HandOn {
				continue
			}
			o.N++
			if cur[i].Await < p.Sent {
				o.ReceiverFirst++
			}
			c := float64(p.Sent-p.HandOn) * 1e-9
			calls = append(calls, c)
			sum += c
		}
	}
	if o.N > 0 {
		o.CallS, o.CallMeanS = medianOf(calls), sum/float64(o.N)
	}
	return o
}

// describeTurnOrder is the calibration note's sentence on o.
func describeTurnOrder(o turnOrder) string {
	if o.N == 0 {
		return "no hand-on with its Send call's return read"
	}
	return fmt.Sprintf("the receiver returned before the sender's Send call in %d of %d hand-ons (%.0f %%); the Send call %.3g s median, %.3g s mean",
		o.ReceiverFirst, o.N, 100*float64(o.ReceiverFirst)/float64(o.N), o.CallS, o.CallMeanS)
}

// turnOffEntries are the time off the core per turn at n ranks on cores
// cores, one per band of bins: at size the band's median time on the core
// (ns), the band's mean time off it; a band of a size seen is kept 1 ns
// apart. None at or below the cores (no turns are measured there).
func turnOffEntries(bins []turnOffBin, n, cores int) []configs.OpTime {
	return bandEntries(configs.TurnOffKind, bins, n, cores, func(b passBand) float64 { return b.MeanS })
}
