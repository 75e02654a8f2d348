package remote

import (
	"encoding/binary"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/partbench/partbench/partition"
	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
)

// TestLoadHostileClients is the loopback load test of a token-protected
// server process with a 32 MiB memory budget, on each transport, for about
// 2 s: unauthenticated connections (raw-TCP hellos announced at 4 MiB,
// connections that say nothing, gRPC calls of 1 MiB with a wrong token),
// 30 authenticated clients that open naive sessions and send half a
// request's data then nothing, and 20 that declare a 40 GiB tensor, all
// while one legitimate client keeps generating. It holds when every
// legitimate request is served and the server's peak resident memory
// (/proc VmHWM) stays under the budget plus server.MemoryOverheadBytes (64 MiB:
// the runtime, the engine's code and scratch, unauthenticated
// connections), the soft limit `serve` gives the Go runtime. Without the
// bounds it rose to 3.2 GB under a 10 MB budget.
func TestLoadHostileClients(t *testing.T) {
	const (
		budget   = 32 << 20
		duration = 2 * time.Second
		// The legitimate client keeps going past duration until it has
		// been served minServed requests, for at most patience: on a
		// machine busy with other jobs 2 s may hold fewer, and the
		// property is that it is served while the attack goes on, not how
		// fast.
		minServed = 10
		patience  = 30 * time.Second
	)
	tf := tokenFile(t, "load-token")
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			srv, addr := hostileChild(t, tr, "HS_TOKEN_FILE="+tf, "HS_BUDGET=33554432", "HS_HANDSHAKE=2s", "HS_READ=20s")
			pid := srv.cmd.Process.Pid
			cfg, plan := testConfig(t, "test/single-tiny")
			legit := dial(t, addr, tr, "load-token")
			ls, err := legit.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b := plan.Config.Workload.Batch
			prompt := tokensTensor(b, SeededPrompt(plan))
			decode := tokensTensor(b, make([]uint32, b))
			generate := func() ([]time.Duration, error) {
				var lat []time.Duration
				r, err := ls.Step(ctx(t), partition.Prefill, 0, []wire.Tensor{prompt})
				if err != nil {
					return nil, err
				}
				lat = append(lat, r.Wall)
				for i := 0; i < plan.Config.Workload.OutputTokens-1; i++ {
					if r, err = ls.Step(ctx(t), partition.Decode, i, []wire.Tensor{decode}); err != nil {
						return nil, err
					}
					lat = append(lat, r.Wall)
				}
				return lat, nil
			}
			if _, err := generate(); err != nil {
				t.Fatal(err)
			}
			before := procKB(t, pid, "VmHWM")

			stop := make(chan struct{})
			stopAll := sync.OnceFunc(func() { close(stop) })
			var wg sync.WaitGroup
			var mu sync.Mutex
			var conns []net.Conn
			keep := func(c net.Conn) {
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
			var clients []*Client
			keepClient := func(c *Client) {
				mu.Lock()
				clients = append(clients, c)
				mu.Unlock()
			}
			// However the test ends, every hostile goroutine has ended
			// before it returns (none may report after the test).
			defer func() {
				stopAll()
				mu.Lock()
				for _, c := range conns {
					c.Close()
				}
				for _, c := range clients {
					c.Close()
				}
				mu.Unlock()
				wg.Wait()
			}()
			// Unauthenticated: raw connections until told to stop.
			wg.Add(1)
			go func() {
				defer wg.Done()
				junk := make([]byte, 64<<10)
				for i := 0; i < 400; i++ {
					select {
					case <-stop:
						return
					default:
					}
					c, err := net.DialTimeout("tcp", addr, time.Second)
					if err != nil {
						continue
					}
					keep(c)
					if i%2 == 0 {
						c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
						c.Write(binary.BigEndian.AppendUint32(nil, 4<<20-1))
						c.Write(junk)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
			if tr == "grpc" {
				bad, err := Dial(ctx(t), ClientConfig{Addr: addr, Transport: tr, Token: "wrong", CallTimeout: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				keepClient(bad)
				js := make([]byte, 1<<20)
				for g := 0; g < 4; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							select {
							case <-stop:
								return
							default:
							}
							_, err := bad.t.open(ctx(t), &pb.OpenRequest{ConfigJson: js, Mode: pb.Mode_MODE_NAIVE})
							// Unavailable: the connection was closed at the
							// handshake deadline (it never authenticated).
							if c := status.Code(err); c != codes.Unauthenticated && c != codes.Unavailable {
								select {
								case <-stop: // the test is closing the client
								default:
									t.Errorf("a call with a wrong token: %v", err)
								}
								return
							}
						}
					}()
				}
			}
			// Silent: a naive session, half a request, then nothing.
			infos, total := payloadInfos(t, plan, partition.RemoteNaive, partition.Prefill, 0)
			var refusedOpen, refusedStep, held int
			for i := 0; i < 30; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := Dial(ctx(t), ClientConfig{Addr: addr, Transport: tr, Token: "load-token", CallTimeout: 30 * time.Second})
					if status.Code(err) == codes.ResourceExhausted { // no room for its connection's buffers
						mu.Lock()
						refusedOpen++
						mu.Unlock()
						return
					}
					if err != nil {
						select {
						case <-stop:
						default:
							t.Errorf("silent client: %v", err)
						}
						return
					}
					keepClient(c)
					s, err := c.Open(ctx(t), cfg, partition.RemoteNaive, partition.RemoteOptions{})
					if err != nil {
						mu.Lock()
						refusedOpen++
						mu.Unlock()
						return
					}
					st, err := c.t.step(ctx(t))
					if err != nil {
						return
					}
					defer st.finish()
					st.Send(&pb.Frame{Kind: &pb.Frame_Header{Header: &pb.StepHeader{SessionId: s.ID, Phase: pb.Phase_PHASE_PREFILL, Tensors: infos}}})
					// Whole tensors in order, up to half the request.
					sent := int64(0)
					for _, ti := range infos {
						if sent+ti.Bytes > total/2 {
							break
						}
						d := make([]byte, ti.Bytes)
						for off := 0; off < len(d); off += s.maxChunk {
							st.sendData(d[off:min(off+s.maxChunk, len(d))])
						}
						sent += ti.Bytes
					}
					if ts, ok := st.(*tcpClientStream); ok {
						ts.t.tc.Flush()
					}
					done := make(chan error, 1)
					go func() { _, err := st.Recv(); done <- err }()
					select {
					case err := <-done:
						if status.Code(err) == codes.ResourceExhausted {
							mu.Lock()
							refusedStep++
							mu.Unlock()
						} else {
							t.Logf("silent: %v", err)
						}
					case <-stop:
						mu.Lock()
						held++
						mu.Unlock()
					}
				}()
			}
			// Huge headers from authenticated clients.
			for i := 0; i < 20; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := Dial(ctx(t), ClientConfig{Addr: addr, Transport: tr, Token: "load-token", CallTimeout: 30 * time.Second})
					if err != nil {
						return
					}
					keepClient(c)
					s, err := c.Open(ctx(t), cfg, partition.RemoteStateful, partition.RemoteOptions{})
					if err != nil {
						return // the budget is full of silent sessions
					}
					st, err := c.t.step(ctx(t))
					if err != nil {
						return
					}
					defer st.finish()
					st.Send(&pb.Frame{Kind: &pb.Frame_Header{Header: &pb.StepHeader{SessionId: s.ID, Phase: pb.Phase_PHASE_DECODE,
						Tensors: []*pb.TensorInfo{{Name: partition.RemoteTokensIn, ElemBytes: 4, Shape: []int64{10 << 30}, Bytes: 40 << 30}}}}})
					if ts, ok := st.(*tcpClientStream); ok {
						ts.t.tc.Flush()
					}
					if _, err := st.Recv(); err == nil {
						t.Errorf("a 40 GiB header was answered")
					}
				}()
			}
			// The legitimate client, throughout.
			var lat []time.Duration
			start := time.Now()
			end, giveUp := start.Add(duration), start.Add(patience)
			for (time.Now().Before(end) || len(lat) < minServed) && time.Now().Before(giveUp) {
				l, err := generate()
				if err != nil {
					t.Fatalf("the legitimate client after %d requests: %v", len(lat), err)
				}
				lat = append(lat, l...)
			}
			peak := procKB(t, pid, "VmHWM")
			stopAll()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%s: legitimate requests served %d (median %v, max %v); silent clients holding half a request %d, refused at open %d, at step %d; peak RSS %d kB before, %d kB under load (budget %d kB)",
				tr, len(lat), lat[len(lat)/2], lat[len(lat)-1], held, refusedOpen, refusedStep, before, peak, budget>>10)
			if len(lat) < minServed {
				t.Errorf("only %d legitimate requests in %v under the attack (want %d)", len(lat), time.Since(start).Round(time.Millisecond), minServed)
			}
			if peak<<10 > budget+server.MemoryOverheadBytes && !raceEnabled {
				t.Errorf("peak memory %d B under load; the bound is the budget %d B + %d B", peak<<10, budget, server.MemoryOverheadBytes)
			}
		})
	}
}
