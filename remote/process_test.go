package remote

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
)

// The tests below run the server or the client as a separate process: this
// test binary re-executed with PARTBENCH_REMOTE_CHILD set.
func TestMain(m *testing.M) {
	switch os.Getenv("PARTBENCH_REMOTE_CHILD") {
	case "serve":
		os.Exit(childServe())
	case "client":
		os.Exit(childClient())
	case "echo":
		os.Exit(childEcho())
	}
	os.Exit(m.Run())
}

func childServe() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	// CHILD_TRACE=FILE:SECONDS writes a runtime/trace of the server's first
	// SECONDS (BenchmarkStatefulStepProcess with PARTBENCH_BENCH_SERVER_ENV).
	if spec := os.Getenv("CHILD_TRACE"); spec != "" {
		file, secs, _ := strings.Cut(spec, ":")
		d, err := time.ParseDuration(secs + "s")
		f, ferr := os.Create(file)
		if err != nil || ferr != nil || trace.Start(f) != nil {
			fmt.Fprintln(os.Stderr, "CHILD_TRACE", spec, ": want FILE:SECONDS", err, ferr)
			return 1
		}
		time.AfterFunc(d, func() { trace.Stop(); f.Close() })
	}
	var eng wire.Engine = server.NewCPUEngine()
	if os.Getenv("CHILD_ENGINE") == "sink" {
		eng = sinkEngine{}
	}
	out := &addrTap{w: os.Stdout}
	// CHILD_GATE: every step prints gateStartedLine and is held, until the
	// server drains after SIGTERM ("drain") or for good ("never").
	switch os.Getenv("CHILD_GATE") {
	case "drain":
		g := newGateEngine(eng)
		g.announce = out
		go func() {
			<-ctx.Done()
			// Let the held step go once the server refuses connections: it
			// is then draining with the step in flight.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && out.accepting(); {
				time.Sleep(5 * time.Millisecond)
			}
			close(g.open)
		}()
		eng = g
	case "never":
		g := newGateEngine(eng)
		g.announce = out
		eng = g
	}
	o := server.ServeOptions{Listen: os.Getenv("CHILD_LISTEN"), Transport: os.Getenv("CHILD_TRANSPORT"), TokenFile: os.Getenv("CHILD_TOKEN_FILE"),
		TLSCert: os.Getenv("CHILD_TLS_CERT"), TLSKey: os.Getenv("CHILD_TLS_KEY"), DrainTimeout: 10 * time.Second}
	if err := server.Serve(ctx, o, eng, out); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// addrTap passes a server child's output on and notes the addresses it
// says it listens on.
type addrTap struct {
	w     io.Writer
	mu    sync.Mutex
	addrs []string
}

