package calib

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/partbench/partbench/configs"
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
// returned (Await), where its hand-on's Send call began (HandOn) and
// where that call returned (Sent; 0: not read), and the turn's time off
// its core (turnoff.go): ns of wall time from Await to HandOn less the
// thread's CPU time between the same two reads, valid with OffOK.
type turnStamp struct {
	Await, HandOn, Sent int64
	Off                 int64
	OffOK               bool
}

// passBand is what fell in one pass-length band (turnHopEdges): the
// band's upper edge (0: above the last edge), how many values, the median
// pass length beside them, and the values' median and mean, in seconds.
type passBand struct {
	UpToS              float64
	N                  int
	PassS, MedS, MeanS float64
}

// passPoint is one value beside the pass length that bands it (s).
type passPoint struct{ pass, value float64 }

// bandByPass bands points by pass length (turnHopEdges) and summarizes
// each band that holds any, in edge order.
func bandByPass(pts []passPoint) []passBand {
	bands := make([][]passPoint, len(turnHopEdges)+1)
	for _, p := range pts {
		b := sort.SearchFloat64s(turnHopEdges, p.pass)
		bands[b] = append(bands[b], p)
	}
	var out []passBand
	for b, ps := range bands {
		if len(ps) == 0 {
			continue
		}
		passes, values := make([]float64, len(ps)), make([]float64, len(ps))
		sum := 0.0
		for i, p := range ps {
			passes[i], values[i] = p.pass, p.value
			sum += p.value
		}
		band := passBand{N: len(ps), PassS: medianOf(passes), MedS: medianOf(values), MeanS: sum / float64(len(ps))}
		if b < len(turnHopEdges) {
			band.UpToS = turnHopEdges[b]
		}
		out = append(out, band)
	}
	return out
}

// turnHopBin is the hops after passes of one length band: the pass is the
// sender's turn, MedS and MeanS the hops' median and mean.
type turnHopBin = passBand

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
	var hops []passPoint
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
			hops = append(hops, passPoint{pass, h})
		}
	}
	return bandByPass(hops)
}

// describeTurnHops is the calibration note's list of bands.
func describeTurnHops(bins []turnHopBin) string {
	var parts []string
	for _, b := range bins {
		parts = append(parts, fmt.Sprintf("after passes of %.3g s (median; %d hops): %.3g s median, %.3g s mean", b.PassS, b.N, b.MedS, b.MeanS))
	}
	return strings.Join(parts, "; ")
}

// turnStampsPrefix starts each line of a rank's turn stamps.
const turnStampsPrefix = "partbench-turn-stamps "

// turnStampsPerLine keeps a line of stamps far below the launcher's
// 64 KiB line (exec/launch cuts longer ones).
const turnStampsPerLine = 1000

// turnStampsLine is one line of a rank's stamps: Base (Unix ns) and per
// stamp four numbers, flat: its await, hand-on and Send call's return in
// ns after Base (−1: not read) and its time off the core in ns (−1: not
// read).
type turnStampsLine struct {
	Rank int     `json:"rank"`
	Base int64   `json:"base"`
	S    []int64 `json:"s"`
}

// turnStampNums is how many numbers a stamp takes on a line.
const turnStampNums = 4

// writeTurnStamps writes ts to w in lines of turnStampsPerLine stamps.
func writeTurnStamps(w io.Writer, rank int, ts []turnStamp) error {
	for len(ts) > 0 {
		k := min(len(ts), turnStampsPerLine)
		line := turnStampsLine{Rank: rank, Base: ts[0].Await, S: make([]int64, 0, turnStampNums*k)}
		after := func(at int64) int64 {
			if at == 0 {
				return -1 // not read
			}
			return at - line.Base
		}
		for _, t := range ts[:k] {
			off := int64(-1)
			if t.OffOK {
				off = t.Off
			}
			line.S = append(line.S, t.Await-line.Base, after(t.HandOn), after(t.Sent), off)
		}
		js, err := json.Marshal(line)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s%s\n", turnStampsPrefix, js); err != nil {
			return err
		}
		ts = ts[k:]
	}
	return nil
}

// parseTurnStamps reads one line writeTurnStamps wrote (less its prefix).
func parseTurnStamps(s string) (int, []turnStamp, error) {
	var line turnStampsLine
	if err := json.Unmarshal([]byte(s), &line); err != nil {
		return 0, nil, fmt.Errorf("op times: a process rank's turn stamps: %w", err)
	}
	if len(line.S)%turnStampNums != 0 {
		return 0, nil, fmt.Errorf("op times: rank %d's turn stamps: %d numbers, want groups of %d", line.Rank, len(line.S), turnStampNums)
	}
	out := make([]turnStamp, len(line.S)/turnStampNums)
	for i := range out {
		q := line.S[turnStampNums*i : turnStampNums*(i+1)]
		out[i].Await = line.Base + q[0]
		if q[1] >= 0 {
			out[i].HandOn = line.Base + q[1]
		}
		if q[2] >= 0 {
			out[i].Sent = line.Base + q[2]
		}
		if q[3] >= 0 {
			out[i].Off, out[i].OffOK = q[3], true
		}
	}
	return line.Rank, out, nil
}

// smallSendS is the median one-way time of the send entries of at most
// 1 KiB measured among n ranks in ts (a turn's token is 4 bytes, a tiny
// config's decode message 1 KiB); 0 without any.
func smallSendS(ts []configs.OpTime, n int) float64 {
	var xs []float64
	for _, t := range ts {
		if t.Kind == "send" && t.Ranks == n && t.Size <= 1024 {
			xs = append(xs, t.TimeS)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return medianOf(xs)
}

// recvWaitTurnsEntries are the receive wait's entries between turns at n
// ranks on cores cores, one per band of bins: at size the band's median
// pass (ns), the band's mean hop less oneWayS (at least noWaitS); a band
// of a size seen is kept 1 ns apart. None at or below the cores.
func recvWaitTurnsEntries(bins []turnHopBin, oneWayS float64, n, cores, repeats int) []configs.OpTime {
	return bandEntries(configs.RecvWaitTurnsKind, bins, n, cores, func(b passBand) float64 { return b.MeanS - oneWayS })
}

// bandEntries are kind's entries at n ranks on cores cores, one per band
// of bins: at size the band's median pass (ns), value of the band (at
// least noWaitS); a band of a size seen is kept 1 ns apart. None at or
// below the cores (no turns are measured there).
func bandEntries(kind string, bins []passBand, n, cores int, value func(passBand) float64) []configs.OpTime {
	if n <= cores {
		return nil
	}
	var out []configs.OpTime
	seen := map[int64]bool{}
	for _, b := range bins {
		size := max(1, int64(math.Round(b.PassS*1e9)))
		for seen[size] {
			size++
		}
		seen[size] = true
		w := max(noWaitS, value(b))
		out = append(out, configs.OpTime{Kind: kind, Shape: configs.CoreWaitShape(cores), Size: size,
			TimeS: w, TimeMinS: w, TimeMaxS: w, Samples: max(1, b.N), Ranks: n})
	}
	return out
}
