package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// interruptMargin is the scheduling slack allowed above interruptBound on a
// busy CI machine (two shared cores): a run under -race at load 12 ended
// 1.94 s after SIGTERM, its forced exit at the bound itself waiting for a
// core. A command that ignored the signal would still fail (the test kills
// it after 30 s).
const interruptMargin = time.Second

// signalAfter starts bin with args, sends sig after delay and returns the
// exit code, the time from the signal to the exit, and the output.
func signalAfter(t *testing.T, sig syscall.Signal, delay time.Duration, args ...string) (int, time.Duration, string) {
	t.Helper()
	cmd := exec.Command(partbenchBinary(t), args...)
	cmd.Env = cleanEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		t.Fatalf("%v ended before the signal (exit %d): pick a longer command\n%s", args, cmd.ProcessState.ExitCode(), out.String())
	case <-time.After(delay):
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v still running 30 s after %v\n%s", args, sig, out.String())
	}
	return cmd.ProcessState.ExitCode(), time.Since(sent), out.String()
}

// Every subcommand ends within interruptBound of SIGINT (130) or SIGTERM
// (143), whatever it is doing, and leaves no file in its output directory.
func TestSignalEndsEverySubcommand(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	dir := t.TempDir()
	longSearch := filepath.Join(t.TempDir(), "dense128.toml")
	if err := os.WriteFile(longSearch, []byte(dense128Config), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "config.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		args []string
	}{
		// a search that takes seconds: a 128-layer model on 4,096 GPUs,
		// every fitting candidate (112) re-run on the timeline (12 s of
		// CPU on a 2-core VM; 512 decode steps of tp8pp2 end in half a
		// second now that steady decode steps are extrapolated)
		{"search", syscall.SIGINT, []string{"search", "--config", longSearch, "--nodes", "512", "--full", "200", "--top", "200"}},
		{"search-term", syscall.SIGTERM, []string{"search", "--config", longSearch, "--nodes", "512", "--full", "200", "--top", "200"}},
		// one rank measuring a million iterations
		{"run", syscall.SIGINT, []string{"run", "--config", "test/single-tiny", "--backend", "cpu", "--iterations", "1000000", "--out", dir}},
		{"run-term", syscall.SIGTERM, []string{"--config", "test/single-tiny", "--backend", "cpu", "--iterations", "1000000", "--out", dir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, el, out := signalAfter(t, tc.sig, 700*time.Millisecond, tc.args...)
			t.Logf("exit %d %v after %v", code, el.Round(time.Millisecond), tc.sig)
			if code != 128+int(tc.sig) || !strings.Contains(out, "interrupted by") {
				t.Errorf("exit %d, want %d and a message saying so:\n%s", code, 128+int(tc.sig), out)
			}
			if el > interruptBound+interruptMargin {
				t.Errorf("ended %v after %v, bound %v", el, tc.sig, interruptBound)
			}
		})
	}
	// A named pipe as --config: either refused at once as not a regular
	// file, or (blocked in open, no writer) ended by the signal.
	t.Run("fifo-config", func(t *testing.T) {
		cmd := exec.Command(partbenchBinary(t), "model", "--dry-run", "--config", fifo)
		cmd.Env = cleanEnv()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
			if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(out.String(), fifo) {
				t.Fatalf("exit %d, want a refusal naming %s:\n%s", cmd.ProcessState.ExitCode(), fifo, out.String())
			}
			return
		case <-time.After(700 * time.Millisecond):
		}
		_ = cmd.Process.Signal(syscall.SIGINT)
		sent := time.Now()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("a config read from a named pipe ignored SIGINT")
		}
		if el := time.Since(sent); cmd.ProcessState.ExitCode() != 130 || el > interruptBound+interruptMargin {
			t.Fatalf("exit %d %v after SIGINT, want 130 within %v:\n%s", cmd.ProcessState.ExitCode(), el, interruptBound, out.String())
		}
	})
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "config.toml" {
			t.Errorf("an interrupted command left %s", e.Name())
		}
	}
}

// SIGINT to the built-in launcher: 130 within the bound, no rank left behind.
func TestLauncherSIGINTExits130(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	dir := t.TempDir()
	code, el, out := signalAfter(t, syscall.SIGINT, 3*time.Second, "run", "--nproc", "4", "--config", "test/tp2pp2-tiny",
		"--backend", "cpu", "--iterations", "1000000", "--out", dir, "--join-timeout", "10s")
	t.Logf("launcher exit %d %v after SIGINT", code, el.Round(time.Millisecond))
	if code != 130 {
		t.Errorf("exit %d, want 130:\n%s", code, out)
	}
	if el > interruptBound+interruptMargin {
		t.Errorf("ended %v after SIGINT, bound %v", el, interruptBound)
	}
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("ranks still running: %v", pids)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("an interrupted run left %v", ents)
	}
}

