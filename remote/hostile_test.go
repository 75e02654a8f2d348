package remote

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/partbench/partbench/partition"
	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
)

// The tests in this file that need a separate process (a crash, a signal or
// memory is the point) re-execute this test binary with HSRV_CHILD set; init
// runs before the testing package looks at the command line, so a child
// spawned by SpawnServer (argument list "serve --listen …") is caught too.
func init() {
	switch os.Getenv("HSRV_CHILD") {
	case "serve":
		os.Exit(hostileServe())
	case "spawner":
		os.Exit(hostileSpawner())
	case "argserve":
		os.Exit(hostileArgServe())
	}
}

func envDuration(name string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(name))
	return d
}

// hostileServe is `partbench serve` as the command wires it (files read
// first, a second signal stops the drain), configured from the environment.
func hostileServe() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	budget, _ := strconv.ParseInt(os.Getenv("HS_BUDGET"), 10, 64)
	var eng wire.Engine = server.NewCPUEngine()
	if d := envDuration("HS_DELAY"); d > 0 {
		eng = announceEngine{eng, d}
	}
	o := server.ServeOptions{Listen: "127.0.0.1:0", Transport: os.Getenv("HS_TRANSPORT"), TokenFile: os.Getenv("HS_TOKEN_FILE"),
		TLSCert: os.Getenv("HS_TLS_CERT"), TLSKey: os.Getenv("HS_TLS_KEY"), DrainTimeout: 20 * time.Second,
		ServerConfig: server.ServerConfig{MemoryBudgetBytes: budget, HandshakeTimeout: envDuration("HS_HANDSHAKE"), ReadTimeout: envDuration("HS_READ")}}
	if err := o.ReadFiles(); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	second, unwatch := server.SecondSignal()
	defer unwatch()
	o.Stop = second
	if err := server.Serve(ctx, o, eng, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		var se *server.StoppedError
		if errors.As(err, &se) {
			return se.ExitCode()
		}
		return 1
	}
	return 0
}

// announceEngine prints "step running" when a step enters the engine,
// then holds it for d: a test can signal the server while a request is
// certainly in flight.
type announceEngine struct {
	wire.Engine
	d time.Duration
}

type announceSession struct {
	wire.EngineSession
	d time.Duration
}

func (e announceEngine) OpenSession(p *partition.Plan, m partition.RemoteMode, o partition.RemoteOptions) (wire.EngineSession, error) {
	s, err := e.Engine.OpenSession(p, m, o)
	if err != nil {
		return nil, err
	}
	return announceSession{s, e.d}, nil
}

func (s announceSession) Step(ctx context.Context, in *wire.StepInput) (*wire.StepOutput, error) {
	fmt.Println("step running")
	time.Sleep(s.d)
	return s.EngineSession.Step(ctx, in)
}

