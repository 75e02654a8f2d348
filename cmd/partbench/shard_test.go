package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/checkpoint/shards"
)

// TestShardCommand: partbench shard writes one file per TP index of the
// tiny Llama fixture (copied: the files go beside the checkpoint), and
// generate at that TP degree under two stages then reads them, says so,
// and prints transformers' greedy ids (reference.json), as it does from
// the checkpoint itself. Bad flags are refused with exit status 2.
func TestShardCommand(t *testing.T) {
	src := filepath.Join("..", "..", "checkpoint", "testdata", "llama-tiny")
	dir := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors"} {
		in, err := os.Open(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		out.Close()
	}
	ref, ids := readHFReference(t, src)
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"shard", "--model-dir", dir, "--tp", "2", "--pp", "2"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, shards.ShardsDir, "*", "model.safetensors"))
	if len(files) != 2 || strings.Count(out.String(), "TP index") != 2 {
		t.Fatalf("files %v; printed %s", files, out.String())
	}
	out.Reset()
	root = newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"generate", "--model-dir", dir, "--ids-file", ids, "--new-tokens", "8", "--tp", "2", "--pp", "2"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var got struct {
		GreedyIDs [][]int  `json:"greedy_ids"`
		Notes     []string `json:"notes"`
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
	if !strings.Contains(strings.Join(got.Notes, "\n"), "pre-sharded") {
		t.Fatalf("notes %q do not say the weights came from the pre-sharded files", got.Notes)
	}
	for _, args := range [][]string{{"shard", "--tp", "2"}, {"shard", "--model-dir", dir, "--tp", "0"}} {
		root = newRootCmd()
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		root.SetArgs(args)
		err := root.Execute()
		if e, ok := err.(*exitError); !ok || e.code != 2 {
			t.Errorf("%v: %v, want exit status 2", args, err)
		}
	}
}
