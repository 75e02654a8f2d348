package exec

import (
	"context"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/partbench/partbench/exec/rendezvous"
)

// A time on rank 0's clock: epoch 1000 s (rank 0's Unix time), this rank's
// clock 2.5 ms behind (applied +2.5 ms): its reading 1000.5 s is
// 1000.5 + 0.0025 − 1000 = 0.5025 s after the epoch.
func TestClockBaseAt(t *testing.T) {
	b := clockBase{epochNS: 1000e9, appliedNS: 2_500_000}
	if got := b.at(time.Unix(1000, 500_000_000)); math.Abs(got-0.5025) > 1e-12 {
		t.Errorf("at = %v s, want 0.5025", got)
	}
}

// Two ranks joined under different host names: rank 1 counts as another
// host, so it applies its estimated offset (in one process the truth is
// 0, so the estimate is within its bound of 0), rank 0 applies none, and
// both hold rank 0's epoch.
func TestSyncClockAnotherHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hosts := []string{"node-a", "node-b"}
	syncs := make([]ClockSync, 2)
	bases := make([]clockBase, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		o := rendezvous.Options{Addr: ln.Addr().String(), Rank: r, Size: 2, ConfigHash: "cafe", Hostname: hosts[r], JoinTimeout: 10 * time.Second}
		if r == 0 {
			o.Listener = ln
		}
		wg.Go(func() {
			sess, err := rendezvous.Join(ctx, o)
			if err != nil {
				errs[r] = err
				return
			}
			defer sess.Close()
			syncs[r], bases[r], errs[r] = syncClock(ctx, sess, hosts[r])
			if errs[r] == nil {
				errs[r] = sess.Barrier(ctx) // rank 0 stays until rank 1 is done
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if s := syncs[0]; !s.SameHost || s.AppliedS != 0 || s.Pings != 0 || bases[0].appliedNS != 0 {
		t.Errorf("rank 0: %+v, base %+v; want its own clock", s, bases[0])
	}
	s := syncs[1]
	if s.SameHost || s.Pings != 8 || s.AppliedS != s.OffsetS || math.Abs(s.OffsetS) > s.UncertaintyS+1e-6 ||
		math.Abs(float64(bases[1].appliedNS)-1e9*s.OffsetS) > 1 {
		t.Errorf("rank 1: %+v, base %+v; want another host's offset applied, within its bound of 0", s, bases[1])
	}
	if bases[0].epochNS == 0 || bases[1].epochNS != bases[0].epochNS {
		t.Errorf("epochs %d and %d, want rank 0's on both", bases[0].epochNS, bases[1].epochNS)
	}
}
