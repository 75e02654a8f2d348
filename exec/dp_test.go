package exec_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/partition"
)

func checkConfig(t *testing.T, cfg *configs.Config, opts pexec.CheckOptions) pexec.CheckResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := pexec.Check(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Replicas run in one world of ranks under the in-process communicator:
// each replica's TP group is its own, every rank's counted communication
// equals its Program's (a message to another replica's rank would be
// counted against a peer the Program never names), and every replica's
// last stage produces the single-rank reference's outputs — and exactly
// replica 0's.
func TestCheckReplicasMatchReference(t *testing.T) {
	dp2, err := configs.Load("test/tp2-dp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	// tp 2 × pp 2 × dp 2 = 8 ranks: pipeline sends and token returns too.
	pipe, err := configs.Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	pipe.Name, pipe.Parallel.DP, pipe.Topology.GPUsPerNode = "tp2pp2-dp2-tiny", 2, 8
	for _, cfg := range []*configs.Config{dp2, pipe} {
		t.Run(cfg.Name, func(t *testing.T) {
			res := checkConfig(t, cfg, checkOpts())
			if err := res.Err(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Partitioned, "DP=2") || res.Sequences != 4 || res.ArgmaxCompared != 4*3 {
				t.Fatalf("checked %q: %d sequences, %d argmax tokens; want DP=2, 4 and 4 × 3", res.Partitioned, res.Sequences, res.ArgmaxCompared)
			}
		})
	}
}

// A replica whose weights differ (rank 2, replica 1's TP index 0, with
// layer 0's wqkv shard shifted by a column) fails the check even though
// replica 0 matches the reference.
func TestCheckCatchesDivergentReplica(t *testing.T) {
	opts := checkOpts()
	opts.NewCompute = func(plan *partition.Plan, rank int) (pexec.Compute, error) {
		c, err := cpu.New(plan, rank)
		if err != nil || plan.DP < 2 || rank != 2 {
			return c, err
		}
		w := c.Weight(0, "wqkv")
		n := len(w) / plan.Model.Hidden
		for r := 0; r < plan.Model.Hidden; r++ {
			row := w[r*n : (r+1)*n]
			first := row[0]
			copy(row, row[1:])
			row[n-1] = first
		}
		return c, nil
	}
	cfg, err := configs.Load("test/tp2-dp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	res := checkConfig(t, cfg, opts)
	if res.Pass {
		t.Fatal("check passed with replica 1's weights corrupted")
	}
	found := false
	for _, f := range res.Failures {
		found = found || strings.Contains(f, "(replica 1) differs from rank 0's")
	}
	if !found {
		t.Fatalf("no failure names replica 1: %v", res.Failures)
	}
}

// Aggregate counts every replica's tokens: two replicas of batch 4, three
// decode steps ending at 1, 2, 3 s after a 0.5 s prefill (the slower
// replica's: 0.6 s, 3.2 s), give 2 × 4 × 3 tokens over 3.2 − 0.6 s.
func TestAggregateCountsReplicas(t *testing.T) {
	res := []pexec.RankResult{
		{Rank: 0, Replica: 0, LastStage: true, PrefillS: []float64{0.5}, StepEndS: [][]float64{{1, 2, 3}}},
		{Rank: 1, Replica: 1, LastStage: true, PrefillS: []float64{0.6}, StepEndS: [][]float64{{1, 2, 3.2}}},
	}
	m, err := pexec.Aggregate(res, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := 2.0 * 4 * 3 / (3.2 - 0.6)
	if d := m.TPS.Mean - want; d > 1e-9 || d < -1e-9 {
		t.Fatalf("TPS %g, want %g", m.TPS.Mean, want)
	}
	if m.TTFT.Mean != 0.6 {
		t.Fatalf("TTFT %g, want the slower replica's 0.6", m.TTFT.Mean)
	}
}

// With two replicas TTFT is the later replica's each iteration; each
// replica's own TTFT is kept apart, pooled: replica 0's prefill 0.5 s in
// each of three iterations, replica 1's 0.6, 0.4, 0.7 s → TTFT per
// iteration 0.6, 0.5, 0.7 (median 0.6); the replicas' own, pooled, 0.5,
// 0.5, 0.5, 0.6, 0.4, 0.7 (median 0.5). One replica: none kept.
func TestAggregateReplicaTTFT(t *testing.T) {
	steps := [][]float64{{1}, {1}, {1}}
	res := []pexec.RankResult{
		{Rank: 0, Replica: 0, LastStage: true, PrefillS: []float64{0.5, 0.5, 0.5}, StepEndS: steps},
		{Rank: 1, Replica: 1, LastStage: true, PrefillS: []float64{0.6, 0.4, 0.7}, StepEndS: steps},
	}
	m, err := pexec.Aggregate(res, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.TTFT.P50 != 0.6 || m.TTFTReplica == nil || m.TTFTReplica.P50 != 0.5 || m.TTFTReplica.N != 6 {
		t.Fatalf("TTFT p50 %g, replicas' own %+v; want 0.6 and p50 0.5 over 6", m.TTFT.P50, m.TTFTReplica)
	}
	one, err := pexec.Aggregate(res[:1], 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if one.TTFTReplica != nil {
		t.Errorf("one replica: replicas' own TTFT %+v, want none", one.TTFTReplica)
	}
}
