package shmcomm

import (
	"bytes"
	"crypto/rand"
	"errors"
	"math"
	mrand "math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRingWrapsAndKeepsOrder(t *testing.T) {
	a, b, err := NewLinkPair(MinRingBytes)
	if err != nil {
		t.Fatal(err)
	}
	r, w := b.rx, a.tx // a writes, b reads
	// Writes of 1000 B into a 4096 B ring: the fifth wraps around the end.
	src := make([]byte, 10_000)
	for i := range src {
		src[i] = byte(i * 7)
	}
	var got []byte
	buf := make([]byte, 1000)
	for off := 0; off < len(src); off += 1000 {
		if n := w.Write(src[off : off+1000]); n != 1000 {
			t.Fatalf("write at %d: %d B, want 1000 (ring has room)", off, n)
		}
		n := r.Read(buf)
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("bytes read differ from bytes written")
	}
	// Full: 4096 B fit, the next byte does not.
	if n := w.Write(make([]byte, 5000)); n != 4096 {
		t.Fatalf("write into an empty 4096 B ring: %d B", n)
	}
	if w.Write([]byte{1}) != 0 || w.Free() != 0 || r.Available() != 4096 {
		t.Fatalf("full ring: free %d, available %d", w.Free(), r.Available())
	}
	if w.WriteAll([]byte{1}) {
		t.Fatal("WriteAll into a full ring succeeded")
	}
}

