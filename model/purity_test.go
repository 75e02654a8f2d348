package model_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// model, partition and sim do not link the safetensors reader: a rank's
// shards are read from a checkpoint by checkpoint/shards, which only the
// executors import.
func TestModelPartitionSimLinkNoCheckpointReader(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/partbench/partbench/"
	deps := goListDeps(t, mod+"model", mod+"partition", mod+"sim")
	if !slices.Contains(deps, mod+"arch") {
		t.Fatalf("go list listed %d packages without arch: %q", len(deps), deps)
	}
	for _, d := range deps {
		if d == mod+"checkpoint" || strings.HasPrefix(d, mod+"checkpoint/") {
			t.Errorf("%s is a dependency of model, partition or sim", d)
		}
	}
	// The check can fail: checkpoint/shards links the reader.
	if !slices.Contains(goListDeps(t, mod+"checkpoint/shards"), mod+"checkpoint") {
		t.Errorf("checkpoint/shards' deps lack checkpoint: the check above would not see it")
	}
}

func goListDeps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}
