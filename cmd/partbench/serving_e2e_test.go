package main

import (
	"encoding/json"
	"os/exec"
	"strings"
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

// --spawn-server --transport grpc|tcp starts the real binary's `partbench
// serve --engine-config` on a loopback port, loads its batched engine
// through the transport, prints measured beside modeled and stops it.
func TestServingSpawnServeTransportsE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := partbenchBinary(t)
	for _, tr := range []string{"grpc", "tcp"} {
		out, err := exec.Command(bin, "serving", "--spawn-server", "--transport", tr, "--config", "test/single-tiny", "--request-rate", "300", "--num-prompts", "20",
			"--random-input-len", "10", "--random-output-len", "4", "--max-num-seqs", "4", "--max-num-batched-tokens", "12", "--format", "json").Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tr, err, out)
		}
		var d struct {
			Measured, Modeled map[string]any
			Backend, Engine   string
		}
		if err := json.Unmarshal(out, &d); err != nil || d.Measured["completed"] != 20.0 || d.Modeled["completed"] != 20.0 || d.Measured["failed"] != 0.0 ||
			d.Backend != "partbench-serve-cpu-engine over "+tr || d.Engine == "" {
			t.Errorf("%s: %v: measured %v, modeled %v, backend %q, engine %q\n%s", tr, err, d.Measured, d.Modeled["completed"], d.Backend, d.Engine, out)
		}
	}
}

// partbench serve refuses engine flags without --engine-config, and an
// engine config it cannot run, before it listens.
func TestServeEngineFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", "127.0.0.1:0", "--max-num-seqs", "4"}, "acts with --engine-config only"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--engine-config", "../../configs/test/tp2pp2-tiny.toml"}, "single-rank"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--engine-config", "../../configs/test/single-tiny.toml", "--engine-context", "1"}, "--engine-context"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--engine-config", "../../configs/test/single-tiny.toml", "--memory-budget", "1000000"}, "--memory-budget"},
	} {
		out, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v (want an error naming %q)\n%s", tc.args, err, tc.want, out)
		}
	}
}
