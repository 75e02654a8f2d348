package calib

import (
	"slices"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// The all_gather timed. A tensor-parallel Program gathers its vocab-sharded
// logits before sample (partition's logits.ag); the CPU backend runs it as
// tcpcomm's ring all_gather, n−1 steps of one member's block, where an
// all_reduce takes 2(n−1) steps and adds. Priced from the link fitted to the
// all_reduce and sendrecv samples it read 14× the runs' 1.3 µs at 2 ranks
// (docs/measurements/cpu-calibration.md, fifteenth round), so calibrate
// times it as it times the all_reduce: through the run's communicator, per
// group size, at every placement the link is measured at, and writes it to
// the op-time table as kind all_gather, shape ranks=G, size the gathered
// bytes (sim.OpKey). Its samples are no part of the link fit.
const (
	// opAllGather is an all_gather over the group's ranks.
	opAllGather = "all_gather"
	// opAllGatherPairs is an all_gather within pairs {0, 1}, {2, 3}, … of
	// every rank at once (the TP pairs of a 4-rank tiny config, whose
	// gathers overlap: tp2-dp2's two replicas), timed on the pair {0, 1}.
	opAllGatherPairs = "all_gather_pairs"
)

// isAllGather reports whether op runs all_gather calls (on a group).
func isAllGather(op string) bool { return op == opAllGather || op == opAllGatherPairs }

// usesGroup reports whether op's members call a collective on a group
// (which each member makes first).
func usesGroup(op string) bool { return isAllReduce(op) || isAllGather(op) }

// fitsLink reports whether samples of op are fitted into the link's α and
// β: the all_reduce's and sendrecv's, as before the all_gather was timed;
// an all_gather sample is priced by its own entries, never fitted as an
// all_reduce (nor its model fitted to the link: the link's other users
// stay as they were).
func fitsLink(op string) bool { return !isAllGather(op) }

// gatherBytes is the payload an all_gather of about bytes over g ranks
// moves in whole float32 elements per member: 4·g·max(1, ⌊bytes/(4g)⌋),
// the gathered (output) bytes, as the Program's all_gather counts them.
func gatherBytes(bytes int64, g int) int64 {
	per := int64(4 * g)
	return per * max(1, bytes/per)
}

// gatherSizes are the all_gather payloads timed over g ranks: the sweep's
// sizes and the Programs' own, each as gatherBytes, ascending, once each.
func gatherSizes(sweep, programs []int64, g int) []int64 {
	var out []int64
	for _, s := range append(slices.Clone(sweep), programs...) {
		out = append(out, gatherBytes(s, g))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// programGathers are the payloads (bytes) of every all_gather in plans'
// Programs, prefill and decode, by group size, ascending, once each.
func programGathers(plans []*partition.Plan) map[int][]int64 {
	out := map[int][]int64{}
	for _, p := range plans {
		for _, r := range p.Ranks {
			for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
				prog := p.Program(r.Rank, ph)
				for i := range prog.Ops {
					op := &prog.Ops[i]
					if op.Kind == partition.AllGather && op.Bytes > 0 {
						out[len(op.Group)] = append(out[len(op.Group)], op.Bytes)
					}
				}
			}
		}
	}
	for g, bs := range out {
		slices.Sort(bs)
		out[g] = slices.Compact(bs)
	}
	return out
}

// sizedGroup is a group the link is timed over with the sizes it is timed
// at.
type sizedGroup struct {
	commGroup
	sizes []int64
}

// linkGroups are the groups the link is timed over at n ranks: commGroups'
// (all_reduce and sendrecv) at sweep, and the all_gather over the same
// groups — every rank; the pairs at once with an even count above two,
// else the pair {0, 1} alone (not in quick mode) — at gatherSizes of the
// sweep and the Programs' all_gathers over as many ranks (programs, by
// group size).
func linkGroups(n int, quick bool, sweep []int64, programs map[int][]int64) []sizedGroup {
	var out []sizedGroup
	for _, g := range commGroups(n, quick) {
		out = append(out, sizedGroup{g, sweep})
	}
	if n < 2 {
		return out
	}
	all := everyRank(n)
	out = append(out, sizedGroup{commGroup{opAllGather, all}, gatherSizes(sweep, programs[n], n)})
	switch {
	case n > 2 && n%2 == 0:
		out = append(out, sizedGroup{commGroup{opAllGatherPairs, all}, gatherSizes(sweep, programs[2], 2)})
	case n > 2 && !quick:
		out = append(out, sizedGroup{commGroup{opAllGather, []int{0, 1}}, gatherSizes(sweep, programs[2], 2)})
	}
	return out
}

// groupsOf and sizesOf split sized groups for measureLinkProcsSized.
func groupsOf(gs []sizedGroup) []commGroup {
	out := make([]commGroup, len(gs))
	for i, g := range gs {
		out[i] = g.commGroup
	}
	return out
}

func sizesOf(gs []sizedGroup) [][]int64 {
	out := make([][]int64, len(gs))
	for i, g := range gs {
		out[i] = g.sizes
	}
	return out
}

// samplesCount is how many (group, size) samples gs hold: the progress
// steps of their measurement.
func samplesCount(gs []sizedGroup) int {
	n := 0
	for _, g := range gs {
		n += len(g.sizes)
	}
	return n
}

// commSamples are the samples of gs from rank 0's times
// ([group][size][repeat]): each group and size's spread, at the group size
// it is priced at (sampleRanks).
func commSamples(gs []sizedGroup, times [][][]float64) []configs.CommSample {
	var out []configs.CommSample
	for gi, g := range gs {
		for si, size := range g.sizes {
			sp := spreadOf(times[gi][si])
			out = append(out, configs.CommSample{Op: g.op, Ranks: sampleRanks(g.op, g.ranks), Bytes: size,
				TimeMinS: sp.Min, TimeMedianS: sp.Median, TimeMaxS: sp.Max})
		}
	}
	return out
}

// linkSample is one group and size of the link measurement with its times
// over the repeats.
type linkSample struct {
	op    string
	ranks int
	bytes int64
	times []float64
}

// linkFitPoints are repeat r's points of the samples the link's α and β
// are fitted to (fitsLink: every sample but the all_gather's).
func linkFitPoints(samples []linkSample, r int) []commPoint {
	var pts []commPoint
	for _, s := range samples {
		if fitsLink(s.op) {
			pts = append(pts, commPoint{s.op, s.ranks, s.bytes, s.times[r]})
		}
	}
	return pts
}
