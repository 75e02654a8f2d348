//go:build cgo

package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
)

// On the fake driver (cgo/cuda/cudatest: every call a GPU would take,
// launches checked against the kernels' signatures, kernels that compute
// nothing) the GPU paths run end to end: run --check --model-dir --backend
// cuda checks the GPU's single rank and the four partitionings of
// llama-tiny against the CPU, and generate --backend cuda --reference
// decodes on every rank and compares. Nothing is computed, so both report
// a numerical failure (exit 1, the comparison printed), never a refusal.
func TestGPUModelDirPathsOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	dir := "../../checkpoint/testdata/llama-tiny"
	out, err := runCLI(t, "run", "--check", "--model-dir", dir, "--backend", "cuda", "--dtype", "fp16")
	if err == nil || strings.Contains(err.Error(), "not written") {
		t.Fatalf("fake GPU check: %v", err)
	}
	for _, name := range []string{"llama-tiny-tp1pp1", "llama-tiny-tp1pp2-mb2", "llama-tiny-tp2pp1", "llama-tiny-tp2pp2-mb2", "llama-tiny-layerwise2-mb2"} {
		if !strings.Contains(out, "Check "+name+": ") {
			t.Errorf("no check of %s:\n%s", name, out)
		}
	}
	if !strings.Contains(out, "│ 0.02      │") {
		t.Errorf("the fp16 tolerance (2e-2) is not the table's:\n%s", out)
	}

	stdout, _, err := runCLISplit(t, "generate", "--model-dir", dir, "--reference", dir+"/reference.json",
		"--backend", "cuda", "--dtype", "bf16", "--new-tokens", "3", "--tp", "2")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(err.Error(), "generate --backend cuda --dtype bf16: against") {
		t.Fatalf("fake GPU generate: %v", err)
	}
	var got struct {
		Plan      string  `json:"plan"`
		GreedyIDs [][]int `json:"greedy_ids"`
		Reference struct {
			Pass           bool    `json:"pass"`
			Tolerance      float64 `json:"tolerance"`
			GreedyCompared int     `json:"greedy_compared"`
		} `json:"reference"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if !strings.Contains(got.Plan, "TP=2") || len(got.GreedyIDs) != 2 || len(got.GreedyIDs[0]) != 3 ||
		got.Reference.Pass || got.Reference.Tolerance != 0.1 || got.Reference.GreedyCompared != 16 {
		t.Errorf("plan %q, greedy %v, reference %+v", got.Plan, got.GreedyIDs, got.Reference)
	}
}
