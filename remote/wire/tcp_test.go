package wire

import (
	"bufio"
	"io"
	"testing"

	pb "github.com/partbench/partbench/remote/remotepb"
)

// chunkReader returns one of its chunks per Read.
type chunkReader struct{ chunks [][]byte }

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// TestNextBuffered: true exactly when a whole message, its 4-byte prefix
// and the body the prefix announces, is in the read buffer; a partial
// prefix or a partial body is not.
func TestNextBuffered(t *testing.T) {
	head := &pb.Envelope{Kind: &pb.Envelope_Frame{Frame: &pb.Frame{Kind: &pb.Frame_Header{Header: &pb.StepHeader{SessionId: "s", Step: 3}}}}}
	data := []byte("0123456789")
	stream := tcpFrames(t, []*pb.Envelope{head}, data)
	m1 := len(tcpFrames(t, []*pb.Envelope{head}))
	// Arrivals: 3 B (part of the prefix), then the first message but its
	// last byte, then that byte with the whole data message.
	cr := &chunkReader{chunks: [][]byte{stream[:3], stream[3 : m1-1], stream[m1-1:]}}
	tc := &TCPConn{r: bufio.NewReader(cr), max: fuzzMaxMessage}
	check := func(when string, want bool) {
		t.Helper()
		if got := tc.NextBuffered(); got != want {
			t.Errorf("%s (%d B buffered): NextBuffered %v, want %v", when, tc.r.Buffered(), got, want)
		}
	}
	check("nothing read", false)
	tc.r.Peek(1)
	check("3 B of the prefix", false)
	tc.r.Peek(4)
	check("the first message but its last byte", false)
	tc.r.Peek(m1)
	check("both messages", true)
	e, _, err := tc.ReadEnvelope()
	if err != nil || e.GetFrame().GetHeader().GetStep() != 3 {
		t.Fatalf("first message: %v, %v", e, err)
	}
	check("the data message", true)
	dst := make([]byte, len(data))
	if n, _, err := tc.ReadData(dst); err != nil || string(dst[:n]) != string(data) {
		t.Fatalf("data message: %q, %v", dst[:n], err)
	}
	check("nothing left", false)
}
