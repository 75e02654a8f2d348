package suite

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/remote/server"
)

// partSpec has the local baseline, tp2, pp2 and tp2 × pp2 (two
// micro-batches) over a decode and a prefill workload of test/single-tiny
// (8 layers, hidden 64, vocab 96, fp32) with two sequences.
const partSpec = `version = 1
name = "part"
warmup = 1
runs = 2
[[baseline]]
name = "local"
mode = "local"
[[baseline]]
name = "tp2"
kind = "partitioned"
tp = 2
pp = 1
[[baseline]]
name = "pp2"
kind = "partitioned"
tp = 1
pp = 2
[[baseline]]
name = "tp2pp2"
kind = "partitioned"
tp = 2
pp = 2
microbatches = 2
[[workload]]
name = "decode"
kind = "llm-decode"
config = "test/single-tiny"
batch = 2
context = 16
output_tokens = 6
[[workload]]
name = "prefill"
kind = "llm-prefill"
config = "test/single-tiny"
batch = 2
context = 12
`

func TestPartitionedSpecErrors(t *testing.T) {
	base := `version = 1
name = "t"
runs = 3
[[baseline]]
name = "local"
mode = "local"
[[workload]]
name = "w"
kind = "smoke"
config = "test/single-tiny"
context = 12
output_tokens = 4
`
	micro := "[[workload]]\nname = \"micro\"\nkind = \"microbench\"\nconfig = \"test/single-tiny\"\nlayers = 1\ncontext = 8\n"
	for _, tc := range []struct{ name, add, want string }{
		{"kind", "[[baseline]]\nname = \"x\"\nkind = \"sharded\"\ntp = 2\npp = 1\n", `baseline[1].kind: must be "partitioned" or left out for a remote mode (got "sharded")`},
		{"tp missing", "[[baseline]]\nname = \"x\"\nkind = \"partitioned\"\npp = 2\n", "baseline[1].tp: must be in [1, 64] (got 0)"},
		{"one rank", "[[baseline]]\nname = \"x\"\nkind = \"partitioned\"\ntp = 1\npp = 1\n", "baseline[1]: tp × pp must be at least 2"},
		{"mode", "[[baseline]]\nname = \"x\"\nkind = \"partitioned\"\nmode = \"naive\"\ntp = 2\npp = 1\n", `mode, server and transport must be empty (got mode "naive"`},
		{"tp on a mode", "[[baseline]]\nname = \"x\"\nmode = \"naive\"\ntp = 2\n", `baseline[1]: tp, pp and microbatches belong to kind = "partitioned"`},
		// 8 query heads and 4 KV heads do not split over 3 ranks.
		{"tp3", "[[baseline]]\nname = \"tp3\"\nkind = \"partitioned\"\ntp = 3\npp = 1\n", "baseline[1] (tp3) cannot run workload[0] (w):"},
		// A microbench is one transformer block: two stages need two layers.
		{"pp2 micro", "[[baseline]]\nname = \"pp2\"\nkind = \"partitioned\"\ntp = 1\npp = 2\n" + micro, "baseline[1] (pp2) cannot run workload[1] (micro):"},
		// One sequence does not split into two micro-batches.
		{"microbatches", "[[baseline]]\nname = \"pp2\"\nkind = \"partitioned\"\ntp = 1\npp = 2\nmicrobatches = 2\n", "baseline[1] (pp2) cannot run workload[0] (w):"},
		{"bf16", "[[baseline]]\nname = \"tp2\"\nkind = \"partitioned\"\ntp = 2\npp = 1\n[[workload]]\nname = \"h\"\nkind = \"smoke\"\nconfig = \"test/single-tiny\"\ndtype = \"bf16\"\ncontext = 12\noutput_tokens = 4\n", `cannot run workload[1] (h): the cpu backend computes in fp32`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := base + tc.add
			if !strings.HasPrefix(tc.add, "[[") {
				src = tc.add + base
			}
			_, err := Parse(strings.NewReader(src), "t.toml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), "t.toml") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
	cuda := "backend = \"cuda\"\n" + base + "[[baseline]]\nname = \"tp2\"\nkind = \"partitioned\"\ntp = 2\npp = 1\n"
	if _, err := Parse(strings.NewReader(cuda), "t.toml"); err == nil || !strings.Contains(err.Error(), `baseline[1]: kind "partitioned" runs its ranks in this process on the cpu backend`) {
		t.Errorf("cuda: got %v", err)
	}
	if _, err := Parse(strings.NewReader(partSpec), "part.toml"); err != nil {
		t.Fatalf("partitioned spec: %v", err)
	}
}

// TestPartitionedMatchesLocal: every partitioning generates the local
// baseline's tokens from the same prompt, and its counted inter-rank bytes
// are the Program's and the hand-derived figures.
func TestPartitionedMatchesLocal(t *testing.T) {
	s, err := Parse(strings.NewReader(partSpec), "part.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := s.Workloads[0] // decode: 2 sequences, prompt 16 − 6 = 10, 5 decode steps
	cfg, err := w.Config(s)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	local, err := remote.GenerateLocal(context.Background(), server.NewCPUEngine(), plan, remote.SeededPrompt(plan))
	if err != nil {
		t.Fatal(err)
	}
	// Hand-derived wire bytes (commcount: a ring all-reduce of S bytes over
	// two ranks sends S/2 twice, i.e. S per rank; an all-gather sends each
	// rank's half of the gathered output):
	//   tp2 decode step: 17 all-reduces (embedding, attention and MLP of 8
	//     layers) of 2 seqs × 64 × 4 B = 512 B, on each of 2 ranks = 17 408 B,
	//     plus the logits' all-gather of 2 × 96 × 4 = 768 B, 384 B per rank
	//     = 768 B: 18 176 B.
	//   tp2 prefill: 17 × 10 tokens × 512 B × 2 ranks = 174 080 B + 768 B = 174 848 B.
	//   pp2 decode step: stage 0 sends 2 × 64 × 4 = 512 B of activations, stage 1
	//     sends 2 sampled int32 ids = 8 B back: 520 B.
	//   pp2 prefill: 10 × 512 B = 5 120 B + 8 B = 5 128 B.
	want := map[string][2]float64{"tp2": {174848, 18176}, "pp2": {5128, 520}}
	for _, b := range s.Baselines[1:] {
		pc, err := w.PartitionedConfig(s, b)
		if err != nil {
			t.Fatal(err)
		}
		pplan, err := partition.NewPlan(pc)
		if err != nil {
			t.Fatal(err)
		}
		run, util, err := partitionedRun(context.Background(), pplan, nil)
		if err != nil {
			t.Fatalf("%s: %v", b.Name, err)
		}
		if len(run.CountDiffs)+len(run.Failures) > 0 {
			t.Errorf("%s: %v %v", b.Name, run.CountDiffs, run.Failures)
		}
		if len(run.Tokens) != len(local.Tokens) || len(run.StepS) != 6 {
			t.Fatalf("%s: %d steps of tokens, %d timed; local has %d, want 6", b.Name, len(run.Tokens), len(run.StepS), len(local.Tokens))
		}
		for k := range run.Tokens {
			got := make([]uint32, len(run.Tokens[k]))
			for i, id := range run.Tokens[k] {
				got[i] = uint32(id)
			}
			if !slices.Equal(got, local.Tokens[k]) {
				t.Errorf("%s step %d: tokens %v, local %v", b.Name, k, got, local.Tokens[k])
			}
		}
		for k, d := range run.StepS {
			if !(d > 0) {
				t.Errorf("%s step %d: %g s", b.Name, k, d)
			}
		}
		if util.Source != "cpu-busy" {
			t.Errorf("%s: utilization source %q", b.Name, util.Source)
		}
		c := Cell{Baseline: b, Workload: w}
		dec := partitionedRecord(s, s.Hash(), c, pplan, run, util)
		c.Workload.Kind = KindPrefill
		pre := partitionedRecord(s, s.Hash(), c, pplan, run, util)
		if dec.NetBytes != dec.ModelBytes || pre.NetBytes != pre.ModelBytes || len(dec.Mismatches) > 0 {
			t.Errorf("%s: measured %g/%g B, Program %g/%g B, mismatches %v", b.Name, pre.NetBytes, dec.NetBytes, pre.ModelBytes, dec.ModelBytes, dec.Mismatches)
		}
		if wv, ok := want[b.Name]; ok && (pre.NetBytes != wv[0] || dec.NetBytes != wv[1]) {
			t.Errorf("%s: prefill %g B, decode step %g B; derived %g and %g", b.Name, pre.NetBytes, dec.NetBytes, wv[0], wv[1])
		}
		if dec.TotalBytes != int64(pre.NetBytes+5*dec.NetBytes) {
			t.Errorf("%s: total %d B ≠ prefill + 5 decode steps", b.Name, dec.TotalBytes)
		}
		lat, bytes, gen, err := partitionedModel(pplan, KindDecode)
		if err != nil || !(lat > 0) || bytes != dec.ModelBytes || !(gen > lat) {
			t.Errorf("%s: modeled %g s, %g B, generation %g s, %v", b.Name, lat, bytes, gen, err)
		}
	}
}

// miscounting connects localcomm ranks whose counters record one extra
// 1-byte send on every flush: a communicator that counts wrong.
func miscounting(size int) []pexec.Comm {
	out := localcomm.Comms(size)
	for i, c := range out {
		out[i] = extraCount{c}
	}
	return out
}

type extraCount struct{ pexec.Comm }

func (e extraCount) Flush(ctx context.Context) error {
	e.Counter().Call(commcount.Send, 1)
	return e.Comm.Flush(ctx)
}

// TestPartitionedRunResume runs the partitioned spec, interrupted and
// resumed: complete cells are skipped, every measured run's counted bytes
// are the Program's; then a miscounting communicator is recorded as a
// mismatch (the command's exit 4).
func TestPartitionedRunResume(t *testing.T) {
	s, err := Parse(strings.NewReader(partSpec), "part.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	stopAt := 10 // 3 runs a cell: cells 1–3 complete, cell 4's warm-up
	o := Options{Spec: s, Dir: dir, Engine: server.NewCPUEngine(), Backend: "cpu",
		Progress: func(done, _ int, _ string) {
			if done == stopAt {
				cancel()
			}
		}}
	if _, err := Run(ctx, o); !errors.Is(err, context.Canceled) && (err == nil || !strings.Contains(err.Error(), "canceled")) {
		t.Fatalf("interrupted run: got %v, want cancellation", err)
	}
	o.Resume, o.Progress = true, nil
	out, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// 8 cells × 3 runs; 3 cells were complete (9 runs), cell 4 redoes its
	// warm-up: 24 − 9 = 15 runs.
	if out.SkippedCells != 3 || out.Total != 24 || out.Ran != 15 || out.Mismatches != 0 {
		t.Errorf("resume: %+v, want 3 cells skipped of 8, 15 runs, no mismatches", out)
	}
	recs, _, err := ReadLog(filepath.Join(dir, RunsFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Measured(recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 16 {
		t.Errorf("%d measured runs, want 8 cells × 2", len(m))
	}
	for _, r := range m {
		if r.LatencyS <= 0 || r.ModeledS <= 0 || r.NetBytes != r.ModelBytes {
			t.Errorf("%s run %d: latency %g, modeled %g, %g B measured, %g B Program", r.Cell, r.Run, r.LatencyS, r.ModeledS, r.NetBytes, r.ModelBytes)
		}
		if (r.Mode == KindPartitioned) != (r.NetBytes > 0) {
			t.Errorf("%s: mode %s moved %g B between ranks", r.Cell, r.Mode, r.NetBytes)
		}
	}
	res, err := Analyze(s, recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cells {
		if !c.Complete || (c.Baseline != "local" && c.VsLocal == nil) {
			t.Errorf("%s: complete %v, vs local %v", c.Cell, c.Complete, c.VsLocal)
		}
	}

	o2 := Options{Spec: s, Dir: t.TempDir(), Engine: server.NewCPUEngine(), Backend: "cpu", newComms: miscounting}
	out, err = Run(context.Background(), o2)
	if err != nil {
		t.Fatal(err)
	}
	// The six partitioned cells' three runs each carry count mismatches.
	if out.Mismatches != 18 {
		t.Errorf("miscounting communicator: %d runs with mismatches, want 18", out.Mismatches)
	}
	recs, _, _ = ReadLog(filepath.Join(o2.Dir, RunsFile))
	for _, r := range recs {
		if r.Mode == KindPartitioned && (len(r.Mismatches) == 0 || !strings.Contains(r.Mismatches[0], "send calls: want")) {
			t.Errorf("%s: mismatches %v", r.Cell, r.Mismatches)
		}
	}
}

// TestSpecHashWithoutPartitioned: the partitioned fields are left out of a
// spec's hash when unset, so run logs of specs without them resume across
// this change. The hash is the one the previous build wrote into the quick
// suite's runs.jsonl.
func TestSpecHashWithoutPartitioned(t *testing.T) {
	s, err := Load("quick")
	if err != nil {
		t.Fatal(err)
	}
	if h := s.Hash(); h != "1a8fd6354cb2bdd5" {
		t.Errorf("quick hash %s, the earlier build's 1a8fd6354cb2bdd5", h)
	}
}
