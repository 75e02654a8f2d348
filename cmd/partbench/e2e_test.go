package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The end-to-end tests run the real binary: under Open MPI's mpirun, under
// the built-in launcher, and as hand-started ranks that fail on purpose.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func partbenchBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "partbench-e2e-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "partbench")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func mpirun(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skipf("mpirun not installed (make test installs openmpi-bin): %v", err)
	}
	return p
}

// cleanEnv drops launcher variables this test process may have inherited.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OMPI_") || strings.HasPrefix(k, "PMI") || strings.HasPrefix(k, "SLURM_") ||
			k == "RANK" || k == "WORLD_SIZE" || k == "LOCAL_RANK" || k == "LOCAL_WORLD_SIZE" || k == "MASTER_ADDR" || k == "MASTER_PORT" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

type runResult struct {
	code   int
	out    string
	elapse time.Duration
}

func runCmd(t *testing.T, timeout time.Duration, env []string, name string, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	r := runResult{out: out.String(), elapse: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not finish within %v:\n%s", name, args, timeout, r.out)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func readResults(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// checkRunDoc asserts a run's counts agreed with the Program exactly.
func checkRunDoc(t *testing.T, doc map[string]any, ranks int) {
	t.Helper()
	if doc["schema"] != "partbench.run/v1" {
		t.Fatalf("schema %v", doc["schema"])
	}
	if p, ok := doc["problems"].([]any); ok && len(p) > 0 {
		t.Fatalf("count problems: %v", p)
	}
	m := doc["measurement"].(map[string]any)
	if got := len(m["ranks"].([]any)); got != ranks {
		t.Fatalf("%d rank results, want %d", got, ranks)
	}
	exact := 0
	for _, r := range doc["comparison"].([]any) {
		row := r.(map[string]any)
		if row["exact"] == true {
			exact++
			if row["flag"] != nil && row["flag"] != "" {
				t.Errorf("exact row %v flagged: %v", row["metric"], row["flag"])
			}
		}
	}
	if exact < 7 {
		t.Fatalf("only %d exact rows", exact)
	}
}

func TestMPIRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	mpi, bin := mpirun(t), partbenchBinary(t)
	for _, tc := range []struct {
		config string
		np     int
	}{{"test/tp8pp2-tiny", 16}, {"test/layerwise16-tiny", 16}, {"test/tp2pp2-tiny", 4}} {
		dir := t.TempDir()
		r := runCmd(t, 3*time.Minute, cleanEnv(), mpi, "--allow-run-as-root", "--oversubscribe", "-np", fmt.Sprint(tc.np),
			bin, "--config", tc.config, "--backend", "cpu", "--out", dir, "--rendezvous", freeAddr(t))
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", tc.config, r.code, r.out)
		}
		if strings.Count(r.out, "Measured vs modeled") != 1 {
			t.Errorf("%s: want exactly one report (rank 0 only):\n%s", tc.config, r.out)
		}
		checkRunDoc(t, readResults(t, dir), tc.np)
	}
}

func TestMPIRunWrongNP(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	mpi, bin := mpirun(t), partbenchBinary(t)
	// tp8pp2-tiny needs 16 ranks; 4 are started.
	r := runCmd(t, time.Minute, cleanEnv(), mpi, "--allow-run-as-root", "--oversubscribe", "-np", "4",
		bin, "--config", "test/tp8pp2-tiny", "--backend", "cpu", "--out", "", "--join-timeout", "20s", "--rendezvous", freeAddr(t))
	if r.code == 0 || !strings.Contains(r.out, "world size mismatch") {
		t.Fatalf("exit %d, want a world size mismatch:\n%s", r.code, r.out)
	}
	if r.elapse > 30*time.Second {
		t.Fatalf("took %v", r.elapse)
	}
}

func TestLocalLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.json")
	r := runCmd(t, 2*time.Minute, cleanEnv(), bin, "run", "--nproc", "4", "--config", "test/pp4-tiny", "--backend", "cpu", "--out", dir, "--trace", trace)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.out)
	}
	checkRunDoc(t, readResults(t, dir), 4)

	// The trace holds the measured and the modeled timeline under the same op names.
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Ph   string         `json:"ph"`
			Name string         `json:"name"`
			Pid  int            `json:"pid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	names := map[int]map[string]bool{}
	procs := map[int]string{}
	finishes := map[int]int{}
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "M":
			if e.Name == "process_name" {
				procs[e.Pid] = e.Args["name"].(string)
			}
		case "X":
			if names[e.Pid] == nil {
				names[e.Pid] = map[string]bool{}
			}
			names[e.Pid][e.Name] = true
		case "f":
			finishes[e.Pid]++
		}
	}
	if len(procs) != 2 || procs[1] != "pp4-tiny (measured)" || procs[2] != "pp4-tiny (modeled)" {
		t.Fatalf("processes %v", procs)
	}
	for n := range names[1] {
		if !names[2][n] {
			t.Errorf("measured op %q has no modeled twin", n)
		}
	}
	// pp4-tiny, 4 micro-batches, output_tokens − 1 = 3 decode steps, all
	// recorded. Received and so paired send→recv: 3 boundary transfers per
	// micro-batch in prefill and in each step (4 × 3 × 4 = 48), and the token
	// returns received in the 3 steps (3 × 4 = 12; the last step's go to the
	// iteration's drain, which is not an op of the Program): 60 flows.
	if finishes[1] != 60 {
		t.Errorf("measured flows %d, want 60", finishes[1])
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startRanks starts size ranks by hand (torchrun-style variables), each with
// its own arguments from argsOf.
func startRanks(t *testing.T, size int, argsOf func(rank int) []string) ([]*exec.Cmd, []*bytes.Buffer) {
	t.Helper()
	bin := partbenchBinary(t)
	addr := freeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for r := 0; r < size; r++ {
		cmd := exec.Command(bin, argsOf(r)...)
		cmd.Env = cleanEnv(fmt.Sprintf("RANK=%d", r), fmt.Sprintf("WORLD_SIZE=%d", size), "MASTER_ADDR="+host, "MASTER_PORT="+port)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	return cmds, outs
}

// waitAll waits for every rank, failing the test if any outlives the bound.
func waitAll(t *testing.T, cmds []*exec.Cmd, bound time.Duration) []int {
	t.Helper()
	codes := make([]int, len(cmds))
	done := make(chan int, len(cmds))
	for i, c := range cmds {
		go func(i int, c *exec.Cmd) {
			err := c.Wait()
			codes[i] = 0
			if ee, ok := err.(*exec.ExitError); ok {
				codes[i] = ee.ExitCode()
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					codes[i] = 128 + int(ws.Signal())
				}
			}
			done <- i
		}(i, c)
	}
	deadline := time.After(bound)
	for range cmds {
		select {
		case <-done:
		case <-deadline:
			for _, c := range cmds {
				c.Process.Kill()
			}
			t.Fatalf("ranks still running after %v", bound)
		}
	}
	return codes
}

func TestMismatchedConfigFailsEveryRank(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	// Rank 3 runs a config that differs in one value (the seed).
	other := filepath.Join(t.TempDir(), "other.toml")
	b, err := os.ReadFile("../../configs/test/tp2pp2-tiny.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte(strings.Replace(string(b), "seed = 7", "seed = 8", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmds, outs := startRanks(t, 4, func(r int) []string {
		cfg := "test/tp2pp2-tiny"
		if r == 3 {
			cfg = other
		}
		return []string{"--config", cfg, "--backend", "cpu", "--out", "", "--join-timeout", "20s"}
	})
	codes := waitAll(t, cmds, 40*time.Second)
	for r, c := range codes {
		if c == 0 || !strings.Contains(outs[r].String(), "rank 3") || !strings.Contains(outs[r].String(), "config") {
			t.Errorf("rank %d: exit %d, output %q; want a failure naming rank 3's config", r, c, outs[r].String())
		}
	}
}

func TestUnreachableRendezvous(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	// Rank 1 of 4 dials a port nobody listens on.
	bin := partbenchBinary(t)
	addr := freeAddr(t)
	start := time.Now()
	r := runCmd(t, 30*time.Second, cleanEnv("RANK=1", "WORLD_SIZE=4"), bin, "--config", "test/tp2pp2-tiny", "--backend", "cpu",
		"--out", "", "--rendezvous", addr, "--join-timeout", "3s")
	if r.code == 0 || !strings.Contains(r.out, addr) || strings.Count(strings.TrimSpace(r.out), "\n") > 0 {
		t.Fatalf("exit %d output %q; want one line naming %s", r.code, r.out, addr)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("took %v with a 3 s join timeout", time.Since(start))
	}
}

func TestKilledRankEndsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	dir := t.TempDir()
	cmds, outs := startRanks(t, 4, func(int) []string {
		return []string{"--config", "test/tp2pp2-tiny", "--backend", "cpu", "--iterations", "1000000", "--out", dir, "--join-timeout", "10s"}
	})
	// Well into the measured iterations on an idle machine; on a loaded one the
	// kill may land during the join, which the 10 s join timeout bounds too.
	time.Sleep(2 * time.Second)
	if err := cmds[2].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	codes := waitAll(t, cmds, 30*time.Second)
	t.Logf("all ranks ended %v after the kill", time.Since(killed))
	for r, c := range codes {
		if r == 2 {
			continue
		}
		if c == 0 || !strings.Contains(outs[r].String(), "rank 2") {
			t.Errorf("rank %d: exit %d, output %q; want a failure naming rank 2", r, c, outs[r].String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "results.json")); err == nil {
		t.Error("a failed run left results.json")
	}
}

func TestSIGINTToLauncherEndsAllRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--nproc", "4", "--config", "test/tp2pp2-tiny", "--backend", "cpu", "--iterations", "1000000", "--out", dir, "--join-timeout", "10s")
	cmd.Env = cleanEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	codes := waitAll(t, []*exec.Cmd{cmd}, 30*time.Second)
	if codes[0] == 0 {
		t.Fatalf("launcher exited 0 after SIGINT:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "results.json")); err == nil {
		t.Error("an interrupted run left results.json")
	}
	// No rank outlives the launcher: no process's command line names the run's directory.
	if pids := processesMentioning(t, dir); len(pids) > 0 {
		t.Errorf("ranks still running: %v", pids)
	}
}

func TestBadInputExitsNonZero(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	bin := partbenchBinary(t)
	for _, args := range [][]string{
		{"model", "--dry-run", "--config", "nope.toml"},
		{"model", "--dry-run", "--format", "yaml"},
		{"--config", "test/tp2pp2-tiny"}, // no GPU driver here: asks for --backend cpu
		{"run", "--config", "test/tp2pp2-tiny", "--backend", "tpu"},
	} {
		r := runCmd(t, 30*time.Second, cleanEnv(), bin, args...)
		if r.code == 0 || !strings.HasPrefix(r.out, "partbench: ") {
			t.Errorf("%v: exit %d output %q", args, r.code, r.out)
		}
	}
}

// processesMentioning lists the pids whose command line contains s, from /proc.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("need /proc to look for stray ranks: %v", err)
	}
	var pids []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
