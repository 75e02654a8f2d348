//go:build unix

package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// spawnHelper runs n ranks of the test binary with the given helper spec.
func spawnHelper(t *testing.T, ctx context.Context, spec string, n int, mod func(*SpawnOptions)) (int, error, time.Duration, string) {
	t.Helper()
	dir := t.TempDir()
	opts := SpawnOptions{
		NProc: n,
		Argv:  []string{os.Args[0], "-test.run=^$"},
		Env:   append(os.Environ(), "PB_LAUNCH_HELPER="+spec, "PB_DIR="+dir, quickExit),
		Grace: 300 * time.Millisecond,
	}
	var out bytes.Buffer
	opts.Stdout, opts.Stderr = &out, &out
	if mod != nil {
		mod(&opts)
	}
	start := time.Now()
	code, err := Spawn(ctx, opts)
	return code, err, time.Since(start), dir
}

func waitFiles(t *testing.T, dir, prefix string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		m, _ := filepath.Glob(filepath.Join(dir, prefix+".*"))
		if len(m) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("ranks did not write %s files within 10s", prefix)
}

func TestSpawnEnv(t *testing.T) {
	t.Setenv("OMPI_COMM_WORLD_RANK", "5")
	t.Setenv("OMPI_COMM_WORLD_SIZE", "8")
	t.Setenv("PMI_RANK", "2")
	t.Setenv("PMI_SIZE", "8")
	t.Setenv("SLURM_PROCID", "7")
	t.Setenv("SLURM_NTASKS", "8")
	code, err, _, dir := spawnHelper(t, context.Background(), "env", 3, nil)
	if code != 0 || err != nil {
		t.Fatalf("code %d err %v", code, err)
	}
	var addr string
	for r := 0; r < 3; r++ {
		b, err := os.ReadFile(filepath.Join(dir, "env."+strconv.Itoa(r)))
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(string(b), "|")
		want := fmt.Sprintf("{Rank:%d Size:3 LocalRank:%d LocalSize:3 Source:env RendezvousAddr:", r, r)
		if !strings.HasPrefix(parts[0], want) || parts[1] != "<nil>" || parts[2] != "" {
			t.Fatalf("rank %d saw %q, want prefix %q, no error, no launcher variables", r, b, want)
		}
		a := strings.Fields(strings.SplitN(parts[0], "RendezvousAddr:", 2)[1])[0]
		if addr != "" && a != addr {
			t.Fatalf("ranks disagree on the rendezvous address: %s vs %s", addr, a)
		}
		addr = a
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") || addr == DefaultRendezvousAddr {
		t.Fatalf("rendezvous address %s: want a free port picked by the launcher", addr)
	}
}

func TestSpawnWorstExit(t *testing.T) {
	for _, tc := range []struct {
		spec string
		code int
		rank int
	}{
		{"0,0,0", 0, -1},
		// rank 1 fails first; rank 3 fails later with a different status.
		{"0,3,0,2@150", 3, 1},
		// a rank killed by a signal beats any exit status: 128+9.
		{"0,3@100,kill9", 137, 2},
	} {
		code, err, el, _ := spawnHelper(t, context.Background(), tc.spec, len(strings.Split(tc.spec, ",")), nil)
		if code != tc.code {
			t.Errorf("%s: code %d (%v), want %d", tc.spec, code, err, tc.code)
			continue
		}
		var se *SpawnError
		if tc.code == 0 {
			if err != nil {
				t.Errorf("%s: unexpected error %v", tc.spec, err)
			}
		} else if !errors.As(err, &se) || se.First.Rank != tc.rank {
			t.Errorf("%s: error %v, want one naming rank %d", tc.spec, err, tc.rank)
		}
		if el > 5*time.Second {
			t.Errorf("%s took %v", tc.spec, el)
		}
	}
}