func (a *addrTap) Write(p []byte) (int, error) {
	for _, l := range strings.Split(string(p), "\n") {
		if _, addr, ok := strings.Cut(l, " listening on "); ok {
			a.mu.Lock()
			a.addrs = append(a.addrs, strings.TrimSpace(addr))
			a.mu.Unlock()
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.w.Write(p)
}

// accepting says whether any noted address still accepts a connection.
func (a *addrTap) accepting() bool {
	a.mu.Lock()
	addrs := slices.Clone(a.addrs)
	a.mu.Unlock()
	for _, addr := range addrs {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
	}
	return false
}

// childClient opens a stateful session, runs its prefill, says so, and
// waits to be killed.
func childClient() int {
	ctx := context.Background()
	c, err := Dial(ctx, ClientConfig{Addr: os.Getenv("CHILD_ADDR"), Transport: os.Getenv("CHILD_TRANSPORT")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv("CHILD_LOOP") != "" {
		// Naive generations back to back: weights stream with every request.
		s, err := c.Open(ctx, cfg, partition.RemoteNaive, partition.RemoteOptions{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ws, err := wire.ModelWeights(s.Plan)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("streaming")
		for {
			if _, err := Generate(ctx, s, ws, SeededPrompt(s.Plan)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	s, err := c.Open(ctx, cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	plan := s.Plan
	if _, err := s.Step(ctx, partition.Prefill, 0, []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, SeededPrompt(plan))}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("opened", s.ID != "")
	select {}
}

// child is a running child process and what it printed.
type child struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *strings.Builder
	done   chan struct{} // closed once the process was waited for
	err    error         // its exit, valid after done
}

func startChild(t testing.TB, role string, env ...string) *child {
	t.Helper()
	return startChildEnv(t, append([]string{"PARTBENCH_REMOTE_CHILD=" + role}, env...)...)
}

// startChildEnv re-executes this test binary with env added (the variable
// that picks the child's part among them).
func startChildEnv(t testing.TB, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 16), stderr: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		io.Copy(io.Discard, out)
		close(c.lines)
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() // an error once it has exited; ProcessState is the waiter's
		<-c.done
	})
	return c
}

// line waits for a line starting with prefix.
func (c *child) line(t testing.TB, prefix string) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("child ended before printing %q; stderr: %s", prefix, c.stderr)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("child printed no %q in 20 s; stderr: %s", prefix, c.stderr)
		}
	}
}

// serveChild starts a server process on loopback port 0 and returns its address.
func serveChild(t testing.TB, transport string, env ...string) (*child, string) {
	t.Helper()
	c := startChild(t, "serve", append([]string{"CHILD_LISTEN=127.0.0.1:0", "CHILD_TRANSPORT=" + transport}, env...)...)
	l := c.line(t, "partbench serve: "+transport+" listening on ")
	return c, strings.TrimPrefix(l, "partbench serve: "+transport+" listening on ")
}

func (c *child) wait(t *testing.T, bound time.Duration) error {
	t.Helper()
	select {
	case <-c.done:
		return c.err
	case <-time.After(bound):
		t.Fatalf("child still running after %s; stderr: %s", bound, c.stderr)
		return nil
	}
}

// TestProcessModes: a server process, this process the client: every mode
// on two tiny configs over both transports; tokens identical, bytes exact
// and ordered.
func TestProcessModes(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			srv, addr := serveChild(t, tr)
			c := dial(t, addr, tr, "")
			for _, name := range engineConfigs {
				cfg, _ := testConfig(t, name)
				res, err := RunTrials(ctx(t), TrialOptions{Config: cfg, Modes: partition.RemoteModes, Trials: 1, Warmup: 0, Client: c, Engine: server.NewCPUEngine()})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if len(res.Mismatches) > 0 {
					t.Errorf("%s: payload differs from the model: %v", name, res.Mismatches)
				}
				for _, m := range partition.RemoteModes {
					if !slices.EqualFunc(res.Tokens[m], res.Tokens[partition.RemoteLocal], slices.Equal) {
						t.Errorf("%s %s tokens %v, local %v", name, m, res.Tokens[m], res.Tokens[partition.RemoteLocal])
					}
				}
				b := map[partition.RemoteMode]int64{}
				for _, r := range res.Rows {
					if r.Phase == partition.Decode {
						b[r.Mode] = r.NetBytes
					}
				}
				if !(b["naive"] > b["kv"] && b["kv"] > b["stateful"] && b["stateful"] > 0 && b["local"] == 0) {
					t.Errorf("%s decode bytes %v: want naive > kv > stateful > local = 0", name, b)
				}
			}
			c.Close()
			srv.cmd.Process.Signal(syscall.SIGTERM)
			if err := srv.wait(t, 15*time.Second); err != nil {
				t.Errorf("server exit after SIGTERM: %v; stderr: %s", err, srv.stderr)
			}
		})
	}
}

