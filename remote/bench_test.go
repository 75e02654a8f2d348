package remote

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/partbench/partbench/gcpace"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
	"github.com/partbench/partbench/stats"
)

// sinkEngine accepts any payload and returns the sampled tokens only, with
// no compute: what remains of a step's time is transport and framework.
type sinkEngine struct{}

func (sinkEngine) SessionBytes(*partition.Plan, partition.RemoteMode) (int64, error) { return 0, nil }
func (sinkEngine) OpenSession(p *partition.Plan, _ partition.RemoteMode, _ partition.RemoteOptions) (wire.EngineSession, error) {
	return sinkSession{batch: p.Config.Workload.Batch}, nil
}

type sinkSession struct{ batch int }

func (s sinkSession) Close() {}
func (s sinkSession) Step(_ context.Context, in *wire.StepInput) (*wire.StepOutput, error) {
	t0 := time.Now()
	out := wire.Tensor{Name: partition.RemoteTokensOut, ElemBytes: 4, Shape: []int64{int64(s.batch)}, Data: make([]byte, 4*s.batch)}
	return &wire.StepOutput{Tensors: []wire.Tensor{out}, Execute: time.Since(t0)}, nil
}

// BenchmarkStatefulStep is a stateful decode step of test/single-tiny (16 B
// of token ids each way) round trip; overhead = wall − execute, p50 and mean.
func BenchmarkStatefulStep(b *testing.B) {
	cfg, plan := testConfig(b, "test/single-tiny")
	_, addrs := startServer(b, server.ServerConfig{}, sinkEngine{})
	in := []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, make([]uint32, plan.Config.Workload.Batch))}
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			c := dial(b, addrs[tr], tr, "")
			s, err := c.Open(context.Background(), cfg, partition.RemoteStateful, partition.RemoteOptions{})
			if err != nil {
				b.Fatal(err)
			}
			over := make([]float64, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := s.Step(context.Background(), partition.Decode, 0, in)
				if err != nil {
					b.Fatal(err)
				}
				over = append(over, (r.Wall-r.Execute).Seconds()*1e6)
			}
			b.ReportMetric(stats.Percentile(over, 0.5), "overhead-p50-µs")
			b.ReportMetric(stats.Summarize(over, stats.Linear).Mean, "overhead-mean-µs")
		})
	}
}

// BenchmarkNaiveStreamVsSocket streams a naive-sized payload (64 MiB up,
// tokens back) through a Step on each transport, and the same bytes through
// a plain TCP socket copy on loopback, in the same run; it reports each rate
// and the ratio transport / socket.
func BenchmarkNaiveStreamVsSocket(b *testing.B) {
	const size = 64 << 20
	cfg, _ := testConfig(b, "test/single-tiny")
	_, addrs := startServer(b, server.ServerConfig{MaxMessageBytes: 4 << 20}, sinkEngine{})
	payload := []wire.Tensor{{Name: "L00.w_up", ElemBytes: 1, Shape: []int64{size}, Data: make([]byte, size)}}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1<<20)
				for {
					if n, err := io.CopyBuffer(io.Discard, io.LimitReader(c, size), buf); err != nil || n != size {
						return
					}
					if _, err := c.Write([]byte{1}); err != nil {
						return
					}
				}
			}()
		}
	}()
	sock, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer sock.Close()
	sessions := map[string]*Session{}
	for _, tr := range transports {
		c := dial(b, addrs[tr], tr, "")
		if sessions[tr], err = c.Open(context.Background(), cfg, partition.RemoteNaive, partition.RemoteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	var sockS, grpcS, tcpS time.Duration
	ack := make([]byte, 1)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := sock.Write(payload[0].Data); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(sock, ack); err != nil {
			b.Fatal(err)
		}
		sockS += time.Since(t0)
		for _, tr := range transports {
			t0 := time.Now()
			if _, err := sessions[tr].Step(context.Background(), partition.Prefill, 0, payload); err != nil {
				b.Fatal(err)
			}
			if tr == "grpc" {
				grpcS += time.Since(t0)
			} else {
				tcpS += time.Since(t0)
			}
		}
	}
	n := float64(b.N) * size
	b.ReportMetric(n/sockS.Seconds()/1e9, "socket-GB/s")
	b.ReportMetric(n/grpcS.Seconds()/1e9, "grpc-GB/s")
	b.ReportMetric(n/tcpS.Seconds()/1e9, "rawtcp-GB/s")
	b.ReportMetric(sockS.Seconds()/grpcS.Seconds(), "grpc/socket")
	b.ReportMetric(sockS.Seconds()/tcpS.Seconds(), "rawtcp/socket")
}