// Rank 0 freezes; rank 1 stops because its peer is lost (ExitPeerFailed).
// The launcher kills rank 0 after the grace period, and its last line names
// rank 0, the frozen one, not rank 1, its victim.
func TestSpawnKillsStragglersAfterGrace(t *testing.T) {
	code, err, el, _ := spawnHelper(t, context.Background(), "hang,5", 2, nil)
	var se *SpawnError
	if code != ExitPeerFailed || !errors.As(err, &se) || se.Killed != 1 || se.First.Rank != 0 || !se.Frozen || se.Victim.Rank != 1 {
		t.Fatalf("code %d err %v; want 5 naming the frozen rank 0, rank 1 its victim, one rank killed", code, err)
	}
	if !strings.HasPrefix(err.Error(), "launch: rank 0 stopped responding: it did not exit when rank 1 exited with status 5 because a peer was lost") ||
		!strings.Contains(err.Error(), "1 rank(s) killed") {
		t.Fatalf("error %q", err)
	}
	// grace 300 ms plus process start-up; never the hanging rank's 60 s
	if el > 5*time.Second {
		t.Fatalf("took %v", el)
	}
}

func TestSpawnKillsGrandchildren(t *testing.T) {
	code, _, el, dir := spawnHelper(t, context.Background(), "grand,1@300", 2, nil)
	if code != 1 || el > 5*time.Second {
		t.Fatalf("code %d after %v, want 1 soon", code, el)
	}
	b, err := os.ReadFile(filepath.Join(dir, "grand.0"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	deadline := time.Now().Add(3 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d survived the launcher", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func TestSpawnForwardsSignal(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	dir := t.TempDir()
	done := make(chan struct{})
	var code int
	var err error
	go func() {
		defer close(done)
		code, err, _, _ = spawnHelper(t, context.Background(), "waitsig", 2, func(o *SpawnOptions) {
			o.Signals = sigs
			o.Grace = 5 * time.Second
			o.Env = append(o.Env, "PB_DIR="+dir)
		})
	}()
	waitFiles(t, dir, "ready", 2)
	sigs <- syscall.SIGINT
	select {
	case <-done:
	case <-time.After(4 * time.Second): // well under the 5 s grace: the children died of the signal
		t.Fatal("Spawn did not return after SIGINT was forwarded")
	}
	if code != 130 || err == nil {
		t.Fatalf("code %d err %v, want 130 (128+SIGINT)", code, err)
	}
}

func TestSpawnSecondSignalKills(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	dir := t.TempDir()
	done := make(chan struct{})
	var code int
	var err error
	go func() {
		defer close(done)
		code, err, _, _ = spawnHelper(t, context.Background(), "hang", 2, func(o *SpawnOptions) {
			o.Signals = sigs
			o.Grace = time.Minute
			o.Env = append(o.Env, "PB_DIR="+dir)
		})
	}()
	waitFiles(t, dir, "ready", 2)
	sigs <- syscall.SIGTERM
	time.Sleep(100 * time.Millisecond)
	sigs <- syscall.SIGTERM
	select {
	case <-done:
	case <-time.After(4 * time.Second):
		t.Fatal("a second signal did not kill the ranks")
	}
	var se *SpawnError
	if code != 143 || !errors.As(err, &se) || se.Killed != 2 {
		t.Fatalf("code %d err %v, want 143 with 2 ranks killed", code, err)
	}
}

func TestSpawnContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	go func() {
		waitFiles(t, dir, "ready", 2)
		cancel()
	}()
	code, err, el, _ := spawnHelper(t, ctx, "waitsig", 2, func(o *SpawnOptions) {
		o.Env = append(o.Env, "PB_DIR="+dir)
		o.Grace = 5 * time.Second
	})
	if code != 1 || !errors.Is(err, context.Canceled) || el > 4*time.Second {
		t.Fatalf("code %d err %v after %v, want 1 and context.Canceled, promptly", code, err, el)
	}
}

func TestSpawnPrefix(t *testing.T) {
	var out bytes.Buffer
	code, err, _, _ := spawnHelper(t, context.Background(), "say", 2, func(o *SpawnOptions) {
		o.Prefix = true
		o.Stdout = &out
	})
	if code != 0 || err != nil {
		t.Fatal(code, err)
	}
	for _, want := range []string{"[rank 0] hello from 0\n", "[rank 1] hello from 1\n", "[rank 0] partial 0\n", "[rank 1] partial 1\n"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output %q lacks %q", out.String(), want)
		}
	}
}

func TestSpawnStartFailure(t *testing.T) {
	code, err := Spawn(context.Background(), SpawnOptions{NProc: 2, Argv: []string{"/nonexistent/partbench"}, Grace: time.Second})
	if code != 127 || err == nil || !strings.Contains(err.Error(), "starting rank 0") {
		t.Fatalf("code %d err %v", code, err)
	}
	if code, err := Spawn(context.Background(), SpawnOptions{NProc: 0, Argv: []string{"true"}}); code == 0 || err == nil {
		t.Fatal("nproc 0 accepted")
	}
}

// TestSpawnRealSIGINT sends a real SIGINT to a launcher process (as a
// terminal's Ctrl-C would, to the launcher only: the ranks are in their own
// process groups) and expects it forwarded.
func TestSpawnRealSIGINT(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PB_LAUNCH_HELPER=launcher", "PB_LAUNCH_CHILD=waitsig", "PB_DIR="+dir, quickExit)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFiles(t, dir, "ready", 2)
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(4 * time.Second): // under the launcher's 5 s grace
		_ = cmd.Process.Kill()
		t.Fatal("launcher did not exit after SIGINT")
	}
	if c := cmd.ProcessState.ExitCode(); c != 130 {
		t.Fatalf("launcher exit code %d, want 130", c)
	}
}

