//go:build cgo

package ncclcomm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/ncclcomm/nccltest"
	"github.com/partbench/partbench/nccl"
	"github.com/partbench/partbench/partition"
)

// Rank 0's ids reach every rank: the same world, barrier and group ids
// everywhere, all different from each other, and communicators of the
// right size with each rank at its own position.
func TestNewSharesIDs(t *testing.T) {
	for _, variant := range []struct {
		name        string
		defines     []string
		nonBlocking bool
	}{{"nccl 2.27", nil, true}, {"nccl 2.7 without ncclCommInitRankConfig", []string{"FAKE_OLD"}, false}} {
		t.Run(variant.name, func(t *testing.T) {
			w := newWorld(t, context.Background(), loadPlan(t, "test/tp2pp2-tiny", "fp16"), fakeLib(t, variant.defines...), Options{})
			ids := w.comms[0].ids
			seen := map[string]string{}
			for name, id := range map[string][]byte{"world": ids.World, "barrier": ids.Barrier, "0,1": ids.Groups["0,1"], "2,3": ids.Groups["2,3"]} {
				if other, dup := seen[string(id)]; dup {
					t.Errorf("%s and %s have the same unique id", name, other)
				}
				seen[string(id)] = name
			}
			if len(ids.Groups) != 2 {
				t.Errorf("ids for groups %v, want 0,1 and 2,3", ids.Groups)
			}
			for r, c := range w.comms {
				if !bytes.Equal(c.ids.World, ids.World) || !bytes.Equal(c.ids.Barrier, ids.Barrier) ||
					!bytes.Equal(c.ids.Groups["0,1"], ids.Groups["0,1"]) || !bytes.Equal(c.ids.Groups["2,3"], ids.Groups["2,3"]) {
					t.Errorf("rank %d got other ids than rank 0 made", r)
				}
				if c.nonBlocking != variant.nonBlocking {
					t.Errorf("rank %d: non-blocking %v, want %v", r, c.nonBlocking, variant.nonBlocking)
				}
				n, err := c.world.Count()
				if err != nil {
					t.Fatal(err)
				}
				pos, err := c.world.UserRank()
				if err != nil {
					t.Fatal(err)
				}
				if n != 4 || pos != r || c.Rank() != r || c.Size() != 4 {
					t.Errorf("rank %d: world communicator of %d with this rank at %d", r, n, pos)
				}
			}
		})
	}
}

