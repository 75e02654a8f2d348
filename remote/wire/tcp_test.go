package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

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

// TestTCPWritesReuseSafely: one Envelope reused for every frame (as the
// step streams do: a larger frame, then a smaller, then a larger), and data
// chunks whose header is built in the write buffer's free space however
// little of it is left, make exactly the bytes of the length prefix and
// proto.Marshal of a fresh message each. A stale size from the previous
// frame, or a header overwritten by the buffer it was built in, would not.
func TestTCPWritesReuseSafely(t *testing.T) {
	var out bytes.Buffer
	// A 16-byte write buffer: most headers find only a few bytes free.
	tc := &TCPConn{w: bufio.NewWriterSize(&out, 16), max: fuzzMaxMessage}
	var want []byte
	frame := func(f *pb.Frame) []byte {
		b, err := proto.Marshal(&pb.Envelope{Kind: &pb.Envelope_Frame{Frame: f}})
		if err != nil {
			t.Fatal(err)
		}
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
	}
	var env pb.Envelope
	var kind pb.Envelope_Frame
	headers := []*pb.StepHeader{
		{SessionId: strings.Repeat("s", 40), Step: 300, Tensors: []*pb.TensorInfo{{Name: "tokens", ElemBytes: 4, Shape: []int64{8}, Bytes: 32}}},
		{SessionId: "s", Step: 1},
		{SessionId: strings.Repeat("t", 200), Step: 70000, Tensors: []*pb.TensorInfo{{Name: "x", ElemBytes: 2, Shape: []int64{3, 5}, Bytes: 30}}},
	}
	for i, h := range headers {
		f := &pb.Frame{Kind: &pb.Frame_Header{Header: h}}
		kind.Frame = f
		env.Kind = &kind
		n, err := tc.WriteEnvelope(&env)
		w := frame(f)
		if err != nil || n != int64(len(w)) {
			t.Fatalf("header %d: wrote %d B (%v), want %d", i, n, err, len(w))
		}
		want = append(want, w...)
		for _, size := range []int{1, 13, 200, 3} {
			d := bytes.Repeat([]byte{byte(i + size)}, size)
			n, err := tc.WriteData(d)
			w := frame(&pb.Frame{Kind: &pb.Frame_Data{Data: d}})
			if err != nil || n != int64(len(w)) {
				t.Fatalf("header %d, data of %d B: wrote %d B (%v), want %d", i, size, n, err, len(w))
			}
			want = append(want, w...)
		}
	}
	if err := tc.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		at := 0
		for at < min(out.Len(), len(want)) && out.Bytes()[at] == want[at] {
			at++
		}
		t.Fatalf("the stream differs from protobuf's at byte %d of %d (%d written)", at, len(want), out.Len())
	}
}
