package shmcomm

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// FrameHeaderBytes is a message's header on a ring: channel and payload
// length in bytes, uint64 little-endian each (exec/tcpcomm's wire header).
const FrameHeaderBytes = 16

// littleEndian says whether float32s in memory are already the rings'
// little-endian encoding (then a payload is copied as it is).
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Link is one side of a pair: frames sent on tx, frames received from rx.
// Sending is for one goroutine at a time (the caller serializes it);
// Poll may be called from any goroutine (one polls at a time, the others
// return at once).
type Link struct {
	tx, rx *Ring
	// Spin adapts the waits of the link's receiver to the host's load
	// (sendSpin those of SendFrame).
	Spin     Spin
	sendSpin Spin

	rmu    sync.Mutex // the consumer's state below
	hdr    [FrameHeaderBytes]byte
	hdrGot int
	inMsg  bool
	ch     uint64
	msg    []byte
	got    int
}

// NewLinkPair is a pair of Links over rings in ordinary memory, for
// goroutines of one process (tests and benchmarks of the framing).
func NewLinkPair(ringBytes int) (a, b *Link, err error) {
	if err := checkRingBytes(ringBytes); err != nil {
		return nil, nil, err
	}
	mem := make([]uint64, 2*(ringCtlBytes+ringBytes)/8) // 8-byte aligned
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), 8*len(mem))
	r0 := newRing(raw[:ringCtlBytes+ringBytes])
	r1 := newRing(raw[ringCtlBytes+ringBytes:])
	return &Link{tx: r0, rx: r1}, &Link{tx: r1, rx: r0}, nil
}

// RingBytes is the capacity of each direction.
func (l *Link) RingBytes() int { return l.tx.Size() }

func putHeader(h *[FrameHeaderBytes]byte, ch uint64, payloadBytes int) {
	binary.LittleEndian.PutUint64(h[:], ch)
	binary.LittleEndian.PutUint64(h[8:], uint64(payloadBytes))
}

// Encode is the frame of data on channel ch: header and elements,
// little-endian, as TrySend and SendFrame put it on the ring.
func Encode(ch uint64, data []float32) []byte {
	b := make([]byte, FrameHeaderBytes+4*len(data))
	putHeader((*[FrameHeaderBytes]byte)(b), ch, 4*len(data))
	p := b[FrameHeaderBytes:]
	for i, v := range data {
		binary.LittleEndian.PutUint32(p[4*i:], math.Float32bits(v))
	}
	return b
}

// TrySend puts the whole frame of data on channel ch on the ring if it fits
// now, and reports whether it did; it never waits.
func (l *Link) TrySend(ch uint64, data []float32) bool {
	need := FrameHeaderBytes + 4*len(data)
	if need > l.tx.Free() {
		return false
	}
	if !littleEndian {
		return l.tx.WriteAll(Encode(ch, data))
	}
	var h [FrameHeaderBytes]byte
	putHeader(&h, ch, 4*len(data))
	var payload []byte
	if len(data) > 0 {
		payload = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(data))), 4*len(data))
	}
	return l.tx.WriteAll(h[:], payload)
}

// SendFrame streams an encoded frame (Encode) through the ring, waiting for
// room as the peer reads; a frame larger than the ring goes in pieces.
// Before each wait it calls abort, and returns its error if there is one.
func (l *Link) SendFrame(frame []byte, abort func() error) error {
	w := Waiter{Spin: &l.sendSpin}
	for off := 0; off < len(frame); {
		if n := l.tx.Write(frame[off:]); n > 0 {
			off += n
			w.Reset()
			continue
		}
		if err := abort(); err != nil {
			return err
		}
		l.tx.WaitSpace(&w, 1)
	}
	return nil
}

// Pending is the number of received bytes not yet polled.
func (l *Link) Pending() int { return l.rx.Available() }

// WaitData waits one step of w for received bytes.
func (l *Link) WaitData(w *Waiter) { l.rx.WaitData(w) }

// WaitSpace waits one step of w for n bytes of room to send.
func (l *Link) WaitSpace(w *Waiter, n int) { l.tx.WaitSpace(w, n) }

// Poll reads what has arrived and hands every complete message to deliver,
// in order (the message is the caller's to keep). It never waits; if
// another goroutine is polling it returns at once. progress says whether it
// consumed anything. A header no partbench rank writes (a payload over
// maxBytes, or not whole float32s) is an error, and the link is unusable.
func (l *Link) Poll(maxBytes int, deliver func(ch uint64, msg []byte)) (progress bool, err error) {
	if !l.rmu.TryLock() {
		return false, nil
	}
	defer l.rmu.Unlock()
	if err := l.rx.Check(); err != nil {
		return false, err
	}
	for l.rx.Available() > 0 {
		progress = true
		if !l.inMsg {
			l.hdrGot += l.rx.Read(l.hdr[l.hdrGot:])
			if l.hdrGot < FrameHeaderBytes {
				return progress, nil
			}
			l.hdrGot = 0
			ch, n := binary.LittleEndian.Uint64(l.hdr[:]), binary.LittleEndian.Uint64(l.hdr[8:])
			if n > uint64(maxBytes) || n%4 != 0 {
				return progress, fmt.Errorf("shmcomm: bad message header (channel %#x, %d B; at most %d B of float32s)", ch, n, maxBytes)
			}
			l.inMsg, l.ch, l.msg, l.got = true, ch, make([]byte, n), 0
		}
		l.got += l.rx.Read(l.msg[l.got:])
		if l.got == len(l.msg) {
			msg := l.msg
			l.inMsg, l.msg = false, nil
			deliver(l.ch, msg)
		}
	}
	return progress, nil
}
