package wire

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/partbench/partbench/exec/shmcomm"
)

// PollEnv sets how a raw-TCP connection's reads wait, on the client (for a
// step's reply) and on the server (for the next request), unless
// ClientConfig.Poll or ServerConfig.Poll says: auto (the default: off
// where the process may run on fewer than PollAutoCPUs CPUs, adaptive
// otherwise), off, adaptive or always, the last two optionally with a
// spin's length from 1ns to 1s (adaptive:50us; PollFor when not given).
// The policy is the shared-memory wait's (PARTBENCH_SHM_SPIN,
// exec/shmcomm.Spin): a read with nothing to read spins on non-blocking
// reads for at most the length, then sleeps in the network poller as
// before; adaptive spins while most of the connection's recent spins were
// met, and one read in PollProbeEvery otherwise. No read spins where
// GOMAXPROCS or the process's CPUs are 1, whatever the policy.
const PollEnv = "PARTBENCH_TCP_POLL"

// PollFor is a read's spin length when the policy gives none: a step's
// reply between two processes that both run (10–16 µs on the 2-core VM of
// docs/measurements/remote-loopback.md, ninth session) with room for
// the client's own work between steps; a spin that misses costs this.
const PollFor = 30 * time.Microsecond

// PollProbeEvery: while a connection's spins fail, one read in this many
// still spins (adaptive), to notice when they would be met again. It is
// rarer than the shared-memory wait's (shmcomm.ProbeEvery, 16): a probe
// that fails makes its step slow by the spin, and one read in 16 is
// more than the 1 % of steps a p99 looks at.
const PollProbeEvery = 256

// PollAutoCPUs is the fewest CPUs a process may run on for auto to spin: a
// client and a loopback server that both spin hold two CPUs, and with
// fewer than four nothing else the host runs would find one
// (docs/measurements/remote-loopback.md, ninth session).
const PollAutoCPUs = 4

// Poll is a raw-TCP connection's read policy. The zero value never spins.
type Poll struct {
	Mode   shmcomm.SpinMode
	Length time.Duration // a spin's length; 0 (and under SpinOff): no spin
	Why    string        // how it was decided
}

// spins is whether a read may spin under p.
func (p Poll) spins() bool { return p.Mode != shmcomm.SpinOff && p.Length > 0 }

// ResolvePoll reads a policy from v (what names it in errors) or, when v
// is empty, from PollEnv, else auto, and decides it for this process:
// runtime.NumCPU (the CPUs of its affinity mask) and GOMAXPROCS.
func ResolvePoll(what, v string) (Poll, error) {
	if v == "" {
		if e, ok := os.LookupEnv(PollEnv); ok {
			what, v = PollEnv, e
		}
	}
	c, err := shmcomm.ParseSpin(what, v)
	if err != nil {
		return Poll{}, err
	}
	return decidePoll(c, what, runtime.NumCPU(), runtime.GOMAXPROCS(0)), nil
}

// decidePoll is the policy of choice c for a process that may run on cpus
// CPUs with GOMAXPROCS procs; what names where c came from.
func decidePoll(c shmcomm.SpinChoice, what string, cpus, procs int) Poll {
	where := fmt.Sprintf("%d CPUs, GOMAXPROCS %d", cpus, procs)
	if cpus < 2 || procs < 2 {
		return Poll{Mode: shmcomm.SpinOff, Why: where + ": a spinning read would hold the only one"}
	}
	if c.Auto {
		if cpus < PollAutoCPUs {
			return Poll{Mode: shmcomm.SpinOff, Why: fmt.Sprintf("auto: %s, fewer than %d", where, PollAutoCPUs)}
		}
		return Poll{Mode: shmcomm.SpinAdaptive, Length: PollFor, Why: "auto: " + where}
	}
	p := Poll{Mode: c.Mode, Length: c.Length, Why: what}
	if p.Mode == shmcomm.SpinOff {
		p.Length = 0
	} else if p.Length == 0 {
		p.Length = PollFor
	}
	return p
}

func (p Poll) String() string {
	if !p.spins() {
		return fmt.Sprintf("off (%s)", p.Why)
	}
	return fmt.Sprintf("%s, %v (%s)", p.Mode, p.Length, p.Why)
}

// Conn is c reading by p: a *net.TCPConn whose reads spin before they
// sleep, or c itself where p never spins or c is not a TCP connection.
func (p Poll) Conn(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok || !p.spins() {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	pc := &pollConn{TCPConn: tc, rc: rc}
	pc.spin.Configure(p.Mode, p.Length)
	pc.spin.SetProbeEvery(PollProbeEvery)
	return pc
}

// Listener is ln whose accepted connections read by p.
func (p Poll) Listener(ln net.Listener) net.Listener {
	if !p.spins() {
		return ln
	}
	return pollListener{ln, p}
}

type pollListener struct {
	net.Listener
	p Poll
}

func (l pollListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.p.Conn(c), nil
}

// pollConn is a TCP connection whose Read, when the socket has nothing to
// read, tries again without sleeping (non-blocking reads through the
// connection's RawConn, yielding the processor between tries) for at most
// the spin's budget, then waits in the network poller as a plain read
// does. A read that meets a deadline, a closed connection or anything but
// data, end of stream or EAGAIN is left to the plain read, which says it
// as a plain read would; data, end of stream and a socket error are
// returned as the plain read returns them.
type pollConn struct {
	*net.TCPConn
	rc   syscall.RawConn
	spin shmcomm.Spin
	// slept, when set (tests), runs when a read's spin gives up at its
	// budget, before it sleeps.
	slept func()
}

func (c *pollConn) Read(b []byte) (int, error) {
	budget := c.spin.Budget()
	if budget <= 0 || len(b) == 0 {
		return c.TCPConn.Read(b)
	}
	var n int
	var errno error
	try := func(fd uintptr) bool {
		n, errno = syscall.Read(int(fd), b)
		return true // one try: the loop below decides whether to wait
	}
	var start time.Time
	for {
		if err := c.rc.Read(try); err != nil {
			break // a deadline passed or the connection closed
		}
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) >= budget {
				c.spin.Record(false)
				if c.slept != nil {
					c.slept()
				}
				return c.TCPConn.Read(b)
			}
			runtime.Gosched() // the peer may be a goroutine of this process
			continue
		}
		if !start.IsZero() {
			c.spin.Record(true)
		}
		if errno != nil {
			return 0, &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", errno)}
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
	return c.TCPConn.Read(b)
}

// Unwrap is the TCP connection under the polling.
func (c *pollConn) Unwrap() *net.TCPConn { return c.TCPConn }
