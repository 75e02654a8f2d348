package calib

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
)

// Core wait: what a collective costs beyond its back-to-back time when a
// host runs more ranks than it has cores (docs/costmodel.md, "Shared cores:
// the partners' scheduling delay"). Every rank of n runs, in pairs
// {0, 1}, {2, 3}, …, the loop
//
//	compute burst; all_reduce within the pair
//
// and rank 0 times its all_reduce calls and its bursts apart
// (opAllReduceBurst), for each burst length of CoreWaitBursts; the same
// pairs also run the all_reduce back to back (opAllReducePairs, the op-time
// table's entry). The difference, per message step of the pair's ring
// (2(g−1) = 2), is the wait W, recorded per burst length as the op-time
// entries {kind core_wait, shape cores=C, size = the burst's wall time in
// ns, ranks n}: sim looks W up at the compute a rank ran since its last
// communication. Above the cores the pair {0, 1} also runs the loop alone
// while the other n − 2 ranks sleep in a receive (opAllReduceBurstIdle: a
// pipeline stage's TP pair while the other stages wait), against the same
// back-to-back pairs: the wait beside idle ranks W_idle, recorded as
// {kind core_wait_idle, …} alike; sim charges a collective
// W·share + W_idle·(1 − share) per message step (sim/optable_share.go).

// CoreWaitBursts are the compute bursts' lengths in loop iterations (four
// independent multiply-adds each, about 1.5 ns on the project's 2-core VM
// with a core to itself: 6 µs to 0.4 ms) — the range of a tiny config's
// compute between two collectives, from a decode step's layer half
// (a few µs) to a prefill's (hundreds of µs).
var CoreWaitBursts = []int{4_000, 16_000, 64_000, 256_000}

// burstSink keeps the burst's result alive so the compiler cannot drop it
// (atomic: ranks that are goroutines of one process burst at once).
var burstSink atomic.Uint64

// burst runs a compute burst of iters iterations: a fixed amount of work,
// not a fixed time, so a rank descheduled during it takes longer, as a
// run's rank does.
func burst(iters int) {
	a, b, c, d := 1.0, 1.0, 1.0, 1.0
	for i := 0; i < iters; i++ {
		a = a*0.999999 + 1e-7
		b = b*0.999998 + 2e-7
		c = c*0.999997 + 3e-7
		d = d*0.999996 + 4e-7
	}
	burstSink.Store(math.Float64bits(a + b + c + d))
}

// burstAllReduce runs iters rounds of a burst of burstIters then an
// all_reduce of buf on g, and returns the wall time spent in the
// all_reduce calls and in the bursts. With stamps (nil: none) it also
// stamps each call's arrival and exit on the host's clock (exitlag.go).
func burstAllReduce(ctx context.Context, g pexec.Group, buf pexec.F32, iters, burstIters int, stamps *pairStamps) (arS, burstS float64, err error) {
	var in, bs time.Duration
	for i := 0; i < iters; i++ {
		t0 := time.Now()
		burst(burstIters)
		t1 := time.Now()
		if stamps != nil {
			stamps.arrive = append(stamps.arrive, hostClockNs())
		}
		if err := g.AllReduce(ctx, buf); err != nil {
			return 0, 0, err
		}
		if stamps != nil {
			stamps.exit = append(stamps.exit, hostClockNs())
		}
		bs += t1.Sub(t0)
		in += time.Since(t1)
	}
	return in.Seconds(), bs.Seconds(), nil
}

