package checkpointtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir is the absolute path of checkpoint/testdata joined with elem (a
// fixture's name: "llama-tiny", "gpt2-tiny"), wherever the calling test's
// package is. A path that does not exist fails the test.
func Dir(t testing.TB, elem ...string) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("checkpointtest: cannot find its own source file")
	}
	dir := filepath.Join(append([]string{filepath.Dir(filepath.Dir(file)), "testdata"}, elem...)...)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("checkpointtest: fixture %v: %v (sources moved, or built with -trimpath?)", elem, err)
	}
	return dir
}

// Reference is transformers' output for a fixture (reference.json in its
// directory, computed in fp32 on the CPU with eager attention).
type Reference struct {
	PromptIDs [][]int       `json:"prompt_ids"`
	Logits    [][][]float64 `json:"logits"`
	GreedyIDs [][]int       `json:"greedy_ids"`
}

// ReadReference reads dir's reference.json.
func ReadReference(t testing.TB, dir string) Reference {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref Reference
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}
