package main

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// --spawn-server starts the real binary's engine on a loopback port, loads
// it, prints measured beside modeled and stops it (the binary is the one
// the end-to-end tests build).
func TestServingSpawnServerE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := partbenchBinary(t)
	out, err := exec.Command(bin, "serving", "--spawn-server", "--config", "test/single-tiny", "--request-rate", "300", "--num-prompts", "20",
		"--random-input-len", "10", "--random-output-len", "4", "--max-num-seqs", "4", "--max-num-batched-tokens", "12", "--format", "json").Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var d struct{ Measured, Modeled map[string]any }
	if err := json.Unmarshal(out, &d); err != nil || d.Measured["completed"] != 20.0 || d.Modeled["completed"] != 20.0 || d.Measured["failed"] != 0.0 {
		t.Errorf("%v: measured %v, modeled %v\n%s", err, d.Measured, d.Modeled["completed"], out)
	}
}
