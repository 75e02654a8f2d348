package remote

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

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
func childEcho() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		return 1
	}
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

// echoFloor times n round trips of a message of size bytes each way to the
// echo child, in µs.
func echoFloor(b *testing.B, addr string, size, n int) []float64 {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, 4+size)
	binary.BigEndian.PutUint32(msg, uint32(size))
	back := make([]byte, len(msg))
	out := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, back); err != nil {
			b.Fatal(err)
		}
		out = append(out, float64(time.Since(t0).Nanoseconds())/1e3)
	}
	return out
}

// grpcFloor times n gRPC health checks (a unary call of a few bytes each
// way) against the server child, in µs: the round trip of gRPC itself.
func grpcFloor(b *testing.B, addr string, n int) []float64 {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	h := healthpb.NewHealthClient(cc)
	out := make([]float64, 0, n)
	for i := -1; i < n; i++ { // the first call connects
		t0 := time.Now()
		if _, err := h.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
			b.Fatal(err)
		}
		if i >= 0 {
			out = append(out, float64(time.Since(t0).Nanoseconds())/1e3)
		}
	}
	return out
}

// BenchmarkStatefulStepProcess is BenchmarkStatefulStep with the server in
// another process (this test binary re-executed, the sink engine): a
// stateful decode step of test/single-tiny, overhead = wall − execute, p50
// and p99, beside the floor of a round trip across the same process
// boundary on the same transport: a plain TCP echo of the step's request
// wire bytes (raw TCP), a gRPC health check (gRPC). It reports p50 / floor
// and p99 / p50.
func BenchmarkStatefulStepProcess(b *testing.B) {
	cfg, plan := testConfig(b, "test/single-tiny")
	in := []wire.Tensor{tokensTensor(plan.Config.Workload.Batch, make([]uint32, plan.Config.Workload.Batch))}
	echo := startChild(b, "echo")
	echoAddr := strings.TrimPrefix(echo.line(b, "echo listening on "), "echo listening on ")
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			_, addr := serveChild(b, tr, "CHILD_ENGINE=sink")
			c := dial(b, addr, tr, "")
			s, err := c.Open(context.Background(), cfg, partition.RemoteStateful, partition.RemoteOptions{})
			if err != nil {
				b.Fatal(err)
			}
			over := make([]float64, 0, b.N)
			var wireUp int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := s.Step(context.Background(), partition.Decode, 0, in)
				if err != nil {
					b.Fatal(err)
				}
				over = append(over, (r.Wall-r.Execute).Seconds()*1e6)
				wireUp = r.Bytes.WireUp
			}
			b.StopTimer()
			var floor []float64
			if tr == "tcp" {
				floor = echoFloor(b, echoAddr, int(wireUp), max(b.N, 100))
			} else {
				floor = grpcFloor(b, addr, max(b.N, 100))
			}
			p50, p99, f50 := stats.Percentile(over, 0.5), stats.Percentile(over, 0.99), stats.Percentile(floor, 0.5)
			b.ReportMetric(p50, "overhead-p50-µs")
			b.ReportMetric(p99, "overhead-p99-µs")
			b.ReportMetric(f50, "floor-p50-µs")
			b.ReportMetric(stats.Percentile(floor, 0.99), "floor-p99-µs")
			b.ReportMetric(p50/f50, "p50/floor")
			b.ReportMetric(p99/p50, "p99/p50")
		})
	}
}
