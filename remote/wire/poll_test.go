package wire

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partbench/partbench/exec/shmcomm"
)

func TestDecidePoll(t *testing.T) {
	auto := shmcomm.SpinChoice{Auto: true}
	always := shmcomm.SpinChoice{Mode: shmcomm.SpinAlways}
	for _, tc := range []struct {
		c           shmcomm.SpinChoice
		cpus, procs int
		mode        shmcomm.SpinMode
		length      time.Duration
		why         string
	}{
		// auto: off below PollAutoCPUs (4) CPUs, adaptive for PollFor from it.
		{auto, 2, 2, shmcomm.SpinOff, 0, "auto: 2 CPUs, GOMAXPROCS 2, fewer than 4"},
		{auto, 3, 3, shmcomm.SpinOff, 0, "fewer than 4"},
		{auto, 4, 4, shmcomm.SpinAdaptive, PollFor, "auto: 4 CPUs, GOMAXPROCS 4"},
		{auto, 64, 8, shmcomm.SpinAdaptive, PollFor, "auto: 64 CPUs, GOMAXPROCS 8"},
		// A chosen mode is kept, with PollFor when no length is given ...
		{always, 2, 2, shmcomm.SpinAlways, PollFor, "X"},
		{shmcomm.SpinChoice{Mode: shmcomm.SpinAdaptive, Length: 20 * time.Microsecond}, 2, 2, shmcomm.SpinAdaptive, 20 * time.Microsecond, "X"},
		{shmcomm.SpinChoice{Mode: shmcomm.SpinOff}, 8, 8, shmcomm.SpinOff, 0, "X"},
		// ... except where one CPU or one P would be held by the spin.
		{always, 1, 1, shmcomm.SpinOff, 0, "1 CPUs, GOMAXPROCS 1: a spinning read would hold the only one"},
		{always, 8, 1, shmcomm.SpinOff, 0, "GOMAXPROCS 1"},
		{auto, 1, 8, shmcomm.SpinOff, 0, "1 CPUs"},
	} {
		p := decidePoll(tc.c, "X", tc.cpus, tc.procs)
		if p.Mode != tc.mode || p.Length != tc.length || !strings.Contains(p.Why, tc.why) {
			t.Errorf("%+v on %d CPUs, GOMAXPROCS %d: %+v, want %v for %v, why containing %q", tc.c, tc.cpus, tc.procs, p, tc.mode, tc.length, tc.why)
		}
	}
}

// TestResolvePoll: a field's value wins over PollEnv; bad values are
// refused naming where they came from, the value and what is allowed.
func TestResolvePoll(t *testing.T) {
	t.Setenv(PollEnv, "sometimes")
	if _, err := ResolvePoll("client: Poll", ""); err == nil || !strings.Contains(err.Error(), `PARTBENCH_TCP_POLL: unknown spin policy "sometimes" (want auto, off, adaptive or always`) {
		t.Errorf("%s=sometimes: %v, want it refused by name", PollEnv, err)
	}
	if p, err := ResolvePoll("client: Poll", "off"); err != nil || p.Mode != shmcomm.SpinOff {
		t.Errorf("the field's off over a bad %s: %+v, %v", PollEnv, p, err)
	}
	if _, err := ResolvePoll("server: Poll", "always:5s"); err == nil || !strings.Contains(err.Error(), `server: Poll: "always:5s": a spin's length goes with adaptive or always, as a duration from 1ns to 1s`) {
		t.Errorf("always:5s: %v, want the length refused naming the field", err)
	}
	t.Setenv(PollEnv, "always:30us")
	p, err := ResolvePoll("client: Poll", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode == shmcomm.SpinAlways && (p.Length != 30*time.Microsecond || p.Why != PollEnv) {
		t.Errorf("%s=always:30us: %+v", PollEnv, p)
	}
}

// pollPair is a loopback TCP connection: r reads by p (a *pollConn), w is
// the plain other end.
func pollPair(t *testing.T, p Poll) (r *pollConn, w *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ln = p.Listener(ln)
	done := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		done <- c
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); d.Close() })
	pc, ok := a.(*pollConn)
	if !ok {
		t.Fatalf("an accepted connection under %v is a %T, want *pollConn", p, a)
	}
	return pc, d.(*net.TCPConn)
}

func always(length time.Duration) Poll {
	return Poll{Mode: shmcomm.SpinAlways, Length: length, Why: "test"}
}

