package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/partbench/partbench/remote/remotepb"
)

// fuzzMaxMessage is the message limit the frame fuzzers read under: small,
// so an input can reach it.
const fuzzMaxMessage = 64 << 10

// tcpFrames is a raw-TCP byte stream of the given envelopes and data chunks.
func tcpFrames(t testing.TB, es []*pb.Envelope, data ...[]byte) []byte {
	var buf bytes.Buffer
	tc := &TCPConn{w: bufio.NewWriter(&buf), max: fuzzMaxMessage}
	for _, e := range es {
		if _, err := tc.WriteEnvelope(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range data {
		if _, err := tc.WriteData(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := tc.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzTCPFrameReader feeds arbitrary bytes to the raw-TCP frame reader as
// the server reads a connection: length-prefixed envelopes and data chunks
// read straight into a tensor. It must never panic or read past its limit:
// every envelope it returns came from at most fuzzMaxMessage bytes, every
// data chunk fits its destination and equals the bytes on the wire, and a
// Step header it returns is either refused by CheckTensor or consistent
// (bytes = elem × ∏shape).
func FuzzTCPFrameReader(f *testing.F) {
	hdr := &pb.Envelope{Kind: &pb.Envelope_Frame{Frame: &pb.Frame{Kind: &pb.Frame_Header{Header: &pb.StepHeader{
		SessionId: "0123456789abcdef", Phase: pb.Phase_PHASE_DECODE,
		Tensors: []*pb.TensorInfo{{Name: "tokens", ElemBytes: 4, Shape: []int64{2}, Bytes: 8}}}}}}}
	f.Add(tcpFrames(f, []*pb.Envelope{{Kind: &pb.Envelope_Hello{Hello: &pb.Hello{Token: "t"}}}, hdr}, []byte("12345678")))
	f.Add(tcpFrames(f, nil, make([]byte, 300), []byte{1}))
	f.Add(tcpFrames(f, []*pb.Envelope{{Kind: &pb.Envelope_Open{Open: &pb.OpenRequest{ConfigJson: []byte("{}"), Mode: pb.Mode_MODE_NAIVE}}}}))
	f.Add(binary.BigEndian.AppendUint32(nil, fuzzMaxMessage+1))
	f.Add(binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF))
	f.Add([]byte{0, 0, 0, 3, 0x32, 0x01, 0x12})
	f.Fuzz(func(t *testing.T, in []byte) {
		tc := &TCPConn{r: bufio.NewReaderSize(bytes.NewReader(in), 4096), max: fuzzMaxMessage}
		dst := make([]byte, 512)
		var consumed int64
		for i := 0; i < 64; i++ {
			if i%2 == 1 {
				n, wire, err := tc.ReadData(dst)
				if err != nil {
					return
				}
				if n <= 0 || n > len(dst) || wire < int64(n+TCPPrefixBytes) || wire > fuzzMaxMessage+TCPPrefixBytes {
					t.Fatalf("data chunk of %d B (wire %d) into %d B", n, wire, len(dst))
				}
				consumed += wire
				if !bytes.Equal(dst[:n], in[consumed-int64(n):consumed]) {
					t.Fatalf("data chunk differs from the bytes on the wire")
				}
				continue
			}
			e, wire, err := tc.ReadEnvelope()
			if err != nil {
				return
			}
			if wire > fuzzMaxMessage+TCPPrefixBytes {
				t.Fatalf("an envelope of %d B read under a %d B limit", wire, fuzzMaxMessage)
			}
			consumed += wire
			if h := e.GetFrame().GetHeader(); h != nil {
				for _, ti := range h.Tensors {
					if CheckTensor(ti.Name, int(ti.ElemBytes), ti.Shape, ti.Bytes) != nil {
						continue
					}
					n := int64(ti.ElemBytes)
					for _, d := range ti.Shape {
						n *= d
					}
					if n != ti.Bytes || n < 0 {
						t.Fatalf("CheckTensor accepted %v × %d B = %d B declared as %d", ti.Shape, ti.ElemBytes, n, ti.Bytes)
					}
				}
			}
		}
	})
}

// FuzzGRPCStepDecoder feeds arbitrary bytes to the gRPC Step stream's codec
// as one received message: decoded as a data chunk straight into a tensor
// and as a Frame. The data decoder must never panic, write more than its
// destination, or accept a message that is not exactly Frame{data} (the
// bytes it writes are then the message's payload, and protobuf decodes the
// same message to the same data).
func FuzzGRPCStepDecoder(f *testing.F) {
	for _, fr := range []*pb.Frame{
		{Kind: &pb.Frame_Data{Data: []byte("tensor bytes")}},
		{Kind: &pb.Frame_Header{Header: &pb.StepHeader{SessionId: "s", Tensors: []*pb.TensorInfo{{Name: "x", ElemBytes: 2, Shape: []int64{3}, Bytes: 6}}}}},
		{Kind: &pb.Frame_Trailer{Trailer: &pb.StepTrailer{ExecuteNs: 5}}},
	} {
		b, err := proto.Marshal(fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(dataHeader(nil, 1000))
	f.Add(append(protowire.AppendTag(nil, frameDataField, protowire.BytesType), 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		dst := make([]byte, 256)
		d := &DataIn{Dst: dst}
		if err := Frames.Unmarshal(mem.BufferSlice{mem.SliceBuffer(in)}, d); err == nil {
			if d.N <= 0 || d.N > len(dst) || d.Wire != len(in) {
				t.Fatalf("a data frame of %d B (wire %d of %d) into %d B", d.N, d.Wire, len(in), len(dst))
			}
			var fr pb.Frame
			if err := proto.Unmarshal(in, &fr); err != nil || !bytes.Equal(fr.GetData(), dst[:d.N]) {
				t.Fatalf("accepted as data, protobuf says %v / %d B", err, len(fr.GetData()))
			}
		}
		var fr pb.Frame
		if err := Frames.Unmarshal(mem.BufferSlice{mem.SliceBuffer(in)}, &fr); err != nil {
			return
		}
		for _, ti := range fr.GetHeader().GetTensors() {
			CheckTensor(ti.Name, int(ti.ElemBytes), ti.Shape, ti.Bytes) // must not panic
		}
	})
}
