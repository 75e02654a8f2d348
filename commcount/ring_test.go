package commcount

import "testing"

func TestChunksCoverBuffer(t *testing.T) {
	for _, tc := range []struct{ count, n int }{{10, 3}, {7, 8}, {0, 4}, {4096, 8}, {1, 1}} {
		next := 0
		for i := 0; i < tc.n; i++ {
			if got := ChunkStart(tc.count, tc.n, i); got != next {
				t.Fatalf("count=%d n=%d chunk %d starts at %d, want %d", tc.count, tc.n, i, got, next)
			}
			next += ChunkLen(tc.count, tc.n, i)
		}
		if next != tc.count {
			t.Fatalf("count=%d n=%d: chunks cover %d elements", tc.count, tc.n, next)
		}
	}
}

func TestRingAllReduceWire(t *testing.T) {
	// 8 ranks, 4096 fp16 elements (8192 B): chunks of 512 elements = 1024 B;
	// each rank sends 2·7 = 14 messages of 1024 B = 14336 B = 2(n−1)/n·S.
	m, b := RingAllReduceWire(8, 3, 4096, 2)
	if m != 14 || b != 14336 {
		t.Fatalf("got %d messages %d bytes, want 14 and 14336", m, b)
	}
	// 3 ranks, 10 elements of 4 B: chunks 4,3,3. Position 0 sends in
	// reduce-scatter chunks 0,2 (4+3) and in all-gather chunks 1,0 (3+4): 14 elements = 56 B.
	m, b = RingAllReduceWire(3, 0, 10, 4)
	if m != 4 || b != 56 {
		t.Fatalf("got %d messages %d bytes, want 4 and 56", m, b)
	}
	// Summed over all positions every chunk is sent 2(n−1) times in total:
	// 2·2·10 elements·4 B = 160 B.
	var total int64
	for p := 0; p < 3; p++ {
		_, b := RingAllReduceWire(3, p, 10, 4)
		total += b
	}
	if total != 160 {
		t.Fatalf("ring total %d B, want 160", total)
	}
	if m, b := RingAllReduceWire(1, 0, 10, 4); m != 0 || b != 0 {
		t.Fatalf("single rank moved %d/%d", m, b)
	}
}

func TestCounterSnapshotDiff(t *testing.T) {
	c := New()
	c.Call(AllReduce, 100)
	c.Call(Send, 10)
	c.Message(3, 10)
	base := c.Snapshot()
	c.Call(AllReduce, 100)
	c.Message(3, 50)
	d := c.Snapshot().Sub(base)
	if d.Calls[AllReduce] != 1 || d.Bytes[AllReduce] != 100 || d.Calls[Send] != 0 {
		t.Fatalf("sub: %+v", d)
	}
	if d.Peers[3] != (PeerCount{Messages: 1, WireBytes: 50}) {
		t.Fatalf("peer 3: %+v", d.Peers[3])
	}
	if got := Diff(base, base); len(got) != 0 {
		t.Fatalf("diff of equal snapshots: %v", got)
	}
	if got := Diff(base, c.Snapshot()); len(got) != 3 {
		t.Fatalf("want 3 differences (calls, bytes, peer), got %v", got)
	}
}

func TestSnapshotArithmetic(t *testing.T) {
	c := New()
	c.Call(Send, 10)
	c.Message(2, 10)
	s := c.Snapshot()
	// 3 × (1 call, 10 B, 1 message of 10 B) added to itself once more = 4×.
	got := s.Times(3).Add(s)
	if got.Calls[Send] != 4 || got.Bytes[Send] != 40 || got.Peers[2] != (PeerCount{Messages: 4, WireBytes: 40}) {
		t.Fatalf("%+v", got)
	}
	if d := Diff(got, s.Times(4)); len(d) != 0 {
		t.Fatalf("Times(3)+1 differs from Times(4): %v", d)
	}
}
