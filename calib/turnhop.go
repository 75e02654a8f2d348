package calib

import (
	"fmt"
	"sort"
	"strings"
)

// The hand-off between turns. Taking turns (opprocs.go), rank r's i-th
// turn begins when its receive of the token returns, which rank r − 1
// sent at the end of its own i-th turn, after one pass of real ops of a
// (config, rank) — a pipeline's hop after a stage's compute, among
// partbench processes holding a Compute each, as a run's stages are. The
// hop from the sender's Send call's start to the receiver's return, read
// on the host's wall clock both processes share, is what a run's trace
// shows per hop (scripts/calibration-agreement/hops.py); the receive
// wait's ring (corewait.go) times it after a spin burst instead.

// turnStamp is one turn of a rank: Unix ns where its receive of the turn
// returned (Await) and where its hand-on's Send call began (HandOn).
type turnStamp struct {
	Await  int64 `json:"a"`
	HandOn int64 `json:"h"`
}

// turnHopBin is the hops after passes of one length band: the band's
// upper edge (0: above the last edge), how many hops, the median pass
// length before them (the sender's turn), and the hops' median and mean,
// in seconds.
type turnHopBin struct {
	UpToS              float64
	N                  int
	PassS, HopS, MeanS float64
}

// turnHopEdges are the bands' upper edges (s): a tiny config's decode
// passes of a layer or two, longer ones, prefill passes.
var turnHopEdges = []float64{10e-6, 40e-6, 160e-6, 640e-6}

// turnHops pairs every rank r ≥ 1's i-th turn with rank r − 1's i-th
// hand-on (rank 0's turns follow a hand-on of the last rank only within
// one (config, rank), so they are left out) and bands the hops by the
// sender's pass length. Ranks with unequal turn counts, or stamps out of
// order (a hop or pass below 0), are skipped; nil without any hop.
func turnHops(ranks []rankOpTimes) []turnHopBin {
	by := map[int][]turnStamp{}
	for _, r := range ranks {
		by[r.Rank] = r.Turns
	}
	type hop struct{ pass, hop float64 }
	bands := make([][]hop, len(turnHopEdges)+1)
	for r := 1; r < len(ranks); r++ {
		prev, cur := by[r-1], by[r]
		if len(prev) != len(cur) {
			continue
		}
		for i := range cur {
			pass := float64(prev[i].HandOn-prev[i].Await) * 1e-9
			h := float64(cur[i].Await-prev[i].HandOn) * 1e-9
			if prev[i].HandOn == 0 || pass < 0 || h < 0 {
				continue
			}
			b := sort.SearchFloat64s(turnHopEdges, pass)
			bands[b] = append(bands[b], hop{pass, h})
		}
	}
	var out []turnHopBin
	for b, hs := range bands {
		if len(hs) == 0 {
			continue
		}
		ps, ts := make([]float64, len(hs)), make([]float64, len(hs))
		sum := 0.0
		for i, h := range hs {
			ps[i], ts[i] = h.pass, h.hop
			sum += h.hop
		}
		bin := turnHopBin{N: len(hs), PassS: medianOf(ps), HopS: medianOf(ts), MeanS: sum / float64(len(hs))}
		if b < len(turnHopEdges) {
			bin.UpToS = turnHopEdges[b]
		}
		out = append(out, bin)
	}
	return out
}

// describeTurnHops is the calibration note's list of bands.
func describeTurnHops(bins []turnHopBin) string {
	var parts []string
	for _, b := range bins {
		parts = append(parts, fmt.Sprintf("after passes of %.3g s (median; %d hops): %.3g s median, %.3g s mean", b.PassS, b.N, b.HopS, b.MeanS))
	}
	return strings.Join(parts, "; ")
}