// TestProcessNonLoopbackNeedsToken: a server bound beyond loopback without
// a token refuses to start, naming the flag.
func TestProcessNonLoopbackNeedsToken(t *testing.T) {
	c := startChild(t, "serve", "CHILD_LISTEN=0.0.0.0:0", "CHILD_TRANSPORT=grpc")
	err := c.wait(t, 20*time.Second)
	if err == nil {
		t.Fatal("a server on 0.0.0.0 without a token started")
	}
	if !strings.Contains(c.stderr.String(), "requires a token (--token-file)") {
		t.Errorf("stderr %q does not say a token is required", c.stderr)
	}
}

// TestProcessTokenRequired: with --token-file, a request without the token
// or with another one is refused; the right one is served.
func TestProcessTokenRequired(t *testing.T) {
	tf := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tf, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			_, addr := serveChild(t, tr, "CHILD_TOKEN_FILE="+tf)
			cfg, _ := testConfig(t, "test/single-tiny")
			for _, tok := range []string{"", "wrong"} {
				c, err := Dial(ctx(t), ClientConfig{Addr: addr, Transport: tr, Token: tok, CallTimeout: 10 * time.Second})
				if err == nil {
					_, err = c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
					c.Close()
				}
				if status.Code(err) != codes.Unauthenticated {
					t.Errorf("token %q: %v, want Unauthenticated", tok, err)
				}
			}
			c := dial(t, addr, tr, "s3cret-token")
			if _, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{}); err != nil {
				t.Errorf("the right token: %v", err)
			}
		})
	}
}