// hostileSpawner spawns a server as `remote --spawn-server` does, prints
// the server's process id and waits to be killed.
func hostileSpawner() int {
	os.Setenv("HSRV_CHILD", "argserve")
	c, addr, err := SpawnServer("grpc", os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("spawned %d %s\n", c.cmd.Process.Pid, addr)
	select {}
}

// hostileArgServe is the spawned `serve`: it reads --listen and
// --transport from its arguments and ignores the rest.
func hostileArgServe() int {
	o := server.ServeOptions{DrainTimeout: 5 * time.Second}
	for i, a := range os.Args {
		if i+1 < len(os.Args) {
			switch a {
			case "--listen":
				o.Listen = os.Args[i+1]
			case "--transport":
				o.Transport = os.Args[i+1]
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := server.Serve(ctx, o, server.NewCPUEngine(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// hostileChild starts a server process with env and returns it and its
// address.
func hostileChild(t *testing.T, transport string, env ...string) (*child, string) {
	t.Helper()
	env = append([]string{"HSRV_CHILD=serve", "HS_TRANSPORT=" + transport}, env...)
	c := startChildEnv(t, env...)
	prefix := "partbench serve: " + transport + " listening on "
	return c, strings.TrimPrefix(c.line(t, prefix), prefix)
}

// procKB reads a field (VmRSS, VmHWM) of /proc/PID/status in kB.
func procKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc status for the server (%v): memory cannot be measured here", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("/proc/%d/status %s: %q", pid, field, l)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

func tokenFile(t *testing.T, tok string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// rawStep starts a Step on s and sends a header declaring tensors (no
// data); flush pushes the raw-TCP write buffer out without ending the
// request.
func rawStep(t *testing.T, s *Session, phase pb.Phase, step int, tensors []*pb.TensorInfo) clientStream {
	t.Helper()
	cs, err := s.c.t.step(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	st := &onceFinish{clientStream: cs}
	t.Cleanup(st.finish)
	if err := st.Send(&pb.Frame{Kind: &pb.Frame_Header{Header: &pb.StepHeader{SessionId: s.ID, Phase: phase, Step: int32(step), Tensors: tensors}}}); err != nil {
		t.Fatal(err)
	}
	flush(t, st)
	return st
}

// onceFinish lets a test end a stream early and its cleanup end it again.
type onceFinish struct {
	clientStream
	once sync.Once
}

func (o *onceFinish) finish() { o.once.Do(o.clientStream.finish) }

func flush(t *testing.T, st clientStream) {
	t.Helper()
	if o, ok := st.(*onceFinish); ok {
		st = o.clientStream
	}
	if ts, ok := st.(*tcpClientStream); ok {
		if err := ts.t.tc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

// payloadInfos is the header a well-behaved client sends for one request.
func payloadInfos(t *testing.T, plan *partition.Plan, mode partition.RemoteMode, phase partition.Phase, step int) ([]*pb.TensorInfo, int64) {
	t.Helper()
	pl, err := plan.RemotePayloadOf(mode, partition.RemoteRequest{Phase: phase, Step: step}, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*pb.TensorInfo
	var total int64
	for _, u := range pl.Up {
		out = append(out, &pb.TensorInfo{Name: u.Name, ElemBytes: int32(u.ElemBytes), Shape: u.Shape, Bytes: u.Bytes})
		total += u.Bytes
	}
	return out, total
}

// generateOnce runs a stateful prefill and one decode on a fresh session of
// c: a legitimate client being served.
func generateOnce(t *testing.T, c *Client) error {
	t.Helper()
	cfg, plan := testConfig(t, "test/single-tiny")
	s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		return err
	}
	defer s.Close(ctx(t))
	b := plan.Config.Workload.Batch
	if _, err := s.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(b, SeededPrompt(plan))}); err != nil {
		return err
	}
	_, err = s.Step(ctx(t), partition.Decode, 0, []wire.Tensor{tokensTensor(b, make([]uint32, b))})
	return err
}

// TestHostileHugeHeaderRefused: a header declaring one 40 GiB tensor (under
// MaxStepBytes, above the machine's memory) on a session whose payload is a
// few bytes is refused before anything is allocated, on both transports:
// the server stays up, its peak memory stays where it was (measured from
// /proc), and it serves the next client. Before the check, the server
// allocated the declared size and died ("runtime: out of memory").
func TestHostileHugeHeaderRefused(t *testing.T) {
	const huge = 40 << 30
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			srv, addr := hostileChild(t, tr)
			pid := srv.cmd.Process.Pid
			c := dial(t, addr, tr, "")
			if err := generateOnce(t, c); err != nil { // warm: the baseline includes a served request
				t.Fatal(err)
			}
			before := procKB(t, pid, "VmHWM")
			cfg, _ := testConfig(t, "test/single-tiny")
			for _, mode := range []partition.RemoteMode{partition.RemoteStateful, partition.RemoteNaive} {
				// The raw-TCP server hangs up after a refused request: a
				// connection per attempt.
				s, err := dial(t, addr, tr, "").Open(ctx(t), cfg, mode, partition.RemoteOptions{})
				if err != nil {
					t.Fatal(err)
				}
				st := rawStep(t, s, pb.Phase_PHASE_DECODE, 0, []*pb.TensorInfo{{Name: partition.RemoteTokensIn, ElemBytes: 4, Shape: []int64{huge / 4}, Bytes: huge}})
				t0 := time.Now()
				_, err = st.Recv()
				if code := status.Code(err); code != codes.InvalidArgument && code != codes.ResourceExhausted {
					t.Fatalf("%s: a 40 GiB header: %v (code %v), want InvalidArgument or ResourceExhausted", mode, err, code)
				}
				if d := time.Since(t0); d > 5*time.Second {
					t.Errorf("%s: refused after %v; want well under 5 s (no data was sent)", mode, d)
				}
				st.finish()
			}
			after := procKB(t, pid, "VmHWM")
			// Expected growth: nothing of the 40 GiB; allow 64 MB for the
			// runtime's own noise on a busy machine.
			if after-before > 64<<10 && !raceEnabled {
				t.Errorf("peak memory grew from %d kB to %d kB on a refused header", before, after)
			}
			c2 := dial(t, addr, tr, "")
			if err := generateOnce(t, c2); err != nil {
				t.Errorf("a client after the huge header: %v (server stderr: %s)", err, srv.stderr)
			}
		})
	}
}

// TestHostileHeaderOverBudget: a header within MaxStepBytes and within the
// session's payload check (an engine without one) but above the memory
// budget is refused before any data arrives, and the budget is back to the
// sessions' own bytes afterwards.
func TestHostileHeaderOverBudget(t *testing.T) {
	_, plan := testConfig(t, "test/single-tiny")
	need, err := plan.RemoteSessionBytes(partition.RemoteStateful)
	if err != nil {
		t.Fatal(err)
	}
	budget := need + 1<<20 // one session and 1 MiB to spare
	srv, addrs := startServer(t, server.ServerConfig{MemoryBudgetBytes: budget}, uncheckedEngine{server.NewCPUEngine()})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			c := dial(t, addrs[tr], tr, "")
			cfg, _ := testConfig(t, "test/single-tiny")
			s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(ctx(t))
			st := rawStep(t, s, pb.Phase_PHASE_DECODE, 0, []*pb.TensorInfo{{Name: "x", ElemBytes: 1, Shape: []int64{2 << 20}, Bytes: 2 << 20}})
			_, err = st.Recv()
			if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "memory budget") {
				t.Fatalf("2 MiB with 1 MiB of budget free: %v, want ResourceExhausted naming the memory budget", err)
			}
			st.finish()
			// gRPC keeps the connection and its session; the raw-TCP server
			// hangs up after a refused request, which frees the session.
			want := map[string]int64{"grpc": need, "tcp": 0}[tr]
			waitFor(t, 5*time.Second, func() bool { return srv.ReservedBytes() == want }, fmt.Sprintf("reserved bytes back to %d B", want))
		})
	}
}

// uncheckedEngine hides the CPU engine's payload check (wire.RequestChecker), as
// an engine without one would be.
type uncheckedEngine struct{ e wire.Engine }

type uncheckedSession struct{ wire.EngineSession }

func (u uncheckedEngine) SessionBytes(p *partition.Plan, m partition.RemoteMode) (int64, error) {
	return u.e.SessionBytes(p, m)
}

func (u uncheckedEngine) OpenSession(p *partition.Plan, m partition.RemoteMode, o partition.RemoteOptions) (wire.EngineSession, error) {
	s, err := u.e.OpenSession(p, m, o)
	return uncheckedSession{s}, err
}

// TestHostileSilentClientDoesNotBlock: with one execution slot, a client
// that sends a naive header and then nothing does not stop another
// client's generation (the slot is taken only once a request has arrived);
// the silent request is cut off after the read timeout, its receive
// buffers returned to the budget. Before, the silent client held the slot
// until the call timeout.
func TestHostileSilentClientDoesNotBlock(t *testing.T) {
	const readTimeout = time.Second
	srv, addrs := startServer(t, server.ServerConfig{MaxConcurrent: 1, ReadTimeout: readTimeout}, server.NewCPUEngine())
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			// The previous subtest's clients end after it: their sessions
			// must be gone before the budget is read.
			waitFor(t, 5*time.Second, func() bool { return srv.Sessions() == 0 }, "the previous subtest's sessions freed")
			cfg, plan := testConfig(t, "test/single-tiny")
			silent := dial(t, addrs[tr], tr, "")
			s, err := silent.Open(ctx(t), cfg, partition.RemoteNaive, partition.RemoteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sessions := srv.ReservedBytes()
			infos, total := payloadInfos(t, plan, partition.RemoteNaive, partition.Prefill, 0)
			t0 := time.Now()
			st := rawStep(t, s, pb.Phase_PHASE_PREFILL, 0, infos)
			waitFor(t, 5*time.Second, func() bool { return srv.ReservedBytes() == sessions+total }, "the silent request's reservation")
			if err := generateOnce(t, dial(t, addrs[tr], tr, "")); err != nil {
				t.Fatalf("a client beside a silent one: %v", err)
			}
			if d := time.Since(t0); d >= readTimeout {
				t.Logf("the other client took %v (the machine is slow); it was served, not refused", d)
			}
			_, err = st.Recv()
			if status.Code(err) != codes.DeadlineExceeded {
				t.Errorf("the silent request: %v, want DeadlineExceeded (read timeout)", err)
			}
			if d := time.Since(t0); d < readTimeout {
				t.Errorf("the silent request was cut off after %v, before the %v read timeout", d, readTimeout)
			}
			waitFor(t, 5*time.Second, func() bool { return srv.ReservedBytes() == sessions || srv.ReservedBytes() == sessions-s.Bytes }, "the silent request's buffers released")
		})
	}
}

