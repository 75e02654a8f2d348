package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// Two nodes on one machine, as torchrun users start them: two launchers of
// 2 ranks each over loopback. Node 0 is given --master-port 0, picks a port
// and prints it; node 1 is given that port with --rdzv-endpoint. The run
// holds 4 ranks and rank 0 (on node 0) writes results.json.
func TestTwoNodesOnOneMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	common := []string{"run", "--nnodes", "2", "--nproc-per-node", "2", "--config", "test/tp2pp2-tiny", "--backend", "cpu", "--join-timeout", "60s"}
	node0 := exec.CommandContext(ctx, bin, append(common, "--node-rank", "0", "--master-addr", "127.0.0.1", "--master-port", "0", "--output-dir", dir)...)
	node0.Env = cleanEnv()
	var out0 bytes.Buffer
	node0.Stdout = &out0
	stderr, err := node0.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node0.Start(); err != nil {
		t.Fatal(err)
	}
	// The first stderr line names the endpoint node 0 picked.
	br := bufio.NewReader(stderr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("node 0 printed no endpoint: %v (%q)", err, line)
	}
	m := regexp.MustCompile(`--rdzv-endpoint (127\.0\.0\.1:[0-9]+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("node 0's first line %q names no endpoint", line)
	}
	var err0 bytes.Buffer
	go io.Copy(&err0, br)

	node1 := exec.CommandContext(ctx, bin, append(common, "--node-rank", "1", "--rdzv-endpoint", m[1], "--output-dir", "")...)
	node1.Env = cleanEnv()
	out1, err1 := node1.CombinedOutput()
	if err1 != nil {
		t.Errorf("node 1: %v\n%s", err1, out1)
	}
	if err := node0.Wait(); err != nil {
		t.Fatalf("node 0: %v\n%s\n%s", err, out0.String(), err0.String())
	}
	checkRunDoc(t, readResults(t, dir), 4)
	if doc := readResults(t, filepath.Clean(dir)); doc["launcher"] != "env" {
		t.Errorf("launcher %v, want env (RANK/WORLD_SIZE from the built-in launcher)", doc["launcher"])
	}
}

// The binary links the C symbolizer (cgo builds): a crash inside libcuda
// or NCCL prints symbolized C frames.
func TestBinaryLinksCgoSymbolizer(t *testing.T) {
	if out, err := exec.Command("go", "env", "CGO_ENABLED").Output(); err != nil || string(bytes.TrimSpace(out)) != "1" {
		t.Skipf("cgo disabled (%s): the symbolizer is a cgo file", out)
	}
	bin := partbenchBinary(t)
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^\s+dep\s+github.com/ianlancetaylor/cgosymbolizer\s`).Match(out) {
		t.Errorf("binary does not link cgosymbolizer:\n%s", out)
	}
}