// burstAllReduceBesideIdle is member r's part of opAllReduceBurstIdle:
// the pair {members[0], members[1]} runs burstAllReduce on g while every
// other member sleeps in a receive from the first, which the first sends
// once the pair is done. It returns the first member's time in the
// all_reduce calls (keep gets its bursts' time and the pair's exit lags'
// sum, exitlag.go).
func burstAllReduceBesideIdle(ctx context.Context, c pexec.Comm, g pexec.Group, buf pexec.F32, members []int, r, iters, burstIters int, keep func(bs, lag float64)) (float64, error) {
	token := pexec.F32(make([]float32, 1))
	if i := slices.Index(members, r); i >= 2 {
		if err := c.Recv(ctx, token, members[0]); err != nil {
			return 0, err
		}
		return 0, c.Flush(ctx)
	}
	stamps := newPairStamps(iters)
	elapsed, bs, err := burstAllReduce(ctx, g, buf, iters, burstIters, stamps)
	if err != nil {
		return 0, err
	}
	// The stamps are gathered before the others wake: they stay asleep
	// until the pair is done.
	lag, err := gatherExitLag(ctx, c, [2]int{members[0], members[1]}, r, stamps)
	keep(bs, lag)
	if err != nil {
		return 0, err
	}
	if r == members[0] {
		for _, p := range members[2:] {
			if err := c.Send(ctx, token, p); err != nil {
				return 0, err
			}
		}
	}
	return elapsed, c.Flush(ctx)
}

// RingBursts are the compute bursts of each hop of the receive wait's
// rings, one ring each (4 000 to 64 000 iterations, about 6 to 100 µs
// alone: a tiny config's stage of a decode step, one layer to a few, what
// a pipeline stage computes between its receive and its send). sim looks
// the wait up at the burst a receiving stage computed since its last
// receive (the same in every stage of an even pipeline).
var RingBursts = []int{4_000, 16_000, 64_000}

// CoreWaitSizes are the all_reduce payloads the core wait is measured at:
// the tiny configs' decode and prefill all-reduces (hundreds of bytes to
// tens of KiB), where the wait, not the bytes, makes the time.
var CoreWaitSizes = []int64{256, 4 << 10, 32 << 10}

// coreWaitRepeatsNote is the note that lists every repeat's W of the core
// wait entries es (in µs, the order they were measured in; es[i] from the
// times after bursts[i], as coreWaitEntries reads them): the states the
// host's pairs ran in during the measurement, which the entry's median
// and extremes do not show (on the project's 2-core VM W after a
// prefill's ≈ 25 µs burst reads ≈ 5–15 µs in one and ≈ 35–45 µs in the
// other, for tens of milliseconds to seconds at a time:
// docs/measurements/cpu-calibration.md, (sixteenth, e) and (seventeenth)).
// alone and bursts are as coreWaitEntries'.
func coreWaitRepeatsNote(alone [][]float64, bursts [][][]float64, es []configs.OpTime, n, cores int) string {
	var per []string
	for i, b := range bursts {
		if i >= len(es) {
			break
		}
		ws, err := coreWaitPerRepeat(alone, b)
		if err != nil {
			continue
		}
		vals := make([]string, len(ws))
		for r, w := range ws {
			vals[r] = strconv.FormatFloat(w*1e6, 'f', 1, 64)
		}
		per = append(per, fmt.Sprintf("size %d: %s", es[i].Size, strings.Join(vals, " ")))
	}
	return fmt.Sprintf("core wait repeats at %d ranks on %d cores, µs per message step in the order measured, per entry (size: the burst's wall time in ns): %s", n, cores, strings.Join(per, "; "))
}

// coreWaitPerRepeat is each repeat's W after one burst length: the median
// over sizes of (after a burst − back to back) / 2(g−1), clamped at zero
// (alone [size][repeat], burstT [size][2·repeat], as coreWaitEntry's).
func coreWaitPerRepeat(alone, burstT [][]float64) ([]float64, error) {
	if len(alone) != len(burstT) || len(alone) == 0 {
		return nil, fmt.Errorf("core wait: %d sizes back to back, %d after a burst", len(alone), len(burstT))
	}
	repeats := len(alone[0])
	ws := make([]float64, 0, repeats)
	for r := 0; r < repeats; r++ {
		var per []float64
		for s := range alone {
			if len(alone[s]) != repeats || len(burstT[s]) != 2*repeats {
				return nil, fmt.Errorf("core wait: size %d has %d times back to back and %d after a burst, want %d and %d", s, len(alone[s]), len(burstT[s]), repeats, 2*repeats)
			}
			per = append(per, max(0, burstT[s][2*r]-alone[s][r])/coreWaitSteps)
		}
		ws = append(ws, medianOf(per))
	}
	return ws, nil
}