// TestIdleReaperSparesRequestInProgress: a session whose request is still
// arriving is not freed by the idle reaper however long it takes (here 6
// idle timeouts); the request then runs. Before, the reaper freed it and
// the engine ran on the closed session.
func TestIdleReaperSparesRequestInProgress(t *testing.T) {
	const idle = 50 * time.Millisecond
	srv, addrs := startServer(t, server.ServerConfig{IdleTimeout: idle, ReadTimeout: 5 * time.Second}, server.NewCPUEngine())
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cfg, plan := testConfig(t, "test/single-tiny")
			c := dial(t, addrs[tr], tr, "")
			s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			infos, _ := payloadInfos(t, plan, partition.RemoteStateful, partition.Prefill, 0)
			st := rawStep(t, s, pb.Phase_PHASE_PREFILL, 0, infos)
			time.Sleep(6 * idle) // several reaper passes while the data has not arrived
			if n := srv.Sessions(); n != 1 {
				t.Fatalf("%d sessions while a request was arriving, want 1", n)
			}
			tok := tokensTensor(plan.Config.Workload.Batch, SeededPrompt(plan))
			if _, err := st.sendData(tok.Data); err != nil {
				t.Fatal(err)
			}
			if err := st.CloseSend(); err != nil {
				t.Fatal(err)
			}
			f, err := st.Recv()
			if err != nil || f.GetHeader() == nil {
				t.Fatalf("the request after %v: %v", 6*idle, err)
			}
		})
	}
}

