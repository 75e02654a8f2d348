package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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
