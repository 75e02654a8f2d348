package wire

import (
	"encoding/binary"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// Tensor bytes travel as Frame{data} messages on both transports. Encoding
// and decoding them through protobuf copies every chunk twice or three
// times (marshal, materialize, unmarshal, gather); a data frame is instead
// written as its protobuf header followed by the caller's bytes, and read
// straight into the destination tensor. The bytes on the wire are exactly
// protobuf's (a peer that decodes with protobuf sees the same messages), so
// wire byte counts are unchanged.

// Field numbers of the data-carrying messages (remotepb/remote.proto).
const (
	frameDataField     = 2 // Frame.data
	envelopeFrameField = 6 // Envelope.frame
)

// dataHeader appends Frame.data's tag and length for n bytes of data.
func dataHeader(b []byte, n int) []byte {
	b = protowire.AppendTag(b, frameDataField, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(n))
}

// DataHeaderLen is the size of dataHeader for n bytes.
func DataHeaderLen(n int) int {
	return protowire.SizeTag(frameDataField) + protowire.SizeVarint(uint64(n))
}

// DataOut is a data frame to send: gRPC's codec writes its header and then
// data itself, not a copy. Data must stay unchanged until the call's reply
// has arrived (the transport may still be writing it when Send returns).
type DataOut struct{ Data []byte }

// DataIn receives one data frame into Dst: N bytes were written, the
// message was Wire bytes long (without gRPC's 5-byte prefix).
type DataIn struct {
	Dst     []byte
	N, Wire int
}

// frameCodec is the gRPC codec of the Step and Session streams: protobuf for every
// message, except that DataOut and DataIn move tensor bytes without
// intermediate copies. It keeps protobuf's name, so the content type on the
// wire is the standard application/grpc+proto.
type frameCodec struct{ proto encoding.CodecV2 }

// Frames is the Step and Session streams' codec (both ends force it on their streams).
var Frames = frameCodec{proto: encoding.GetCodecV2(protoenc.Name)}

func (c frameCodec) Name() string { return protoenc.Name }

func (c frameCodec) Marshal(v any) (mem.BufferSlice, error) {
	if d, ok := v.(*DataOut); ok {
		return mem.BufferSlice{mem.SliceBuffer(dataHeader(nil, len(d.Data))), mem.SliceBuffer(d.Data)}, nil
	}
	return c.proto.Marshal(v)
}

func (c frameCodec) Unmarshal(data mem.BufferSlice, v any) error {
	d, ok := v.(*DataIn)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	d.Wire = data.Len()
	r := data.Reader()
	defer r.Close()
	tag, err := binary.ReadUvarint(r)
	if err != nil || tag != uint64(protowire.EncodeTag(frameDataField, protowire.BytesType)) {
		return status.Errorf(codes.InvalidArgument, "expected a data frame (tensor bytes), got another message")
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || n != uint64(r.Remaining()) {
		return status.Errorf(codes.InvalidArgument, "malformed data frame: length %d, %d B follow", n, r.Remaining())
	}
	if n == 0 || n > uint64(len(d.Dst)) {
		return status.Errorf(codes.InvalidArgument, "a data frame of %d B where %d B of the tensor remain", n, len(d.Dst))
	}
	if _, err := io.ReadFull(r, d.Dst[:n]); err != nil {
		return status.Errorf(codes.InvalidArgument, "data frame: %v", err)
	}
	d.N = int(n)
	return nil
}

// The raw-TCP framing of a data chunk: prefix, Envelope.frame's tag and
// length, Frame.data's tag and length, the data.

// smallData is the size below which a data chunk goes through the write
// buffer (one syscall for many small messages) rather than straight to the
// socket.
const smallData = 64 << 10

// WriteData writes one data chunk as the Envelope{Frame{data}} message
// proto.Marshal would produce, the data straight from d (no copy for a
// large chunk); it returns the framed size.
func (t *TCPConn) WriteData(d []byte) (int64, error) {
	frameLen := DataHeaderLen(len(d)) + len(d)
	// The header is built in the write buffer's free space (no allocation).
	h := append(t.w.AvailableBuffer(), 0, 0, 0, 0)
	h = protowire.AppendTag(h, envelopeFrameField, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(frameLen))
	h = dataHeader(h, len(d))
	binary.BigEndian.PutUint32(h, uint32(len(h)-TCPPrefixBytes+len(d)))
	if _, err := t.w.Write(h); err != nil {
		return 0, err
	}
	if len(d) < smallData {
		_, err := t.w.Write(d)
		return int64(len(h) + len(d)), err
	}
	if err := t.w.Flush(); err != nil {
		return 0, err
	}
	if _, err := t.c.Write(d); err != nil {
		return 0, err
	}
	return int64(len(h) + len(d)), nil
}

// ReadData reads one message that must be a data chunk of at most
// len(dst) bytes into dst, without an intermediate copy; an error message
// in its place is returned as that error.
func (t *TCPConn) ReadData(dst []byte) (int, int64, error) {
	size, err := t.ReadPrefix()
	if err != nil {
		return 0, 0, err
	}
	hdr, err := t.r.Peek(min(size, 2*(1+binary.MaxVarintLen64)))
	if err != nil {
		return 0, 0, err
	}
	if n, hl, ok := parseDataEnvelope(hdr, size); ok {
		if n == 0 || n > len(dst) {
			return 0, 0, status.Errorf(codes.InvalidArgument, "a data frame of %d B where %d B of the tensor remain", n, len(dst))
		}
		if _, err := t.r.Discard(hl); err != nil {
			return 0, 0, err
		}
		if _, err := io.ReadFull(t.r, dst[:n]); err != nil {
			return 0, 0, err
		}
		return n, int64(size + TCPPrefixBytes), nil
	}
	e, err := t.ReadBody(size)
	if err != nil {
		return 0, 0, err
	}
	if err := EnvelopeErr(e); err != nil {
		return 0, 0, err
	}
	return 0, 0, status.Errorf(codes.InvalidArgument, "expected a data frame (tensor bytes), got %s", kindName(e.Kind))
}

// parseDataEnvelope recognizes the start of an Envelope{Frame{data}} of
// size bytes: it returns the data's length and the header's.
func parseDataEnvelope(b []byte, size int) (n, hl int, ok bool) {
	num, typ, m1 := protowire.ConsumeTag(b)
	if m1 < 0 || num != envelopeFrameField || typ != protowire.BytesType {
		return 0, 0, false
	}
	fl, m2 := protowire.ConsumeVarint(b[m1:])
	if m2 < 0 || fl != uint64(size-m1-m2) {
		return 0, 0, false
	}
	num, typ, m3 := protowire.ConsumeTag(b[m1+m2:])
	if m3 < 0 || num != frameDataField || typ != protowire.BytesType {
		return 0, 0, false
	}
	dl, m4 := protowire.ConsumeVarint(b[m1+m2+m3:])
	hl = m1 + m2 + m3 + m4
	if m4 < 0 || dl != uint64(size-hl) {
		return 0, 0, false
	}
	return int(dl), hl, true
}

func kindName(k any) string { return fmt.Sprintf("%T", k) }

// ChunkBytes is the data carried per Frame: a message less room for framing.
func ChunkBytes(maxMessage int) int { return maxMessage - 1024 }