// TestClosedSessionRefuses: a step on a closed engine session says so.
func TestClosedSessionRefuses(t *testing.T) {
	_, plan := testConfig(t, "test/single-tiny")
	es, err := server.NewCPUEngine().OpenSession(plan, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	es.Close()
	_, err = es.Step(context.Background(), &wire.StepInput{Phase: partition.Prefill, Tensors: []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, SeededPrompt(plan))}})
	if err == nil || !strings.Contains(err.Error(), "session closed") {
		t.Errorf("a step on a closed session: %v, want \"session closed\"", err)
	}
}

// TestHostilePreAuthBounded: on a token-protected server, 200 raw-TCP
// connections that announce a 4 MiB hello and 64 gRPC Open calls of 1 MiB
// each with a wrong token (each with 100 connections that say nothing) leave the server's peak memory within 64 MB of
// where it started (before: ~4.5 MB per raw-TCP connection, ~4 MB per gRPC
// call, 889 MB and 1.3 GB seen); connections beyond the 64 allowed are
// closed at once, the rest after the handshake timeout; a client with the
// token is served throughout.
func TestHostilePreAuthBounded(t *testing.T) {
	const handshake = time.Second
	tf := tokenFile(t, "right-token")
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			srv, addr := hostileChild(t, tr, "HS_TOKEN_FILE="+tf, "HS_HANDSHAKE="+handshake.String())
			pid := srv.cmd.Process.Pid
			good := dial(t, addr, tr, "right-token")
			if err := generateOnce(t, good); err != nil {
				t.Fatal(err)
			}
			before := procKB(t, pid, "VmHWM")
			t0 := time.Now()
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			switch tr {
			case "tcp":
				big := make([]byte, 1<<20)
				for i := 0; i < 200; i++ {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Fatal(err)
					}
					conns = append(conns, c)
					// A hello announced at 4 MiB, 1 MiB of it sent.
					c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
					c.Write(binary.BigEndian.AppendUint32(nil, 4<<20-1))
					c.Write(big)
				}
				// Connections that say nothing: beyond 64 closed at once,
				// the rest at the handshake deadline.
				for i := 0; i < 100; i++ {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Fatal(err)
					}
					conns = append(conns, c)
				}
			case "grpc":
				cfg, _ := testConfig(t, "test/single-tiny")
				bad, err := Dial(ctx(t), ClientConfig{Addr: addr, Transport: tr, Token: "wrong", CallTimeout: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer bad.Close()
				js := make([]byte, 1<<20)
				var wg sync.WaitGroup
				var refused sync.Map
				for i := 0; i < 64; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := bad.t.open(ctx(t), &pb.OpenRequest{ConfigJson: js, ConfigHash: cfg.Hash(), Mode: pb.Mode_MODE_STATEFUL})
						refused.Store(i, status.Code(err))
					}()
				}
				wg.Wait()
				refused.Range(func(k, v any) bool {
					if v.(codes.Code) != codes.Unauthenticated {
						t.Errorf("call %v with a wrong token: %v, want Unauthenticated", k, v)
					}
					return true
				})
				// Connections that never call: beyond 64 closed at once.
				for i := 0; i < 100; i++ {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Fatal(err)
					}
					conns = append(conns, c)
				}
			}
			if err := generateOnce(t, good); err != nil {
				t.Errorf("the client with the token during the flood: %v", err)
			}
			after := procKB(t, pid, "VmHWM")
			if after-before > 64<<10 && !raceEnabled {
				t.Errorf("peak memory grew from %d kB to %d kB under unauthenticated clients, more than 64 MB", before, after)
			}
			// Every hostile connection is closed by the server: at once
			// beyond the pre-auth bound, else by the handshake deadline.
			closedBy := time.Now().Add(handshake + 5*time.Second)
			for i, c := range conns {
				c.SetReadDeadline(closedBy)
				buf := make([]byte, 4096)
				for {
					_, err := c.Read(buf)
					if err == nil {
						continue
					}
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						t.Fatalf("connection %d still open %v after it was made (handshake timeout %v)", i, time.Since(t0), handshake)
					}
					break
				}
			}
			if err := generateOnce(t, good); err != nil {
				t.Errorf("the client with the token after the flood: %v", err)
			}
			t.Logf("%s: peak %d kB before, %d kB after; every hostile connection closed %v after the flood began", tr, before, after, time.Since(t0).Round(time.Millisecond))
		})
	}
}