// childEcho is the floor of a round trip across processes on raw TCP: a
// plain socket that returns every length-prefixed message (4-byte
// big-endian length, then the bytes) as it came, one connection at a time.
// Its reads wait as the raw-TCP server's do (wire.PollEnv), so that the
// floor is the transport's round trip under the same policy.
func childEcho() int {
	poll, err := wire.ResolvePoll("echo", "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		return 1
	}
	ln = poll.Listener(ln)
	fmt.Println("echo listening on", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		go func() {
			defer c.Close()
			buf := make([]byte, 64<<10)
			for {
				if _, err := io.ReadFull(c, buf[:4]); err != nil {
					return
				}
				n := int(binary.BigEndian.Uint32(buf[:4]))
				if n > len(buf)-4 {
					return
				}
				if _, err := io.ReadFull(c, buf[4:4+n]); err != nil {
					return
				}
				if _, err := c.Write(buf[:4+n]); err != nil {
					return
				}
			}
		}()
	}
}

// echoRoundTrip is the raw-TCP floor: one round trip of a message of size
// bytes (with its 4-byte length) each way to the echo child.
type echoRoundTrip struct {
	c         net.Conn
	msg, back []byte
}

func newEchoRoundTrip(b *testing.B, addr string, size int) *echoRoundTrip {
	poll, err := wire.ResolvePoll("echo", "")
	if err != nil {
		b.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	c = poll.Conn(c) // its reads wait as the raw-TCP client's do
	b.Cleanup(func() { c.Close() })
	msg := make([]byte, 4+size)
	binary.BigEndian.PutUint32(msg, uint32(size))
	return &echoRoundTrip{c: c, msg: msg, back: make([]byte, len(msg))}
}

// trip times one round trip, in µs.
func (e *echoRoundTrip) trip(b *testing.B) float64 {
	t0 := time.Now()
	if _, err := e.c.Write(e.msg); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(e.c, e.back); err != nil {
		b.Fatal(err)
	}
	return float64(time.Since(t0).Nanoseconds()) / 1e3
}

// grpcRoundTrip is the gRPC floor: a health check (a unary call of a few
// bytes each way) against the server child, the round trip of gRPC itself.
type grpcRoundTrip struct{ h healthpb.HealthClient }

func newGRPCRoundTrip(b *testing.B, addr string) *grpcRoundTrip {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	g := &grpcRoundTrip{h: healthpb.NewHealthClient(cc)}
	g.trip(b) // the first call connects
	return g
}

func (g *grpcRoundTrip) trip(b *testing.B) float64 {
	t0 := time.Now()
	if _, err := g.h.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		b.Fatal(err)
	}
	return float64(time.Since(t0).Nanoseconds()) / 1e3
}

