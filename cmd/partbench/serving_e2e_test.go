package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// A standing `partbench serve --engine-config` with a bearer token, loaded
// by `serving --server HOST:PORT --transport tcp --token-file`: every
// request completes; without the token the run fails naming the refusal;
// SIGTERM drains and the server exits 0.
func TestServeEngineWithTokenE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := partbenchBinary(t)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("engine-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--transport", "tcp", "--token-file", tok,
		"--engine-config", "test/single-tiny", "--max-num-seqs", "4", "--max-num-batched-tokens", "32", "--engine-context", "64")
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("serve printed nothing")
	}
	addr, ok := strings.CutPrefix(sc.Text(), "partbench serve: tcp listening on ")
	if !ok {
		t.Fatalf("serve said %q", sc.Text())
	}
	load := []string{"serving", "--server", addr, "--transport", "tcp", "--config", "test/single-tiny", "--max-num-seqs", "4",
		"--max-num-batched-tokens", "32", "--engine-context", "64", "--request-rate", "200", "--num-prompts", "12",
		"--random-input-len", "8", "--random-output-len", "4", "--format", "json"}
	r := runCmd(t, 2*time.Minute, cleanEnv(), bin, append(load, "--token-file", tok)...)
	var d struct{ Measured map[string]any }
	if err := json.Unmarshal([]byte(r.out), &d); r.code != 0 || err != nil || d.Measured["completed"] != 12.0 || d.Measured["failed"] != 0.0 {
		t.Errorf("with the token: exit %d, %v, measured %v\n%s", r.code, err, d.Measured, r.out)
	}
	if r := runCmd(t, 2*time.Minute, cleanEnv(), bin, load...); r.code == 0 || !strings.Contains(r.out, "Unauthenticated") {
		t.Errorf("without the token: exit %d\n%s", r.code, r.out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	for sc.Scan() {
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not exit within 60 s of SIGTERM")
	}
}