// TestSpawnedServerDiesWithParent: SIGKILL of a process that spawned a
// server (as remote/resume --spawn-server and the suite do) ends the
// server within 5 s (the kernel's parent-death signal acts at once; the
// bound allows for a busy machine).
func TestSpawnedServerDiesWithParent(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: the parent-death signal is Linux's")
	}
	p := startChildEnv(t, "HSRV_CHILD=spawner")
	f := strings.Fields(p.line(t, "spawned "))
	pid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("server %d not running before its parent was killed", pid)
	}
	p.cmd.Process.Kill()
	p.wait(t, 10*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("server %d still running 5 s after its parent was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive says whether pid runs (a zombie waiting for its reaper has ended).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if s, ok := strings.CutPrefix(l, "State:"); ok {
			s = strings.TrimSpace(s)
			return !strings.HasPrefix(s, "Z") && !strings.HasPrefix(s, "X")
		}
	}
	return true
}

// TestServeSecondSignalStops: a server draining a request that takes 20 s
// stops at once on a second SIGTERM (within 5 s on a busy machine), exit
// 143 (128 + SIGTERM). Before, it waited for the drain.
func TestServeSecondSignalStops(t *testing.T) {
	srv, addr := hostileChild(t, "grpc", "HS_DELAY=20s")
	c := dial(t, addr, "grpc", "")
	cfg, plan := testConfig(t, "test/single-tiny")
	s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go s.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, SeededPrompt(plan))})
	srv.line(t, "step running")
	srv.cmd.Process.Signal(syscall.SIGTERM)
	srv.line(t, "partbench serve: draining")
	t0 := time.Now()
	srv.cmd.Process.Signal(syscall.SIGTERM)
	err = srv.wait(t, 5*time.Second)
	var ee interface{ ExitCode() int }
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("exit after a second SIGTERM: %v, want status 143; stderr %s", err, srv.stderr)
	}
	if !strings.Contains(srv.stderr.String(), "second") {
		t.Errorf("stderr %q does not say a second signal stopped it", srv.stderr)
	}
	t.Logf("stopped %v after the second signal", time.Since(t0))
}