// BenchmarkStatefulStepProcess is BenchmarkStatefulStep with the server in
// another process (this test binary re-executed, the sink engine): a
// stateful decode step of test/single-tiny, overhead = wall − execute, p50
// and p99, beside the floor of a round trip across the same process
// boundary on the same transport: a plain TCP echo of the step's request
// wire bytes (raw TCP), a gRPC health check (gRPC). Steps and floor round
// trips alternate in blocks of floorBlock, so that both see the machine in
// the same state (on a shared machine a floor timed after all the steps saw
// other load: its p50 ranged 16–53 µs between runs of the same binary);
// the first of each block is not counted (it pays for what the other side
// was still doing after its last reply: strictly alternating, the echo
// floor came out slower than the step). ns/op counts both. It reports
// p50 / floor, and p99 / p50 of the steps and of the floor. The echo's
// reads, on both ends, wait as the raw-TCP transport's do
// (PARTBENCH_TCP_POLL, inherited by the children).
func BenchmarkStatefulStepProcess(b *testing.B) {
	const floorBlock = 100
	cfg, plan := testConfig(b, "test/single-tiny")
	in := []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, make([]uint32, plan.Config.Workload.Batch))}
	echo := startChild(b, "echo")
	echoAddr := strings.TrimPrefix(echo.line(b, "echo listening on "), "echo listening on ")
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			srv, addr := serveChild(b, tr, append([]string{"CHILD_ENGINE=sink"}, strings.Fields(os.Getenv("PARTBENCH_BENCH_SERVER_ENV"))...)...)
			c := dial(b, addr, tr, "")
			s, err := c.Open(context.Background(), cfg, partition.RemoteStateful, partition.RemoteOptions{})
			if err != nil {
				b.Fatal(err)
			}
			// One step first: its request's size is the echo's message.
			r, err := s.Step(context.Background(), partition.Decode, 0, in)
			if err != nil {
				b.Fatal(err)
			}
			var trip func(*testing.B) float64
			if tr == "tcp" {
				trip = newEchoRoundTrip(b, echoAddr, int(r.Bytes.WireUp)).trip
			} else {
				trip = newGRPCRoundTrip(b, addr).trip
			}
			over, floor, span := make([]float64, 0, b.N), make([]float64, 0, b.N), make([]float64, 0, b.N)
			// The client paces its collector as `partbench remote` does (the
			// server child does in server.Serve).
			gcpace.Apply(gcpace.Headroom)
			// CPU time (on-CPU, all threads, user and kernel) of this process
			// over its step blocks and its floor blocks, of the server child
			// and of the echo child, for the CPU each end spends per round trip.
			var selfSteps, selfFloor time.Duration
			srv0, echo0 := procCPU(srv.cmd.Process.Pid), procCPU(echo.cmd.Process.Pid)
			b.ResetTimer()
			for i := 0; i < b.N; i += floorBlock {
				n := min(floorBlock, b.N-i)
				c0 := procCPU(os.Getpid())
				for j := 0; j <= n; j++ {
					r, err := s.Step(context.Background(), partition.Decode, 0, in)
					if err != nil {
						b.Fatal(err)
					}
					if j > 0 {
						over = append(over, (r.Wall-r.Execute).Seconds()*1e6)
						span = append(span, (r.Span-r.Execute).Seconds()*1e6)
					}
				}
				c1 := procCPU(os.Getpid())
				for j := 0; j <= n; j++ {
					if f := trip(b); j > 0 {
						floor = append(floor, f)
					}
				}
				selfSteps, selfFloor = selfSteps+c1-c0, selfFloor+procCPU(os.Getpid())-c1
			}
			b.StopTimer()
			// Each block has one uncounted step and round trip beside its n.
			steps := float64(b.N + (b.N+floorBlock-1)/floorBlock)
			b.ReportMetric(selfSteps.Seconds()*1e6/steps, "client-cpu-µs/step")
			b.ReportMetric(selfFloor.Seconds()*1e6/steps, "client-cpu-µs/floor")
			if tr == "tcp" {
				// The server child serves only steps here, the echo child only
				// the floor (on gRPC both go to the server child).
				b.ReportMetric((procCPU(srv.cmd.Process.Pid)-srv0).Seconds()*1e6/steps, "server-cpu-µs/step")
				b.ReportMetric((procCPU(echo.cmd.Process.Pid)-echo0).Seconds()*1e6/steps, "echo-cpu-µs/floor")
			}
			if dir := os.Getenv("PARTBENCH_BENCH_DUMP"); dir != "" {
				dumpMicros(b, filepath.Join(dir, tr+"-overhead.txt"), over)
				dumpMicros(b, filepath.Join(dir, tr+"-floor.txt"), floor)
				dumpMicros(b, filepath.Join(dir, tr+"-server.txt"), span)
			}
			p50, p99 := stats.Percentile(over, 0.5), stats.Percentile(over, 0.99)
			f50, f99 := stats.Percentile(floor, 0.5), stats.Percentile(floor, 0.99)
			b.ReportMetric(p50, "overhead-p50-µs")
			b.ReportMetric(p99, "overhead-p99-µs")
			b.ReportMetric(f50, "floor-p50-µs")
			b.ReportMetric(f99, "floor-p99-µs")
			b.ReportMetric(p50/f50, "p50/floor")
			b.ReportMetric(p99/p50, "p99/p50")
			b.ReportMetric(f99/f50, "floor-p99/p50")
			if strings.Contains(os.Getenv("GODEBUG"), "gctrace=1") {
				b.ReportMetric(float64(childGCs(srv)), "server-GCs")
			}
		})
	}
}

// procCPU is the time process pid's threads have run on a CPU (user and
// kernel; the first field of each /proc/PID/task/TID/schedstat, in ns): 0
// where /proc does not say (not Linux).
func procCPU(pid int) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ts, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var ns int64
	for _, t := range ts {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // the thread has ended
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			v, _ := strconv.ParseInt(f[0], 10, 64)
			ns += v
		}
	}
	return time.Duration(ns)
}

// childGCs ends a child run with GODEBUG=gctrace=1 (inherited from this
// process) and counts the garbage collections its stderr reports, one
// line "gc N @…" each, over its whole life.
func childGCs(c *child) int {
	c.cmd.Process.Kill()
	<-c.done // the stderr copy has ended
	n := 0
	for _, l := range strings.Split(c.stderr.String(), "\n") {
		if strings.HasPrefix(l, "gc ") {
			n++
		}
	}
	return n
}

// dumpMicros appends xs (µs, in the order measured) to file, one a line:
// PARTBENCH_BENCH_DUMP's per-step record (overhead, the server's part of
// it: its whole request less the engine's execute, and the floor's round
// trips), for a histogram of where the tail lies and when.
func dumpMicros(b *testing.B, file string, xs []float64) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, x := range xs {
		fmt.Fprintf(w, "%.2f\n", x)
	}
	fmt.Fprintln(w)
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
