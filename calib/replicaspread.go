package calib

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/stats"
)

// The later of the replicas. A data-parallel job's TTFT is the later of
// its R replicas' each iteration (the last sequence's first token); on a
// host whose cores the ranks share, each replica meets the host's other
// work — other processes, the scheduler's choices — on its own, and the
// later of R is above one replica's median by as much as one replica's
// blocks spread. calibrate runs the core-wait loop (compute bursts and an
// all_reduce within pairs {0, 1}, {2, 3}, …, every rank at once: a
// tensor-parallel replica per pair) in consecutive blocks of about a
// replica's prefill, the pair {0, 1} timing each block whole, and records
// per block length and R the median of the later of R independent blocks
// over one block's median: the blocks' 0.5^(1/R) quantile over their
// median ({kind replica_spread, shape cores=C, size the blocks' median in
// ns, context R, ranks n}). sim multiplies a data-parallel plan's TTFT by
// it (sim/optable_replicas.go; docs/costmodel.md, "Shared cores: the later
// of the replicas").

// replicaSpreadBlocks are the blocks' lengths (each sample's least
// duration): a tiny config's prefill (a few ms) and the decades about it;
// sim takes the nearest measured length beyond them.
var replicaSpreadBlocks = []time.Duration{500 * time.Microsecond, 2 * time.Millisecond, 8 * time.Millisecond}

// replicaSpreadRepeats is how many blocks are timed at each length. With
// 41 the two-replica ratio of one calibration read ×1.04–×1.13 at a 3 ms
// TTFT in three calibrations of one binary minutes apart, while the runs
// between them read 1.06–1.11 (docs/measurements/cpu-calibration.md,
// (twenty-fifth)): the 0.707 quantile of 41 samples moves by a few per cent
// with a single block. 81 halves its variance for 0.8 s more of calibrate
// (0.95 and 1.23 s at 4 and 16 ranks against 0.52 and 0.84 s with 41, on
// the project's 2-core VM at load 3–4), and leaves six blocks above the
// 0.917 quantile of 8 replicas.
const replicaSpreadRepeats = 81

// replicaSpreadBurst is the blocks' compute burst between two all_reduces
// (iterations of burst): the third of CoreWaitBursts, ≈ 90 µs alone on the
// project's 2-core VM, the order of a tiny config's prefill compute
// between two of its collectives.
var replicaSpreadBurst = CoreWaitBursts[2]

// replicaSpreadBytes is the all_reduce's payload: a tiny config's prefill
// activations (batch 4 × 20 tokens × 64 hidden × 4 B ≈ 20 KiB) in the
// size range of the link measurement.
const replicaSpreadBytes = 16 << 10

// replicaSpreadCounts are the rank counts the spread is measured at: the
// core wait's (every even count at or above the cores) with two pairs or
// more, so that replicas share the host as the job's do.
func replicaSpreadCounts(o Options, cores int) []int {
	var out []int
	for _, n := range coreWaitCounts(o, cores) {
		if n >= 4 {
			out = append(out, n)
		}
	}
	return out
}

// measureReplicaSpread times the blocks among n process ranks (LinkArgv)
// on a host of cores cores at every length of replicaSpreadBlocks and adds
// their entries to cal's op times, with a note.
func measureReplicaSpread(ctx context.Context, o Options, n, cores int, cal *configs.Calibration) error {
	all := everyRank(n)
	var got []string
	for _, block := range replicaSpreadBlocks {
		times, err := measureLinkProcsBursts(ctx, o.LinkArgv, n, []commGroup{{opAllReduceBlocks, all}}, []int{replicaSpreadBurst},
			[]int64{replicaSpreadBytes}, replicaSpreadRepeats, block)
		if err != nil {
			return fmt.Errorf("replica spread at %d ranks, blocks of %v: %w", n, block, err)
		}
		es, err := replicaSpreadEntries(times[0][0], n, cores)
		if err != nil {
			return fmt.Errorf("replica spread at %d ranks, blocks of %v: %w", n, block, err)
		}
		cal.OpTimes = append(cal.OpTimes, es...)
		var per []string
		for _, e := range es {
			per = append(per, fmt.Sprintf("×%.3f at %d", e.TimeS, e.Context))
		}
		got = append(got, fmt.Sprintf("%.3g ms blocks: %s", float64(es[0].Size)/1e6, strings.Join(per, ", ")))
	}
	note(cal, "replica spread at %d ranks on %d cores, the median of the later of R replicas' blocks over one's (the pair {0, 1}'s blocks of bursts and all_reduces, every pair at once, %d blocks a length; × at R): %s",
		n, cores, replicaSpreadRepeats, strings.Join(got, "; "))
	return nil
}

// replicaSpreadEntries turns one block length's block wall times (the
// pair {0, 1}'s, in the order measured) among n ranks into an entry for
// each R = 2, 4, … up to the n/2 pairs: the blocks' 0.5^(1/R) quantile
// over their median (stats.Percentile, partbench's one quantile), at size
// the median in ns and context R. It fails without two positive blocks.
func replicaSpreadEntries(blocks []float64, n, cores int) ([]configs.OpTime, error) {
	for _, b := range blocks {
		if !(b > 0) {
			return nil, fmt.Errorf("a block of %g s: want positive wall times", b)
		}
	}
	if len(blocks) < 2 {
		return nil, fmt.Errorf("%d blocks timed, want at least 2", len(blocks))
	}
	med := stats.Median(blocks)
	var out []configs.OpTime
	for r := 2; r <= n/2; r *= 2 {
		q := stats.Percentile(blocks, math.Pow(0.5, 1/float64(r)))
		ratio := q / med
		out = append(out, configs.OpTime{Kind: configs.ReplicaSpreadKind, Shape: configs.CoreWaitShape(cores),
			Size: max(1, int64(math.Round(med*1e9))), Context: int64(r),
			TimeS: ratio, TimeMinS: ratio, TimeMaxS: ratio, Samples: len(blocks), Ranks: n})
	}
	return out, nil
}
