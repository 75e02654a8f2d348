package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// Replicas share no link, so dp replicas of a group run as the group alone:
// the same TTFT and TPOT (the timeline of replica 0 is the same events on
// the same GPUs and links), dp times the token rates and the summed bytes,
// and the same HBM floor per step (dp times the bytes over dp times the
// GPUs).
func TestDPScalesThroughputNotLatency(t *testing.T) {
	layout := func(dp int) func(*configs.Config) {
		return func(c *configs.Config) {
			c.Parallel.DP = dp
			c.Topology.Nodes, c.Topology.GPUsPerNode = 1, 4*dp
		}
	}
	for _, name := range []string{"test/tp2pp2-tiny", "tp8pp2"} {
		one := estimate(t, name, nil)
		for _, dp := range []int{2, 4} {
			edit := layout(dp)
			if name == "tp8pp2" { // 16 GPUs per replica: dp whole 2-node groups
				edit = func(c *configs.Config) { c.Parallel.DP, c.Topology.Nodes = dp, 2*dp }
			}
			e := estimate(t, name, edit)
			d := float64(dp)
			if e.GPUs != dp*one.GPUs || e.DP != dp || e.Ranks.Len() != one.GPUs {
				t.Errorf("%s dp %d: GPUs %d, DP %d, per-rank rows %d; want %d, %d, %d", name, dp, e.GPUs, e.DP, e.Ranks.Len(), dp*one.GPUs, dp, one.GPUs)
			}
			for _, c := range []struct {
				what      string
				got, want float64
			}{
				{"TTFT", e.Prefill.TTFTS, one.Prefill.TTFTS},
				{"TPOT", e.Decode.TPOTS, one.Decode.TPOTS},
				{"HBM floor TPOT", e.Decode.HBMLowerBoundTPOTS, one.Decode.HBMLowerBoundTPOTS},
				{"TPS", e.Decode.TokensPerS, d * one.Decode.TokensPerS},
				{"prompt tokens/s", e.Prefill.PromptTokensPerS, d * one.Prefill.PromptTokensPerS},
				{"TPS range min", e.Range.TokensPerS.Min, d * one.Range.TokensPerS.Min},
				{"TPS range max", e.Range.TokensPerS.Max, d * one.Range.TokensPerS.Max},
				{"TPOT range max", e.Range.TPOTS.Max, one.Range.TPOTS.Max},
				{"HBM bytes per step", float64(e.Decode.HBMBytesPerStep), d * float64(one.Decode.HBMBytesPerStep)},
			} {
				if math.Abs(c.got-c.want) > 1e-9*math.Abs(c.want) {
					t.Errorf("%s dp %d: %s %g, want %g", name, dp, c.what, c.got, c.want)
				}
			}
			// The floor holds for the deployment as for one replica.
			if e.Decode.TPOTS < e.Decode.HBMLowerBoundTPOTS {
				t.Errorf("%s dp %d: TPOT %g below the HBM floor %g", name, dp, e.Decode.TPOTS, e.Decode.HBMLowerBoundTPOTS)
			}
			// The closed form agrees: the same TPOT, dp times the TPS.
			q1, err := Quick(one.Plan, Options{})
			if err != nil {
				t.Fatal(err)
			}
			qd, err := Quick(e.Plan, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if qd.TPOTS != q1.TPOTS || math.Abs(qd.TokensPerS-d*q1.TokensPerS) > 1e-9*qd.TokensPerS {
				t.Errorf("%s dp %d quick: TPOT %g TPS %g; dp 1 %g, %g", name, dp, qd.TPOTS, qd.TokensPerS, q1.TPOTS, q1.TokensPerS)
			}
			// Counts are the Program's, over every replica's ranks.
			full := e.Plan
			for _, phase := range []partition.Phase{partition.Prefill, partition.Decode} {
				want := full.Comm(phase)
				got := e.Prefill.Comm
				if phase == partition.Decode {
					got = e.Decode.Comm
				}
				if got.CallsPerRank.Len() != e.GPUs {
					t.Fatalf("%s dp %d %s: %d per-rank counts for %d GPUs", name, dp, phase, got.CallsPerRank.Len(), e.GPUs)
				}
				for r := range want.CallsPerRank.Len() {
					if got.CallsPerRank.At(r) != want.CallsPerRank.At(r) || got.MessagesPerRank.At(r) != want.MessagesPerRank.At(r) {
						t.Errorf("%s dp %d %s rank %d: calls %d messages %d, Program %d %d", name, dp, phase, r,
							got.CallsPerRank.At(r), got.MessagesPerRank.At(r), want.CallsPerRank.At(r), want.MessagesPerRank.At(r))
					}
				}
				for c, b := range want.BytesByLink {
					if got.BytesByLink[c] != b {
						t.Errorf("%s dp %d %s: %s bytes %d, Program %d", name, dp, phase, c, got.BytesByLink[c], b)
					}
				}
			}
		}
	}
}

func TestSearchEmptySaysWhy(t *testing.T) {
	spec := seedSpec(t)
	r, err := Search(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Empty(); err != nil {
		t.Fatalf("the seed search has feasible candidates, Empty says %v", err)
	}
	// Batch 1,024 at context 10,000: the KV cache alone is 16 layers × 1,024
	// × 10,000 × 2 × 4,096 × 2 B = 2.7 TB, more than 16 × 80 GB however it
	// is laid out (dp only adds copies).
	spec.Config.Workload.Batch = 1024
	if r, err = Search(spec); err != nil {
		t.Fatal(err)
	}
	if err := r.Empty(); err == nil || !strings.Contains(err.Error(), "none of the 105 candidates") || !strings.Contains(err.Error(), "fits in memory") {
		t.Fatalf("nothing fits: Empty = %v", err)
	}
	// Every fitting candidate has a TPOT above 1 µs.
	spec = seedSpec(t)
	spec.MaxTPOTS = 1e-6
	if r, err = Search(spec); err != nil {
		t.Fatal(err)
	}
	if err := r.Empty(); err == nil || !strings.Contains(err.Error(), "all 63 candidates") || !strings.Contains(err.Error(), "break a constraint") {
		t.Fatalf("all violate: Empty = %v", err)
	}
}
