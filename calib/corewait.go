package calib

import (
	"context"
	"fmt"
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
// and rank 0 times its all_reduce calls alone (opAllReduceBurst); the same
// pairs then run the all_reduce back to back (opAllReducePairs, the op-time
// table's entry). The difference, per message step of the pair's ring
// (2(g−1) = 2), is the wait W recorded as the op-time entry
// {kind core_wait, shape cores=C, size 1, ranks n}.

// burstIters is the compute burst's length in loop iterations: four
// independent multiply-adds each, about 0.1 ms on the project's 2-core VM
// with the core to itself — the size of a tiny config's compute between
// two all-reduces (tp2pp2-tiny's decode GEMMs of one layer: 46 µs per
// step, docs/measurements/cpu-calibration.md).
const burstIters = 60_000

// burstSink keeps the burst's result alive so the compiler cannot drop it.
var burstSink float64

// burst runs the compute burst: a fixed amount of work, not a fixed time,
// so a rank descheduled during it takes longer, as a run's rank does.
func burst() {
	a, b, c, d := 1.0, 1.0, 1.0, 1.0
	for i := 0; i < burstIters; i++ {
		a = a*0.999999 + 1e-7
		b = b*0.999998 + 2e-7
		c = c*0.999997 + 3e-7
		d = d*0.999996 + 4e-7
	}
	burstSink += a + b + c + d
}

// burstAllReduce runs iters rounds of burst then an all_reduce of buf on g
// and returns the time spent in the all_reduce calls.
func burstAllReduce(ctx context.Context, g pexec.Group, buf pexec.F32, iters int) (float64, error) {
	var in time.Duration
	for i := 0; i < iters; i++ {
		burst()
		t := time.Now()
		if err := g.AllReduce(ctx, buf); err != nil {
			return 0, err
		}
		in += time.Since(t)
	}
	return in.Seconds(), nil
}

// CoreWaitSizes are the all_reduce payloads the core wait is measured at:
// the tiny configs' decode and prefill all-reduces (hundreds of bytes to
// tens of KiB), where the wait, not the bytes, makes the time.
var CoreWaitSizes = []int64{256, 4 << 10, 32 << 10}

// coreWaitSteps is the message steps of a pair's ring all_reduce, 2(g−1).
const coreWaitSteps = 2

// coreWaitEntry turns the times of the two loops — [size][repeat], alone
// the back-to-back pairs, burst the pairs after a compute burst — into the
// op-time entry of the wait per message step at n ranks on cores cores:
// per repeat the median over sizes of (burst − alone) / 2(g−1), clamped
// at zero; the entry holds the median and the extremes over repeats. ok is
// false when no repeat measured a wait (then there is nothing to charge).
func coreWaitEntry(alone, burstT [][]float64, n, cores int) (configs.OpTime, bool, error) {
	if len(alone) != len(burstT) || len(alone) == 0 {
		return configs.OpTime{}, false, fmt.Errorf("core wait: %d sizes back to back, %d after a burst", len(alone), len(burstT))
	}
	repeats := len(alone[0])
	var ws []float64
	for r := 0; r < repeats; r++ {
		var per []float64
		for s := range alone {
			if len(alone[s]) != repeats || len(burstT[s]) != repeats {
				return configs.OpTime{}, false, fmt.Errorf("core wait: size %d has %d and %d repeats, want %d", s, len(alone[s]), len(burstT[s]), repeats)
			}
			per = append(per, max(0, burstT[s][r]-alone[s][r])/coreWaitSteps)
		}
		ws = append(ws, medianOf(per))
	}
	sp := spreadOf(ws)
	if !(sp.Median > 0) {
		return configs.OpTime{}, false, nil
	}
	return configs.OpTime{Kind: configs.CoreWaitKind, Shape: configs.CoreWaitShape(cores), Size: 1,
		TimeS: sp.Median, TimeMinS: sp.Min, TimeMaxS: sp.Max, Samples: repeats, Ranks: n}, true, nil
}

// coreWaitCounts are the rank counts the core wait is measured at: every
// even count of --op-ranks and --nproc above the host's cores (pairs need
// an even count; at or below the cores nothing waits for a core).
func coreWaitCounts(o Options, cores int) []int {
	var out []int
	seen := map[int]bool{}
	for _, n := range append([]int{o.Ranks}, o.OpRanks...) {
		if n > cores && n%2 == 0 && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// measureCoreWait measures the wait among n process ranks (LinkArgv) on a
// host of cores cores and adds its entry to cal's op times, or a note
// saying none was measured.
func measureCoreWait(ctx context.Context, o Options, n, cores int, cal *configs.Calibration) error {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	groups := []commGroup{{opAllReducePairs, all}, {opAllReduceBurst, all}}
	times, err := measureLinkProcs(ctx, o.LinkArgv, n, groups, CoreWaitSizes, o.Repeats, o.MinSample)
	if err != nil {
		return fmt.Errorf("core wait: %w", err)
	}
	e, ok, err := coreWaitEntry(times[0], times[1], n, cores)
	if err != nil {
		return err
	}
	if !ok {
		note(cal, "core wait at %d ranks on %d cores: an all_reduce after a compute burst took no longer than back to back; collectives are charged no scheduling delay", n, cores)
		return nil
	}
	cal.OpTimes = append(cal.OpTimes, e)
	note(cal, "core wait at %d ranks on %d cores: %.3g s per message step (median over repeats of %d; all_reduce pairs after a %d-iteration compute burst against back to back)", n, cores, e.TimeS, e.Samples, burstIters)
	return nil
}
