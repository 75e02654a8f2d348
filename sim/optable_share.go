package sim

import (
	"math"
	"sort"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// Shared cores. A CPU host runs every rank of a run on its cores; when
// more ranks compute at one moment than the host has cores, each of them
// gets a share of a core. The op-time table holds each op's time with the
// host to itself; the timeline then stretches every compute op by
//
//	max(1, b / cores)
//
// where b is the number of ranks computing during the op (averaged over its
// span; TP peers a per-stage timeline stands for and data-parallel replicas
// count too; communication ops wait on sockets and count as idle). The
// stretch changes the overlaps, so the timeline is simulated again with the
// new factors until they settle (at most shareRounds rounds). A decode op's
// factor is its mean over the simulated steps.

// shareRounds bounds the fixed-point iteration of the shared-core stretch.
const shareRounds = 6

// shareKey names one op of one simulated rank's Program in a phase (its
// decode steps share it).
type shareKey struct {
	rank      int
	phase     partition.Phase
	name      string
	mb, chunk int
}

func keyOf(rank int, phase partition.Phase, op *partition.Op) shareKey {
	return shareKey{rank, phase, op.Name, op.Microbatch, op.Chunk}
}

// coreShare is the stretch of each op (1 where absent): f the one its
// time is multiplied by, over the fair share max(1, b/cores) the core
// wait's share is reckoned from (coreWaitShare; f = over without a
// measured burst stretch).
type coreShare struct {
	f, over map[shareKey]float64
	// cold is the share of an op's occurrences whose burst began after
	// its rank waited (coldBursts): where it is priced in turns
	// (optable_turns.go).
	cold map[shareKey]float64
	// active is max(1, a/cores), a the ranks in their cycle of compute and
	// collectives during the op (activeCount): the core wait's share is
	// reckoned from it (rankState.activity).
	active map[shareKey]float64
}

// overFactor is op's fair-share oversubscription max(1, b/cores) (1
// where absent).
func (c *coreShare) overFactor(rank int, phase partition.Phase, op *partition.Op) float64 {
	if c == nil {
		return 1
	}
	return atLeastOne(c.over, keyOf(rank, phase, op))
}

// activeFactor is op's max(1, a/cores), a the ranks active during it
// (activeCount; 1 where absent).
func (c *coreShare) activeFactor(rank int, phase partition.Phase, op *partition.Op) float64 {
	if c == nil {
		return 1
	}
	return atLeastOne(c.active, keyOf(rank, phase, op))
}

func (c *coreShare) factor(rank int, phase partition.Phase, op *partition.Op) float64 {
	if c == nil {
		return 1
	}
	return atLeastOne(c.f, keyOf(rank, phase, op))
}

// atLeastOne is m[k] where it is above 1, else 1 (a factor absent or at
// most 1 stretches nothing).
func atLeastOne(m map[shareKey]float64, k shareKey) float64 {
	if f, ok := m[k]; ok && f > 1 {
		return f
	}
	return 1
}

// hostCores is how many cores the plan's ranks share, when the hardware
// profile says (a CPU calibration records its host's), else 0.
func hostCores(plan *partition.Plan) int {
	if plan == nil || plan.Config == nil {
		return 0
	}
	return plan.Config.Hardware.HostCores
}

// isCompute reports whether an op keeps a core busy (communication waits).
func isCompute(k partition.Kind) bool {
	switch k {
	case partition.AllReduce, partition.AllGather, partition.Send, partition.Recv:
		return false
	}
	return true
}

// shareCores re-simulates plan (one replica; replicas are the full plan's
// DP) with compute ops stretched by the host's core sharing, when the
// profile gives the host's cores and the ranks outnumber them; else it
// returns e unchanged. The ranks sharing a core are counted host-wide, or
// on each op's own CPU where `run --bind-to auto` binds them two to a CPU
// (pairedOnCPUs; not with opts.Unbound).
func shareCores(plan *partition.Plan, replicas int, opts Options, e *Estimate, work *planWork) (*Estimate, error) {
	cores := hostCores(plan)
	if cores <= 0 || plan.Size()*max(1, replicas) <= cores || e.Timeline == nil {
		return e, nil
	}
	bs := newBurstStretch(planOpTable(plan), plan, cores)
	paired := !opts.Unbound && pairedOnCPUs(plan, replicas, cores)
	for round := 0; round < shareRounds; round++ {
		next := shareFactors(e.Timeline, max(1, replicas), cores, paired, bs, opts.share)
		o := opts
		o.share = next
		ne, err := estimatePlan(plan, o, work) // the same plan: its Programs are shared
		if err != nil {
			return nil, err
		}
		settled := factorsClose(opts.share, next)
		opts, e = o, ne
		if settled {
			break
		}
	}
	return e, nil
}

// pairedOnCPUs reports whether plan's ranks (times replicas) are bound
// two to a CPU on the host's cores, as `run --bind-to auto` binds them
// (topology.PairedCPU: twice the cores, no tensor-parallel group straddling
// a CPU), with each replica's ranks on CPUs of their own (an even count per
// replica), so that one replica's timeline tells every CPU's load.
func pairedOnCPUs(plan *partition.Plan, replicas, cores int) bool {
	n := plan.Size() * max(1, replicas)
	return plan.Size()%2 == 0 && topology.PairedCPU(0, n, cores, plan.TP, 0) >= 0
}

// shareFactors computes each compute op's stretch from tl: the ranks busy
// computing during it, over cores (the stretch applies to the op's time
// alone, so the factors tl was simulated with do not compound). With a
// measured burst stretch bs (nil: none) the op's factor is bs.factor of
// its fair share at the time alone of its rank's burst (the compute since
// the rank's last receive or collective, each op's slice over prev's
// factor, the one tl was simulated with). With paired, the ranks bound
// two to a CPU (pairedOnCPUs), an op's busy ranks are those on its rank's
// CPU (topology.PairedCPU; a per-stage slice stands for its TP peers,
// each on its own CPU's count), over that one CPU, and the same for the
// active ranks the core wait's share is reckoned from. A tensor-parallel
// pair on a CPU of its own takes turns on it whether or not the other
// CPU's ranks compute: a pipeline's lone stage in the fill or drain runs
// as slowly as beside the other stage, where the host-wide count would
// give its two ranks the two cores.
func shareFactors(tl *Timeline, replicas, cores int, paired bool, bs *burstStretch, prev *coreShare) *coreShare {
	weight := float64(replicas)
	if tl.PerStage {
		weight *= float64(max(1, tl.TP))
	}
	integral := rankIntegral(tl, weight, func(k partition.Kind) bool { return isCompute(k) })
	activeIntegral := rankIntegral(tl, weight, activeCount)
	perCore := float64(cores)
	if paired {
		integral, activeIntegral, perCore = cpuIntegrals(tl, cores, func(k partition.Kind) bool { return isCompute(k) }), cpuIntegrals(tl, cores, activeCount), 1
	}
	var alone map[int]float64 // slice index → its burst's time alone
	if bs != nil {
		alone = burstsAlone(tl, prev)
	}
	cold := coldBursts(tl)
	sums, overs, colds, acts, counts := map[shareKey]float64{}, map[shareKey]float64{}, map[shareKey]float64{}, map[shareKey]float64{}, map[shareKey]int{}
	for i, sl := range tl.All() {
		if !isCompute(sl.Op.Kind) || sl.EndS <= sl.StartS {
			continue
		}
		avg := (integral(sl.Rank, sl.EndS) - integral(sl.Rank, sl.StartS)) / (sl.EndS - sl.StartS)
		act := (activeIntegral(sl.Rank, sl.EndS) - activeIntegral(sl.Rank, sl.StartS)) / (sl.EndS - sl.StartS)
		k := keyOf(sl.Rank, sl.Phase, sl.Op)
		acts[k] += math.Max(1, act/perCore)
		over := math.Max(1, avg/perCore)
		f := over
		if bs != nil {
			f = bs.factor(alone[i], over)
		}
		sums[k] += f
		overs[k] += over
		if cold[i] {
			colds[k]++
		}
		counts[k]++
	}
	out := &coreShare{f: make(map[shareKey]float64, len(sums)), over: make(map[shareKey]float64, len(sums)), cold: make(map[shareKey]float64, len(sums)), active: make(map[shareKey]float64, len(sums))}
	for k, v := range sums {
		out.f[k] = v / float64(counts[k]) // decode: the mean over steps
		out.over[k] = overs[k] / float64(counts[k])
		out.cold[k] = colds[k] / float64(counts[k])
		out.active[k] = acts[k] / float64(counts[k])
	}
	return out
}

// activeCount reports whether a rank in an op of kind k takes its turns
// on the host's cores: computing, or in a collective or a send of its
// cycle (woken at each message step); a receive (a pipeline stage waiting
// for its micro-batch, or for the next step's token) sleeps until its
// message comes. These are the ranks the core wait's loop runs beside
// (every pair in bursts and all-reduces) or without (the others asleep in
// a receive: core_wait_idle).
func activeCount(k partition.Kind) bool { return k != partition.Recv }

// rankIntegral is (rank, t) ↦ ∫ from tl's first event to t of the ranks
// in an op whose kind counts (each slice weight ranks: its TP peers and
// replicas), over tl's slices: the host's count, the same for every rank.
func rankIntegral(tl *Timeline, weight float64, counts func(partition.Kind) bool) func(int, float64) float64 {
	f := weightedIntegral(tl, func(Slice) float64 { return weight }, counts)
	return func(_ int, t float64) float64 { return f(t) }
}

// cpuIntegrals is rankIntegral with the ranks bound two to a CPU of cores
// (topology.PairedCPU, as the binding places them): (rank, t) ↦ the
// integral of the ranks counted on rank's CPU. A per-stage slice at rank r
// stands for ranks r … r+TP−1, each counted on its own CPU.
func cpuIntegrals(tl *Timeline, cores int, counts func(partition.Kind) bool) func(int, float64) float64 {
	peers := 1
	if tl.PerStage {
		peers = max(1, tl.TP)
	}
	// The groups were checked by pairedOnCPUs: here only the rank's CPU,
	// -1 for a rank past the host's.
	cpuOf := func(q int) int { return topology.PairedCPU(q, 2*cores, cores, 0, 0) }
	per := make([]func(float64) float64, cores)
	for c := range per {
		per[c] = weightedIntegral(tl, func(sl Slice) float64 {
			n := 0
			for q := sl.Rank; q < sl.Rank+peers; q++ {
				if cpuOf(q) == c {
					n++
				}
			}
			return float64(n)
		}, counts)
	}
	return func(rank int, t float64) float64 {
		if c := cpuOf(rank); c >= 0 {
			return per[c](t)
		}
		return 0
	}
}

// weightedIntegral is t ↦ ∫ from tl's first event to t of the ranks in an
// op whose kind counts, each slice counting weight(slice) ranks.
func weightedIntegral(tl *Timeline, weight func(Slice) float64, counts func(partition.Kind) bool) func(float64) float64 {
	type ev struct {
		t float64
		d float64
	}
	var evs []ev
	for _, sl := range tl.All() {
		if w := weight(sl); w > 0 && counts(sl.Op.Kind) && sl.EndS > sl.StartS {
			evs = append(evs, ev{sl.StartS, w}, ev{sl.EndS, -w})
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	// Segments [ts[i], ts[i+1]) with busy[i] ranks counted; cum[i] is the
	// integral of busy up to ts[i].
	var ts, busy, cum []float64
	b := 0.0
	for i := 0; i < len(evs); {
		t := evs[i].t
		for ; i < len(evs) && evs[i].t == t; i++ {
			b += evs[i].d
		}
		if n := len(ts); n > 0 {
			cum = append(cum, cum[n-1]+busy[n-1]*(t-ts[n-1]))
		} else {
			cum = append(cum, 0)
		}
		ts, busy = append(ts, t), append(busy, b)
	}
	return func(t float64) float64 {
		i := sort.SearchFloat64s(ts, t)
		if i < len(ts) && ts[i] == t {
			return cum[i]
		}
		if i == 0 {
			return 0
		}
		return cum[i-1] + busy[i-1]*(t-ts[i-1])
	}
}

// burstsAlone maps each compute slice of tl (by index) to the time alone
// of its rank's burst: the compute ops between two of the rank's receives
// or collectives (a send does not block: the burst goes on), each slice's
// length over the factor prev gave it.
func burstsAlone(tl *Timeline, prev *coreShare) map[int]float64 {
	list := tl.List()
	byRank := map[int][]int{}
	for i, sl := range list {
		byRank[sl.Rank] = append(byRank[sl.Rank], i)
	}
	out := make(map[int]float64)
	for _, idx := range byRank {
		sort.SliceStable(idx, func(a, b int) bool { return list[idx[a]].StartS < list[idx[b]].StartS })
		var cur []int
		sum := 0.0
		flush := func() {
			for _, i := range cur {
				out[i] = sum
			}
			cur, sum = cur[:0], 0
		}
		for _, i := range idx {
			sl := &list[i]
			switch {
			case sl.Op.Kind == partition.Send:
			case !isCompute(sl.Op.Kind):
				flush()
			case sl.EndS > sl.StartS:
				cur = append(cur, i)
				sum += (sl.EndS - sl.StartS) / prev.factor(sl.Rank, sl.Phase, sl.Op)
			}
		}
		flush()
	}
	return out
}

// burstStretch is the shared-core stretch the calibration measured for
// compute bursts at the plan's ranks on the host's cores
// (configs.CoreStretchKind: a burst's wall time at n ranks by its time
// alone; docs/costmodel.md, "Op times at the job's placement").
type burstStretch struct {
	table *OpTable
	shape string
	full  float64 // n/cores: the fair share at which it was measured
}

// newBurstStretch is the plan's measured burst stretch, nil where the
// table has none (every preset, every GPU, an older profile) or the ranks
// do not outnumber the cores.
func newBurstStretch(table *OpTable, plan *partition.Plan, cores int) *burstStretch {
	full := float64(planRanks(plan)) / float64(cores)
	if table == nil || cores <= 0 || full <= 1 {
		return nil
	}
	shape := configs.CoreWaitShape(cores)
	if g := table.grids[configs.CoreStretchKind+"\x00"+shape]; g == nil || len(g.sizes) == 0 {
		return nil
	}
	return &burstStretch{table, shape, full}
}

// measured is the measured stretch m ≥ 1 of a burst of aloneS seconds
// alone: its wall time at n ranks over its time alone, interpolated
// log–log between measured bursts, the nearest measured burst's outside
// them.
func (b *burstStretch) measured(aloneS float64) float64 {
	g := b.table.grids[configs.CoreStretchKind+"\x00"+b.shape]
	size := min(max(int64(math.Round(aloneS*1e9)), g.sizes[0]), g.sizes[len(g.sizes)-1])
	wall, ok := b.table.Lookup(configs.CoreStretchKind, b.shape, size, 0)
	if !ok || size <= 0 {
		return 1
	}
	return math.Max(1, wall/(float64(size)*1e-9))
}

// factor is the stretch of an op at fair share over (max(1, b/cores)) in
// a burst of aloneS seconds alone: the measured stretch m, which holds
// with all n ranks computing (fair share n/cores), scaled to the op's
// share of that oversubscription,
//
//	1 + (over − 1) · min(1, (m − 1) / (n/cores − 1))
//
// — over itself for a burst the scheduler stretches to the fair share
// (m = n/cores), 1 for one it does not stretch at all (m = 1).
func (b *burstStretch) factor(aloneS, over float64) float64 {
	if over <= 1 {
		return 1
	}
	m := b.measured(aloneS)
	return 1 + (over-1)*math.Min(1, (m-1)/(b.full-1))
}

// factorsClose reports whether two sets of factors differ by less than 1 %
// everywhere (and their cold shares by less than 0.01).
func factorsClose(a, b *coreShare) bool {
	if a == nil || b == nil || len(a.f) != len(b.f) {
		return false
	}
	for k, v := range b.f {
		if w, ok := a.f[k]; !ok || math.Abs(v-w) > 0.01*w {
			return false
		}
		if math.Abs(b.cold[k]-a.cold[k]) > 0.01 || math.Abs(b.active[k]-a.active[k]) > 0.01*math.Max(1, a.active[k]) {
			return false
		}
	}
	return true
}

// The partners' scheduling delay. When a host runs more ranks than it has
// cores, a rank that blocks in a collective waits, at each message step,
// for its partner to be given a core (docs/costmodel.md, "Shared cores: the
// partners' scheduling delay"). The profile's op-time table holds that wait
// per message step, W, measured by calibrate at the run's ranks (kind
// configs.CoreWaitKind, shape cores=C; Apply keeps it only at that count)
// against the compute a rank ran since its last communication (size: that
// burst's wall time in ns; interpolated between measured bursts, the
// nearest measured one outside them). A collective over g ranks is charged
//
//	all_reduce (ring): 2(g−1) · W · share      all_gather: (g−1) · W · share
//
// (share: coreWaitShare). A receive that blocked (its message not yet
// there) is charged the receive wait instead (configs.RecvWaitKind: a hop
// of a message passed around all the ranks, beyond the one-way time the
// send entry holds); a send, which does not wait for its receiver,
// nothing.

// messageSteps is the message steps of op a rank waits on its partner at.
func messageSteps(op *partition.Op) int {
	g := len(op.Group)
	switch op.Kind {
	case partition.AllReduce:
		return 2 * max(0, g-1)
	case partition.AllGather:
		return max(0, g-1)
	}
	return 0 // a receive is charged the receive wait (recvWaitS)
}

// recvWaitS is what a receive that blocked waits beyond its message's
// transfer when the host's ranks outnumber its cores: the table's receive
// wait at the plan's host cores after burstS seconds of compute since the
// rank's last communication (a stage's burst, the same as its sender's in
// an even pipeline; interpolated between measured bursts, the nearest one
// outside them; a profile with one burst, size 1, holds at every burst),
// 0 without one.
func recvWaitS(table *OpTable, plan *partition.Plan, burstS float64) float64 {
	cores := hostCores(plan)
	if cores <= 0 || table == nil {
		return 0
	}
	w, ok := table.lookupClamped(configs.RecvWaitKind, configs.CoreWaitShape(cores), int64(math.Round(burstS*1e9)))
	if !ok {
		return 0
	}
	return w
}

// recvWaitSharedS is recvWaitS for a receiving rank whose compute since
// its last communication ran at a mean fair-share stretch of stretch
// (rankState.stretch), where the table also has the receive wait measured
// between the turns of the op table taken in turns
// (configs.RecvWaitTurnsKind: a pipeline's hop after a pass of real ops,
// one rank computing at a time):
//
//	R_turns · (1 − share) + R · share
//
// share = coreWaitShare(stretch) — 0 where the rank computed alone (a
// one-micro-batch pipeline's stage), 1 where every rank computed — and R
// the spin ring's receive wait (recvWaitS). Without turns entries, R.
func recvWaitSharedS(table *OpTable, plan *partition.Plan, burstS, stretch float64) float64 {
	r := recvWaitS(table, plan, burstS)
	cores := hostCores(plan)
	if cores <= 0 || table == nil {
		return r
	}
	t, ok := table.lookupClamped(configs.RecvWaitTurnsKind, configs.CoreWaitShape(cores), int64(math.Round(burstS*1e9)))
	if !ok {
		return r
	}
	share := coreWaitShare(stretch, planRanks(plan), cores)
	return t*(1-share) + r*share
}

// coreWaitS is the scheduling delay charged to op by the table's core wait
// at the plan's host cores after burstS seconds of compute, run at a mean
// shared-core stretch of stretch (0 without a core wait; coreWaitShare).
// Per message step it is
//
//	W · share + W_idle · (1 − share)
//
// W the core wait (measured with every rank computing), W_idle the wait
// beside idle ranks (configs.CoreWaitIdleKind: the pair's partners
// woken from a sleeping wait while the host's other ranks sleep too), each
// 0 where the profile has none: a collective whose members computed with
// the others idle (a pipeline stage's TP group, share 0) meets W_idle, one
// whose members computed beside every other rank (share 1) meets W.
func coreWaitS(table *OpTable, plan *partition.Plan, op *partition.Op, burstS, stretch float64) float64 {
	cores := hostCores(plan)
	if cores <= 0 || table == nil {
		return 0
	}
	steps := messageSteps(op)
	if steps == 0 {
		return 0
	}
	shape, size := configs.CoreWaitShape(cores), int64(math.Round(burstS*1e9))
	w, ok := table.lookupClamped(configs.CoreWaitKind, shape, size)
	idle, okIdle := table.lookupClamped(configs.CoreWaitIdleKind, shape, size)
	if !ok && !okIdle {
		return 0
	}
	share := coreWaitShare(stretch, planRanks(plan), cores)
	return float64(steps) * (w*share + idle*(1-share)) // an absent entry's value is 0
}

// planRanks is every rank of plan's config (replicas included): the ranks
// the host's cores are shared among (Calibration.Apply keeps a core wait
// measured at that count only).
func planRanks(plan *partition.Plan) int {
	p := plan.Config.Parallel
	return max(1, p.TP) * max(1, p.PP) * max(1, p.DP)
}

// coreWaitShare is how much of the measured wait a rank meets: calibrate
// measures W with all n ranks computing between their collectives, so the
// ranks' compute is stretched n/C; a rank whose burst ran at a mean stretch
// s (1: a core to itself, no rank waiting for one) meets the fraction
//
//	clamp((s − 1) / (n/C − 1), 0, 1)
//
// of it — none in a pipeline whose stages compute one at a time, all of it
// where every rank computes at once, as in the measurement. With no more
// ranks than cores (n = C: W measured there, none below) it is all of it.
func coreWaitShare(stretch float64, ranks, cores int) float64 {
	full := float64(ranks)/float64(cores) - 1
	if full <= 0 {
		// Every rank has a core: W (measured at n = C only; Apply keeps
		// it there) is the partner's wake-up after its compute, met in
		// full by a collective whose members computed before it.
		return 1
	}
	return math.Min(1, math.Max(0, (stretch-1)/full))
}

// lookupClamped is Lookup of a kind without context at size, taken at the
// nearest measured size outside the measured range.
func (t *OpTable) lookupClamped(kind, shape string, size int64) (float64, bool) {
	return t.lookupClampedAt(kind, shape, size, 0)
}

// lookupClampedAt is lookupClamped at context (interpolated between
// measured contexts as Lookup does, none beyond them).
func (t *OpTable) lookupClampedAt(kind, shape string, size, context int64) (float64, bool) {
	if t == nil {
		return 0, false
	}
	g := t.grids[kind+"\x00"+shape]
	if g == nil || len(g.sizes) == 0 {
		return 0, false
	}
	size = min(max(size, g.sizes[0]), g.sizes[len(g.sizes)-1])
	return t.Lookup(kind, shape, size, context)
}

// stretch is the mean fair-share oversubscription max(1, b/cores) of the
// rank's compute since its last communication op (1 without any): the
// stretch a blocked receive's share is reckoned from (recvWaitSharedS),
// which a measured burst stretch does not change; a collective's is
// activity.
func (r *rankState) stretch() float64 {
	if r.burstAloneS <= 0 {
		return 1
	}
	return r.burstOverS / r.burstAloneS
}

// activity is the mean max(1, a/cores) of the rank's compute since its
// last communication op, a the ranks active in their cycle of compute and
// collectives beside it (coreShare.activeFactor; 1 without any): the
// stretch a collective's core wait share is reckoned from. The core wait
// W is measured with every rank in bursts and all-reduces, W_idle with
// the others asleep in a receive; a rank whose collectives overlap
// another stage's (tp2pp2 with two micro-batches) meets W even where the
// other stage is in its own all-reduces rather than computing, and the
// fair share of computing ranks alone read it as beside idle ranks.
func (r *rankState) activity() float64 {
	if r.burstAloneS <= 0 {
		return 1
	}
	return r.burstActS / r.burstAloneS
}

// sendCallS is the time a sender spends in its Send call for op: the
// table's send_call entry at op's shape and size (configs.SendCallKind,
// measured at the run's placement), 0 without one. The message's arrival
// stays at the one-way time from the call's start (the send entry, or the
// link model): the call's time is the sender's, on its own clock.
func sendCallS(table *OpTable, op *partition.Op) float64 {
	t, _ := sendCallKindS(table, configs.SendCallKind, op)
	return t
}

// sendCallAsleepS is sendCallS for a receiver asleep in its receive: the
// table's send_call_asleep entry at op's shape and size
// (configs.SendCallAsleepKind), and whether the table has one.
func sendCallAsleepS(table *OpTable, op *partition.Op) (float64, bool) {
	return sendCallKindS(table, configs.SendCallAsleepKind, op)
}

// sendCallAsleepAtS is sendCallAsleepS for a send from rank: where the
// host's ranks are bound two to a CPU (pairedOnCPUs; not unbound) and op's
// peer runs on another CPU than rank (topology.PairedCPU), the table's
// send_call_asleep_cross entry (configs.SendCallAsleepCrossKind: its
// receiver's CPU idle while it sleeps) where it has one; the
// send_call_asleep entry (the pair on one CPU) otherwise.
func sendCallAsleepAtS(table *OpTable, plan *partition.Plan, unbound bool, rank int, op *partition.Op) (float64, bool) {
	if sendCrossesCPU(plan, unbound, rank, op.Peer) {
		if t, ok := sendCallKindS(table, configs.SendCallAsleepCrossKind, op); ok {
			return t, true
		}
	}
	return sendCallAsleepS(table, op)
}

// sendCrossesCPU reports whether a message from rank to peer goes between
// two CPUs where plan's ranks (times its data-parallel replicas) are bound
// two to a CPU of the host's (pairedOnCPUs); false where they are not, or
// unbound.
func sendCrossesCPU(plan *partition.Plan, unbound bool, rank, peer int) bool {
	cores := hostCores(plan)
	if unbound || cores <= 0 || !pairedOnCPUs(plan, max(1, plan.Config.Parallel.DP), cores) {
		return false
	}
	n := 2 * cores
	a, b := topology.PairedCPU(rank, n, cores, 0, 0), topology.PairedCPU(peer, n, cores, 0, 0)
	return a >= 0 && b >= 0 && a != b
}

func sendCallKindS(table *OpTable, kind string, op *partition.Op) (float64, bool) {
	if table == nil {
		return 0, false
	}
	_, shape, size, context := OpKey(op)
	return table.Lookup(kind, shape, size, context)
}

// ReceiverSpinS is how long a receive of partbench's shared-memory
// transport spins before it sleeps on its futex where the host's ranks do
// not outnumber its cores (exec/shmcomm.SpinFor; sim does not import
// exec, calib's tests hold the two equal). Where they outnumber them the
// transport does not spin at all (exec/tcpcomm's auto policy). The spin is
// adaptive — a receive whose recent spins were missed sleeps at once — so
// this is the longest a receiver can have waited and still be caught
// spinning: past it, it sleeps.
const ReceiverSpinS = 20e-6

// receiverSpinS is the spin of plan's receives: ReceiverSpinS, 0 where
// the plan's ranks outnumber the host's cores (hostCores; unknown cores:
// ReceiverSpinS).
func receiverSpinS(plan *partition.Plan) float64 {
	if cores := hostCores(plan); cores > 0 && planRanks(plan) > cores {
		return 0
	}
	return ReceiverSpinS
}

// sendCallAtS is a send's call time when its receiver has waited waitedS
// in the receive the message is for (negative: not yet receiving) as the
// message leaves: asleep (the send_call_asleep entry, sendCallAsleepS)
// where it waited longer than spinS, the spin of its receive
// (receiverSpinS) — it gave up spinning and sleeps, and the Send call
// wakes it — awake (sendCallS) otherwise, or where the table has no
// asleep entry (hasAsleep false: a profile of an older calibrate prices
// every send by the ping-pong's call, as it did).
func sendCallAtS(awake, asleep float64, hasAsleep bool, waitedS, spinS float64) float64 {
	if hasAsleep && waitedS > spinS {
		return asleep
	}
	return awake
}
