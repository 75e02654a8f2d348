package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// hfReference is a fixture's reference.json (transformers' outputs).
type hfReference struct {
	PromptIDs [][]int       `json:"prompt_ids"`
	Logits    [][][]float64 `json:"logits"`
	GreedyIDs [][]int       `json:"greedy_ids"`
}

func readHFReference(t *testing.T, dir string) (hfReference, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref hfReference
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	ids := filepath.Join(t.TempDir(), "ids.json")
	b, _ := json.Marshal(ref.PromptIDs)
	if err := os.WriteFile(ids, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return ref, ids
}

// checkGenerateOutput compares a generate run's stdout and --logits-out
// with transformers': greedy ids identical, logits within 1e-4 (fp32; the
// bound exec/cpu TestHuggingFaceFixtures uses and docs/numerics.md derives).
func checkGenerateOutput(t *testing.T, ref hfReference, stdout string, logitsFile string) {
	t.Helper()
	var got struct {
		GreedyIDs [][]int `json:"greedy_ids"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON document (rank 0's only): %v\n%s", err, stdout)
	}
	if len(got.GreedyIDs) != len(ref.GreedyIDs) {
		t.Fatalf("greedy %v, transformers %v", got.GreedyIDs, ref.GreedyIDs)
	}
	for i := range ref.GreedyIDs {
		if !slices.Equal(got.GreedyIDs[i], ref.GreedyIDs[i]) {
			t.Fatalf("greedy %v, transformers %v", got.GreedyIDs, ref.GreedyIDs)
		}
	}
	data, err := os.ReadFile(logitsFile)
	if err != nil {
		t.Fatal(err)
	}
	var logits [][][]float64
	if err := json.Unmarshal(data, &logits); err != nil {
		t.Fatal(err)
	}
	if len(logits) != len(ref.Logits) {
		t.Fatalf("logits of %d sequences, transformers %d", len(logits), len(ref.Logits))
	}
	for s := range ref.Logits {
		if len(logits[s]) != len(ref.Logits[s]) {
			t.Fatalf("sequence %d: logits at %d positions, transformers %d", s, len(logits[s]), len(ref.Logits[s]))
		}
		for p := range ref.Logits[s] {
			if len(logits[s][p]) != len(ref.Logits[s][p]) {
				t.Fatalf("sequence %d position %d: %d logits, transformers %d", s, p, len(logits[s][p]), len(ref.Logits[s][p]))
			}
			for v, want := range ref.Logits[s][p] {
				if d := math.Abs(logits[s][p][v] - want); !(d <= 1e-4) {
					t.Fatalf("sequence %d position %d id %d: %g, transformers %g", s, p, v, logits[s][p][v], want)
				}
			}
		}
	}
}

// TestGenerateNProc: generate --nproc 4 (TP=2 × PP=2, one process per
// rank through the built-in launcher, each reading its own slices) gives
// transformers' greedy ids and logits for both fixtures; rank 0 alone prints.
func TestGenerateNProc(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	for _, fx := range []string{"llama-tiny", "gpt2-tiny"} {
		dir, _ := filepath.Abs(filepath.Join("..", "..", "checkpoint", "testdata", fx))
		ref, ids := readHFReference(t, dir)
		logits := filepath.Join(t.TempDir(), "logits.json")
		r := runCmd(t, 2*time.Minute, cleanEnv(), bin, "generate", "--model-dir", dir, "--ids-file", ids,
			"--new-tokens", fmt.Sprint(len(ref.GreedyIDs[0])), "--tp", "2", "--pp", "2", "--microbatches", "2",
			"--nproc", "4", "--logits-out", logits)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", fx, r.code, r.out)
		}
		checkGenerateOutput(t, ref, r.out, logits)
	}
	// A world that does not fit the partitioning is refused before any rank starts.
	dir, _ := filepath.Abs(filepath.Join("..", "..", "checkpoint", "testdata", "llama-tiny"))
	_, ids := readHFReference(t, dir)
	if r := runCmd(t, time.Minute, cleanEnv(), bin, "generate", "--model-dir", dir, "--ids-file", ids, "--tp", "2", "--nproc", "4"); r.code == 0 {
		t.Fatalf("--nproc 4 with --tp 2 accepted:\n%s", r.out)
	}
}

// TestGenerateMPIRun: the same under mpirun -np 4.
func TestGenerateMPIRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	mpi, bin := mpirun(t), partbenchBinary(t)
	dir, _ := filepath.Abs(filepath.Join("..", "..", "checkpoint", "testdata", "gpt2-tiny"))
	ref, ids := readHFReference(t, dir)
	logits := filepath.Join(t.TempDir(), "logits.json")
	r := runCmd(t, 3*time.Minute, cleanEnv(), mpi, "--allow-run-as-root", "--oversubscribe", "-np", "4",
		bin, "generate", "--model-dir", dir, "--ids-file", ids, "--new-tokens", fmt.Sprint(len(ref.GreedyIDs[0])),
		"--tp", "2", "--pp", "2", "--microbatches", "2", "--logits-out", logits, "--rendezvous", freeAddr(t))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.out)
	}
	checkGenerateOutput(t, ref, r.out, logits)
}