// The launcher checks flags and config once: one line, no rank started.
func TestLauncherRefusesBadInputOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nproc", "4", "--rendezvous", "127.0.0.1:70000"}, `--rendezvous "127.0.0.1:70000": port "70000" is not a number from 1 to 65535`},
		{[]string{"--nproc", "4", "--rendezvous", "127.0.0.1:0"}, `--rendezvous "127.0.0.1:0": port 0`},
		{[]string{"--nproc", "0"}, "--nproc 0: must be at least 1"},
		{[]string{"--nproc", "-1"}, "--nproc -1: must be at least 1"},
		{[]string{"--nproc", "2"}, "--nproc 2: tp2pp2-tiny needs tp × pp = 4 ranks"},
		{[]string{"--nproc", "64", "--config", "/nonexistent.toml"}, "/nonexistent.toml"},
		{[]string{"--nproc", "4", "--out", notDir}, "--output-dir " + notDir + ": exists and is not a directory"},
		{[]string{"--nproc", "4", "--out", filepath.Join(notDir, "sub")}, "--output-dir " + filepath.Join(notDir, "sub") + ": cannot create the directory"},
	} {
		args := append([]string{"run", "--config", "test/tp2pp2-tiny", "--backend", "cpu"}, tc.args...)
		r := runCmd(t, 30*time.Second, cleanEnv(), partbenchBinary(t), args...)
		lines := strings.Count(strings.TrimSpace(r.out), "\n") + 1
		if r.code == 0 || lines != 1 || !strings.Contains(r.out, tc.want) || strings.Contains(r.out, "[rank") {
			t.Errorf("%v: exit %d, %d lines %q; want one line containing %q", tc.args, r.code, lines, r.out, tc.want)
		}
		if r.elapse > 10*time.Second {
			t.Errorf("%v: took %v", tc.args, r.elapse)
		}
	}
}

// Ranks under a launcher (torchrun-style here, as under mpirun): rank 0 with
// an unwritable --out does not run and every rank learns why at once, not
// after the join timeout; a bad --rendezvous port is refused by each rank.
func TestRankRefusesUnwritableOut(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmds, outs := startRanks(t, 4, func(int) []string {
		return []string{"--config", "test/tp2pp2-tiny", "--backend", "cpu", "--out", notDir, "--join-timeout", "60s"}
	})
	codes := waitAll(t, cmds, 30*time.Second)
	el := time.Since(start)
	for r, c := range codes {
		if c == 0 || !strings.Contains(outs[r].String(), "--output-dir "+notDir+": exists and is not a directory") {
			t.Errorf("rank %d: exit %d %q; want the --out error", r, c, outs[r].String())
		}
	}
	if el > 15*time.Second { // the join timeout is 60 s
		t.Errorf("ranks ended after %v", el)
	}
	r := runCmd(t, 30*time.Second, cleanEnv("RANK=1", "WORLD_SIZE=4"), partbenchBinary(t), "--config", "test/tp2pp2-tiny", "--backend", "cpu",
		"--out", "", "--rendezvous", "127.0.0.1:0")
	if r.code == 0 || !strings.Contains(r.out, "port 0 would let rank 0 pick a port") {
		t.Errorf("--rendezvous 127.0.0.1:0 on a rank: exit %d %q", r.code, r.out)
	}
}

// A second job whose rank 0 finds the port busy fails at once, naming the
// port and the job holding it.
func TestSecondJobOnBusyPort(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	addr := freeAddr(t)
	args := []string{"--config", "test/tp2pp2-tiny", "--backend", "cpu", "--out", "", "--rendezvous", addr, "--join-timeout", "20s"}
	holder := exec.Command(bin, args...)
	holder.Env = cleanEnv("RANK=0", "WORLD_SIZE=4", "PARTBENCH_JOB_ID=jobA")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	time.Sleep(time.Second) // rank 0 of job A listens and waits for its ranks
	r := runCmd(t, 30*time.Second, cleanEnv("RANK=0", "WORLD_SIZE=4", "PARTBENCH_JOB_ID=jobB"), bin, args...)
	want := fmt.Sprintf("rank 0 cannot listen on %s for job jobB", addr)
	if r.code == 0 || !strings.Contains(r.out, want) || !strings.Contains(r.out, "held by rank 0 of partbench job jobA") {
		t.Fatalf("exit %d %q; want %q naming job jobA", r.code, r.out, want)
	}
	if r.elapse > 5*time.Second {
		t.Errorf("took %v; the join timeout is 20 s", r.elapse)
	}
}

// dense128Config is a 128-layer model (hidden 16,384, 128 heads, ffn
// 53,248) serving 4,096 sequences of 4,096 tokens on dgx-h100 nodes: a
// search over 4,096 GPUs of it has 112 candidates that fit, each a
// timeline of seconds to re-run.
const dense128Config = `version = 1
name = "dense128"

[model]
name = "dense128"
layers = 128
hidden = 16384
heads = 128
kv_heads = 128
head_dim = 128
ffn = 53248
gated_mlp = true
vocab = 128256
embeddings = true
lm_head = true
dtype = "bf16"

[workload]
batch = 4096
context = 4096
output_tokens = 256

[parallel]
tp = 8
pp = 2
microbatches = 1

[hardware]
preset = "h100-sxm"

[topology]
name = "dgx-h100"
nodes = 2
gpus_per_node = 8

[topology.intra_node]
class = "nvlink"
name = "NVLink 4 via NVSwitch"
bytes_per_s = 450e9
latency_s = 1.0e-6
nvswitch = true

[topology.inter_node]
class = "network"
name = "400 Gb/s network"
bytes_per_s = 50e9
latency_s = 5.0e-6

[run]
warmup = 1
iterations = 1
seed = 1
`
