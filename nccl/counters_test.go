//go:build cgo

package nccl

import (
	"bytes"
	"testing"

	"github.com/partbench/partbench/commcount"
)

// TestCounters drives the fake through one of each call on a 4-rank
// communicator whose positions are global ranks 8..11; this rank is
// position 1 (global 9), so its ring successor is global 10.
func TestCounters(t *testing.T) {
	l := loadFake(t)
	ctr := commcount.New()
	c, err := l.CommInitRank(4, modeID(0), 1, WithGlobalRanks([]int{8, 9, 10, 11}), WithCounter(ctr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	send, recv := hostBuf(t, 4096), hostBuf(t, 4096)
	for i := range send {
		send[i] = byte(i)
	}
	const stream = 0x5eed
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	trace := func(want string) {
		t.Helper()
		if got := c.LastError(); got != want {
			t.Errorf("fake saw %q, want %q", got, want)
		}
	}

	must(c.AllReduce(addr(send), addr(recv), 10, Float32, Max, stream))
	trace("ncclAllReduce(count=10, datatype=7, op=2, stream=0x5eed)")
	if !bytes.Equal(recv[:40], send[:40]) || recv[40] != 0 {
		t.Errorf("fake all-reduce did not copy exactly 10 float32: %v", recv[:44])
	}
	must(c.AllGather(addr(send), addr(recv), 5, Bfloat16, stream))
	trace("ncclAllGather(sendcount=5, datatype=9, stream=0x5eed)")
	must(c.ReduceScatter(addr(send), addr(recv), 3, Float64, Sum, stream))
	trace("ncclReduceScatter(recvcount=3, datatype=8, op=0, stream=0x5eed)")
	must(c.Broadcast(addr(send), addr(recv), 100, Int8, 2, stream))
	trace("ncclBroadcast(count=100, datatype=0, root=2, stream=0x5eed)")
	must(c.Broadcast(addr(send), addr(recv), 100, Int8, 0, stream))
	must(l.GroupStart())
	must(c.Send(addr(send), 7, Float16, 3, stream))
	trace("ncclSend(count=7, datatype=6, peer=3, stream=0x5eed)")
	must(c.Recv(addr(recv), 7, Float16, 0, stream))
	must(l.GroupEnd())
	trace("ncclGroupEnd(depth=0)")

	// By hand (commcount definitions, ring-equivalent messages):
	//   all_reduce 10×f32: payload 40 B. Chunks of 10 over 4: 3,3,2,2.
	//     Position 1 sends reduce-scatter chunks 1,0,3 (3+3+2) and
	//     all-gather chunks 2,1,0 (2+3+3): 16 elements = 64 B in 6 messages.
	//   all_gather 5×bf16: payload 4·5·2 = 40 B; 3 messages of 10 B = 30 B.
	//   reduce_scatter 3×f64: payload 4·3·8 = 96 B; 3 messages of 24 B = 72 B.
	//   broadcast 100×i8 root 2: payload 100 B; position 1's successor is the
	//     root, so no message. Root 0: one message of 100 B.
	//   send 7×f16 to position 3: payload 14 B, one message to global 11.
	//   recv 7×f16: payload 14 B, no message.
	// Global 10: 6+3+3+1 = 13 messages, 64+30+72+100 = 266 B.
	want := commcount.Snapshot{
		Calls: map[commcount.Op]int64{
			commcount.AllReduce: 1, commcount.AllGather: 1, commcount.ReduceScatter: 1,
			commcount.Broadcast: 2, commcount.Send: 1, commcount.Recv: 1,
		},
		Bytes: map[commcount.Op]int64{
			commcount.AllReduce: 40, commcount.AllGather: 40, commcount.ReduceScatter: 96,
			commcount.Broadcast: 200, commcount.Send: 14, commcount.Recv: 14,
		},
		Peers: map[int]commcount.PeerCount{10: {Messages: 13, WireBytes: 266}, 11: {Messages: 1, WireBytes: 14}},
	}
	if d := commcount.Diff(want, ctr.Snapshot()); len(d) > 0 {
		t.Errorf("counts differ from the hand-derived ones:\n%v", d)
	}
	if c.Counter() != ctr {
		t.Error("Counter() is not the counter given")
	}
}
