package shmcomm

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"
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
	// landing is the message PollInto is putting straight into its In's
	// elements; dropLeft the bytes still to drop of one it abandoned.
	landing  *In
	dropLeft int
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
	shareBells(r0, r1)
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
	return l.poll(maxBytes, nil, deliver)
}

// poll is Poll and PollInto, with rmu held.
func (l *Link) poll(maxBytes int, in *In, deliver func(ch uint64, msg []byte)) (progress bool, err error) {
	if err := l.rx.Check(); err != nil {
		return false, err
	}
	if in != nil && in.state == inWaiting && l.inMsg && l.ch == in.Ch {
		in.state = inDelivered // an earlier poll began it into a buffer of its own
	}
	for l.rx.Available() > 0 {
		switch {
		case l.landing != nil:
			li := l.landing
			n := l.rx.ReadFloats(li.Dst[li.got:], li.Add)
			if n == 0 { // less than an element: a header no partbench rank writes was accepted
				return progress, nil
			}
			progress = true
			if li.got += n; li.got == len(li.Dst) {
				li.state, l.landing = inLanded, nil
			}
			continue
		case l.dropLeft > 0:
			l.dropLeft -= l.rx.Skip(l.dropLeft)
			progress = true
			continue
		}
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
			if in != nil && in.state == inWaiting && ch == in.Ch {
				if n == uint64(4*len(in.Dst)) {
					if in.state, in.got = inLanded, 0; n > 0 {
						in.state, l.landing = inLanding, in
					}
					continue
				}
				in.state = inDelivered
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

// Out is a message sent straight from the caller's elements, header first,
// then the elements as room appears on the ring (PushOut): a ring
// collective's step, whose chunk may be larger than the ring, pipelines
// through it without a copy of its own while the same goroutine receives.
// The elements must stay unchanged until Done.
type Out struct {
	Ch   uint64
	Data []float32
	hdr  bool
	sent int // elements on the ring
}

// Done says whether the whole message is on the ring.
func (o *Out) Done() bool { return o.hdr && o.sent == len(o.Data) }

// need is the room the next piece of o waits for.
func (o *Out) need() int {
	if !o.hdr {
		return FrameHeaderBytes
	}
	return 4
}

// PushOut puts as much of o on the ring as fits now and reports whether it
// put anything; it never waits. Sending is for one goroutine at a time, and
// no other message may go onto the ring until o is Done.
func (l *Link) PushOut(o *Out) (progress bool) {
	var hdr []byte
	if !o.hdr {
		var h [FrameHeaderBytes]byte
		putHeader(&h, o.Ch, 4*len(o.Data))
		hdr = h[:]
	}
	wroteHdr, n := l.tx.writeFloats(hdr, o.Data[o.sent:])
	o.hdr = o.hdr || wroteHdr
	o.sent += n
	return wroteHdr || n > 0
}

// In is where the next message on one channel lands straight from the
// ring (PollInto): copied into Dst, or added to it element by element in
// index order (the sums exec/tcpcomm's all-reduce makes of a copied
// message), with no buffer of its own.
type In struct {
	Ch  uint64
	Dst []float32
	Add bool

	state int // inWaiting, inLanding, inLanded, inDelivered
	got   int // elements landed
}

const (
	inWaiting   = iota // its header has not arrived
	inLanding          // its elements are arriving in Dst
	inLanded           // all of them are in Dst
	inDelivered        // the next message on Ch goes to deliver instead (another length, or begun before)
)

// Landed says whether the message is in Dst.
func (in *In) Landed() bool { return in.state == inLanded }

// Delivered says whether the next message on Ch goes to Poll's deliver
// like any other (the caller takes it from there once it is complete):
// its length is not Dst's, or an earlier poll had begun reading it.
func (in *In) Delivered() bool { return in.state == inDelivered }

// PollInto is Poll, but the first message on in.Ch to begin from here lands
// in in.Dst if its length is Dst's; every other message is delivered.
// Call it with the same in until in is Landed or Delivered, or Abandon.
func (l *Link) PollInto(maxBytes int, in *In, deliver func(ch uint64, msg []byte)) (progress bool, err error) {
	if !l.rmu.TryLock() {
		return false, nil
	}
	defer l.rmu.Unlock()
	return l.poll(maxBytes, in, deliver)
}

// Abandon gives up the message being landed by PollInto, if any: its bytes
// still to come are read and dropped by later polls. It reports whether a
// message was cut short (what Dst holds is then part of it, and the stream
// of that channel has lost a message).
func (l *Link) Abandon() bool {
	l.rmu.Lock()
	defer l.rmu.Unlock()
	if l.landing == nil {
		return false
	}
	in := l.landing
	l.landing = nil
	l.dropLeft = 4 * (len(in.Dst) - in.got)
	return true
}

// Started says whether any of o is on the ring (its header is).
func (o *Out) Started() bool { return o.hdr }

// Need is the room on the ring the next piece of o waits for.
func (o *Out) Need() int { return o.need() }

// Room is the number of bytes that may be sent now.
func (l *Link) Room() int { return l.tx.Free() }

// WaitFor waits one step of w on this side's bell, which the peer rings
// when it puts bytes on the receive ring (if data) and when it frees room
// on the send ring (if room > 0), until there are bytes to receive (data),
// room bytes of room (room > 0) or also says yes (also may be nil: a
// condition no ring of this link signals, such as another link's room; give
// w a short Sleep then).
func (l *Link) WaitFor(w *Waiter, data bool, room int, also func() bool) {
	var dw, sw *uint32
	if data {
		dw = l.rx.dataWaiters
	}
	if room > 0 {
		sw = l.tx.spaceWaiters
	}
	w.wait(l.rx.dataSeq, dw, sw, func() bool {
		return data && l.rx.Available() > 0 || room > 0 && l.tx.Free() >= room || also != nil && also()
	})
}

// ConfigureSpin sets the spin policy of every wait on this link (receiving,
// sending, and the ring collectives' steps that wait on its Spin).
func (l *Link) ConfigureSpin(mode SpinMode, length time.Duration) {
	l.Spin.Configure(mode, length)
	l.sendSpin.Configure(mode, length)
}