// noWaitS stands for a measured wait of zero in the table: 1 ns, below
// any clock partbench reads.
const noWaitS = 1e-9

// coreWaitSteps is the message steps of a pair's ring all_reduce, 2(g−1).
const coreWaitSteps = 2

// coreWaitEntry turns the times of the two loops into the op-time entry of
// the wait per message step at n ranks on cores cores after one burst
// length: alone is [size][repeat] of the back-to-back pairs, burstT
// [size][2·repeat] of the pairs after a burst (each repeat: the all_reduce's
// time per call, then the burst's). Per repeat W is the median over sizes of
// (after a burst − back to back) / 2(g−1), clamped at zero; the entry holds
// coreWaitOf the repeats and their extremes (a zero as noWaitS), at size
// the median burst wall time in ns. ok is false when no repeat measured a
// wait (the entry then holds noWaitS throughout).
func coreWaitEntry(alone, burstT [][]float64, n, cores int) (configs.OpTime, bool, error) {
	ws, err := coreWaitPerRepeat(alone, burstT)
	if err != nil {
		return configs.OpTime{}, false, err
	}
	repeats := len(ws)
	var walls []float64
	for s := range burstT {
		for r := 0; r < repeats; r++ {
			walls = append(walls, burstT[s][2*r+1])
		}
	}
	sp := spreadOf(ws)
	ok := sp.Max > 0
	if n <= cores {
		sp.Median = sp.Min // coreWaitOf: the least repeat where each rank has a core
	}
	// A wait of none is kept as noWaitS (a table time is positive), so
	// that sim interpolates towards no wait after short bursts.
	sp.Median, sp.Min, sp.Max = max(sp.Median, noWaitS), max(sp.Min, noWaitS), max(sp.Max, noWaitS)
	return configs.OpTime{Kind: configs.CoreWaitKind, Shape: configs.CoreWaitShape(cores), Size: max(1, int64(math.Round(medianOf(walls)*1e9))),
		TimeS: sp.Median, TimeMinS: sp.Min, TimeMaxS: sp.Max, Samples: repeats, Ranks: n}, ok, nil
}

// coreWaitOf names the estimate of W a core_wait entry holds over its
// repeats at n ranks on cores cores: their median where the ranks
// outnumber the cores (the wait the ranks' own sharing of the cores
// makes, in whichever state the host is in), the least of them where each
// rank has a core (n ≤ cores). There the wait is the partner's wake-up, ≈ 0
// to a few µs, and a repeat that reads tens to hundreds of µs after a
// 0.1–0.6 ms burst — mostly a fifth to four fifths of the burst, as if the
// partner's compute ran on part of a core — is a process outside the job
// sharing a rank's CPU for that repeat; the runs a minute later do not
// meet it (on the project's 2-core VM, twelve calibrations: the 2-rank W's
// median read 117–259 µs after the ≈ 0.45 ms burst in eight of them, while
// tp2-tiny's runs held their TTFT; priced from the least of
// the first five repeats, tp2-tiny's modeled TTFT is within 10 % of the
// runs for 10 of the 12, from their median for 5:
// docs/measurements/cpu-calibration.md, (eighteenth)).
func coreWaitOf(n, cores int) string {
	if n <= cores {
		return "least of"
	}
	return "median over"
}