// After a forwarded signal the ranks get InterruptGrace, not Grace: ranks
// that ignore SIGTERM are killed within the launcher's one-second bound.
func TestSpawnInterruptGraceBoundsTheExit(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	dir := t.TempDir()
	done := make(chan struct{})
	var code int
	var err error
	var signalled time.Time
	go func() {
		defer close(done)
		code, err, _, _ = spawnHelper(t, context.Background(), "hang", 2, func(o *SpawnOptions) {
			o.Signals = sigs
			o.Grace = time.Minute
			o.Env = append(o.Env, "PB_DIR="+dir)
		})
	}()
	waitFiles(t, dir, "ready", 2)
	signalled = time.Now()
	sigs <- syscall.SIGTERM
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ranks that ignore SIGTERM outlived the interrupt grace")
	}
	el := time.Since(signalled)
	t.Logf("Spawn returned %v after the signal (InterruptGrace %v)", el, DefaultInterruptGrace)
	var se *SpawnError
	if code != 143 || !errors.As(err, &se) || se.Killed != 2 {
		t.Fatalf("code %d err %v, want 143 with 2 ranks killed", code, err)
	}
	if el < DefaultInterruptGrace || el > DefaultInterruptGrace+time.Second {
		t.Errorf("returned %v after the signal, want the interrupt grace %v (plus reaping)", el, DefaultInterruptGrace)
	}
}

// Every child of one Spawn gets the same job id; two Spawns get different ones.
func TestSpawnJobID(t *testing.T) {
	ids := map[string]bool{}
	for run := 0; run < 2; run++ {
		_, err, _, dir := spawnHelper(t, context.Background(), "env", 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		var job string
		for r := 0; r < 2; r++ {
			b, err := os.ReadFile(filepath.Join(dir, "env."+strconv.Itoa(r)))
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(strings.SplitN(string(b), "JobID:", 2)[1])[0]
			if !strings.HasPrefix(f, "pb-") || (job != "" && f != job) {
				t.Fatalf("run %d rank %d: job id %q (rank 0: %q)", run, r, f, job)
			}
			job = f
		}
		ids[job] = true
	}
	if len(ids) != 2 {
		t.Fatalf("two launches share a job id: %v", ids)
	}
}
