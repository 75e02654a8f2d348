package sim

import "github.com/partbench/partbench/partition"

// useBounds are the bounds a slice can carry, in phaseUse's tie order; a
// bound's time in a window is kept in an array indexed by its position here
// instead of a map per rank.
var useBounds = [...]Bound{BoundCompute, BoundHBM, BoundL2, BoundMeasured, BoundTable, BoundNVLink, BoundPCIe, BoundNetwork, BoundLatency, BoundBubble}

func useBoundIndex(b Bound) int {
	switch b { // useBounds' order; a switch, not a scan of string compares
	case BoundCompute:
		return 0
	case BoundHBM:
		return 1
	case BoundL2:
		return 2
	case BoundMeasured:
		return 3
	case BoundTable:
		return 4
	case BoundNVLink:
		return 5
	case BoundPCIe:
		return 6
	case BoundNetwork:
		return 7
	case BoundLatency:
		return 8
	case BoundBubble:
		return 9
	}
	return -1
}

// boundTimes is one rank's time by bound in a window, and which bounds its
// slices carried (a bound seen with no time in the window is still a key
// of PhaseEstimate.TimeByBound, as phaseUse's map gives it).
type boundTimes struct {
	t   [len(useBounds)]float64
	has [len(useBounds)]bool
}

func (b *boundTimes) asMap() map[Bound]float64 {
	m := map[Bound]float64{}
	for i, ok := range b.has {
		if ok {
			m[useBounds[i]] = b.t[i]
		}
	}
	return m
}

// windowUse is what phaseUse and rankUse compute for the prefill window
// [0, prefillEnd] and the decode window [w0, w1], gathered in one pass over
// the slices: per simulated rank, the busy time phaseUse counts (recvs add
// 0) and its time by bound, and the busy time rankUse counts (recvs left
// out, slices of either phase), each summed in slice order as those do, so
// every figure is theirs to the bit. fallback is set where a slice carries
// a bound useBounds does not list: then phaseUse and rankUse run as they are.
type windowUse struct {
	prefillEnd, w0, w1 float64
	// Each by simulated rank: a rank's index is rank / div (standInWidth).
	preBusy, decBusy []float64    // phaseUse's
	preBy, decBy     []boundTimes // phaseUse's
	div              int
	preRank, decRank []float64 // rankUse's
	// The same pass's sums for estimateRun and countPricing: the HBM and L2
	// bytes of decode step s0's slices (int64 sums: exact in any order),
	// and by simulated rank the ops of prefill and the first decode step
	// priced from the op table or by the model (recvs and stand-ins past
	// tl.Ranks left out), as countPricingEach counts them.
	s0, first       int
	hbmS0, l2S0     int64
	table, modelOps []int
	fallback        bool
}

// windowUses makes one pass over the timeline's slices for the windows'
// uses, decode step s0's bytes and the pricing counts of the slices of
// prefill and decode step first (the first decode step simulated).
func (e *Estimate) windowUses(prefillEnd, w0, w1 float64, s0, first int) *windowUse {
	tl := e.Timeline
	m := standIns(tl) // the simulated ranks, rank = index · div
	u := &windowUse{prefillEnd: prefillEnd, w0: w0, w1: w1, s0: s0, first: first,
		preBusy: make([]float64, m), decBusy: make([]float64, m), preRank: make([]float64, m), decRank: make([]float64, m),
		preBy: make([]boundTimes, m), decBy: make([]boundTimes, m), div: standInWidth(tl),
		table: make([]int, m), modelOps: make([]int, m)}
	if p := tl.packed; p != nil {
		if !u.addPacked(p, tl.Ranks) {
			return &windowUse{prefillEnd: prefillEnd, w0: w0, w1: w1, s0: s0, first: first, fallback: true}
		}
		return u
	}
	ok := true
	tl.each(func(_ int, sl *Slice) bool {
		bi := useBoundIndex(sl.Bound)
		if bi < 0 {
			ok = false
			return false
		}
		u.add(sl.Rank/u.div, sl.Phase == partition.Prefill, sl.Phase == partition.Decode, sl.Step, sl.Op.Kind == partition.Recv,
			sl.Rank < tl.Ranks, bi, sl.StartS, sl.EndS, sl.WaitS, sl.HBMBytes, sl.L2Bytes)
		return true
	})
	if !ok {
		return &windowUse{prefillEnd: prefillEnd, w0: w0, w1: w1, s0: s0, first: first, fallback: true}
	}
	return u
}

