package rendezvous

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two jobs on one port: rank 0 of job A turns away rank 1 of job B with a
// message naming both jobs, and still completes its own world.
func TestRankOfAnotherJobIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	opts := func(rank int, job string) Options {
		o := Options{Addr: addr, Rank: rank, Size: 2, ConfigHash: "cafe", JobID: job, Hostname: "h" + job}
		fast(&o)
		return o
	}
	type res struct {
		s   *Session
		err error
	}
	zero := make(chan res, 1)
	go func() {
		o := opts(0, "jobA")
		o.Listener = ln
		s, err := Join(context.Background(), o)
		zero <- res{s, err}
	}()
	// Job B's rank 1 comes first (same config, same rank: before job ids it was joined).
	start := time.Now()
	_, errB := Join(context.Background(), opts(1, "jobB"))
	if errB == nil || !strings.Contains(errB.Error(), "of job jobB reached the rendezvous at "+addr+" of job jobA") {
		t.Fatalf("job B's rank 1: %v; want a refusal naming both jobs", errB)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("refusal took %v", el)
	}
	s1, err := Join(context.Background(), opts(1, "jobA"))
	if err != nil {
		t.Fatalf("job A's rank 1: %v", err)
	}
	defer s1.Close()
	r := <-zero
	if r.err != nil {
		t.Fatalf("job A's rank 0: %v", r.err)
	}
	defer r.s.Close()
	if p := r.s.Peers()[1]; p.Host != "hjobA" {
		t.Fatalf("rank 0's rank 1 is %+v, want job A's", p)
	}
}

// A join that times out says which strangers it refused.
func TestTimeoutNamesRefusedJob(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	done := make(chan error, 1)
	go func() {
		o := Options{Addr: addr, Listener: ln, Rank: 0, Size: 2, JobID: "jobA", JoinTimeout: 600 * time.Millisecond}
		_, err := Join(context.Background(), o)
		done <- err
	}()
	_, _ = Join(context.Background(), Options{Addr: addr, Rank: 1, Size: 2, JobID: "jobB", JoinTimeout: 500 * time.Millisecond})
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "missing rank 1; refused rank 1 of job jobB (another job on this port)") {
		t.Fatalf("got %v", err)
	}
}

// A second rank 0 on a busy port fails at once, naming the port and the
// rank 0 that holds it (its job, host and pid).
func TestSecondRankZeroNamesHolder(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holding := make(chan error, 1)
	go func() {
		o := Options{Addr: addr, Listener: ln, Rank: 0, Size: 4, JobID: "jobA", Hostname: "nodeA", JoinTimeout: 10 * time.Second}
		_, err := Join(ctx, o)
		holding <- err
	}()
	time.Sleep(50 * time.Millisecond) // the holder accepts
	start := time.Now()
	_, err := Join(context.Background(), Options{Addr: addr, Rank: 0, Size: 4, JobID: "jobB", JoinTimeout: 10 * time.Second})
	el := time.Since(start)
	want := "rendezvous: rank 0 cannot listen on " + addr + " for job jobB"
	holder := "held by rank 0 of partbench job jobA on nodeA, pid " + strconv.Itoa(os.Getpid()) + ", a world of 4 ranks"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), holder) {
		t.Fatalf("got %v\nwant %q … %q", err, want, holder)
	}
	if el > time.Second { // at once: not the 10 s join timeout
		t.Errorf("took %v", el)
	}
	cancel()
	<-holding
}
