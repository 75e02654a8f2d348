package compare_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/stats"
)

// results fakes what every rank of plan reports after iters iterations:
// counts exactly the Program's, the last stage's prefill ending at 0.5 s and
// each decode step 0.1 s after the one before.
func results(t *testing.T, plan *partition.Plan, iters int) []exec.RankResult {
	t.Helper()
	steps := plan.Config.Workload.OutputTokens - 1
	var out []exec.RankResult
	for r, rk := range plan.Ranks {
		res := exec.RankResult{Rank: r, Host: "h", Backend: "cpu", Stage: rk.Stage, LastStage: plan.LastStage(rk.Stage), AllocatedBytes: 1000,
			PrefillCounts: plan.Counts(plan.Program(r, partition.Prefill)).Times(iters),
			DecodeCounts:  plan.Counts(plan.Program(r, partition.Decode)).Times(iters * steps)}
		for range iters {
			res.PrefillS = append(res.PrefillS, 0.5)
			ends := make([]float64, steps)
			for s := range ends {
				ends[s] = 0.5 + 0.1*float64(s+1)
			}
			res.StepEndS = append(res.StepEndS, ends)
		}
		out = append(out, res)
	}
	return out
}

func tinyPlan(t *testing.T) *partition.Plan {
	t.Helper()
	return namedPlan(t, "test/tp2pp2-tiny")
}

