package claims

import (
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

func seedJudgements(t *testing.T) []Judgement {
	t.Helper()
	data, err := fs.ReadFile(configs.Files, "claims/seed-004.toml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(strings.NewReader(string(data)), "seed-004")
	if err != nil {
		t.Fatal(err)
	}
	est := map[string]*sim.Estimate{}
	for role, name := range f.Strategies {
		c, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := partition.NewPlan(c)
		if err != nil {
			t.Fatal(err)
		}
		if est[role], err = sim.EstimatePlan(p, sim.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	js, err := Judge(f, est)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func find(t *testing.T, js []Judgement, metric, strategy string) Judgement {
	t.Helper()
	for _, j := range js {
		if j.Metric == metric && j.Strategy == strategy {
			return j
		}
	}
	t.Fatalf("no judgement for %s/%s", metric, strategy)
	return Judgement{}
}

func TestSeed004Verdicts(t *testing.T) {
	js := seedJudgements(t)
	if len(js) != 12 { // 10 claims + 2 TPS×TPOT cross-checks
		t.Fatalf("%d judgements", len(js))
	}
	// TPOT 0.078 ms (baseline): the HBM floor per decode step is the KV cache of 16
	// layers at mean length 9,936 read plus one token written, 16 × 128 × 9,937 ×
	// 16,384 B = 333,430,390,784 B, plus each rank's weights beyond L2,
	// 16 × (537,001,984 − 52,428,800) = 7,753,170,944 B: 341,183,561,728 B over
	// 16 × 3.35e12 B/s = 6.3654 ms — 81.6× the claim.
	j := find(t, js, "tpot_s", "baseline")
	if j.Verdict != Impossible || math.Abs(j.Bound-341_183_561_728/(16*3.35e12)) > 1e-9 {
		t.Errorf("tpot baseline: %s, bound %g", j.Verdict, j.Bound)
	}
	if j := find(t, js, "tpot_s", "proposed"); j.Verdict != Impossible {
		t.Errorf("tpot proposed: %s", j.Verdict)
	}
	// L2 hit rate > 95 %: at most 52,428,800 / 536,887,296 = 9.77 % of a layer fits.
	j = find(t, js, "l2_hit_rate", "proposed")
	if j.Verdict != Impossible || math.Abs(j.Bound-52428800.0/536887296.0) > 1e-12 {
		t.Errorf("l2: %s bound %g", j.Verdict, j.Bound)
	}
	// 12,800 tok/s × 0.078 ms = 0.998 sequences, not the batch of 128.
	j = find(t, js, "tokens_per_s × tpot_s", "baseline")
	if j.Verdict != SelfContra || math.Abs(j.Value-0.9984) > 1e-9 {
		t.Errorf("baseline TPS×TPOT: %s %g", j.Verdict, j.Value)
	}
	if j := find(t, js, "tokens_per_s × tpot_s", "proposed"); j.Verdict != SelfContra {
		t.Errorf("proposed TPS×TPOT: %s", j.Verdict)
	}
	// 15 events = 15 stage-boundary sends per micro-batch (and per batch: one micro-batch).
	if j := find(t, js, "comm_events_per_batch", "proposed"); j.Verdict != Consistent || j.Model != 15 {
		t.Errorf("15 events: %s %g", j.Verdict, j.Model)
	}
	// 160 = 16 × (8 + 2) matches none of: 33 logical ops per micro-batch, 264 per
	// batch (8 micro-batches), 272 with token returns, 144 NCCL calls of rank 0
	// per step, 2,304 of all ranks, 1,800 messages of rank 0, 28,800 of all.
	if j := find(t, js, "comm_events_per_batch", "baseline"); j.Verdict != Inconsistent || !strings.Contains(j.Detail, "264") {
		t.Errorf("160 events: %s (%s)", j.Verdict, j.Detail)
	}
	// "268.4 MB" is the parameter count 268,443,648; the layer is 536,887,296 B.
	if j := find(t, js, "layer_bytes", "proposed"); j.Verdict != Inconsistent || j.Model != 536_887_296 || !strings.Contains(j.Detail, "parameter count") {
		t.Errorf("layer bytes: %s %g %s", j.Verdict, j.Model, j.Detail)
	}
	// −80 % HBM traffic: both layouts read the same 333 GB of KV cache per step,
	// which no partitioning removes; the proposed floor (≈341 GB) against the
	// baseline's modeled ≈398 GB allows at most ≈14 %.
	if j := find(t, js, "hbm_traffic_reduction", "proposed"); j.Verdict != Impossible || j.Bound > 0.2 {
		t.Errorf("hbm reduction: %s bound %g", j.Verdict, j.Bound)
	}
	// The throughputs themselves are under the physical ceiling (128 / 6.365 ms ≈
	// 20,110 tok/s): the model, not physics, disagrees with them.
	for _, role := range []string{"baseline", "proposed"} {
		if j := find(t, js, "tokens_per_s", role); j.Verdict == Impossible || math.Abs(j.Bound-128/(341_183_561_728/(16*3.35e12))) > 50 {
			t.Errorf("tps %s: %s bound %g", role, j.Verdict, j.Bound)
		}
	}
	// The claimed +20 % gain: the model has layer-wise slower (one micro-batch in a 16-stage pipeline).
	if j := find(t, js, "tps_gain", "proposed"); j.Verdict != Inconsistent || j.Model >= 0 {
		t.Errorf("gain: %s %g", j.Verdict, j.Model)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"version = 2\n[strategies]\nbaseline = \"tp8pp2\"", "version: must be 1"},
		{"version = 1\n", "strategies.baseline"},
		{"version = 1\n[strategies]\nbaseline = \"tp8pp2\"\n[[claim]]\nmetric = \"speed\"\nstrategy = \"baseline\"", `claim[0].metric: unknown metric "speed"`},
		{"version = 1\n[strategies]\nbaseline = \"tp8pp2\"\n[[claim]]\nmetric = \"tpot_s\"\nstrategy = \"other\"", `claim[0].strategy: "other" is not in [strategies]`},
		{"version = 1\nbogus = 3\n[strategies]\nbaseline = \"tp8pp2\"", "unknown key bogus"},
	} {
		_, err := Parse(strings.NewReader(tc.in), "x.toml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}
