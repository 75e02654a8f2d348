package tcpcomm

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Wire format. A connection opens with a handshake from the dialing rank:
// "PBTC", the protocol version (uint32), its rank (uint32) and the 16-byte
// token the accepting rank published; the acceptor answers "PBTC", the
// version and its rank. Then each message is a 16-byte header, channel and
// payload length in bytes (uint64 each), and the payload, float32 elements;
// all little-endian.
const (
	protoVersion = 1
	// MaxMessageBytes caps one message (one Send, or one ring step's chunk).
	MaxMessageBytes = 1 << 30
	hdrBytes        = 16
	tokenBytes      = 16
)

var protoMagic = [4]byte{'P', 'B', 'T', 'C'}

// Channels keep traffic apart on a connection: point-to-point messages,
// barrier tokens, each group's collectives (an id derived from its ranks),
// and the goodbye.
const (
	chP2P     uint64 = 0
	chBarrier uint64 = 1
	chBye     uint64 = math.MaxUint64
)

// frameOf encodes one message: header and elements.
func frameOf(ch uint64, data []float32) []byte {
	b := make([]byte, hdrBytes+4*len(data))
	binary.LittleEndian.PutUint64(b, ch)
	binary.LittleEndian.PutUint64(b[8:], uint64(4*len(data)))
	p := b[hdrBytes:]
	for i, v := range data {
		binary.LittleEndian.PutUint32(p[4*i:], math.Float32bits(v))
	}
	return b
}

// decodeInto copies a payload into dst (len(dst) elements).
func decodeInto(dst []float32, p []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
}

// addInto adds a payload to dst element-wise: dst[i] = dst[i] + p[i], always
// in this order, so a ring all-reduce sums the same way every time.
func addInto(dst []float32, p []byte) {
	for i := range dst {
		dst[i] += math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
}

// checkLen is the error for a message whose size is not the buffer's.
func checkLen(what string, peer int, msg []byte, want int) error {
	if len(msg) == 4*want {
		return nil
	}
	return fmt.Errorf("tcpcomm: %s from rank %d: message has %d elements (%d B), buffer has %d elements (%d B)",
		what, peer, len(msg)/4, len(msg), want, 4*want)
}

// badHeaderError is a message header no partbench rank sends.
type badHeaderError struct {
	ch, n uint64
}

func (e *badHeaderError) Error() string {
	return fmt.Sprintf("bad message header (channel %#x, %d B)", e.ch, e.n)
}

// growStep bounds what a message's buffer grows by before its bytes arrive:
// a header alone (corrupt or hostile) makes readMessage allocate at most
// this, then at most about twice what really arrived.
const growStep = 1 << 20

// readMessage decodes one message: the header, then the payload (none for
// a goodbye). A header with a length over MaxMessageBytes or not a whole
// number of float32s is a *badHeaderError; a stream that ends early is
// io.EOF before a header and io.ErrUnexpectedEOF inside a message.
func readMessage(r io.Reader) (ch uint64, msg []byte, err error) {
	var hdr [hdrBytes]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	ch, n := binary.LittleEndian.Uint64(hdr[:]), binary.LittleEndian.Uint64(hdr[8:])
	if ch == chBye {
		return ch, nil, nil
	}
	if n > MaxMessageBytes || n%4 != 0 {
		return 0, nil, &badHeaderError{ch: ch, n: n}
	}
	size := int(n)
	msg = make([]byte, 0, min(size, growStep))
	for len(msg) < size {
		if len(msg) == cap(msg) {
			msg = append(msg, make([]byte, min(size-len(msg), max(len(msg), growStep)))...)[:len(msg)]
		}
		m, err := io.ReadFull(r, msg[len(msg):min(size, cap(msg))])
		msg = msg[:len(msg)+m]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, err
		}
	}
	return ch, msg, nil
}