// runPrograms runs every rank's prefill and steps decode steps through
// exec, as exec.Run does, and checks the counts after each phase against
// plan.Counts of the Programs.
func runPrograms(t *testing.T, w *world, steps int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, len(w.comms))
	for r, comm := range w.comms {
		wg.Go(func() {
			errs[r] = func() error {
				plan := w.plan
				groups, err := pexec.NewGroups(ctx, comm, plan, r)
				if err != nil {
					return err
				}
				if err := comm.Barrier(ctx); err != nil {
					return err
				}
				prefill, decode := plan.Program(r, partition.Prefill), plan.Program(r, partition.Decode)
				if err := pexec.RunProgram(ctx, prefill, w.computes[r], comm, groups, pexec.Past(plan, partition.Prefill, 0)); err != nil {
					return err
				}
				want := plan.Counts(prefill)
				if d := commcount.Diff(want, comm.Counter().Snapshot()); len(d) > 0 {
					return fmt.Errorf("after prefill: %v", d)
				}
				for s := range steps {
					if err := pexec.RunProgram(ctx, decode, w.computes[r], comm, groups, pexec.Past(plan, partition.Decode, s)); err != nil {
						return err
					}
				}
				if err := comm.Flush(ctx); err != nil {
					return err
				}
				if err := comm.Barrier(ctx); err != nil {
					return err
				}
				want = want.Add(plan.Counts(decode).Times(steps))
				if d := commcount.Diff(want, comm.Counter().Snapshot()); len(d) > 0 {
					return fmt.Errorf("after %d decode steps: %v", steps, d)
				}
				return nil
			}()
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// Every rank's counted calls, payload bytes and ring-equivalent messages
// equal plan.Counts of the Programs it ran, in fp16 and bf16 (2-byte
// activations, 4-byte tokens), phase by phase; barriers count nothing.
func TestCountsMatchPlan(t *testing.T) {
	for _, tc := range []struct{ config, dtype string }{
		{"test/tp2pp2-tiny", "fp16"}, {"test/tp2pp2-tiny", "bf16"}, {"test/pp4-tiny", "fp16"}, {"test/tp4-tiny", "bf16"},
	} {
		t.Run(tc.config+" "+tc.dtype, func(t *testing.T) {
			w := newWorld(t, context.Background(), loadPlan(t, tc.config, tc.dtype), fakeLib(t), Options{})
			runPrograms(t, w, 3)
		})
	}
}

// The hand-derived counts of one rank of tp2pp2-tiny in fp16, so the
// comparison above does not rest on plan.Counts alone. Rank 2 (stage 1,
// TP index 0; 2 micro-batches of 2 sequences, hidden 64, prompt 20, 8
// layers of which 4 on the stage; vocab 96 split over TP 2):
//
//	prefill, per micro-batch: recv x 40·64 fp16 = 5120 B; 2 all-reduces per
//	  layer × 4 = 8 of 5120 B; the LM head's all-gather of 2·96 fp16 = 384 B;
//	  send tokens 2 × 4 B = 8 B to rank 0.
//	ring-equivalent messages to rank 3 (group 2,3, position 0): an
//	  all-reduce of 2560 elements over 2 is 2 messages of 1280·2 B; an
//	  all-gather of 96 per member is 1 message of 96·2 B.
//
// Two micro-batches: 2 recv (10240 B), 16 all_reduce (81920 B), 2
// all_gather (768 B), 2 send (16 B); rank 3 gets 16·2 + 2 = 34 messages of
// 16·2·2560 + 2·192 = 82304 B, rank 0 gets 2 messages of 8 B.
func TestCountsByHand(t *testing.T) {
	w := newWorld(t, context.Background(), loadPlan(t, "test/tp2pp2-tiny", "fp16"), fakeLib(t), Options{})
	runPrograms(t, w, 0)
	want := commcount.Snapshot{
		Calls: map[commcount.Op]int64{commcount.Recv: 2, commcount.AllReduce: 16, commcount.AllGather: 2, commcount.Send: 2},
		Bytes: map[commcount.Op]int64{commcount.Recv: 10240, commcount.AllReduce: 81920, commcount.AllGather: 768, commcount.Send: 16},
		Peers: map[int]commcount.PeerCount{3: {Messages: 34, WireBytes: 82304}, 0: {Messages: 2, WireBytes: 16}},
	}
	if d := commcount.Diff(want, w.comms[2].Counter().Snapshot()); len(d) > 0 {
		t.Errorf("rank 2: %v", d)
	}
}

// What crossed to the (fake) library: element types follow the buffers,
// sends go on the rank's stream, and a Send the Program follows with a
// Recv goes out in one NCCL group with it.
func TestCallsReachNCCL(t *testing.T) {
	w := newWorld(t, context.Background(), loadPlan(t, "test/tp2pp2-tiny", "bf16"), fakeLib(t), Options{})
	ctx := context.Background()
	c := w.comms[2]
	stream := fmt.Sprintf("stream=%#x", w.computes[2].Stream().Handle())
	trace := func(want string) {
		t.Helper()
		if got := c.world.LastError(); got != want {
			t.Errorf("fake saw %q, want %q", got, want)
		}
	}
	// Tokens (fp32) to rank 0: the Program receives x of micro-batch 1
	// next, so the send waits in an open group.
	if err := c.Send(ctx, w.buffer(t, 2, "tokens", 0, 2), 0); err != nil {
		t.Fatal(err)
	}
	trace("ncclSend(count=2, datatype=7, peer=0, " + stream + ")")
	if !c.inGroup {
		t.Fatal("the send the Program follows with a recv is not held in a group")
	}
	if err := c.Recv(ctx, w.buffer(t, 2, "x", 1, 128), 0); err != nil {
		t.Fatal(err)
	}
	trace("ncclGroupEnd(depth=0)")
	if c.inGroup {
		t.Error("group still open after the recv")
	}
	// x (bf16) from rank 0 into micro-batch 0 at prefill size: a send the
	// Program follows with compute goes out at once.
	if err := c.Recv(ctx, w.buffer(t, 2, "x", 0, 2560), 0); err != nil {
		t.Fatal(err)
	}
	trace("ncclRecv(count=2560, datatype=9, peer=0, " + stream + ")")
	z := w.comms[0]
	if err := z.Send(ctx, w.buffer(t, 0, "x", 0, 2560), 2); err != nil {
		t.Fatal(err)
	}
	if z.inGroup {
		t.Error("a send the Program follows with compute was held")
	}
	// A held send is released by any other call, here a barrier-less flush.
	if err := c.Send(ctx, w.buffer(t, 2, "tokens", 1, 2), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c.inGroup {
		t.Error("flush left the group open")
	}
	g, err := c.NewGroup(ctx, []int{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AllReduce(ctx, w.buffer(t, 2, "y", 0, 128)); err != nil {
		t.Fatal(err)
	}
	trace("ncclAllReduce(count=128, datatype=9, op=0, " + stream + ")")
	if err := g.AllGather(ctx, w.buffer(t, 2, "logits", 0, 96), w.buffer(t, 2, "logits.gathered", 0, 192)); err != nil {
		t.Fatal(err)
	}
	trace("ncclAllGather(sendcount=96, datatype=9, " + stream + ")")
}

// Buffers that are not this rank's device buffers, and misshapen calls,
// are refused before anything is queued or counted.
func TestRefusals(t *testing.T) {
	w := newWorld(t, context.Background(), loadPlan(t, "test/tp2pp2-tiny", "fp16"), fakeLib(t), Options{})
	ctx := context.Background()
	c := w.comms[0]
	g, err := c.NewGroup(ctx, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.NewGroup(ctx, []int{0, 1})
	if err != nil || again != g {
		t.Errorf("asking again for group 0,1: %v, %v (want the same group)", again, err)
	}
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"host buffer send", "exec.F32 is not a device buffer", c.Send(ctx, pexec.F32{1, 2}, 2)},
		{"host buffer recv", "exec.F32 is not a device buffer", c.Recv(ctx, pexec.F32{1, 2}, 2)},
		{"host buffer all-reduce", "exec.F32 is not a device buffer", g.AllReduce(ctx, pexec.F32{1, 2})},
		{"another rank's buffer", "belongs to another compute backend", c.Send(ctx, w.buffer(t, 1, "x", 0, 4), 2)},
		{"all-gather sizes", "recv has 100 elements, want 2 members × 64 = 128",
			g.AllGather(ctx, w.buffer(t, 0, "h", 0, 64), w.buffer(t, 0, "x", 0, 100))},
		{"self-send", "does not send to itself", c.Send(ctx, w.buffer(t, 0, "x", 0, 4), 0)},
		{"peer outside", "rank 9 is outside a world of 4", c.Recv(ctx, w.buffer(t, 0, "x", 0, 4), 9)},
		{"group outside the plan", "group 0,2 is not a group of the plan", second(c.NewGroup(ctx, []int{0, 2}))},
		{"group without this rank", "does not contain this rank", second(c.NewGroup(ctx, []int{2, 3}))},
		{"unordered group", "must be ascending", second(c.NewGroup(ctx, []int{1, 0}))},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, tc.err, tc.want)
		}
	}
	if s := c.Counter().Snapshot(); s.TotalCalls() != 0 || s.Messages() != 0 {
		t.Errorf("refused calls were counted: %+v", s)
	}
}

func second[T any](_ T, err error) error { return err }

// failLimit bounds how long a blocked call may take to return after the
// fake reports its error or ctx is cancelled, with room for a loaded
// machine.
const failLimit = 2 * time.Second

// blocked runs rank 0's receipt of tokens from rank 2 on the world
// communicator, which the fake's HANG mode holds until the communicator is
// aborted.
func blocked(ctx context.Context, t *testing.T, w *world) <-chan error {
	t.Helper()
	buf := w.buffer(t, 0, "tokens", 0, 2)
	out := make(chan error, 1)
	go func() { out <- w.comms[0].Recv(ctx, buf, 2) }()
	return out
}

func waitErr(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(failLimit):
		t.Fatalf("%s did not return within %v", what, failLimit)
		return nil
	}
}

// NCCL's asynchronous error reaches the rank: the watchdog aborts its
// communicators, the blocked call returns, and every later call names
// the error. The fake reports it at the third poll, 150 ms after the
// communicator's creation. (Blocking communicators: the fake's
// non-blocking creation polls too and would see the error already.)
func TestAbortOnAsyncError(t *testing.T) {
	t.Setenv(nccltest.ModeEnv, fmt.Sprint(nccltest.ModeAsync|nccltest.ModeHang))
	w := newWorld(t, context.Background(), loadPlan(t, "test/tp2pp2-tiny", "fp16"), fakeLib(t), Options{Blocking: true, WatchInterval: 50 * time.Millisecond})
	start := time.Now()
	err := waitErr(t, blocked(context.Background(), t, w), "the blocked recv")
	if !errors.Is(err, nccl.RemoteError) || !strings.Contains(err.Error(), "fake: rank 2 stopped answering") {
		t.Errorf("blocked call: %v, want the asynchronous ncclRemoteError", err)
	}
	if d := time.Since(start); d > failLimit {
		t.Errorf("the rank got out after %v", d)
	}
	c := w.comms[0]
	if err := c.Flush(context.Background()); !errors.Is(err, nccl.RemoteError) {
		t.Errorf("flush after the abort: %v", err)
	}
	if err := c.world.AsyncError(); !errors.Is(err, nccl.ErrAborted) {
		t.Errorf("world communicator not aborted: %v", err)
	}
	closed := time.Now()
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if d := time.Since(closed); d > failLimit {
		t.Errorf("close took %v", d)
	}
	if err := c.Barrier(context.Background()); !errors.Is(err, nccl.RemoteError) {
		t.Errorf("after close, calls still name the first failure: %v", err)
	}
}

// A lost rank: the run loop cancels the ctx New was given, and the
// watchdogs abort at once.
func TestAbortOnCancel(t *testing.T) {
	t.Setenv(nccltest.ModeEnv, fmt.Sprint(nccltest.ModeHang))
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	w := newWorld(t, ctx, loadPlan(t, "test/tp2pp2-tiny", "fp16"), fakeLib(t), Options{WatchInterval: time.Hour})
	call := blocked(context.Background(), t, w)
	lost := errors.New("rendezvous: lost rank 3")
	cancel(lost)
	if err := waitErr(t, call, "the blocked recv"); !errors.Is(err, lost) {
		t.Errorf("blocked call: %v, want the cancel cause", err)
	}
}

// A call abandoned through its own ctx aborts the communicators too: the
// others could not complete what it started.
func TestAbandonedCall(t *testing.T) {
	t.Setenv(nccltest.ModeEnv, fmt.Sprint(nccltest.ModeHang))
	w := newWorld(t, context.Background(), loadPlan(t, "test/tp2pp2-tiny", "fp16"), fakeLib(t), Options{WatchInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := waitErr(t, blocked(ctx, t, w), "the abandoned recv")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "abandoned") {
		t.Errorf("abandoned call: %v", err)
	}
	if err := w.comms[0].Flush(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("flush after: %v", err)
	}
}
