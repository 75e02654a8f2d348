package tcpcomm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/shmcomm"
)

func TestParseSpin(t *testing.T) {
	for _, tc := range []struct {
		in     string
		auto   bool
		mode   shmcomm.SpinMode
		length time.Duration
		err    string
	}{
		{in: "", auto: true},
		{in: " Auto ", auto: true},
		{in: "off", mode: shmcomm.SpinOff},
		{in: "adaptive", mode: shmcomm.SpinAdaptive},
		{in: "always:50us", mode: shmcomm.SpinAlways, length: 50 * time.Microsecond},
		{in: "adaptive:200us", mode: shmcomm.SpinAdaptive, length: 200 * time.Microsecond},
		{in: "sometimes", err: `PARTBENCH_SHM_SPIN: unknown spin policy "sometimes" (want auto, off, adaptive or always`},
		{in: "off:20us", err: `PARTBENCH_SHM_SPIN: "off:20us": a spin's length goes with adaptive or always`},
		{in: "always:-1ms", err: "as a duration from 1ns to 1s"},
		{in: "always:2s", err: "as a duration from 1ns to 1s"},
	} {
		c, err := shmcomm.ParseSpin(SpinEnv, tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case c.Auto != tc.auto || (!c.Auto && (c.Mode != tc.mode || c.Length != tc.length)):
			t.Errorf("%q: %+v, want auto %v, mode %v, length %v", tc.in, c, tc.auto, tc.mode, tc.length)
		}
	}
}

// TestSpinFollowsPlacement: under auto a host's ranks spin only while they
// are no more than the CPUs they may run on together (the union of their
// affinity masks); a policy that is chosen is kept whatever the placement.
func TestSpinFollowsPlacement(t *testing.T) {
	// masks: CPUs {0,1} = "03", {2,3} = "0c", {0..9} = "ff03"
	for _, tc := range []struct {
		masks []string
		cpus  int
		mode  shmcomm.SpinMode
	}{
		{[]string{"03", "03"}, 2, shmcomm.SpinAdaptive},             // 2 ranks on 2 CPUs
		{[]string{"03", "03", "03"}, 2, shmcomm.SpinOff},            // 3 on 2
		{[]string{"03", "0c", "03", "0c"}, 4, shmcomm.SpinAdaptive}, // pinned pairs: 4 on 4
		{[]string{"01", "01"}, 1, shmcomm.SpinOff},                  // both pinned to CPU 0
		{[]string{"ff03", "01", "02"}, 10, shmcomm.SpinAdaptive},
	} {
		if got := hostCPUs(tc.masks); got != tc.cpus {
			t.Errorf("masks %v: %d CPUs, want %d", tc.masks, got, tc.cpus)
		}
		mode, _, why := spinPolicy(shmcomm.SpinChoice{Auto: true}, len(tc.masks), hostCPUs(tc.masks))
		if mode != tc.mode || !strings.Contains(why, "auto") {
			t.Errorf("masks %v: spin %v (%s), want %v", tc.masks, mode, why, tc.mode)
		}
		if mode, length, _ := spinPolicy(shmcomm.SpinChoice{Mode: shmcomm.SpinAlways, Length: time.Millisecond}, len(tc.masks), tc.cpus); mode != shmcomm.SpinAlways || length != time.Millisecond {
			t.Errorf("masks %v: a chosen policy became %v %v", tc.masks, mode, length)
		}
	}
	// cpuMask round-trips this process's CPUs
	if got, want := hostCPUs([]string{cpuMask()}), len(usableCPUs()); got != want || want == 0 {
		t.Errorf("this process: %d CPUs through its mask, %d usable", got, want)
	}
}

// TestSpinPolicyOfAWorld: goroutine ranks of one process share its CPUs, so
// a world of more ranks than that does not spin, and one of no more does.
func TestSpinPolicyOfAWorld(t *testing.T) {
	if !shmcomm.Supported {
		t.Skip("no shared memory on this platform")
	}
	cpus := len(usableCPUs())
	for _, n := range []int{2, cpus + 1} {
		if n > 8 {
			continue // a machine of many CPUs: the case of more ranks is too big for a unit test
		}
		cs := shmWorld(t, n)
		want := "adaptive (auto: "
		if n > cpus {
			want = "off (auto: "
		}
		if got := cs[0].SpinPolicy(); !strings.HasPrefix(got, want) {
			t.Errorf("%d ranks on %d CPUs: spin %q, want %q…", n, cpus, got, want)
		}
	}
	t.Setenv(SpinEnv, "always:30us")
	if got := shmWorld(t, 2)[1].SpinPolicy(); !strings.HasPrefix(got, "always (PARTBENCH_SHM_SPIN") {
		t.Errorf("with %s=always:30us the spin is %q", SpinEnv, got)
	}
	t.Setenv(SpinEnv, "bogus")
	_, errs := worldErrs(t, 2, func(int) Options {
		return Options{ListenHost: "127.0.0.1", Transport: TransportSHM, ShmDir: t.TempDir()}
	})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "PARTBENCH_SHM_SPIN") {
		t.Errorf("with %s=bogus New returned %v, want an error naming the variable", SpinEnv, errs[0])
	}
}

// TestWaitLogEnv: PARTBENCH_SHM_WAITLOG names an existing folder or is
// refused with the variable, the value and what it wants; each rank writes
// its waits for each shared-memory peer there when it closes.
func TestWaitLogEnv(t *testing.T) {
	if !shmcomm.Supported {
		t.Skip("no shared memory on this platform")
	}
	missing := filepath.Join(t.TempDir(), "missing")
	t.Setenv(WaitLogEnv, missing)
	if _, err := waitLogDir(); err == nil || !strings.Contains(err.Error(), WaitLogEnv) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "not an existing folder") {
		t.Errorf("missing folder: %v", err)
	}
	dir := t.TempDir()
	t.Setenv(WaitLogEnv, dir)
	comms := shmWorld(t, 2)
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // rank 1 waits for what rank 0 sends after 10 ms
		defer wg.Done()
		got := pexec.F32{0}
		if err := comms[1].Recv(ctx, got, 0); err != nil || got[0] != 7 {
			t.Errorf("rank 1 received %v, %v; want 7", got, err)
		}
	}()
	time.Sleep(10 * time.Millisecond)
	if err := comms[0].Send(ctx, pexec.F32{7}, 1); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, c := range comms {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// rank 0 did not wait (a header alone); rank 1 waited at least once
	for _, tc := range []struct {
		name     string
		minLines int
	}{{"waits-r0-p1.tsv", 1}, {"waits-r1-p0.tsv", 2}} {
		b, err := os.ReadFile(filepath.Join(dir, tc.name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if !strings.HasPrefix(lines[0], "start_unix_ns\twait_ns\t") || len(lines) < tc.minLines {
			t.Errorf("%s: %q, want a wait log of at least %d lines", tc.name, b, tc.minLines)
		}
	}
}
