package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGenerateCommand: partbench generate on the tiny Llama fixture under
// TP=2 prints transformers' greedy ids (reference.json).
func TestGenerateCommand(t *testing.T) {
	dir := filepath.Join("..", "..", "checkpoint", "testdata", "llama-tiny")
	data, err := os.ReadFile(filepath.Join(dir, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		PromptIDs [][]int `json:"prompt_ids"`
		GreedyIDs [][]int `json:"greedy_ids"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	ids := filepath.Join(t.TempDir(), "ids.json")
	b, _ := json.Marshal(ref.PromptIDs)
	if err := os.WriteFile(ids, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"generate", "--model-dir", dir, "--ids-file", ids, "--new-tokens", "8", "--tp", "2"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var got struct {
		GreedyIDs [][]int `json:"greedy_ids"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(got.GreedyIDs) != len(ref.GreedyIDs) {
		t.Fatalf("greedy %v, transformers %v", got.GreedyIDs, ref.GreedyIDs)
	}
	for i := range ref.GreedyIDs {
		if !slices.Equal(got.GreedyIDs[i], ref.GreedyIDs[i]) {
			t.Fatalf("greedy %v, transformers %v", got.GreedyIDs, ref.GreedyIDs)
		}
	}
	root = newRootCmd()
	root.SetArgs([]string{"generate", "--model-dir", dir, "--ids-file", ids, "--backend", "cuda"})
	if err := root.Execute(); err == nil {
		t.Fatal("--backend cuda accepted")
	}
}

// generate --reference on the CPU: the fixture's own prompts (no
// --ids-file), every logit within 1e-4 and every greedy id equal, printed
// under "reference"; a reference with one greedy id changed exits 1 after
// printing the comparison that says which.
func TestGenerateReference(t *testing.T) {
	dir := filepath.Join("..", "..", "checkpoint", "testdata", "gpt2-tiny")
	refPath := filepath.Join(dir, "reference.json")
	out, err := runCLISplitOut(t, "generate", "--model-dir", dir, "--reference", refPath, "--new-tokens", "8", "--tp", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got struct {
		GreedyIDs [][]int `json:"greedy_ids"`
		Reference struct {
			Pass           bool    `json:"pass"`
			MaxAbsErr      float64 `json:"max_abs_err"`
			Tolerance      float64 `json:"tolerance"`
			GreedyCompared int     `json:"greedy_compared"`
		} `json:"reference"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	r := got.Reference
	if !r.Pass || r.Tolerance != 1e-4 || r.MaxAbsErr > 1e-4 || r.GreedyCompared != 16 || len(got.GreedyIDs) != 2 {
		t.Fatalf("reference %+v, greedy %v", r, got.GreedyIDs)
	}

	data, err := os.ReadFile(refPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	greedy := doc["greedy_ids"].([]any)[1].([]any)
	greedy[2] = float64((int(greedy[2].(float64)) + 1) % 512)
	bad := filepath.Join(t.TempDir(), "reference.json")
	b, _ := json.Marshal(doc)
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runCLISplitOut(t, "generate", "--model-dir", dir, "--reference", bad, "--new-tokens", "2")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(err.Error(), "sequence 1 greedy id 2") {
		t.Fatalf("doctored reference: %v", err)
	}
	if !strings.Contains(out, `"pass": false`) {
		t.Errorf("the failed comparison is not printed:\n%s", out)
	}
}

// runCLISplitOut runs the root command and returns its stdout alone.
func runCLISplitOut(t *testing.T, args ...string) (string, error) {
	t.Helper()
	stdout, _, err := runCLISplit(t, args...)
	return stdout, err
}

// Flags that cannot act are refused before anything is read, naming the
// flag and what is allowed; without a CUDA driver the GPU paths name the
// driver searched for and how to point at it.
func TestGenerateRefusals(t *testing.T) {
	t.Setenv("PARTBENCH_CUDA_LIB", t.TempDir()+"/libcuda.so.1")
	dir := filepath.Join("..", "..", "checkpoint", "testdata", "llama-tiny")
	ref := filepath.Join(dir, "reference.json")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"generate", "--model-dir", dir, "--reference", ref, "--dtype", "fp16"},
			[]string{`--dtype "fp16": the CPU backend computes in float32 (allowed: fp32`}},
		{[]string{"generate", "--model-dir", dir, "--reference", ref, "--backend", "tpu"},
			[]string{`--backend "tpu": must be cpu or cuda`}},
		{[]string{"generate", "--model-dir", dir},
			[]string{"--ids-file (or --reference"}},
		{[]string{"generate", "--model-dir", dir, "--reference", ref, "--new-tokens", "0"},
			[]string{"--new-tokens 0: must be ≥ 1"}},
		{[]string{"generate", "--model-dir", dir, "--reference", dir},
			[]string{"--reference", dir}},
		{[]string{"generate", "--model-dir", dir, "--reference", ref, "--backend", "cuda", "--dtype", "fp8"},
			[]string{`--dtype "fp8": the GPU backend computes in fp32, fp16 or bf16`}},
		{[]string{"generate", "--model-dir", dir, "--reference", ref, "--backend", "cuda", "--dtype", "bf16"},
			[]string{"generate --backend cuda: the GPU backend cannot run here", "libcuda.so.1", "PARTBENCH_CUDA_LIB"}},
		{[]string{"run", "--check", "--model-dir", dir, "--backend", "cuda"},
			[]string{"run --check --model-dir --backend cuda: the GPU backend cannot run here", "libcuda.so.1", "PARTBENCH_CUDA_LIB"}},
		{[]string{"run", "--check", "--model-dir", dir, "--dtype", "fp16"},
			[]string{`--dtype "fp16": only with --backend cuda`}},
		// --host-window: 256M is 256 · 2^20 = 268,435,456 bytes.
		{[]string{"generate", "--model-dir", dir, "--reference", ref, "--host-window", "256M"},
			[]string{"--host-window 268435456: only with --backend cuda"}},
		{[]string{"generate", "--model-dir", dir, "--reference", ref, "--backend", "cuda", "--host-window", "0"},
			[]string{`--host-window "0": must be positive`}},
		{[]string{"generate", "--model-dir", dir, "--reference", ref, "--backend", "cuda", "--host-window", "lots"},
			[]string{`--host-window: cannot read "lots" as a size`}},
		{[]string{"run", "--check", "--model-dir", dir, "--host-window", "1G"},
			[]string{`--host-window "1G": only with --backend cuda`}},
		{[]string{"run", "--config", "test/single-tiny", "--backend", "cpu", "--host-window", "1G"},
			[]string{`--host-window "1G": only with --check --model-dir --backend cuda`}},
	} {
		_, err := runCLI(t, tc.args...)
		if err == nil {
			t.Errorf("%v accepted", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q lacks %q", tc.args, err, w)
			}
		}
		if strings.Contains(err.Error(), "not written") {
			t.Errorf("%v: %q", tc.args, err)
		}
	}
}
