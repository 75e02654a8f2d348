package shmcomm

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"
)

// Layout of a ring's control block (ringCtlBytes, at the ring's start):
// each word the producer or the consumer writes has a cache line of its own.
const (
	offHead         = 0   // uint64: bytes ever written (producer)
	offTail         = 64  // uint64: bytes ever read (consumer)
	offDataSeq      = 128 // uint32: bumped after every write; the consumer sleeps on it
	offDataWaiters  = 132 // uint32: consumers asleep on dataSeq
	offSpaceSeq     = 192 // uint32: unused since version 2 (room is signalled on the other ring's dataSeq: shareBells)
	offSpaceWaiters = 196 // uint32: producers asleep waiting for room
	ringCtlBytes    = 4096
)

// Ring is a single-producer single-consumer byte ring in shared memory: one
// process (or goroutine) writes, one reads. Every shared word is read and
// written with sync/atomic; the bytes between tail and head belong to the
// consumer, the rest to the producer.
type Ring struct {
	head, tail             *uint64
	dataSeq, dataWaiters   *uint32
	spaceSeq, spaceWaiters *uint32
	data                   []byte
	size                   uint64
}

// newRing views mem (ringCtlBytes of control, then the data) as a Ring.
// mem must be 64-byte aligned (a mapping is page aligned).
func newRing(mem []byte) *Ring {
	u64 := func(off int) *uint64 { return (*uint64)(unsafe.Pointer(&mem[off])) }
	u32 := func(off int) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	data := mem[ringCtlBytes:]
	return &Ring{
		head: u64(offHead), tail: u64(offTail),
		dataSeq: u32(offDataSeq), dataWaiters: u32(offDataWaiters),
		spaceSeq: u32(offSpaceSeq), spaceWaiters: u32(offSpaceWaiters),
		data: data, size: uint64(len(data)),
	}
}

// Size is the ring's capacity in bytes.
func (r *Ring) Size() int { return int(r.size) }

// Available is the number of bytes written and not yet read (0 if the
// ring's words are corrupt: see Check).
func (r *Ring) Available() int {
	n := atomic.LoadUint64(r.head) - atomic.LoadUint64(r.tail)
	if n > r.size {
		return 0
	}
	return int(n)
}

// Check reports head and tail words that no producer and consumer of this
// ring could have written (more bytes pending than the ring holds).
func (r *Ring) Check() error {
	h, t := atomic.LoadUint64(r.head), atomic.LoadUint64(r.tail)
	if h-t > r.size {
		return fmt.Errorf("shmcomm: corrupt ring (head %d, tail %d, %d B)", h, t, r.size)
	}
	return nil
}

// Free is the number of bytes the producer may write now.
func (r *Ring) Free() int { return int(r.size) - r.Available() }

// put copies p into the ring at byte position pos (modulo the size).
func (r *Ring) put(pos uint64, p []byte) {
	at := pos % r.size
	n := copy(r.data[at:], p)
	copy(r.data, p[n:])
}

// get copies len(p) bytes from position pos into p.
func (r *Ring) get(pos uint64, p []byte) {
	at := pos % r.size
	n := copy(p, r.data[at:])
	copy(p[n:], r.data)
}

// Write copies as much of p as fits, publishes it and wakes a sleeping
// consumer; it never waits. Only the producer calls it.
func (r *Ring) Write(p []byte) int {
	h := atomic.LoadUint64(r.head)
	n := min(len(p), r.Free())
	if n == 0 {
		return 0
	}
	r.put(h, p[:n])
	atomic.StoreUint64(r.head, h+uint64(n))
	notify(r.dataSeq, r.dataWaiters)
	return n
}

// WriteAll writes the parts one after the other and publishes them together
// if they all fit, else writes nothing and returns false.
func (r *Ring) WriteAll(parts ...[]byte) bool {
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	h := atomic.LoadUint64(r.head)
	if total > r.Free() {
		return false
	}
	pos := h
	for _, p := range parts {
		r.put(pos, p)
		pos += uint64(len(p))
	}
	atomic.StoreUint64(r.head, pos)
	notify(r.dataSeq, r.dataWaiters)
	return true
}

// Read copies up to len(p) available bytes into p, frees them and wakes a
// sleeping producer; it never waits. Only the consumer calls it.
func (r *Ring) Read(p []byte) int {
	t := atomic.LoadUint64(r.tail)
	n := min(len(p), r.Available())
	if n == 0 {
		return 0
	}
	r.get(t, p[:n])
	atomic.StoreUint64(r.tail, t+uint64(n))
	notify(r.spaceSeq, r.spaceWaiters)
	return n
}

// WaitData waits one step of w for bytes to read.
func (r *Ring) WaitData(w *Waiter) {
	w.wait(r.dataSeq, r.dataWaiters, nil, func() bool { return r.Available() > 0 })
}

// WaitSpace waits one step of w for n bytes of room.
func (r *Ring) WaitSpace(w *Waiter, n int) {
	w.wait(r.spaceSeq, r.spaceWaiters, nil, func() bool { return r.Free() >= n })
}

