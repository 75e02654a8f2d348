package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// execRoot runs the root command with args and returns its output.
func execRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestModelDirDryRun: the dry run of a model directory reads config.json
// only. The directory's model.safetensors is garbage (not a safetensors
// header), so reading any weight would fail the command; and a directory
// with config.json alone gives the same estimate.
//
// Llama-2-7B has 6,738,415,616 parameters (Touvron et al. 2023, the model
// card's "7B"; configs/model/llama2-7b); in fp16 that is 13.477 GB, and
// under TP = 8 every tensor but the norms (65 × 4096 elements, 0.5 MB in
// all) is split 8 ways: 13.477 / 8 = 1.685 GB of weights per GPU.
func TestModelDirDryRun(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join("..", "..", "checkpoint", "testdata", "configs", "llama-2-7b.json"))
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, garbage := range []bool{true, false} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		if garbage {
			if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("not a safetensors file"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, err := execRoot(t, "model", "--dry-run", "--model-dir", dir, "--tp", "8")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(out, "│ 1.685 ") {
			t.Fatalf("no 1.685 GB of weights per GPU in:\n%s", out)
		}
		outs = append(outs, strings.ReplaceAll(out, filepath.Base(dir), "DIR"))
	}
	if outs[0] != outs[1] {
		t.Fatalf("estimates differ with and without weights:\n%s\n%s", outs[0], outs[1])
	}
	for _, bad := range [][]string{
		{"model", "--dry-run", "--tp", "8"}, // --tp without --model-dir
		{"model", "--dry-run", "--model-dir", filepath.Dir(filepath.Join("..", "..", "checkpoint", "testdata", "llama-tiny", "x")), "--tp", "3"},
		{"model", "--dry-run", "--model-dir", t.TempDir()}, // no config.json
		{"model", "--dry-run", "--model-dir", "x", "--config", "tp8pp2"},
	} {
		if out, err := execRoot(t, bad...); err == nil {
			t.Errorf("%v accepted:\n%s", bad, out)
		}
	}
}

// TestRunCheckModelDir: run --check --model-dir checks the partitionings of
// llama-tiny (tp1pp2, tp2pp1, tp2pp2, layer-wise: exec/cpu TestCheckModelDir
// derives them; tp4 does not divide its 2 KV heads) and they pass.
func TestRunCheckModelDir(t *testing.T) {
	dir := filepath.Join("..", "..", "checkpoint", "testdata", "llama-tiny")
	out, err := execRoot(t, "run", "--check", "--model-dir", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(out, "— PASS"); n != 4 {
		t.Fatalf("%d checks passed, want 4:\n%s", n, out)
	}
	if out, err := execRoot(t, "run", "--model-dir", dir); err == nil {
		t.Fatalf("run --model-dir without --check accepted:\n%s", out)
	}
}
