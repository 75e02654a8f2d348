package tcpcomm

import (
	"encoding/binary"
	"fmt"
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
