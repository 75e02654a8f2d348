package main

import (
	"bufio"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestRemoteSpawnServer: 'remote --spawn-server' starts a server process,
// runs every mode and writes one CSV row per recorded trial and phase; the
// tokens and bytes checks pass (exit 0).
func TestRemoteSpawnServer(t *testing.T) {
	bin := partbenchBinary(t)
	dir := t.TempDir()
	r := runCmd(t, 2*time.Minute, cleanEnv(), bin, "remote", "--config", "test/single-tiny", "--spawn-server", "--trials", "2", "--warmup", "1", "--out", dir)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.out)
	}
	f, err := os.Open(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// 4 modes × (prefill, decode) × 2 trials + kv's load × 2 + the header.
	if len(recs) != 1+16+2 {
		t.Fatalf("results.csv has %d records, want 19:\n%v", len(recs), recs)
	}
	doc := readResults(t, dir)
	if g, _ := doc["gap_bytes_ratio"].(float64); g <= 1 {
		t.Errorf("gap_bytes_ratio %v: naive must ship more than stateful", doc["gap_bytes_ratio"])
	}
	if _, bad := doc["mismatches"]; bad {
		t.Errorf("mismatches reported: %v", doc["mismatches"])
	}
}

// TestServeProcess: 'serve' on port 0 prints its address, serves 'remote'
// over raw TCP, and drains and exits 0 on SIGTERM.
func TestServeProcess(t *testing.T) {
	bin := partbenchBinary(t)
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--transport", "tcp")
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
	dir := t.TempDir()
	r := runCmd(t, 2*time.Minute, cleanEnv(), bin, "remote", "--config", "test/single-tiny", "--server", addr, "--transport", "tcp",
		"--mode", "stateful", "--trials", "1", "--warmup", "0", "--out", dir)
	if r.code != 0 {
		t.Fatalf("remote exit %d:\n%s", r.code, r.out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(rest.String(), "drained") {
			t.Errorf("serve after SIGTERM: %v, said %q", err, rest.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit within 30 s of SIGTERM")
	}
}

// TestServeRefusesOpenBindWithoutToken: a non-loopback --listen without
// --token-file exits non-zero naming the flag.
func TestServeRefusesOpenBindWithoutToken(t *testing.T) {
	r := runCmd(t, time.Minute, cleanEnv(), partbenchBinary(t), "serve", "--listen", "0.0.0.0:0")
	if r.code == 0 || !strings.Contains(r.out, "requires a token (--token-file)") {
		t.Errorf("exit %d, output %q: want a refusal naming --token-file", r.code, r.out)
	}
}

// TestRemoteNeedsServer: a remote mode without --server or --spawn-server
// is a usage error, not a hang.
func TestRemoteNeedsServer(t *testing.T) {
	_, err := runCLI(t, "remote", "--config", "test/single-tiny", "--mode", "naive", "--out", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "--spawn-server") {
		t.Errorf("err %v: want one naming --server and --spawn-server", err)
	}
}

// TestModelRemoteDryRun prints each mode's bytes per decode step exactly as
// partition counts them, and the naive/stateful ratio.
func TestModelRemoteDryRun(t *testing.T) {
	out, err := runCLI(t, "model", "--dry-run", "--config", "test/single-tiny", "--remote-link", "25gbe", "--mode", "naive")
	if err != nil {
		t.Fatal(err)
	}
	c, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	// The representative decode step: min(output_tokens / 2, steps − 1) = 2.
	for _, m := range partition.RemoteModes {
		b, err := plan.RemoteBytesOf(m, partition.RemoteRequest{Phase: partition.Decode, Step: 2}, partition.RemoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, " "+strconv.FormatInt(b.Up(), 10)+" ") {
			t.Errorf("%s: decode up bytes %d not printed:\n%s", m, b.Up(), out)
		}
	}
	for _, s := range []string{"naive *", "25 Gb/s", "naive/stateful per decode step"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}
