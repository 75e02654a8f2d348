package tcpcomm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
)

// FuzzFrameDecode feeds arbitrary bytes to the data plane's message
// decoder: it must never panic, must accept exactly the messages frameOf
// makes (same channel, same elements), and must not allocate for a length
// the stream does not carry (a hostile header claiming 1 GiB).
func FuzzFrameDecode(f *testing.F) {
	f.Add(frameOf(chP2P, []float32{1, 2, 3}))
	f.Add(frameOf(chBarrier, nil))
	f.Add(frameOf(7, []float32{float32(math.NaN()), -0}))
	bye := make([]byte, hdrBytes)
	binary.LittleEndian.PutUint64(bye, chBye)
	f.Add(bye)
	huge := make([]byte, hdrBytes)
	binary.LittleEndian.PutUint64(huge[8:], MaxMessageBytes) // 1 GiB announced, nothing sent
	f.Add(huge)
	f.Add(append(frameOf(chP2P, []float32{1}), 0xff, 0xff))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		for {
			ch, msg, err := readMessage(r)
			var bad *badHeaderError
			switch {
			case err == io.EOF, err == io.ErrUnexpectedEOF, errors.As(err, &bad):
				return
			case err != nil:
				t.Fatalf("unexpected error %v", err)
			}
			// bounded: the buffer is at most max(growStep, 2 × the bytes it holds)
			if cap(msg) > max(growStep, 2*len(msg)) {
				t.Fatalf("a %d-byte message holds a %d-byte buffer", len(msg), cap(msg))
			}
			if ch == chBye {
				continue
			}
			// the decoded message re-encodes to the bytes it came from
			data := make([]float32, len(msg)/4)
			decodeInto(data, msg)
			re := frameOf(ch, data)
			if binary.LittleEndian.Uint64(re[8:]) != uint64(len(msg)) || !bytes.Equal(re[hdrBytes:], msg) {
				t.Fatalf("channel %#x: %d bytes re-encode differently", ch, len(msg))
			}
		}
	})
}

// A header that announces the largest message but carries 4 bytes costs
// one growStep, not a gigabyte.
func TestHostileLengthIsNotAllocated(t *testing.T) {
	hdr := make([]byte, hdrBytes+4)
	binary.LittleEndian.PutUint64(hdr[8:], MaxMessageBytes)
	var before, after runtimeMem
	before.read()
	_, _, err := readMessage(bytes.NewReader(hdr))
	after.read()
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("got %v, want io.ErrUnexpectedEOF", err)
	}
	if d := after.total - before.total; d > 4*growStep {
		t.Fatalf("allocated %d bytes for a 4-byte message announced as %d", d, MaxMessageBytes)
	}
}
