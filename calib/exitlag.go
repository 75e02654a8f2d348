package calib

import (
	"context"
	"fmt"
	"math"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
)

// The partner behind. Where a host runs more ranks than cores, the two
// partners of a pair leave an all_reduce one wake-up apart, and the later
// leaver arrives later at the next one: the pair runs as a shifted
// lockstep whose critical path is the partner behind's, for which a call
// runs from the later arrival to the later exit. Rank 0's own call (the
// core wait) holds only part of it — the wait for a late partner while
// rank 0 is ahead, none of the partner behind's late exit — so in the
// core-wait loops both partners of the pair {0, 1} stamp their arrival at
// and exit from every all_reduce on the host's monotonic clock (one clock
// for every process of the host), the second sends its stamps to the
// first after the sample, and the first keeps the mean of
//
//	max(exit₀, exit₁) − max(arrival₀, arrival₁)
//
// over the sample's calls: the exit lag, recorded per size and burst as
// configs.CoreExitLagKind (every other pair computing and exchanging too)
// and configs.CoreExitLagIdleKind (the others asleep in a receive).

// pairStamps are one partner's arrival at and exit from each all_reduce
// of a sample, ns on hostClockNs.
type pairStamps struct {
	arrive, exit []int64
}

func newPairStamps(iters int) *pairStamps {
	return &pairStamps{arrive: make([]int64, 0, iters), exit: make([]int64, 0, iters)}
}

// stampChunks is how many float32s carry one stamp: 16 bits each, every
// one an integer below 2^16 that a float32 holds exactly.
const stampChunks = 4

// encodeStamps packs ns (non-negative) into float32s, stampChunks each,
// least significant 16 bits first.
func encodeStamps(ns []int64) pexec.F32 {
	out := make(pexec.F32, 0, len(ns)*stampChunks)
	for _, x := range ns {
		u := uint64(x)
		for c := 0; c < stampChunks; c++ {
			out = append(out, float32(u>>(16*c)&0xffff))
		}
	}
	return out
}

// decodeStamps unpacks encodeStamps' float32s; an error where their
// count is not a multiple of stampChunks or a chunk is not an integer in
// [0, 2^16).
func decodeStamps(f pexec.F32) ([]int64, error) {
	if len(f)%stampChunks != 0 {
		return nil, fmt.Errorf("exit lag: %d stamp values, not a multiple of %d", len(f), stampChunks)
	}
	out := make([]int64, len(f)/stampChunks)
	for i := range out {
		var u uint64
		for c := 0; c < stampChunks; c++ {
			v := f[i*stampChunks+c]
			if v < 0 || v >= 1<<16 || v != float32(math.Trunc(float64(v))) {
				return nil, fmt.Errorf("exit lag: stamp %d, chunk %d: %g is not an integer in [0, 65536)", i, c, v)
			}
			u |= uint64(v) << (16 * c)
		}
		out[i] = int64(u)
	}
	return out, nil
}

// exitLagSum is the sum over calls of max(exit₀, exit₁) − max(arrival₀,
// arrival₁) in seconds, for the two partners' stamps of one sample.
func exitLagSum(a, b *pairStamps) (float64, error) {
	n := len(a.arrive)
	if len(a.exit) != n || len(b.arrive) != n || len(b.exit) != n {
		return 0, fmt.Errorf("exit lag: stamps of %d and %d arrivals, %d and %d exits", len(a.arrive), len(b.arrive), len(a.exit), len(b.exit))
	}
	var sum int64
	for i := 0; i < n; i++ {
		d := max(a.exit[i], b.exit[i]) - max(a.arrive[i], b.arrive[i])
		if d < 0 {
			return 0, fmt.Errorf("exit lag: call %d: the later exit (%d ns) before the later arrival (%d ns)", i, max(a.exit[i], b.exit[i]), max(a.arrive[i], b.arrive[i]))
		}
		sum += d
	}
	return float64(sum) * 1e-9, nil
}

// gatherExitLag is member r's part of gathering the pair {pair[0],
// pair[1]}'s stamps after a sample: the second sends its stamps to the
// first, which returns the sum of the exit lags (exitLagSum); every other
// rank returns 0. mine are r's stamps of the sample's calls.
func gatherExitLag(ctx context.Context, c pexec.Comm, pair [2]int, r int, mine *pairStamps) (float64, error) {
	switch r {
	case pair[1]:
		return 0, c.Send(ctx, encodeStamps(append(append([]int64(nil), mine.arrive...), mine.exit...)), pair[0])
	case pair[0]:
		n := len(mine.arrive)
		buf := make(pexec.F32, 2*n*stampChunks)
		if err := c.Recv(ctx, buf, pair[1]); err != nil {
			return 0, err
		}
		ns, err := decodeStamps(buf)
		if err != nil {
			return 0, err
		}
		return exitLagSum(mine, &pairStamps{arrive: ns[:n], exit: ns[n:]})
	}
	return 0, nil
}

// exitLagEntries turns the exit lags of one burst into op-time entries of
// kind at n ranks on cores cores: lag [size][repeat] (seconds per call),
// one entry per size of sizes at size the bytes and context wallNs (the
// burst's median wall time, the same for every size so that sim
// interpolates between bursts), the median and extremes over repeats
// (below 1 ns kept as noWaitS).
func exitLagEntries(kind string, lag [][]float64, sizes []int64, wallNs int64, n, cores int) ([]configs.OpTime, error) {
	if len(lag) != len(sizes) {
		return nil, fmt.Errorf("exit lag: %d sizes of lags, %d sizes", len(lag), len(sizes))
	}
	var out []configs.OpTime
	for si, ts := range lag {
		if len(ts) == 0 {
			return nil, fmt.Errorf("exit lag: no repeats at %d B", sizes[si])
		}
		sp := spreadOf(ts)
		out = append(out, configs.OpTime{Kind: kind, Shape: configs.CoreWaitShape(cores), Size: sizes[si], Context: max(1, wallNs),
			TimeS: max(sp.Median, noWaitS), TimeMinS: max(sp.Min, noWaitS), TimeMaxS: max(sp.Max, noWaitS), Samples: len(ts), Ranks: n})
	}
	return out, nil
}

// splitExitLag splits a core-wait loop's times, [size][3·repeat] of
// (all_reduce per call, burst per call, exit lag per call), into the
// [size][2·repeat] of (all_reduce, burst) coreWaitEntry and
// coreStretchEntry read and the [size][repeat] of exit lags.
func splitExitLag(t [][]float64) (arBurst, lag [][]float64, err error) {
	for si, ts := range t {
		if len(ts)%3 != 0 {
			return nil, nil, fmt.Errorf("exit lag: size %d has %d times, not three per repeat", si, len(ts))
		}
		var ab, l []float64
		for r := 0; r+2 < len(ts); r += 3 {
			ab, l = append(ab, ts[r], ts[r+1]), append(l, ts[r+2])
		}
		arBurst, lag = append(arBurst, ab), append(lag, l)
	}
	return arBurst, lag, nil
}
