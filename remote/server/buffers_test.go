package server

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// dribble is a frameStream that delivers n bytes of data in chunks of
// chunk bytes, then fails: a client that stops sending.
type dribble struct {
	frameStream
	n, chunk int
}

func (d *dribble) RecvData(dst []byte) (int, error) {
	if d.n == 0 {
		return 0, status.Error(codes.DeadlineExceeded, "no more data")
	}
	k := min(d.chunk, d.n, len(dst))
	d.n -= k
	return k, nil
}

// TestRecvBuffersGrowWithData: a tensor declared at 1 GiB of which 3 MiB
// arrive holds a buffer of at most twice what arrived plus one message
// (the growth rule), never the declared size.
func TestRecvBuffersGrowWithData(t *testing.T) {
	const chunk, arrived = 1 << 20, 3 << 20
	b := &recvBuffers{}
	d, err := b.recv(0, 1<<30, chunk, &dribble{n: arrived, chunk: chunk})
	if err == nil || len(d) != arrived {
		t.Fatalf("received %d B, err %v; want %d B and the stream's error", len(d), err, arrived)
	}
	// Capacities: 1 MiB, 2, 4 (each at least the received bytes + one
	// message, doubling): 4 MiB ≤ 2 × 3 MiB + 1 MiB.
	if c := cap(b.b[0]) + cap(d); c > 2*arrived+chunk {
		t.Errorf("buffer capacity %d B after %d B arrived, want at most %d", cap(d), arrived, 2*arrived+chunk)
	}
	// A complete tensor ends exactly at its size.
	b = &recvBuffers{}
	d, err = b.recv(0, 5<<20+3, chunk, &dribble{n: 5<<20 + 3, chunk: chunk})
	if err != nil || len(d) != 5<<20+3 || cap(d) != 5<<20+3 {
		t.Errorf("a 5 MiB + 3 B tensor: len %d cap %d err %v", len(d), cap(d), err)
	}
}