// TestProcessKilledClientFreed: a client process with an open session is
// killed; the server frees its session within 5 s (the connection's end).
func TestProcessKilledClientFreed(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			srv, addrs := startServer(t, server.ServerConfig{}, server.NewCPUEngine())
			cl := startChild(t, "client", "CHILD_ADDR="+addrs[tr], "CHILD_TRANSPORT="+tr)
			cl.line(t, "opened true")
			if n := srv.Sessions(); n != 1 {
				t.Fatalf("%d sessions with the client alive, want 1", n)
			}
			cl.cmd.Process.Kill()
			cl.wait(t, 10*time.Second)
			deadline := time.Now().Add(5 * time.Second)
			for srv.Sessions() != 0 || srv.ReservedBytes() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("5 s after the client died: %d sessions, %d B reserved", srv.Sessions(), srv.ReservedBytes())
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestProcessSIGTERMDrains: SIGTERM during a request lets it finish (the
// request is held in the engine until the server has stopped accepting),
// then the server exits 0 and refuses new connections.
func TestProcessSIGTERMDrains(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			srv, addr := serveChild(t, tr, "CHILD_GATE=drain")
			c := dial(t, addr, tr, "")
			cfg, plan := testConfig(t, "test/single-tiny")
			s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := s.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, SeededPrompt(plan))})
				done <- err
			}()
			// The step is in the engine, held there until the server drains.
			srv.line(t, gateStartedLine)
			srv.cmd.Process.Signal(syscall.SIGTERM)
			if err := <-done; err != nil {
				t.Errorf("the request in flight at SIGTERM: %v", err)
			}
			if err := srv.wait(t, 15*time.Second); err != nil {
				t.Errorf("server exit: %v; stderr %s", err, srv.stderr)
			}
			if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				conn.Close()
				t.Errorf("%s still accepts connections after draining", addr)
			}
		})
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "partbench test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestProcessTLS: a TLS server process serves a client that trusts its
// certificate, and a client speaking plaintext gets nothing.
func TestProcessTLS(t *testing.T) {
	cert, key := selfSigned(t, t.TempDir())
	_, addr := serveChild(t, "grpc", "CHILD_TLS_CERT="+cert, "CHILD_TLS_KEY="+key)
	cfg, plan := testConfig(t, "test/single-tiny")
	c, err := Dial(ctx(t), ClientConfig{Addr: addr, TLSCA: cert, CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(ctx(t), s, nil, SeededPrompt(plan)); err != nil {
		t.Errorf("generation over TLS: %v", err)
	}
	plain, err := Dial(ctx(t), ClientConfig{Addr: addr, CallTimeout: 3 * time.Second})
	if err == nil {
		_, err = plain.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
		plain.Close()
	}
	if err == nil {
		t.Error("a plaintext client was served by the TLS server")
	}
}

// TestProcessServerKilled: a server process dies (SIGKILL) while a client's
// request is inside it, or stops answering (SIGSTOP): the client's call
// fails, naming the server's address, promptly for a dead server and
// within the call's deadline for a silent one.
func TestProcessServerKilled(t *testing.T) {
	const deadline = 2 * time.Second
	for _, tr := range transports {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP} {
			t.Run(tr+"/"+sig.String(), func(t *testing.T) {
				srv, addr := serveChild(t, tr, "CHILD_GATE=never")
				c, err := Dial(ctx(t), ClientConfig{Addr: addr, Transport: tr, CallTimeout: deadline})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				cfg, plan := testConfig(t, "test/single-tiny")
				s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				t0 := time.Now()
				go func() {
					// No deadline of its own: the client's CallTimeout applies.
					_, err := s.Step(context.Background(), partition.Prefill, 0, []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, SeededPrompt(plan))})
					done <- err
				}()
				srv.line(t, gateStartedLine) // the request is inside the server, held for good
				signalled := time.Now()
				if err := srv.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				if sig == syscall.SIGSTOP {
					t.Cleanup(func() { srv.cmd.Process.Kill(); srv.cmd.Process.Signal(syscall.SIGCONT) })
				}
				select {
				case err = <-done:
				case <-time.After(deadline + 5*time.Second):
					t.Fatalf("the call still waits %s after the server got %s (deadline %s)", time.Since(t0), sig, deadline)
				}
				took := time.Since(t0)
				if err == nil {
					t.Fatalf("the call succeeded against a server that got %s", sig)
				}
				if !strings.Contains(err.Error(), addr) {
					t.Errorf("error %q does not name the server %s", err, addr)
				}
				if since := time.Since(signalled); sig == syscall.SIGKILL && since > deadline {
					t.Errorf("a dead server's client failed %s after the kill, not before the %s deadline", since, deadline)
				}
				if sig == syscall.SIGSTOP && (took < deadline-100*time.Millisecond || took > deadline+2*time.Second) {
					t.Errorf("a silent server's client failed after %s, want about its %s deadline", took, deadline)
				}
				t.Logf("%s: failed after %s: %v", sig, took.Round(time.Millisecond), err)
			})
		}
	}
}

// TestProcessKilledMidStream: a client process streaming naive requests
// (weights and KV cache every step) is killed while its requests are in
// flight; the server frees its session and its reserved bytes within 5 s.
func TestProcessKilledMidStream(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			eng := newGateEngine(server.NewCPUEngine())
			eng.free = 3
			srv, addrs := startServer(t, server.ServerConfig{}, eng)
			cl := startChild(t, "client", "CHILD_ADDR="+addrs[tr], "CHILD_TRANSPORT="+tr, "CHILD_LOOP=1")
			cl.line(t, "streaming")
			eng.waitStarted(t, 4) // three requests served, the fourth in flight (held in the engine)
			if n := srv.Sessions(); n != 1 {
				t.Fatalf("%d sessions with the client streaming, want 1", n)
			}
			before := srv.Bytes.Snapshot()
			cl.cmd.Process.Kill()
			cl.wait(t, 10*time.Second)
			close(eng.open) // the request in flight finishes into a dead connection
			if before.PayloadUp == 0 {
				t.Fatal("the client shipped nothing before it was killed")
			}
			deadline := time.Now().Add(5 * time.Second)
			for srv.Sessions() != 0 || srv.ReservedBytes() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("5 s after the client died mid-stream: %d sessions, %d B reserved", srv.Sessions(), srv.ReservedBytes())
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