// TestSmallFilesRefuseSpecial: --token-file, --tls-cert and --tls-key must
// be small regular files: a named pipe (which would block), a device and an
// oversized file are refused at once, naming the flag.
func TestSmallFilesRefuseSpecial(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, wire.MaxPEMFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, key := selfSigned(t, dir)
	for _, c := range []struct {
		o    server.ServeOptions
		flag string
		want string
	}{
		{server.ServeOptions{TokenFile: fifo}, "--token-file", "not a regular file"},
		{server.ServeOptions{TokenFile: "/dev/zero"}, "--token-file", "not a regular file"},
		{server.ServeOptions{TokenFile: big}, "--token-file", "more than the 4096 bytes (4 KiB) a --token-file may have"},
		{server.ServeOptions{TLSCert: fifo, TLSKey: key}, "--tls-cert", "not a regular file"},
		{server.ServeOptions{TLSCert: cert, TLSKey: "/dev/zero"}, "--tls-key", "not a regular file"},
		{server.ServeOptions{TLSCert: big, TLSKey: key}, "--tls-cert", "more than the 1048576 bytes (1 MiB) a --tls-cert may have"},
	} {
		done := make(chan error, 1)
		go func() { done <- c.o.ReadFiles() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.flag) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: %v, want an error naming %s: %s", c.o, err, c.flag, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%+v: still reading after 5 s", c.o)
		}
	}
	o := server.ServeOptions{TLSCert: cert, TLSKey: key, TokenFile: tokenFile(t, "tok")}
	if err := o.ReadFiles(); err != nil || o.Token != "tok" {
		t.Errorf("regular files: token %q, %v", o.Token, err)
	}
}

// TestTCPOverTLS: the raw-TCP twin serves over TLS (the token never crosses
// in clear), and a plaintext client gets nothing from it.
func TestTCPOverTLS(t *testing.T) {
	cert, key := selfSigned(t, t.TempDir())
	s, err := server.NewServer(server.ServerConfig{Token: "tls-token", TLSCert: cert, TLSKey: key}, server.NewCPUEngine())
	if err != nil {
		t.Fatal(err)
	}
	addr, err := s.ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(c)
	})
	c, err := Dial(ctx(t), ClientConfig{Addr: addr.String(), Transport: "tcp", Token: "tls-token", TLSCA: cert, CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := generateOnce(t, c); err != nil {
		t.Errorf("a generation over raw TCP with TLS: %v", err)
	}
	// The same through `serve` as a process (the files read by ReadFiles).
	tf := tokenFile(t, "tls-token")
	_, paddr := hostileChild(t, "tcp", "HS_TLS_CERT="+cert, "HS_TLS_KEY="+key, "HS_TOKEN_FILE="+tf)
	pc2, err := Dial(ctx(t), ClientConfig{Addr: paddr, Transport: "tcp", Token: "tls-token", TLSCA: cert, CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("serve --transport tcp --tls-cert: %v", err)
	}
	defer pc2.Close()
	if err := generateOnce(t, pc2); err != nil {
		t.Errorf("a generation from a TLS raw-TCP serve process: %v", err)
	}
	// A plaintext hello is not understood: the TLS server answers with no
	// hello of its own.
	pc, err := Dial(ctx(t), ClientConfig{Addr: addr.String(), Transport: "tcp", Token: "tls-token", CallTimeout: 3 * time.Second})
	if err == nil {
		pc.Close()
		t.Error("a plaintext client was served by the TLS raw-TCP server")
	}
	// What a plaintext client writes is its hello: the server must not
	// read it as one (it is a TLS record error).
	hello, _ := proto.Marshal(&pb.Envelope{Kind: &pb.Envelope_Hello{Hello: &pb.Hello{Token: "tls-token"}}})
	raw, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(hello))), hello...))
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, _ := bufio.NewReader(raw).Peek(5); len(b) == 5 && b[0] != 0x15 { // 0x15: a TLS alert record
		t.Errorf("the TLS server answered a plaintext hello with %x, not a TLS alert", b)
	}
}