// notify bumps seq and wakes whoever sleeps on it. A sleeper registers in
// waiters before it reads seq and checks its condition, and these atomics
// are sequentially consistent, so either the sleeper sees the new state or
// this sees the sleeper: no wake-up is lost.
func notify(seq, waiters *uint32) {
	atomic.AddUint32(seq, 1)
	if atomic.LoadUint32(waiters) > 0 {
		futexWake(seq)
	}
}

// floatsView is b's bytes as float32s (b's length a multiple of 4, its start
// 4-byte aligned: ring positions are, see ReadFloats).
func floatsView(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// spans are the ring's bytes [pos, pos+n) as at most two slices (the second
// after the wrap).
func (r *Ring) spans(pos uint64, n int) (a, b []byte) {
	at := int(pos % r.size)
	if at+n <= len(r.data) {
		return r.data[at : at+n], nil
	}
	return r.data[at:], r.data[:n-(len(r.data)-at)]
}

// WriteFloats copies as many whole elements of src as fit now onto the
// ring, little-endian, publishes them and wakes a sleeping consumer; it
// returns the number of elements written and never waits. Every write and
// read of partbench's rings is a multiple of 4 B (frame headers are 16 B,
// payloads float32s), so positions stay 4-byte aligned.
func (r *Ring) WriteFloats(src []float32) int {
	_, n := r.writeFloats(nil, src)
	return n
}

// writeFloats is WriteFloats after hdr: if hdr is not empty, it writes
// nothing unless hdr fits, and then hdr and as many elements as fit after
// it, published together (one wake-up for the consumer, not two).
func (r *Ring) writeFloats(hdr []byte, src []float32) (wroteHdr bool, n int) {
	h := atomic.LoadUint64(r.head)
	free := r.Free()
	if len(hdr) > free {
		return false, 0
	}
	pos := h
	if len(hdr) > 0 {
		r.put(pos, hdr)
		pos += uint64(len(hdr))
		free -= len(hdr)
	}
	n = min(len(src), free/4)
	if n > 0 {
		a, b := r.spans(pos, 4*n)
		if littleEndian && pos%4 == 0 {
			k := copy(floatsView(a), src)
			copy(floatsView(b), src[k:])
		} else {
			enc := make([]byte, 4*n)
			for i, v := range src[:n] {
				binary.LittleEndian.PutUint32(enc[4*i:], math.Float32bits(v))
			}
			r.put(pos, enc)
		}
		pos += uint64(4 * n)
	}
	if pos == h {
		return len(hdr) > 0, 0
	}
	atomic.StoreUint64(r.head, pos)
	notify(r.dataSeq, r.dataWaiters)
	return len(hdr) > 0, n
}

// ReadFloats takes as many whole elements as are available (at most
// len(dst)) off the ring into dst: copied, or with add added element by
// element (dst[i] += x, in index order: the same float32 sums as adding a
// copied message). It frees them, wakes a sleeping producer and returns the
// number of elements taken; it never waits.
func (r *Ring) ReadFloats(dst []float32, add bool) int {
	t := atomic.LoadUint64(r.tail)
	n := min(len(dst), r.Available()/4)
	if n == 0 {
		return 0
	}
	a, b := r.spans(t, 4*n)
	if littleEndian && t%4 == 0 {
		fa, fb := floatsView(a), floatsView(b)
		if add {
			addFloats(dst[:len(fa)], fa)
			addFloats(dst[len(fa):n], fb)
		} else {
			copy(dst, fa)
			copy(dst[len(fa):], fb)
		}
	} else {
		enc := make([]byte, 4*n)
		r.get(t, enc)
		for i := range dst[:n] {
			v := math.Float32frombits(binary.LittleEndian.Uint32(enc[4*i:]))
			if add {
				dst[i] += v
			} else {
				dst[i] = v
			}
		}
	}
	atomic.StoreUint64(r.tail, t+uint64(4*n))
	notify(r.spaceSeq, r.spaceWaiters)
	return n
}

// addFloats is dst[i] += src[i] for every i, in index order.
func addFloats(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// shareBells makes each side of a pair sleep on one word for both of its
// events: r0 carries side 0's sends to side 1, r1 side 1's to side 0. Side
// 0 waits for data on r1 and for room on r0, so r0's room is signalled on
// r1's data word, and the other way round: a side waiting to send and to
// receive at once (a ring collective's step) is woken by either. The
// sleepers still count themselves per event (dataWaiters, spaceWaiters), so
// a read frees room without a wake-up for a peer asleep waiting for data.
func shareBells(r0, r1 *Ring) {
	r0.spaceSeq = r1.dataSeq
	r1.spaceSeq = r0.dataSeq
}

// Skip frees up to n available bytes unread and returns how many.
func (r *Ring) Skip(n int) int {
	t := atomic.LoadUint64(r.tail)
	n = min(n, r.Available())
	if n == 0 {
		return 0
	}
	atomic.StoreUint64(r.tail, t+uint64(n))
	notify(r.spaceSeq, r.spaceWaiters)
	return n
}