// namedPlan is the plan of the config name.
func namedPlan(t *testing.T, name string) *partition.Plan {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func TestRunDocHoldsCountsExactlyAndFlagsTimes(t *testing.T) {
	plan := tinyPlan(t)
	doc, err := compare.NewRunDoc(compare.Run{Plan: plan, Backend: "cpu", Launcher: "env", Version: "v", Results: results(t, plan, 2),
		Tolerance: 0.15, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Problems) != 0 || compare.Problems(doc.Problems) != nil {
		t.Fatalf("counts equal to the Program's gave problems: %v", doc.Problems)
	}
	if doc.Schema != compare.RunSchema || doc.Config != plan.Config || doc.Measurement.Iterations != 2 || len(doc.Hosts) != 1 {
		t.Errorf("doc: schema %q, %d iterations, hosts %v", doc.Schema, doc.Measurement.Iterations, doc.Hosts)
	}
	// The CPU measures an H100 model: the note says errors measure the hardware.
	if len(doc.Notes) != 1 || !strings.Contains(doc.Notes[0], "measured on the CPU backend") {
		t.Errorf("notes %q", doc.Notes)
	}
	var ttft compare.Row
	for _, r := range doc.Comparison {
		if r.Exact && r.Flag != "" {
			t.Errorf("exact row %s flagged: %s", r.Metric, r.Flag)
		}
		if r.Metric == "ttft" {
			ttft = r
		}
	}
	// Measured TTFT is 0.5 s in both iterations; the error is (modeled − 0.5) / 0.5.
	if ttft.Measured.Mean != 0.5 || math.Abs(ttft.RelErr-(ttft.Modeled-0.5)/0.5) > 1e-12 {
		t.Errorf("TTFT row %+v", ttft)
	}
	if flagged := math.Abs(ttft.RelErr) > 0.15; flagged != (ttft.Flag != "") {
		t.Errorf("TTFT error %g with tolerance 0.15: flag %q", ttft.RelErr, ttft.Flag)
	}
	// Strict refuses exactly the flagged rows.
	out := compare.Outside(doc.Comparison)
	if err := compare.Strict(doc); (err != nil) != (len(out) > 0) || (err != nil && !strings.Contains(err.Error(), "outside ±15 %: "+strings.Join(out, ", "))) {
		t.Errorf("strict: %v for flagged %v", err, out)
	}
	for _, r := range compare.MeasuredOnly(doc.Comparison) {
		if r.Modeled != 0 || r.Flag != "" || r.RelErr != 0 {
			t.Errorf("measured-only row keeps the model: %+v", r)
		}
	}
	if compare.Strict(&compare.RunDoc{Comparison: compare.MeasuredOnly(doc.Comparison)}) != nil {
		t.Error("measured-only rows cannot be outside a tolerance")
	}
}

// One all-reduce more than the Program on one rank is a problem (a bug,
// never noise), named with the rank and phase.
func TestRunDocCountMismatchIsAProblem(t *testing.T) {
	plan := tinyPlan(t)
	rs := results(t, plan, 1)
	d := rs[1].DecodeCounts
	d.Calls[commcount.AllReduce]++
	doc, err := compare.NewRunDoc(compare.Run{Plan: plan, Backend: "cpu", Results: rs, Tolerance: 0.15, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	err = compare.Problems(doc.Problems)
	if err == nil || !strings.Contains(err.Error(), "rank 1 decode") {
		t.Fatalf("problems %v", doc.Problems)
	}
	var flagged bool
	for _, r := range doc.Comparison {
		if r.Metric == "collective_calls_per_microbatch" {
			flagged = strings.HasPrefix(r.Flag, "MISMATCH")
		}
	}
	if !flagged {
		t.Error("the collective-calls row is not flagged MISMATCH")
	}
}

// tp2-dp2: TTFT is the later replica's; the run holds the model against
// each replica's own TTFT too, and says by how much the later one is above
// it. Replica 0's last stages end their prefill at 0.5 s in each of three
// iterations, replica 1's at 0.6, 0.45, 0.6 s: TTFT 0.6, 0.5, 0.6 → p50
// 0.6 s; the replicas' own, pooled, 0.45, 0.5, 0.5, 0.5, 0.6, 0.6 → p50
// 0.5 s (partbench's median of an even count is the lower middle sample,
// stats.Percentile); 0.6 / 0.5 − 1 = +20.0 %.
func TestRunDocReplicaTTFT(t *testing.T) {
	plan := namedPlan(t, "test/tp2-dp2-tiny")
	rs := results(t, plan, 3)
	for i := range rs {
		rs[i].Replica = plan.Ranks[i].Replica
		if rs[i].Replica == 1 {
			rs[i].PrefillS = []float64{0.6, 0.45, 0.6}
		}
	}
	doc, err := compare.NewRunDoc(compare.Run{Plan: plan, Backend: "cpu", Results: rs, Tolerance: 0.15, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var ttft, own *compare.Row
	for i, r := range doc.Comparison {
		switch r.Metric {
		case "ttft":
			ttft = &doc.Comparison[i]
		case "ttft_replica":
			own = &doc.Comparison[i]
		}
	}
	if ttft == nil || own == nil || ttft.Measured.P50 != 0.6 || own.Measured.P50 != 0.5 || own.Measured.N != 6 || own.Modeled != ttft.Modeled {
		t.Fatalf("TTFT row %+v, one replica's %+v", ttft, own)
	}
	if notes := strings.Join(doc.Notes, "\n"); !strings.Contains(notes, "TTFT is the later of 2 replicas each iteration: p50 600 ms, +20.0 % against each replica's own (p50 500 ms") {
		t.Errorf("notes %q", notes)
	}
	// Without replicas: no such row, no such note.
	plan1 := tinyPlan(t)
	doc1, err := compare.NewRunDoc(compare.Run{Plan: plan1, Backend: "cpu", Results: results(t, plan1, 2), Tolerance: 0.15, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range doc1.Comparison {
		if r.Metric == "ttft_replica" {
			t.Errorf("tp2pp2 (one replica) has a ttft_replica row: %+v", r)
		}
	}
}

// The note and the one-replica row say how the model priced the later
// replica: an estimate of TTFT 3.6 ms priced from one replica's 3 ms and a
// spread of ×1.2 holds the ttft_replica row at 3 ms and says so; one
// without the spread holds it at its TTFT and says the spread is no part
// of it.
func TestReplicaSpreadNotePriced(t *testing.T) {
	m := &exec.Measurement{TTFT: stats.Summary{P50: 3.5e-3}, TTFTReplica: &stats.Summary{P50: 3.2e-3}}
	priced := &sim.Estimate{Prefill: sim.PhaseEstimate{TTFTS: 3.6e-3, ReplicaTTFTS: 3e-3}}
	plain := &sim.Estimate{Prefill: sim.PhaseEstimate{TTFTS: 3e-3}}
	if got := compare.OneReplicaTTFT(priced); got != 3e-3 {
		t.Errorf("one replica's TTFT %g, want 3e-3", got)
	}
	if got := compare.OneReplicaTTFT(plain); got != 3e-3 {
		t.Errorf("one replica's TTFT without the spread %g, want 3e-3", got)
	}
	// 3.5 / 3.2 − 1 = +9.4 %; 3.6 / 3 = ×1.200.
	if n := compare.ReplicaSpreadNote(m, priced, 2); !strings.Contains(n, "+9.4 % against each replica's own (p50 3.2 ms") ||
		!strings.Contains(n, "one replica's (3 ms) times the profile's replica spread (×1.200)") {
		t.Errorf("priced: %q", n)
	}
	if n := compare.ReplicaSpreadNote(m, plain, 2); !strings.Contains(n, "the model prices one replica (the profile has no replica spread") {
		t.Errorf("plain: %q", n)
	}
	if n := compare.ReplicaSpreadNote(&exec.Measurement{TTFT: m.TTFT}, priced, 1); n != "" {
		t.Errorf("one replica: %q", n)
	}
}

// The host-wait note: a prefill that waited 0.7 ms of a 1.2 ms TTFT for a
// host queueing an op in 13.3 µs says so in those figures; none without a
// wait.
func TestHostWaitNote(t *testing.T) {
	plan, err := partition.LoadPlan("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan.System.GPU.HostOpS = 13.3e-6
	e := &sim.Estimate{Prefill: sim.PhaseEstimate{TTFTS: 1.2e-3, HostWaitS: 0.7e-3}}
	n := compare.HostWaitNote(e, plan)
	for _, want := range []string{"waits 0.700 ms of its 1.200 ms TTFT", "host_op_s 13.30 µs an op"} {
		if !strings.Contains(n, want) {
			t.Errorf("note %q lacks %q", n, want)
		}
	}
	e.Prefill.HostWaitS = 0
	if n := compare.HostWaitNote(e, plan); n != "" {
		t.Errorf("no wait: note %q", n)
	}
}
