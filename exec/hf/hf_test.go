package hf_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/hf"
	"github.com/partbench/partbench/exec/launch"
)

func open(t *testing.T, fx string) (*hf.Model, string) {
	t.Helper()
	dir := checkpointtest.Dir(t, fx)
	m, err := hf.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, dir
}

// The CPU backend through the workflow against transformers' reference.json:
// every logit within cpu.ReferenceTolerance (1e-4; docs/numerics.md measures
// 7.1e-7) and every greedy id equal (no near-tie needed), at tp2 × pp2. The
// same run against a reference with one logit moved by 1e-3, or one greedy
// id changed to another token, fails and says where.
func TestCompareReferenceCPU(t *testing.T) {
	b := cpu.Checkpoint(nil)
	for _, fx := range []string{"llama-tiny", "gpt2-tiny"} {
		m, dir := open(t, fx)
		ref, err := hf.ReadReference(filepath.Join(dir, "reference.json"))
		if err != nil {
			t.Fatal(err)
		}
		g := hf.Generation{Dir: dir, TP: 2, PP: 2, Microbatches: 2, Env: launch.Env{Source: launch.SourceSingle}}
		rc, err := m.CompareReference(context.Background(), g, b, "reference.json", ref, b.ReferenceTolerance)
		if err != nil {
			t.Fatal(err)
		}
		if !rc.Pass || len(rc.GreedyMismatches) != 0 || rc.MaxAbsErr > 1e-4 || rc.GreedyCompared != 2*8 || rc.Positions != 8 {
			t.Fatalf("%s: %+v", fx, rc)
		}
		// transformers' top-2 gaps at the last prompt position are 0.034 and
		// 0.0063 (llama-tiny), 0.017 and 0.28 (gpt2-tiny): above the
		// 4·1e-4 a settled id needs, so at least the first id of each
		// sequence is settled.
		if len(rc.GreedySettled) != 2 || rc.GreedySettled[0] < 1 || rc.GreedySettled[1] < 1 {
			t.Errorf("%s: greedy settled %v, want ≥ 1 each", fx, rc.GreedySettled)
		}
		t.Logf("%s: max |Δ logit| %.3g, greedy settled %v", fx, rc.MaxAbsErr, rc.GreedySettled)
		ref.Logits[1][5][7] += 1e-3
		old := ref.GreedyIDs[0][3]
		ref.GreedyIDs[0][3] = (old + 1) % 512
		rc, err = m.CompareReference(context.Background(), g, b, "reference.json", ref, b.ReferenceTolerance)
		if err != nil {
			t.Fatal(err)
		}
		msg := strings.Join(rc.Failures, "; ")
		if rc.Pass || !strings.Contains(msg, "sequence 1 position 5 id 7") || !strings.Contains(msg, "sequence 0 greedy id 3") {
			t.Errorf("%s: doctored reference: pass %v, failures %q", fx, rc.Pass, msg)
		}
	}
}

// With a Reference backend the single rank is checked too: every
// partitioning of at most 2 ranks of llama-tiny (tp1pp1, tp1pp2, tp2pp1 and
// layer-wise; tp2pp2 needs 4) against another backend's single rank (here
// the CPU against itself, the arithmetic the GPU check runs).
func TestCheckModelDirWithReference(t *testing.T) {
	ref := cpu.Checkpoint(nil)
	run := configs.ModelDirRun{Dir: checkpointtest.Dir(t, "llama-tiny"), Batch: 2, Context: 16, OutputTokens: 4, DType: "fp32"}
	res, err := hf.CheckModelDir(context.Background(), run, 2, hf.CheckOptions{Backend: cpu.Checkpoint(nil), Reference: &ref})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res {
		names = append(names, r.Config)
		if !r.Pass || r.ArgmaxCompared == 0 {
			t.Errorf("%s: pass %v, argmax compared %d: %v", r.Config, r.Pass, r.ArgmaxCompared, r.Err())
		}
	}
	slices.Sort(names)
	want := []string{"llama-tiny-layerwise2-mb2", "llama-tiny-tp1pp1", "llama-tiny-tp1pp2-mb2", "llama-tiny-tp2pp1"}
	if !slices.Equal(names, want) {
		t.Errorf("checked %v, want %v", names, want)
	}
}

// A backend that runs in process only refuses a launched rank, naming the
// launcher; a reference file that does not hold what it should is refused
// with its path.
func TestRefusals(t *testing.T) {
	m, dir := open(t, "gpt2-tiny")
	g := hf.Generation{Dir: dir, Prompts: [][]int{{1, 2}}, NewTokens: 2, TP: 1, PP: 1, Microbatches: 1, Env: launch.Env{Source: launch.SourceSlurm}}
	cfg, err := g.Config()
	if err != nil {
		t.Fatal(err)
	}
	b := cpu.Checkpoint(nil)
	if _, err := m.Generate(context.Background(), cfg, g, b); err == nil || !strings.Contains(err.Error(), "one process") {
		t.Errorf("launched rank without NewComm: %v", err)
	}
	if _, err := hf.ReadReference(filepath.Join(dir, "config.json")); err == nil || !strings.Contains(err.Error(), "config.json: prompt_ids is missing") {
		t.Errorf("config.json as a reference: %v", err)
	}
}

// A reference is read through fileio.ReadSmall: a directory is refused at
// once, and a file one byte over MaxReferenceBytes (sparse: nothing is
// written) with its size and the bound, before it is read.
func TestReadReferenceBounded(t *testing.T) {
	dir := t.TempDir()
	if _, err := hf.ReadReference(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	big := filepath.Join(dir, "reference.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(hf.MaxReferenceBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = hf.ReadReference(big)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(hf.MaxReferenceBytes+1)) || !strings.Contains(err.Error(), big) {
		t.Errorf("a file over the bound: %v", err)
	}
}
