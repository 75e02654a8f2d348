package exec_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/partition"
)

func cpuCompute(plan *partition.Plan, rank int) (pexec.Compute, error) { return cpu.New(plan, rank) }

func checkOpts() pexec.CheckOptions {
	return pexec.CheckOptions{NewCompute: cpuCompute, NewComms: localcomm.Comms}
}

func runCheck(t *testing.T, name string, opts pexec.CheckOptions) pexec.CheckResult {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := pexec.Check(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCheckPartitioningsMatchReference(t *testing.T) {
	for _, name := range []string{
		"test/tp2pp2-tiny", "test/tp4-tiny", "test/pp4-tiny",
		"test/layerwise16-tiny", "test/tp8pp2-tiny", "test/layermap-tiny",
	} {
		t.Run(strings.TrimPrefix(name, "test/"), func(t *testing.T) {
			res := runCheck(t, name, checkOpts())
			if err := res.Err(); err != nil {
				t.Fatal(err)
			}
			// 4 sequences, prefill + 2 decode steps; every step compared.
			if res.Sequences != 4 || res.DecodeSteps != 2 {
				t.Fatalf("compared %d sequences over %d decode steps, want 4 and 2", res.Sequences, res.DecodeSteps)
			}
			cfg, _ := configs.Load(name)
			if cfg.Model.LMHead && res.ArgmaxCompared != 4*3 {
				t.Fatalf("compared %d argmax tokens, want 4 sequences × 3 steps", res.ArgmaxCompared)
			}
			t.Logf("%s: max abs %.3g, max rel %.3g (sequence %d, step %d), argmax mismatches %d",
				name, res.MaxAbsErr, res.MaxRelErr, res.WorstSequence, res.WorstStep, len(res.ArgmaxMismatches))
		})
	}
}

// A pipeline alone changes no arithmetic: outputs equal the reference bit
// for bit (the tolerance only covers TP's reordered sums). That holds for
// gonum's GEMM, whose every output is the same in-order sum whatever the
// row count; OpenBLAS blocks by the row count, which a pipeline's
// micro-batches change, so the property is held on gonum.
func TestCheckPipelineIsExact(t *testing.T) {
	restore, err := cpu.UseGEMM("gonum")
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	res := runCheck(t, "test/pp4-tiny", checkOpts())
	if res.MaxAbsErr != 0 {
		t.Fatalf("pp4 differs from the reference by %g, want exactly 0", res.MaxAbsErr)
	}
}

// Swapping two TP ranks' shards keeps attention and MLP consistent (each
// rank's column and row shards still match) but puts the LM head shards in
// the wrong vocabulary slots: the check must fail.
func TestCheckCatchesSwappedTPShards(t *testing.T) {
	opts := checkOpts()
	opts.NewCompute = func(plan *partition.Plan, rank int) (pexec.Compute, error) {
		if r := plan.Ranks[rank]; plan.TP > 1 && r.TPIndex < 2 {
			rank = plan.RankOf(r.Stage, 1-r.TPIndex)
		}
		return cpu.New(plan, rank)
	}
	res := runCheck(t, "test/tp2pp2-tiny", opts)
	if res.Pass {
		t.Fatalf("check passed with TP ranks 0 and 1 holding each other's shards (max rel err %g)", res.MaxRelErr)
	}
	if res.MaxRelErr < 1e-2 {
		t.Fatalf("max rel err %g: a misplaced vocabulary shard should move logits by far more", res.MaxRelErr)
	}
	t.Logf("swapped shards: max rel err %.3g, %d argmax mismatches", res.MaxRelErr, len(res.ArgmaxMismatches))
}

// Shifting one rank's QKV shard by one column in one layer corrupts the
// residual stream of every sequence (a model without LM head, so the
// hidden states themselves are compared).
func TestCheckCatchesShiftedColumn(t *testing.T) {
	opts := checkOpts()
	const victim = 3 // tp8pp2: stage 0, TP index 3, layers 0–7
	opts.NewCompute = func(plan *partition.Plan, rank int) (pexec.Compute, error) {
		c, err := cpu.New(plan, rank)
		if err != nil || plan.Size() == 1 || rank != victim {
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
	res := runCheck(t, "test/tp8pp2-tiny", opts)
	if res.Pass {
		t.Fatalf("check passed with rank %d's wqkv shard shifted by a column (max rel err %g)", victim, res.MaxRelErr)
	}
	if res.MaxRelErr < 1e-2 {
		t.Fatalf("max rel err %g: a shifted shard should move outputs by far more", res.MaxRelErr)
	}
	t.Logf("shifted column: max rel err %.3g", res.MaxRelErr)
}

// extraMessage counts one message too many per send.
type extraMessage struct{ *localcomm.Comm }

func (e extraMessage) Send(ctx context.Context, buf pexec.Buffer, peer int) error {
	e.Counter().Message(peer, 0)
	return e.Comm.Send(ctx, buf, peer)
}

// A communicator whose counts disagree with the Program fails the check
// even when every number is right.
func TestCheckCatchesCountMismatch(t *testing.T) {
	restore, err := cpu.UseGEMM("gonum") // outputs exact, as in TestCheckPipelineIsExact
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	opts := checkOpts()
	opts.NewComms = func(size int) []pexec.Comm {
		out := make([]pexec.Comm, size)
		for i, c := range localcomm.New(size) {
			out[i] = extraMessage{c}
		}
		return out
	}
	res := runCheck(t, "test/pp4-tiny", opts)
	if res.Pass || len(res.CountDiffs) != 4 {
		t.Fatalf("want count differences on all 4 ranks (activations forward, tokens back), got pass=%v %+v", res.Pass, res.CountDiffs)
	}
	if res.MaxAbsErr != 0 {
		t.Fatalf("outputs differ by %g; only the counts should", res.MaxAbsErr)
	}
}

func TestCheckRejectsTooManyDecodeSteps(t *testing.T) {
	cfg, err := configs.Load("test/tp4-tiny")
	if err != nil {
		t.Fatal(err)
	}
	opts := checkOpts()
	opts.DecodeSteps = cfg.Workload.OutputTokens + 1
	if _, err := pexec.Check(context.Background(), cfg, opts); err == nil || !strings.Contains(err.Error(), "decode steps") {
		t.Fatalf("want a decode steps error, got %v", err)
	}
}

// Chunked prefill (prompt 20 in passes of 8, 8, 4) against the reference's
// single pass, with a vocabulary of 95 padded to 96 under TP=2: the padded
// id must never be sampled, and outputs hold the 95 real logits.
func TestCheckChunkedPrefillAndPaddedVocab(t *testing.T) {
	cfg, err := configs.Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Parallel.PrefillChunk = 8
	cfg.Model.Vocab = 95
	res, err := pexec.Check(context.Background(), cfg, checkOpts())
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Partitioned, "prefill chunk 8 × 3") || !strings.Contains(res.Reference, "prefill chunk 20 × 1") {
		t.Fatalf("ran %q against %q, want chunks of 8 against one pass", res.Partitioned, res.Reference)
	}
	t.Logf("max abs %.3g, max rel %.3g", res.MaxAbsErr, res.MaxRelErr)
}

// NewReference builds the reference (one rank, TP = PP = 1) and NewCompute
// every rank of the checked plan (tp2pp2-tiny: 4 ranks); without
// NewReference, NewCompute builds both.
func TestCheckNewReference(t *testing.T) {
	var mu sync.Mutex
	var refPlans, partPlans []string
	record := func(into *[]string) func(*partition.Plan, int) (pexec.Compute, error) {
		return func(plan *partition.Plan, rank int) (pexec.Compute, error) {
			mu.Lock()
			*into = append(*into, fmt.Sprintf("tp%dpp%d/%d", plan.TP, plan.PP, rank))
			mu.Unlock()
			return cpu.New(plan, rank)
		}
	}
	opts := pexec.CheckOptions{NewReference: record(&refPlans), NewCompute: record(&partPlans), NewComms: localcomm.Comms}
	if res := runCheck(t, "test/tp2pp2-tiny", opts); !res.Pass {
		t.Fatal(res.Err())
	}
	if want := []string{"tp1pp1/0"}; !slices.Equal(refPlans, want) {
		t.Errorf("reference built for %v, want %v", refPlans, want)
	}
	if want := []string{"tp2pp2/0", "tp2pp2/1", "tp2pp2/2", "tp2pp2/3"}; !slices.Equal(partPlans, want) {
		t.Errorf("checked ranks built for %v, want %v", partPlans, want)
	}
	refPlans, partPlans = nil, nil
	opts.NewReference = nil
	runCheck(t, "test/tp2pp2-tiny", opts)
	if len(refPlans) != 0 || len(partPlans) != 5 {
		t.Errorf("without NewReference: %d reference and %d NewCompute calls, want 0 and 1 + 4", len(refPlans), len(partPlans))
	}
}
