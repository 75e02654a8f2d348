//go:build unix

package rendezvous

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With PB_RV_HELPER set, the test binary is one rank of a separate-process
// run: it joins PB_RV_ADDR as RANK of WORLD_SIZE, prints "joined", waits for
// the session to fail and prints "err: …".
func TestMain(m *testing.M) {
	if os.Getenv("PB_RV_HELPER") != "" {
		os.Exit(rankMain())
	}
	os.Exit(m.Run())
}

func rankMain() int {
	rank, _ := strconv.Atoi(os.Getenv("RANK"))
	size, _ := strconv.Atoi(os.Getenv("WORLD_SIZE"))
	s, err := Join(context.Background(), Options{
		Addr: os.Getenv("PB_RV_ADDR"), Rank: rank, Size: size, ConfigHash: "h",
		Hostname: fmt.Sprintf("node%d", rank), JoinTimeout: 10 * time.Second,
		Heartbeat: 100 * time.Millisecond, LostAfter: time.Second,
	})
	if err != nil {
		fmt.Println("err:", err)
		return 1
	}
	fmt.Println("joined")
	select {
	case <-s.Done():
		fmt.Println("err:", s.Err())
		return 1
	case <-time.After(20 * time.Second):
		fmt.Println("err: none within 20s")
		return 2
	}
}

type rankProc struct {
	cmd   *exec.Cmd
	lines chan string
}

func startRankProcs(t *testing.T, n int) []*rankProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ps := make([]*rankProc, n)
	for r := range ps {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", "PB_RV_HELPER=1", "PB_RV_ADDR="+addr, "RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n))
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &rankProc{cmd: cmd, lines: make(chan string, 16)}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				p.lines <- sc.Text()
			}
			close(p.lines)
		}()
		ps[r] = p
	}
	t.Cleanup(func() {
		for _, p := range ps {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	for r, p := range ps {
		if l := nextLine(t, p, 10*time.Second); l != "joined" {
			t.Fatalf("rank %d: %q", r, l)
		}
	}
	return ps
}

func nextLine(t *testing.T, p *rankProc, bound time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			return "<exited>"
		}
		return l
	case <-time.After(bound):
		return "<nothing within " + bound.String() + ">"
	}
}

// TestKilledProcessDetected kills one rank's process (SIGKILL: no goodbye)
// and checks every survivor reports it, with rank, host and pid, within the
// bound: a dead process on a live host closes its sockets, so detection is
// immediate (≤ 2 s allowed here); a stopped one (SIGSTOP: a hung host) is
// silent and counts as lost after LostAfter (1 s here, ≤ 3 s allowed).
func TestKilledProcessDetected(t *testing.T) {
	for _, tc := range []struct {
		victim int
		sig    syscall.Signal
		bound  time.Duration
		cause  string
	}{
		{2, syscall.SIGKILL, 2 * time.Second, ""},
		{0, syscall.SIGKILL, 2 * time.Second, "connection"},
		{1, syscall.SIGSTOP, 3 * time.Second, "no message for 1s"},
	} {
		t.Run(fmt.Sprintf("rank%d-%v", tc.victim, tc.sig), func(t *testing.T) {
			retryStarved(t, func() bool {
				ps := startRankProcs(t, 4)
				pid := ps[tc.victim].cmd.Process.Pid
				start := time.Now()
				if err := syscall.Kill(pid, tc.sig); err != nil {
					t.Fatal(err)
				}
				want := fmt.Sprintf("lost rank %d (node%d, pid %d)", tc.victim, tc.victim, pid)
				for r, p := range ps {
					if r == tc.victim {
						continue
					}
					l := nextLine(t, p, tc.bound)
					el := time.Since(start)
					if strings.Contains(l, fmt.Sprintf("rank %d (this process) was not running for", r)) {
						return true // a survivor's own process starved (StalledError)
					}
					if !strings.HasPrefix(l, "err: ") || !strings.Contains(l, want) || !strings.Contains(l, tc.cause) {
						t.Fatalf("rank %d: %q, want an error containing %q and %q", r, l, want, tc.cause)
					}
					t.Logf("rank %d after %v: %s", r, el.Round(time.Millisecond), l)
				}
				return false
			})
		})
	}
}

// TestStoppedRankBlamesItself stops a rank (SIGSTOP) past LostAfter and
// resumes it (SIGCONT): the others report it lost, and the resumed rank says
// that it was itself not running, instead of blaming a rank that left
// because of it.
func TestStoppedRankBlamesItself(t *testing.T) {
	for _, victim := range []int{0, 2} {
		t.Run(fmt.Sprintf("rank%d", victim), func(t *testing.T) {
			ps := startRankProcs(t, 4)
			pid := ps[victim].cmd.Process.Pid
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			for r, p := range ps {
				if r == victim {
					continue
				}
				if l := nextLine(t, p, 3*time.Second); !strings.Contains(l, fmt.Sprintf("rank %d", victim)) {
					t.Fatalf("rank %d: %q, want the loss of rank %d", r, l, victim)
				}
			}
			time.Sleep(1500 * time.Millisecond) // stopped ≥ 1.5 s, LostAfter 1 s
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			l := nextLine(t, ps[victim], 3*time.Second)
			want := fmt.Sprintf("rank %d (this process) was not running for", victim)
			if !strings.Contains(l, want) || strings.Contains(l, "lost rank") {
				t.Fatalf("resumed rank %d: %q, want %q and no blame on another rank", victim, l, want)
			}
			t.Logf("resumed rank %d: %s", victim, l)
		})
	}
}
