package nccl

import (
	"testing"

	"github.com/partbench/partbench/commcount"
)

// Over every position of a ring, the ring-equivalent wire bytes of an
// all-reduce of S bytes sum to 2(n−1)·S (each rank sends 2(n−1)/n·S), and
// of an all-gather of n shards of s bytes to n(n−1)·s.
func TestTallyConservesBytes(t *testing.T) {
	for n := 1; n <= 9; n++ {
		ranks := make([]int, n)
		for i := range ranks {
			ranks[i] = 100 + i
		}
		const count, elem = 1001, 2 // 1001 does not divide evenly
		ctr := commcount.New()
		for p := 0; p < n; p++ {
			tl := tally{ctr: ctr, ranks: ranks, pos: p}
			tl.allReduce(count, elem)
		}
		s := ctr.Snapshot()
		var wire, msgs int64
		for _, pc := range s.Peers {
			wire += pc.WireBytes
			msgs += pc.Messages
		}
		if want := int64(2 * (n - 1) * count * elem); wire != want {
			t.Errorf("n=%d: all-reduce wire bytes %d, want %d", n, wire, want)
		}
		if want := int64(n * 2 * (n - 1)); msgs != want {
			t.Errorf("n=%d: all-reduce messages %d, want %d", n, msgs, want)
		}
		if s.Calls[commcount.AllReduce] != int64(n) || s.Bytes[commcount.AllReduce] != int64(n*count*elem) {
			t.Errorf("n=%d: calls %v bytes %v", n, s.Calls, s.Bytes)
		}
	}
}

// A broadcast chain sends n−1 messages in all: nobody sends to the root.
func TestTallyBroadcastChain(t *testing.T) {
	ranks := []int{0, 1, 2, 3, 4}
	for root := range ranks {
		ctr := commcount.New()
		for p := range ranks {
			tally{ctr: ctr, ranks: ranks, pos: p}.broadcast(10, 4, root)
		}
		s := ctr.Snapshot()
		if s.Messages() != 4 || s.Peers[root].Messages != 0 {
			t.Errorf("root %d: %d messages, %d to the root; want 4 and 0", root, s.Messages(), s.Peers[root].Messages)
		}
	}
}
