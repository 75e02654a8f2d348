package wire

import (
	"bytes"
	"encoding/binary"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/partbench/partbench/remote/remotepb"
)

// The data frames written without protobuf are byte for byte protobuf's
// encoding (so wire counts and other peers are unaffected), and read back
// into the destination; anything else where data is expected is an error.
func TestDataFramesAreProtobuf(t *testing.T) {
	for _, n := range []int{1, 127, 128, 70_000, 1 << 20} {
		d := bytes.Repeat([]byte{0xA5, 0x3C, 7}, n/3+1)[:n]
		// gRPC: the codec's message is proto.Marshal(Frame{data}).
		out, err := Frames.Marshal(&DataOut{d})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := proto.Marshal(&pb.Frame{Kind: &pb.Frame_Data{Data: d}})
		if got := out.Materialize(); !bytes.Equal(got, want) {
			t.Fatalf("%d B: codec wrote %d B, protobuf %d B (first bytes %x vs %x)", n, len(got), len(want), got[:4], want[:4])
		}
		if int64(DataHeaderLen(n)+n) != int64(proto.Size(&pb.Frame{Kind: &pb.Frame_Data{Data: d}})) {
			t.Errorf("%d B: DataHeaderLen disagrees with proto.Size", n)
		}
		in := &DataIn{Dst: make([]byte, n+5)}
		if err := Frames.Unmarshal(mem.BufferSlice{mem.SliceBuffer(want)}, in); err != nil || in.N != n || !bytes.Equal(in.Dst[:n], d) || in.Wire != len(want) {
			t.Errorf("%d B: codec read n=%d wire=%d (%v)", n, in.N, in.Wire, err)
		}
		if err := Frames.Unmarshal(mem.BufferSlice{mem.SliceBuffer(want)}, &DataIn{Dst: make([]byte, n-1)}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%d B into %d B: %v, want InvalidArgument", n, n-1, err)
		}
		// Raw TCP: writeData's bytes are the length prefix and proto.Marshal(Envelope).
		a, b := net.Pipe()
		w := NewTCPConn(a, 4<<20)
		env, _ := proto.Marshal(&pb.Envelope{Kind: &pb.Envelope_Frame{Frame: &pb.Frame{Kind: &pb.Frame_Data{Data: d}}}})
		var raw bytes.Buffer
		done := make(chan error, 1)
		go func() {
			wire, err := w.WriteData(d)
			if err == nil {
				err = w.Flush()
			}
			if err == nil && wire != int64(len(env)+TCPPrefixBytes) {
				err = status.Errorf(codes.Internal, "writeData says %d B, the message is %d", wire, len(env)+TCPPrefixBytes)
			}
			a.Close()
			done <- err
		}()
		buf := make([]byte, 64<<10)
		for {
			k, err := b.Read(buf)
			raw.Write(buf[:k])
			if err != nil {
				break
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		wantRaw := binary.BigEndian.AppendUint32(nil, uint32(len(env)))
		if !bytes.Equal(raw.Bytes(), append(wantRaw, env...)) {
			t.Fatalf("%d B: raw TCP wrote %d B, protobuf framing is %d B", n, raw.Len(), len(env)+4)
		}
		// readData reads that framing into dst.
		a, b = net.Pipe()
		r := NewTCPConn(b, 4<<20)
		go func() { a.Write(append(wantRaw, env...)); a.Close() }()
		dst := make([]byte, n)
		got, wire, err := r.ReadData(dst)
		if err != nil || got != n || wire != int64(len(env)+4) || !bytes.Equal(dst, d) {
			t.Errorf("%d B: readData got %d B, wire %d (%v)", n, got, wire, err)
		}
		b.Close()
	}
	// An error message where data is expected is that error.
	a, b := net.Pipe()
	r := NewTCPConn(b, 4<<20)
	go func() {
		w := NewTCPConn(a, 4<<20)
		w.WriteEnvelope(ErrEnvelope(status.Error(codes.ResourceExhausted, "queue full")))
		w.Flush()
		a.Close()
	}()
	if _, _, err := r.ReadData(make([]byte, 8)); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "queue full") {
		t.Errorf("error envelope read as data: %v", err)
	}
}