// TestPollGivesUpAtBudget: a read with nothing to read spins for its
// budget, then sleeps in the network poller; the data sent only once it
// slept is read then. Were the spin unbounded the peer would never send.
func TestPollGivesUpAtBudget(t *testing.T) {
	const budget = 2 * time.Millisecond
	r, w := pollPair(t, always(budget))
	slept := make(chan struct{})
	var spun time.Duration
	t0 := time.Now()
	r.slept = func() { spun = time.Since(t0); close(slept) }
	go func() {
		select {
		case <-slept:
			w.Write([]byte("late"))
		case <-time.After(10 * time.Second):
			w.Write([]byte("none")) // the spin did not give up: fail below
		}
	}()
	b := make([]byte, 8)
	n, err := r.Read(b)
	if err != nil || string(b[:n]) != "late" {
		t.Fatalf("read %q, %v; want \"late\", sent once the spin gave up", b[:n], err)
	}
	if spun < budget {
		t.Errorf("the spin gave up after %v, before its budget of %v", spun, budget)
	}
}

// TestPollReadsWhatArrives: data that comes while the read spins is read
// by the spin (it never sleeps), in order and whole.
func TestPollReadsWhatArrives(t *testing.T) {
	r, w := pollPair(t, always(time.Second))
	r.slept = func() { t.Error("the spin slept with data on its way") }
	go func() {
		time.Sleep(time.Millisecond)
		w.Write([]byte("0123456789"))
	}()
	got := make([]byte, 10)
	if _, err := io.ReadFull(r, got); err != nil || string(got) != "0123456789" {
		t.Fatalf("read %q, %v", got, err)
	}
}

// TestPollDeadlineFiresWhileSpinning: a read deadline that passes, or one
// set in the past by another goroutine (how the client's context ends a
// call), ends a spinning read with the plain read's timeout error, long
// before the spin's budget of a second; the spin never got to sleep.
func TestPollDeadlineFiresWhileSpinning(t *testing.T) {
	for _, how := range []string{"passes", "set in the past"} {
		t.Run(how, func(t *testing.T) {
			r, _ := pollPair(t, always(time.Second))
			r.slept = func() { t.Error("the spin ran to its budget past the deadline") }
			if how == "passes" {
				r.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			} else {
				time.AfterFunc(20*time.Millisecond, func() { r.SetDeadline(time.Unix(1, 0)) })
			}
			_, err := r.Read(make([]byte, 8))
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) || !strings.HasPrefix(err.Error(), "read tcp ") {
				t.Fatalf("read past its deadline: %v, want the plain read's timeout", err)
			}
		})
	}
}

// TestPollSaysWhatAPlainReadSays: end of stream and a reset peer come out
// of a spinning read as out of a plain one (the same error, text and all).
func TestPollSaysWhatAPlainReadSays(t *testing.T) {
	for _, how := range []string{"closed", "reset"} {
		t.Run(how, func(t *testing.T) {
			var errs [2]string
			for i, p := range []string{"spinning", "plain"} {
				r, w := pollPair(t, always(time.Second))
				var c net.Conn = r
				if i == 1 {
					c = r.TCPConn // the plain read
				}
				go func() {
					time.Sleep(2 * time.Millisecond)
					if how == "reset" {
						w.SetLinger(0) // close with a RST
					}
					w.Close()
				}()
				_, err := c.Read(make([]byte, 8))
				switch {
				case how == "closed" && err != io.EOF:
					t.Errorf("%v: read from a closed peer: %v, want io.EOF", p, err)
				case how == "reset" && !errors.Is(err, syscall.ECONNRESET):
					t.Errorf("%v: read from a reset peer: %v, want ECONNRESET", p, err)
				}
				if err != nil {
					errs[i] = strings.NewReplacer(r.LocalAddr().String(), "L", r.RemoteAddr().String(), "R").Replace(err.Error())
				}
			}
			if errs[0] != errs[1] {
				t.Errorf("spinning read: %q, plain read: %q", errs[0], errs[1])
			}
		})
	}
}

// TestPollConnLeavesOthers: a policy that never spins, or a connection
// that is not TCP, is returned as it is.
func TestPollConnLeavesOthers(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := always(time.Millisecond).Conn(a); got != a {
		t.Errorf("a pipe under always: %T, want it unwrapped", got)
	}
	r, _ := pollPair(t, always(time.Millisecond))
	for _, p := range []Poll{{}, {Mode: shmcomm.SpinOff, Length: time.Millisecond}} {
		if got := p.Conn(r.TCPConn); got != net.Conn(r.TCPConn) {
			t.Errorf("a TCP connection under %+v: %T, want it unwrapped", p, got)
		}
	}
}