// add is one slice's part of the pass: the slice of stand-in i (rank /
// div) in prefill (pre) or decode (dec) step step, a recv or not, of a
// rank below tl.Ranks or not (in), of bound index bi, with its times and
// bytes.
func (u *windowUse) add(i int, pre, dec bool, step int, recv, in bool, bi int, start, end, wait float64, hbm, l2 int64) {
	a, b := start+wait, end // busySpan
	dp, dd := overlap(a, b, 0, u.prefillEnd), overlap(a, b, u.w0, u.w1)
	if !recv {
		u.preRank[i] += dp
		u.decRank[i] += dd
		if (!dec || step == u.first) && in {
			if bi == useTableIndex {
				u.table[i]++
			} else {
				u.modelOps[i]++
			}
		}
	}
	if dec && step == u.s0 {
		u.hbmS0 += hbm
		u.l2S0 += l2
	}
	if recv { // a recv's time is waiting for data: idle
		dp, dd = 0, 0
	}
	if pre || dec {
		u.decBusy[i] += dd
		x := &u.decBy[i]
		x.t[bi] += dd
		x.has[bi] = true
	}
	if pre {
		u.preBusy[i] += dp
		x := &u.preBy[i]
		x.t[bi] += dp
		x.has[bi] = true
	}
}

// useTableIndex is BoundTable's index in useBounds.
const useTableIndex = 4

// addPacked is the pass over packed slices (timeline_packed.go), in their
// order, reading each slice's fields where they are kept rather than
// expanding it; false where an attribute's bound is not in useBounds.
func (u *windowUse) addPacked(p *packedSlices, ranks int) bool {
	bis := make([]int, len(p.attrs))
	for k := range p.attrs {
		if bis[k] = useBoundIndex(p.attrs[k].Bound); bis[k] < 0 {
			return false
		}
	}
	for ri, rank := range p.ids {
		i, in := rank/u.div, rank < ranks
		ts := p.times[p.base[ri]:p.base[ri+1]]
		pre, dec := p.pre[ri], p.dec[ri]
		for pc := range min(len(pre), len(ts)) {
			t := &ts[pc]
			a := &p.attrs[t.attr]
			u.add(i, true, false, -1, pre[pc].Kind == partition.Recv, in, bis[t.attr], t.StartS, t.EndS, t.WaitS, a.HBMBytes, a.L2Bytes)
		}
		for pc, step, idx := len(pre), 0, 0; pc < len(ts); pc++ {
			t := &ts[pc]
			a := &p.attrs[t.attr]
			u.add(i, false, true, step, dec[idx].Kind == partition.Recv, in, bis[t.attr], t.StartS, t.EndS, t.WaitS, a.HBMBytes, a.L2Bytes)
			if idx++; idx == len(dec) {
				step, idx = step+1, 0
			}
		}
	}
	return true
}

// phase is phaseUse for prefill and decode.
func (u *windowUse) phase(e *Estimate, pre, dec *PhaseEstimate) {
	if u.fallback {
		e.phaseUse(pre, partition.Prefill, 0, u.prefillEnd)
		e.phaseUse(dec, partition.Decode, u.w0, u.w1)
		return
	}
	finishPhase(pre, e.Timeline, u.preBusy, func(r int) map[Bound]float64 { return u.preBy[r/u.div].asMap() }, 0, u.prefillEnd)
	finishPhase(dec, e.Timeline, u.decBusy, func(r int) map[Bound]float64 { return u.decBy[r/u.div].asMap() }, u.w0, u.w1)
}

// ranks is rankUse for prefill and decode.
func (u *windowUse) ranks(e *Estimate) {
	if u.fallback {
		e.rankUse(partition.Prefill, 0, u.prefillEnd)
		e.rankUse(partition.Decode, u.w0, u.w1)
		return
	}
	e.setRankUse(partition.Prefill, u.preRank, 0, u.prefillEnd)
	e.setRankUse(partition.Decode, u.decRank, u.w0, u.w1)
}

// stepBytes adds decode step s0's HBM and L2 bytes, each slice's standing
// for weight ranks, to pe.
func (u *windowUse) stepBytes(e *Estimate, pe *PhaseEstimate, weight int64) {
	if u.fallback {
		stepBytesEach(e.Timeline, pe, u.s0, weight)
		return
	}
	pe.HBMBytesPerStep += weight * u.hbmS0
	pe.L2BytesPerStep += weight * u.l2S0
}

// stepBytesEach is stepBytes slice by slice: its reference and fallback.
func stepBytesEach(tl *Timeline, pe *PhaseEstimate, s0 int, weight int64) {
	for _, sl := range tl.All() {
		if sl.Phase == partition.Decode && sl.Step == s0 {
			pe.HBMBytesPerStep += weight * sl.HBMBytes
			pe.L2BytesPerStep += weight * sl.L2Bytes
		}
	}
}

// pricing is countPricing from the pass's counts.
func (u *windowUse) pricing(e *Estimate) {
	if u.fallback {
		e.countPricing()
		return
	}
	e.setPricing(u.table, u.modelOps)
}
