package rendezvous

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"testing"
)

// joinBytes is what a dialing rank sends: preamble and hello.
func joinBytes(f *frame) []byte {
	b, err := encode(f)
	if err != nil {
		panic(err)
	}
	return append(preamble(), b...)
}

// FuzzJoinDecode feeds arbitrary bytes to rank 0's side of the join: the
// preamble, the hello frame and its check against rank 0's options. It must
// never panic, must not allocate for a length the stream does not carry,
// and must accept no hello that breaks the world (rank outside it, another
// size, another config).
func FuzzJoinDecode(f *testing.F) {
	f.Add(joinBytes(&frame{Type: tHello, Rank: 1, Size: 4, Launched: 4, Hash: "cafe", Job: "j", Host: "h", PID: 7}))
	f.Add(joinBytes(&frame{Type: tHello, Rank: 9, Size: 4, Launched: 4, Hash: "cafe"}))
	f.Add(joinBytes(&frame{Type: tWho}))
	f.Add(joinBytes(&frame{Type: tColl, Seq: 3, Payloads: [][]byte{{1, 2}}}))
	f.Add(append(preamble(), 0x03, 0xff, 0xff, 0xff)) // a 64 MiB frame announced, nothing sent
	f.Add([]byte("GET / HTTP/1.0\r\n\r\n"))
	f.Add(append(preamble(), 0, 0, 0, 2, '{', '}'))
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := bufio.NewReader(bytes.NewReader(b))
		v, err := readPreamble(rd)
		if err != nil {
			return
		}
		fr, err := readFrame(rd)
		if err != nil {
			return
		}
		o := Options{Rank: 0, Size: 4, LaunchedSize: 4, ConfigHash: "cafe", JobID: "j", Hostname: "h0"}
		joined := make([]*conn, o.Size)
		c := newConn(&net.TCPConn{})
		if err := check(o, joined, hello{c: c, f: fr, version: v}); err == nil {
			if fr.Rank < 1 || fr.Rank >= o.Size || fr.Size != o.Size || fr.Hash != o.ConfigHash || v != ProtocolVersion {
				t.Fatalf("accepted a hello that breaks the world: %+v (v%d)", fr, v)
			}
		}
	})
}

// A frame header announcing the 64 MiB cap but carrying a few bytes costs
// one growStep, not the announced size.
func TestHostileFrameLengthIsNotAllocated(t *testing.T) {
	b := binary.BigEndian.AppendUint32(nil, MaxFrameBytes)
	b = append(b, "{}"...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(bytes.NewReader(b))
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("got %v, want io.ErrUnexpectedEOF", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 4*growStep {
		t.Fatalf("allocated %d bytes for a 2-byte frame announced as %d", d, MaxFrameBytes)
	}
}
