//go:build unix

package tcpcomm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
)

// With PB_TC_HELPER set, the test binary is one rank of a real multi-process
// run started by launch.Spawn: launch.Detect, rendezvous.Join, New, an
// all-reduce over every rank, and a Gather of the counters to rank 0, which
// checks them against commcount. PB_TC_HELPER=die makes rank 2 exit with
// status 3 after connecting; the others must notice and stop.
func TestMain(m *testing.M) {
	if mode := os.Getenv("PB_TC_HELPER"); mode != "" {
		if err := rankMain(mode); err != nil {
			fmt.Println("err:", err)
			if rendezvous.PeerFailed(err) {
				os.Exit(launch.ExitPeerFailed)
			}
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const helperCount = 1001

func rankMain(mode string) error {
	env, err := launch.Detect(os.LookupEnv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := rendezvous.Join(ctx, rendezvous.Options{
		Addr: env.RendezvousAddr, Rank: env.Rank, Size: env.Size, LaunchedSize: env.Size,
		ConfigHash: "h", JoinTimeout: 10 * time.Second, Heartbeat: 100 * time.Millisecond, LostAfter: time.Second,
	})
	if err != nil {
		return err
	}
	defer sess.Close()
	// the run loop's rules: a failed session cancels every pending call, and
	// any error after the join is reported as the run's root failure
	go func() {
		<-sess.Done()
		if sess.Err() != nil {
			cancel()
		}
	}()
	return sess.Cause(runRank(ctx, sess, env, mode), 2*time.Second)
}

func runRank(ctx context.Context, sess *rendezvous.Session, env launch.Env, mode string) error {
	c, err := New(ctx, sess, env.Rank, env.Size, "127.0.0.1")
	if err != nil {
		return err
	}
	defer c.Close()
	shm, tcp := c.Transports()
	fmt.Printf("peers: %d shm, %d tcp\n", shm, tcp)
	if mode == "die" && env.Rank == 2 {
		os.Exit(3)
	}
	all := make([]int, env.Size)
	for i := range all {
		all[i] = i
	}
	g, err := c.NewGroup(ctx, all)
	if err != nil {
		return err
	}
	b := make(pexec.F32, helperCount)
	for i := range b {
		b[i] = float32(env.Rank + 1)
	}
	if err := g.AllReduce(ctx, b); err != nil {
		return err
	}
	want := float32(env.Size * (env.Size + 1) / 2)
	for i, v := range b {
		if v != want {
			return fmt.Errorf("element %d = %v, want %v", i, v, want)
		}
	}
	snap, _ := json.Marshal(c.Counter().Snapshot())
	got, err := sess.Gather(ctx, snap)
	if err != nil {
		return err
	}
	for r, raw := range got {
		var s commcount.Snapshot
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		m, w := commcount.RingAllReduceWire(env.Size, r, helperCount, 4)
		p := s.Peers[(r+1)%env.Size]
		if s.Calls[commcount.AllReduce] != 1 || p.Messages != m || p.WireBytes != w {
			return fmt.Errorf("rank %d counted %+v, want 1 call and %d messages / %d B", r, s, m, w)
		}
	}
	fmt.Printf("ok rank %d\n", env.Rank)
	return nil
}

func spawnRanks(t *testing.T, mode string, n int, transport Transport) (int, error, string, time.Duration) {
	t.Helper()
	var out bytes.Buffer
	start := time.Now()
	code, err := launch.Spawn(context.Background(), launch.SpawnOptions{
		NProc: n, Argv: []string{os.Args[0], "-test.run=^$"},
		Env:    append(os.Environ(), "PB_TC_HELPER="+mode, TransportEnv+"="+string(transport), "GORACE=atexit_sleep_ms=0"),
		Prefix: true, Stdout: &out, Stderr: &out, Grace: 5 * time.Second,
	})
	return code, err, out.String(), time.Since(start)
}

// TestSpawnedRanks runs 4 processes over each transport: with shm every
// pair of these same-host ranks shares a segment (3 peers each), with tcp
// none does.
func TestSpawnedRanks(t *testing.T) {
	const n = 4
	for _, tr := range []Transport{TransportTCP, TransportSHM} {
		t.Run(string(tr), func(t *testing.T) {
			code, err, out, el := spawnRanks(t, "ok", n, tr)
			if code != 0 || err != nil {
				t.Fatalf("code %d err %v\n%s", code, err, out)
			}
			want := "peers: 0 shm, 3 tcp"
			if tr == TransportSHM {
				want = "peers: 3 shm, 0 tcp"
			}
			for r := 0; r < n; r++ {
				if !strings.Contains(out, fmt.Sprintf("[rank %d] ok rank %d\n", r, r)) || !strings.Contains(out, fmt.Sprintf("[rank %d] %s\n", r, want)) {
					t.Fatalf("rank %d did not finish with %q:\n%s", r, want, out)
				}
			}
			t.Logf("%d processes: launch, rendezvous, connect, all-reduce, gather in %v", n, el)
		})
	}
}

func TestSpawnedRankDies(t *testing.T) {
	for _, tr := range []Transport{TransportTCP, TransportSHM} {
		t.Run(string(tr), func(t *testing.T) { testSpawnedRankDies(t, tr) })
	}
}

func testSpawnedRankDies(t *testing.T, tr Transport) {
	code, err, out, el := spawnRanks(t, "die", 4, tr)
	if code != 3 || err == nil || !strings.Contains(err.Error(), "rank 2 exited with status 3") {
		t.Fatalf("code %d err %v, want rank 2's status 3\n%s", code, err, out)
	}
	for _, r := range []int{0, 1, 3} {
		if !strings.Contains(out, fmt.Sprintf("[rank %d] err: rendezvous: lost rank 2", r)) {
			t.Fatalf("rank %d did not report the lost rank:\n%s", r, out)
		}
	}
	// the survivors stopped by themselves, well inside the 5 s grace
	if el > 4*time.Second || strings.Contains(err.Error(), "killed") {
		t.Fatalf("took %v (%v)\n%s", el, err, out)
	}
	t.Logf("rank 2 died; survivors stopped; launcher returned after %v:\n%s", el, out)
}