// TestLinkFramesArriveWhole sends messages of every size class (empty, small,
// larger than the ring) on two channels, interleaved, from one goroutine to
// another; each must arrive whole, in order, bit for bit.
func TestLinkFramesArriveWhole(t *testing.T) {
	a, b, err := NewLinkPair(MinRingBytes)
	if err != nil {
		t.Fatal(err)
	}
	rng := mrand.New(mrand.NewSource(1))
	var msgs [][]float32
	for i := 0; i < 200; i++ {
		n := []int{0, 1, 3, 100, 1023, 1020, 5000}[rng.Intn(7)] // 1020 elements + header = the ring exactly
		m := make([]float32, n)
		for j := range m {
			m[j] = math.Float32frombits(rng.Uint32())
		}
		msgs = append(msgs, m)
	}
	done := make(chan error, 1)
	go func() {
		for i, m := range msgs {
			if !a.TrySend(uint64(i%2), m) {
				if err := a.SendFrame(Encode(uint64(i%2), m), func() error { return nil }); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	var got [][]byte
	var chs []uint64
	var w Waiter
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < len(msgs) && time.Now().Before(deadline) {
		progress, err := b.Poll(1<<30, func(ch uint64, m []byte) { chs = append(chs, ch); got = append(got, m) })
		if err != nil {
			t.Fatal(err)
		}
		if progress {
			w.Reset()
		} else {
			b.WaitData(&w)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != len(msgs) {
		t.Fatalf("%d messages arrived, want %d", len(got), len(msgs))
	}
	for i, m := range msgs {
		if chs[i] != uint64(i%2) || !bytes.Equal(got[i], Encode(0, m)[FrameHeaderBytes:]) {
			t.Fatalf("message %d (%d elements) differs", i, len(m))
		}
	}
}

func TestPollRefusesBadHeader(t *testing.T) {
	a, b, _ := NewLinkPair(MinRingBytes)
	frame := Encode(5, []float32{1, 2})
	frame[8] = 7 // 7 B: not whole float32s
	a.tx.Write(frame[:FrameHeaderBytes])
	_, err := b.Poll(1<<30, func(uint64, []byte) { t.Fatal("delivered a bad frame") })
	if err == nil || !strings.Contains(err.Error(), "bad message header (channel 0x5, 7 B") {
		t.Fatalf("bad header: %v", err)
	}
	a, b, _ = NewLinkPair(MinRingBytes)
	a.TrySend(1, make([]float32, 10))
	if _, err := b.Poll(16, func(uint64, []byte) {}); err == nil || !strings.Contains(err.Error(), "40 B; at most 16 B") {
		t.Fatalf("oversized message: %v", err)
	}
}

func token(t *testing.T) (tok [TokenBytes]byte) {
	t.Helper()
	if _, err := rand.Read(tok[:]); err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSegmentSharedBetweenMappings(t *testing.T) {
	if !Supported {
		t.Skip("no shared memory on this platform")
	}
	dir := t.TempDir()
	tok := token(t)
	c, err := Create(dir, "seg", MinRingBytes, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o, err := Open(c.Path(), MinRingBytes, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := c.Unlink(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "seg")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Unlink the file is still there: %v", err)
	}
	// Two mappings of one file: what one side sends the other receives.
	cl, ol := c.Link(), o.Link()
	for _, p := range []struct{ from, to *Link }{{cl, ol}, {ol, cl}} {
		if !p.from.TrySend(9, []float32{1.5, -2}) {
			t.Fatal("send into an empty ring failed")
		}
		var got []byte
		if _, err := p.to.Poll(1<<30, func(ch uint64, m []byte) { got = m }); err != nil || !bytes.Equal(got, Encode(9, []float32{1.5, -2})[FrameHeaderBytes:]) {
			t.Fatalf("received %v, %v", got, err)
		}
	}
}

func TestSegmentOpenRefusesStrangers(t *testing.T) {
	if !Supported {
		t.Skip("no shared memory on this platform")
	}
	dir := t.TempDir()
	tok := token(t)
	c, err := Create(dir, "seg", MinRingBytes, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer c.Unlink()
	other := tok
	other[0] ^= 1
	for _, tc := range []struct {
		ring int
		tok  [TokenBytes]byte
		want string
	}{
		{MinRingBytes, other, "belongs to another job"},
		{2 * MinRingBytes, tok, "has 20480 B, want 28672 B for rings of 8192 B"}, // 4096 + 2×(4096+4096) against 4096 + 2×(4096+8192)
		{100, tok, "ring size 100 B: want a multiple of 64 B between 4096 B and 1 GiB"},
	} {
		if s, err := Open(c.Path(), tc.ring, tc.tok); err == nil || !strings.Contains(err.Error(), tc.want) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(ring %d): %v, want an error containing %q", tc.ring, err, tc.want)
		}
	}
	if _, err := Create(dir, "seg", MinRingBytes, tok); err == nil {
		t.Error("Create over an existing file succeeded")
	}
	if _, err := Open(filepath.Join(dir, "missing"), MinRingBytes, tok); err == nil {
		t.Error("Open of a missing file succeeded")
	}
}

// TestWaiterWakesSleeper: a consumer asleep on the futex wakes when the
// producer writes, well before its wait would time out repeatedly.
func TestWaiterWakesSleeper(t *testing.T) {
	a, b, _ := NewLinkPair(MinRingBytes)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(20 * time.Millisecond) // past spinning and yielding: asleep
		a.TrySend(0, []float32{1})
	}()
	var w Waiter
	deadline := time.Now().Add(10 * time.Second)
	for b.Pending() == 0 && time.Now().Before(deadline) {
		b.WaitData(&w)
	}
	wg.Wait()
	if b.Pending() == 0 {
		t.Fatal("no data seen after the send")
	}
}

func TestPollRefusesCorruptRing(t *testing.T) {
	a, b, _ := NewLinkPair(MinRingBytes)
	*a.tx.head = 5000 // 5000 B pending in a 4096 B ring: no producer writes that
	if _, err := b.Poll(1<<30, func(uint64, []byte) {}); err == nil || err.Error() != "shmcomm: corrupt ring (head 5000, tail 0, 4096 B)" {
		t.Fatalf("corrupt ring: %v", err)
	}
	if n := b.rx.Read(make([]byte, 10)); n != 0 {
		t.Fatalf("read %d B from a corrupt ring", n)
	}
	if a.tx.Free() < 0 || a.tx.Write([]byte{1}) != 1 {
		// Free of a corrupt ring is the whole ring: Available reads it as empty
		t.Fatalf("free %d", a.tx.Free())
	}
}

// TestWaitSleeps: a wait with nothing to read sleeps on the futex instead
// of spinning: in 200 ms it takes a few hundred steps (20 µs of spinning in
// steps of 256 looks, then sleeps of up to SleepMax; without futexes,
// sleeps of 50 µs: about 4,000), where a busy loop would take millions.
func TestWaitSleeps(t *testing.T) {
	_, b, _ := NewLinkPair(MinRingBytes)
	var w Waiter
	steps := 0
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; steps++ {
		b.WaitData(&w)
	}
	if steps > 20_000 {
		t.Fatalf("%d wait steps in 200 ms: the wait does not sleep", steps)
	}
}
