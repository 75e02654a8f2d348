package remote

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

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