// coreWaitEntries turns the back-to-back times alone and the times after
// each burst length (bursts[i], as coreWaitEntry's burstT) into one core
// wait entry per burst length. A burst after which no repeat waited is
// kept too, at noWaitS, as beside idle ranks: without it sim would price a
// collective after that burst from the nearest other burst's wait (a
// short burst from a longer one's). waited is false when no burst
// measured a wait.
func coreWaitEntries(alone [][]float64, bursts [][][]float64, n, cores int) (entries []configs.OpTime, waited bool, err error) {
	for _, b := range bursts {
		e, ok, err := coreWaitEntry(alone, b, n, cores)
		if err != nil {
			return nil, false, err
		}
		waited = waited || ok
		entries = append(entries, e)
	}
	return entries, waited, nil
}

// coreWaitCounts are the rank counts the core wait is measured at: every
// even count of --op-ranks and --nproc at or above the host's cores (pairs
// need an even count). At the cores' count no rank waits for a core, but
// a partner that computed before the collective meets it late, after its
// communicator's wait gave up spinning and slept: W is then the wake-up
// a run's collective after compute pays and a back-to-back one does not
// (docs/costmodel.md, "Shared cores"). Below the cores it is not measured.
func coreWaitCounts(o Options, cores int) []int {
	var out []int
	seen := map[int]bool{}
	for _, n := range append([]int{o.Ranks}, o.OpRanks...) {
		if n >= cores && n >= 2 && n%2 == 0 && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// coreWaitTimes are rank 0's times of one or more launches of the
// core-wait loops at one rank count: times [group][size][values], each
// launch's repeats after the one before's, and the groups' layout.
type coreWaitTimes struct {
	times    [][][]float64
	bursts   []int
	idle     int // the first group beside idle ranks (= ring where none)
	ring     int // the receive wait's one-way group; its rings follow
	repeats  int // over every launch
	launches int
}

// pool appends the repeats of another launch, b, of the same loops to
// m's, in the order measured (an error where the two differ in layout).
func (m *coreWaitTimes) pool(b *coreWaitTimes) error {
	if len(m.times) != len(b.times) || m.idle != b.idle || m.ring != b.ring {
		return fmt.Errorf("core wait: launches of %d and %d groups apart", len(m.times), len(b.times))
	}
	for gi := range m.times {
		if len(m.times[gi]) != len(b.times[gi]) {
			return fmt.Errorf("core wait: group %d at %d and %d sizes", gi, len(m.times[gi]), len(b.times[gi]))
		}
		for si := range m.times[gi] {
			m.times[gi][si] = append(m.times[gi][si], b.times[gi][si]...)
		}
	}
	m.repeats += b.repeats
	m.launches += b.launches
	return nil
}

// measureCoreWaitTimes is one launch of the core-wait loops among n
// process ranks (LinkArgv) on a host of cores cores after each burst of
// CoreWaitBursts, o.Repeats repeats. Run measures two launches apart,
// pools them (coreWaitTimes.pool) and adds their entries (addCoreWait).
func measureCoreWaitTimes(ctx context.Context, o Options, n, cores int) (*coreWaitTimes, error) {
	all := everyRank(n)
	groups := []commGroup{{opAllReducePairs, all}}
	bursts := []int{0}
	for _, b := range CoreWaitBursts {
		groups, bursts = append(groups, commGroup{opAllReduceBurst, all}), append(bursts, b)
	}
	// Beside idle ranks (above the cores, where there are others): the
	// pair {0, 1} alone after each burst while the rest sleep in a
	// receive, against the same back-to-back pairs.
	idle := len(groups)
	if n > cores && n > 2 {
		for _, b := range CoreWaitBursts {
			groups, bursts = append(groups, commGroup{opAllReduceBurstIdle, all}), append(bursts, b)
		}
	}
	// The receive wait: a message around all n ranks, each computing a
	// burst before passing it on, per hop less the burst, against the
	// one-way time between two of them with the others idle; one ring
	// per burst of RingBursts.
	ring := len(groups)
	groups, bursts = append(groups, commGroup{opSendRecv, []int{0, 1}}), append(bursts, 0)
	for _, b := range RingBursts {
		groups, bursts = append(groups, commGroup{opRing, all}), append(bursts, b)
	}
	times, err := measureLinkProcsBursts(ctx, o.LinkArgv, n, groups, bursts, CoreWaitSizes, o.Repeats, o.MinSample)
	if err != nil {
		return nil, fmt.Errorf("core wait: %w", err)
	}
	return &coreWaitTimes{times: times, bursts: bursts, idle: idle, ring: ring, repeats: o.Repeats, launches: 1}, nil
}

// launchesOf says n launches in words: "1 launch", "2 launches".
func launchesOf(n int) string {
	if n == 1 {
		return "1 launch"
	}
	return fmt.Sprintf("%d launches", n)
}

// addCoreWait turns the core-wait loops' times m at n ranks on cores
// cores into their entries in cal's op times, with notes, or a note
// saying none was measured.
func addCoreWait(cal *configs.Calibration, m *coreWaitTimes, n, cores int) error {
	times, bursts, idle, ring, repeats := m.times, m.bursts, m.idle, m.ring, m.repeats
	var err error
	// The burst loops' exit lags apart (exitlag.go): times[i] keeps each
	// repeat's (all_reduce, burst), lags[i] its exit lag.
	lags := make([][][]float64, len(times))
	for i := 1; i < ring; i++ {
		if times[i], lags[i], err = splitExitLag(times[i]); err != nil {
			return fmt.Errorf("core wait: %w", err)
		}
	}
	if n > cores {
		if err := addExitLags(cal, times, lags, idle, ring, n, cores, repeats); err != nil {
			return err
		}
	}
	// keep adds entry e to the profile and describes it in list; an
	// entry of a size seen (two bursts of one wall time) is kept too, 1 ns
	// apart.
	keep := func(e configs.OpTime, seen map[int64]bool, list *[]string) {
		for seen[e.Size] {
			e.Size++
		}
		seen[e.Size] = true
		cal.OpTimes = append(cal.OpTimes, e)
		*list = append(*list, fmt.Sprintf("%.3g s after %.3g s of compute", e.TimeS, float64(e.Size)*1e-9))
	}
	var got []string
	seen := map[int64]bool{}
	var hops []string
	seenHop := map[int64]bool{}
	for i := range RingBursts {
		if e, ok := recvWaitEntry(times[ring], times[ring+1+i], n, cores); ok {
			keep(e, seenHop, &hops)
		}
	}
	if len(hops) > 0 {
		note(cal, "receive wait at %d ranks on %d cores, per hop of a message passed around all of them beyond the hop's burst and the one-way time between two (median over %d repeats): %s", n, cores, repeats, strings.Join(hops, ", "))
	}
	waits, waited, err := coreWaitEntries(times[0], times[1:idle], n, cores)
	if err != nil {
		return err
	}
	for _, e := range waits {
		keep(e, seen, &got)
	}
	// Every repeat's W, in the order measured: the host's states behind
	// the entries' medians.
	note(cal, "%s", coreWaitRepeatsNote(times[0], times[1:idle], cal.OpTimes[len(cal.OpTimes)-len(waits):], n, cores))
	var besideIdle []string
	seenIdle := map[int64]bool{}
	for i := idle; i < ring; i++ {
		// A burst after which no repeat waited is kept too (1 ns): the
		// pair alone often meets no wait after a short burst, and without
		// the entry sim would take the next longer burst's.
		e, _, err := coreWaitEntry(times[0], times[i], n, cores)
		if err != nil {
			return err
		}
		e.Kind = configs.CoreWaitIdleKind
		keep(e, seenIdle, &besideIdle)
	}
	if idle < ring {
		note(cal, "core wait beside idle ranks at %d ranks on %d cores, per message step of the pair {0, 1} after a compute burst while the other %d sleep in a receive, against every pair back to back (median over %d repeats): %s", n, cores, n-2, repeats, strings.Join(besideIdle, ", "))
	}
	// The bursts' stretch: their wall time at n ranks against their time
	// alone, timed here with the n ranks gone.
	var str []string
	for i := 1; i < idle; i++ {
		e, ok := coreStretchEntry(burstAloneS(bursts[i]), times[i], n, cores)
		if ok {
			cal.OpTimes = append(cal.OpTimes, e)
			str = append(str, fmt.Sprintf("%.3g s → %.3g s (×%.2f)", float64(e.Size)*1e-9, e.TimeS, e.TimeS/(float64(e.Size)*1e-9)))
		}
	}
	if len(str) > 0 {
		note(cal, "compute bursts at %d ranks on %d cores, time alone → wall time between all_reduces (median over sizes and %d repeats; fair share would be ×%.2f): %s", n, cores, repeats, float64(n)/float64(cores), strings.Join(str, ", "))
	}
	if !waited {
		note(cal, "core wait at %d ranks on %d cores: an all_reduce after a compute burst took no longer than back to back; collectives are charged no scheduling delay (entries of 1 ns)", n, cores)
		return nil
	}
	note(cal, "core wait at %d ranks on %d cores, per message step (%s %d repeats in %s; all_reduce pairs after a compute burst against back to back): %s", n, cores, coreWaitOf(n, cores), repeats, launchesOf(m.launches), strings.Join(got, ", "))
	return nil
}

// ringHop is member r's part of one trip of a message around members:
// the first computes a burst of burstIters, sends to the next and receives
// from the last; every other receives from the one before it, computes
// the burst and sends to the one after — a pipeline's stages, one
// runnable at a time. It returns the burst's wall time.
func ringHop(ctx context.Context, c pexec.Comm, buf pexec.F32, members []int, r, burstIters int) (float64, error) {
	i := slices.Index(members, r)
	next, prev := members[(i+1)%len(members)], members[(i+len(members)-1)%len(members)]
	if i != 0 {
		if err := c.Recv(ctx, buf, prev); err != nil {
			return 0, err
		}
	}
	t := time.Now()
	burst(burstIters)
	bs := time.Since(t).Seconds()
	if err := c.Send(ctx, buf, next); err != nil {
		return 0, err
	}
	if i == 0 {
		return bs, c.Recv(ctx, buf, prev)
	}
	return bs, nil
}

// recvWaitEntry is the op-time entry of the receive wait at n ranks on
// cores cores after one burst length: per repeat the median over sizes of
// (ring hop − its burst − one-way time), clamped at 0 (oneWay
// [size][repeat]; hop [size][2·repeat], each repeat the hop's time then
// its burst's); the median over repeats, a zero kept as noWaitS, at size
// the bursts' median wall time in ns. ok is false when no repeat measured
// a wait or the shapes differ.
func recvWaitEntry(oneWay, hop [][]float64, n, cores int) (configs.OpTime, bool) {
	if len(oneWay) != len(hop) || len(oneWay) == 0 {
		return configs.OpTime{}, false
	}
	repeats := len(oneWay[0])
	var ws, walls []float64
	for r := 0; r < repeats; r++ {
		var per []float64
		for s := range oneWay {
			if len(oneWay[s]) != repeats || len(hop[s]) != 2*repeats {
				return configs.OpTime{}, false
			}
			per = append(per, max(0, hop[s][2*r]-hop[s][2*r+1]-oneWay[s][r]))
			walls = append(walls, hop[s][2*r+1])
		}
		ws = append(ws, medianOf(per))
	}
	sp := spreadOf(ws)
	if !(sp.Max > 0) {
		return configs.OpTime{}, false
	}
	sp.Median, sp.Min = max(sp.Median, noWaitS), max(sp.Min, noWaitS)
	return configs.OpTime{Kind: configs.RecvWaitKind, Shape: configs.CoreWaitShape(cores), Size: max(1, int64(math.Round(medianOf(walls)*1e9))),
		TimeS: sp.Median, TimeMinS: sp.Min, TimeMaxS: sp.Max, Samples: repeats, Ranks: n}, true
}

// burstAloneRepeats is how many times burstAloneS runs a burst after a
// warm-up; it keeps the median.
const burstAloneRepeats = 31

// burstAloneS is the wall time of a burst of iters iterations in this
// process with the link's ranks gone: the median of burstAloneRepeats
// runs after one warm-up.
func burstAloneS(iters int) float64 {
	burst(iters)
	ts := make([]float64, burstAloneRepeats)
	for i := range ts {
		t := time.Now()
		burst(iters)
		ts[i] = time.Since(t).Seconds()
	}
	return medianOf(ts)
}

// coreStretchEntry is the op-time entry of a compute burst's shared-core
// stretch at n ranks on cores cores: the burst took aloneS alone, and
// burstT[size][2·repeat+1] of wall time between the n ranks' all_reduces
// (the core-wait loop). Per repeat the median over sizes of the wall
// time; the entry holds the median and the extremes over repeats, at
// size aloneS in ns. ok is false without a positive time alone or wall
// time.
func coreStretchEntry(aloneS float64, burstT [][]float64, n, cores int) (configs.OpTime, bool) {
	if !(aloneS > 0) || len(burstT) == 0 {
		return configs.OpTime{}, false
	}
	repeats := len(burstT[0]) / 2
	var walls []float64
	for r := 0; r < repeats; r++ {
		var per []float64
		for s := range burstT {
			if len(burstT[s]) != 2*repeats {
				return configs.OpTime{}, false
			}
			per = append(per, burstT[s][2*r+1])
		}
		walls = append(walls, medianOf(per))
	}
	sp := spreadOf(walls)
	if !(sp.Min > 0) {
		return configs.OpTime{}, false
	}
	return configs.OpTime{Kind: configs.CoreStretchKind, Shape: configs.CoreWaitShape(cores), Size: max(1, int64(math.Round(aloneS*1e9))),
		TimeS: sp.Median, TimeMinS: sp.Min, TimeMaxS: sp.Max, Samples: repeats, Ranks: n}, true
}

// addExitLags adds the exit lags of the core-wait burst loops to cal
// (exitlag.go): times[1:idle] are the loops with every pair computing
// (configs.CoreExitLagKind), times[idle:ring] the pair {0, 1} beside idle
// ranks (configs.CoreExitLagIdleKind), each entry at the burst's median
// wall time over sizes and repeats; lags[i] the loops' exit lags.
func addExitLags(cal *configs.Calibration, times, lags [][][]float64, idle, ring, n, cores, repeats int) error {
	for _, part := range []struct {
		kind, what string
		from, to   int
	}{{configs.CoreExitLagKind, "every pair computing", 1, idle}, {configs.CoreExitLagIdleKind, "the other ranks asleep in a receive", idle, ring}} {
		var got []string
		seen := map[int64]bool{}
		for i := part.from; i < part.to; i++ {
			var walls []float64
			for _, ts := range times[i] {
				for r := 1; r < len(ts); r += 2 {
					walls = append(walls, ts[r])
				}
			}
			wall := max(1, int64(math.Round(medianOf(walls)*1e9)))
			for seen[wall] {
				wall++
			}
			seen[wall] = true
			es, err := exitLagEntries(part.kind, lags[i], CoreWaitSizes, wall, n, cores)
			if err != nil {
				return fmt.Errorf("core wait: %w", err)
			}
			cal.OpTimes = append(cal.OpTimes, es...)
			var per []string
			for _, e := range es {
				per = append(per, fmt.Sprintf("%.3g s at %d B", e.TimeS, e.Size))
			}
			got = append(got, fmt.Sprintf("after %.3g s of compute %s", float64(wall)*1e-9, strings.Join(per, ", ")))
		}
		if len(got) > 0 {
			note(cal, "exit lag at %d ranks on %d cores, a pair's all_reduce from the later partner's arrival to the later exit, per call, %s (median over %d repeats): %s", n, cores, part.what, repeats, strings.Join(got, "; "))
		}
	}
	return nil
}