// TestTCPLargeMessageCounted: on the raw-TCP transport a control message
// larger than 64 KiB (here an Open of 2 MiB) counts against the memory
// budget before it is read: with 1 MiB of budget it is refused as
// ResourceExhausted, not read and then found malformed.
func TestTCPLargeMessageCounted(t *testing.T) {
	_, addrs := startServer(t, server.ServerConfig{MemoryBudgetBytes: 1 << 20}, server.NewCPUEngine())
	c := dial(t, addrs["tcp"], "tcp", "")
	_, err := c.t.open(ctx(t), &pb.OpenRequest{ConfigJson: make([]byte, 2<<20), Mode: pb.Mode_MODE_STATEFUL})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "memory budget") {
		t.Errorf("a 2 MiB open with a 1 MiB budget: %v, want ResourceExhausted naming the memory budget", err)
	}
}

// rawSessionStep starts a step of s on its gRPC session stream (opening it
// if need be) and sends a header declaring tensors (no data).
func rawSessionStep(t *testing.T, s *Session, phase pb.Phase, step int, id string, tensors []*pb.TensorInfo) clientStream {
	t.Helper()
	cs, err := s.c.t.(*grpcTransport).begin(ctx(t), s.ss)
	if err != nil || cs == nil {
		t.Fatalf("session stream: %v (stream %v)", err, cs)
	}
	st := &onceFinish{clientStream: cs}
	t.Cleanup(st.finish)
	if err := st.Send(&pb.Frame{Kind: &pb.Frame_Header{Header: &pb.StepHeader{SessionId: id, Phase: phase, Step: int32(step), Tensors: tensors}}}); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestHostileSessionStream: a gRPC session stream keeps every bound of a
// Step call, in a server process of its own. After a served step on the
// stream, a header declaring 40 GiB is refused before anything is
// allocated (the server's peak memory does not grow), which ends that
// stream; a step naming another session than the stream's is refused; a
// header followed by nothing is cut off after the read timeout. After each,
// the session's next step (on a new stream) is served.
func TestHostileSessionStream(t *testing.T) {
	const huge, readTimeout = 40 << 30, time.Second
	srv, addr := hostileChild(t, "grpc", "HS_READ="+readTimeout.String())
	pid := srv.cmd.Process.Pid
	c := dial(t, addr, "grpc", "")
	cfg, plan := testConfig(t, "test/single-tiny")
	s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := plan.Config.Workload.Batch
	decode := func(step int) error {
		_, err := s.Step(ctx(t), partition.Decode, step, []wire.Tensor{tokensTensor(b, make([]uint32, b))})
		return err
	}
	if _, err := s.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(b, SeededPrompt(plan))}); err != nil {
		t.Fatal(err)
	}
	before := procKB(t, pid, "VmHWM")
	st := rawSessionStep(t, s, pb.Phase_PHASE_DECODE, 0, s.ID, []*pb.TensorInfo{{Name: partition.RemoteTokensIn, ElemBytes: 4, Shape: []int64{huge / 4}, Bytes: huge}})
	if _, err := st.Recv(); status.Code(err) != codes.InvalidArgument && status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a 40 GiB header on the session stream: %v, want InvalidArgument or ResourceExhausted", err)
	}
	st.finish()
	// Expected growth: nothing of the 40 GiB; 64 MB for the runtime's noise.
	if after := procKB(t, pid, "VmHWM"); after-before > 64<<10 && !raceEnabled {
		t.Errorf("peak memory grew from %d kB to %d kB on a refused header", before, after)
	}
	if err := decode(0); err != nil {
		t.Fatalf("the step after a refused header: %v (server stderr: %s)", err, srv.stderr)
	}

	other, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok := []*pb.TensorInfo{{Name: partition.RemoteTokensIn, ElemBytes: 4, Shape: []int64{int64(b)}, Bytes: 4 * int64(b)}}
	st = rawSessionStep(t, s, pb.Phase_PHASE_DECODE, 1, other.ID, tok)
	if _, err := st.Recv(); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "one session's steps") {
		t.Fatalf("a step of another session on the stream: %v, want InvalidArgument", err)
	}
	st.finish()
	if err := decode(1); err != nil {
		t.Fatalf("the step after a foreign header: %v", err)
	}

	t0 := time.Now()
	st = rawSessionStep(t, s, pb.Phase_PHASE_DECODE, 2, s.ID, tok)
	if _, err := st.Recv(); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a header and then nothing on the session stream: %v, want DeadlineExceeded (read timeout)", err)
	}
	if d := time.Since(t0); d < readTimeout {
		t.Errorf("the silent step was cut off after %v, before the %v read timeout", d, readTimeout)
	}
	st.finish()
	if err := decode(2); err != nil {
		t.Fatalf("the step after a silent one: %v", err)
	}
}
