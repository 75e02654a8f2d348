package wire

import (
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/partbench/partbench/remote/remotepb"
)

// A raw-TCP step sends and receives two small protobuf messages besides its
// data: the header frame (both ways) and the reply's trailer. protobuf's
// reflection was a large part of the CPU a decode step spends on each end
// beyond a plain echo's (docs/measurements/remote-loopback.md), so both are
// read and written here directly, to the same messages and the same bytes.
// decodeStepFrame accepts only what protobuf would decode to the same
// message (known fields with their wire types, a frame that is the
// envelope's only field, valid UTF-8) and leaves anything else (an unknown
// field, a field of another wire type, merged oneofs, an error) to
// proto.Unmarshal, so what a message means does not depend on which path
// read it; appendStepFrame leaves to proto.Marshal any message it would not
// encode byte for byte as protobuf does.

// Field numbers (remotepb/remote.proto).
const (
	frameHeaderField  = 1 // Frame.header
	frameTrailerField = 3 // Frame.trailer
)

// decodeStepFrame decodes b as an Envelope holding only a Frame holding
// only a StepHeader or a StepTrailer; ok is false for anything else.
func decodeStepFrame(b []byte) (e *pb.Envelope, ok bool) {
	num, fb, ok := onlyBytesField(b)
	if !ok || num != envelopeFrameField {
		return nil, false
	}
	num, v, ok := onlyBytesField(fb)
	if !ok {
		return nil, false
	}
	// The envelope, its frame, their oneof wrappers and the message are
	// one allocation.
	switch num {
	case frameHeaderField:
		hf := &headerFrame{}
		if !decodeStepHeader(v, &hf.h) {
			return nil, false
		}
		hf.fk.Header, hf.f.Kind = &hf.h, &hf.fk
		hf.ek.Frame, hf.e.Kind = &hf.f, &hf.ek
		return &hf.e, true
	case frameTrailerField:
		tf := &trailerFrame{}
		if !decodeStepTrailer(v, &tf.t) {
			return nil, false
		}
		tf.fk.Trailer, tf.f.Kind = &tf.t, &tf.fk
		tf.ek.Frame, tf.e.Kind = &tf.f, &tf.ek
		return &tf.e, true
	}
	return nil, false
}

// headerFrame and trailerFrame are a decoded step frame's messages, one
// allocation each.
type headerFrame struct {
	e  pb.Envelope
	ek pb.Envelope_Frame
	f  pb.Frame
	fk pb.Frame_Header
	h  pb.StepHeader
}

type trailerFrame struct {
	e  pb.Envelope
	ek pb.Envelope_Frame
	f  pb.Frame
	fk pb.Frame_Trailer
	t  pb.StepTrailer
}

// onlyBytesField returns the number and contents of b's only field when it
// is of the bytes wire type; ok is false for anything else (an empty b
// included).
func onlyBytesField(b []byte) (num protowire.Number, v []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || typ != protowire.BytesType {
		return 0, nil, false
	}
	v, m := protowire.ConsumeBytes(b[n:])
	if m < 0 || n+m != len(b) {
		return 0, nil, false
	}
	return num, v, true
}

// field is one field of a message: its number, wire type and value (v for
// varint and fixed64, s for bytes); nextField reads it.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	s   []byte
}

// nextField reads the field at the start of b and returns the rest; ok is
// false for a malformed field or one of the group or fixed32 wire types
// (none of the step's messages has them).
func nextField(b []byte) (f field, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return f, nil, false
	}
	f.num, f.typ = num, typ
	var m int
	switch typ {
	case protowire.VarintType:
		f.v, m = protowire.ConsumeVarint(b[n:])
	case protowire.Fixed64Type:
		f.v, m = protowire.ConsumeFixed64(b[n:])
	case protowire.BytesType:
		f.s, m = protowire.ConsumeBytes(b[n:])
	default:
		return f, nil, false
	}
	if m < 0 {
		return f, nil, false
	}
	return f, b[n+m:], true
}

// str is a string field's value when it is valid UTF-8 (protobuf refuses
// a proto3 string that is not).
func (f field) str() (string, bool) {
	if f.typ != protowire.BytesType || !utf8.Valid(f.s) {
		return "", false
	}
	return string(f.s), true
}

// decodeStepHeader decodes b into the empty header h.
func decodeStepHeader(b []byte, h *pb.StepHeader) bool {
	for len(b) > 0 {
		f, rest, ok := nextField(b)
		if !ok {
			return false
		}
		b = rest
		switch {
		case f.num == 1:
			if h.SessionId, ok = f.str(); !ok {
				return false
			}
		case f.num == 2 && f.typ == protowire.VarintType:
			h.Phase = pb.Phase(int32(f.v))
		case f.num == 3 && f.typ == protowire.VarintType:
			h.Step = int32(f.v)
		case f.num == 4 && f.typ == protowire.BytesType:
			ti, ok := decodeTensorInfo(f.s)
			if !ok {
				return false
			}
			h.Tensors = append(h.Tensors, ti)
		default:
			return false
		}
	}
	return true
}

func decodeTensorInfo(b []byte) (*pb.TensorInfo, bool) {
	ti := &pb.TensorInfo{}
	for len(b) > 0 {
		f, rest, ok := nextField(b)
		if !ok {
			return nil, false
		}
		b = rest
		switch {
		case f.num == 1:
			if ti.Name, ok = f.str(); !ok {
				return nil, false
			}
		case f.num == 2 && f.typ == protowire.VarintType:
			ti.ElemBytes = int32(f.v)
		case f.num == 3 && f.typ == protowire.VarintType: // unpacked
			ti.Shape = append(ti.Shape, int64(f.v))
		case f.num == 3 && f.typ == protowire.BytesType: // packed
			for p := f.s; len(p) > 0; {
				v, n := protowire.ConsumeVarint(p)
				if n < 0 {
					return nil, false
				}
				ti.Shape = append(ti.Shape, int64(v))
				p = p[n:]
			}
		case f.num == 4 && f.typ == protowire.VarintType:
			ti.Bytes = int64(f.v)
		default:
			return nil, false
		}
	}
	return ti, true
}

// decodeStepTrailer decodes b into the empty trailer t.
func decodeStepTrailer(b []byte, t *pb.StepTrailer) bool {
	for len(b) > 0 {
		f, rest, ok := nextField(b)
		if !ok {
			return false
		}
		b = rest
		if f.num <= 7 && f.typ == protowire.VarintType {
			switch f.num {
			case 1:
				t.QueueWaitNs = int64(f.v)
			case 2:
				t.ReceiveNs = int64(f.v)
			case 3:
				t.ExecuteNs = int64(f.v)
			case 4:
				t.SendNs = int64(f.v)
			case 5:
				t.ImportNs = int64(f.v)
			case 6:
				t.SerializeNs = int64(f.v)
			case 7:
				t.SpanNs = int64(f.v)
			default:
				return false
			}
			continue
		}
		switch {
		case f.num == 8 && f.typ == protowire.Fixed64Type:
			t.Utilization = math.Float64frombits(f.v)
		case f.num == 9:
			if t.UtilSource, ok = f.str(); !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// appendStepFrame appends e as proto.Marshal would encode it when e is an
// Envelope holding a Frame holding a StepHeader or a StepTrailer, none of
// them with unknown fields and every string valid UTF-8 (ok false, b
// unchanged, otherwise): fields in number order, zero values left out,
// shapes packed. It returns the envelope's encoded size.
func appendStepFrame(b []byte, e *pb.Envelope) (out []byte, n int, ok bool) {
	f := e.GetFrame()
	if f == nil || len(e.ProtoReflect().GetUnknown()) > 0 || len(f.ProtoReflect().GetUnknown()) > 0 {
		return b, 0, false
	}
	var num protowire.Number
	var size int
	switch k := f.Kind.(type) {
	case *pb.Frame_Header:
		if size, ok = stepHeaderSize(k.Header); !ok {
			return b, 0, false
		}
		num = frameHeaderField
	case *pb.Frame_Trailer:
		if size, ok = stepTrailerSize(k.Trailer); !ok {
			return b, 0, false
		}
		num = frameTrailerField
	default:
		return b, 0, false
	}
	frameSize := protowire.SizeTag(num) + protowire.SizeBytes(size)
	n = protowire.SizeTag(envelopeFrameField) + protowire.SizeBytes(frameSize)
	b = protowire.AppendTag(b, envelopeFrameField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(frameSize))
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	if num == frameHeaderField {
		b = appendStepHeader(b, f.GetHeader())
	} else {
		b = appendStepTrailer(b, f.GetTrailer())
	}
	return b, n, true
}

// int32Varint is how protobuf encodes an int32 or enum value: sign-extended
// to 64 bits.
func int32Varint(v int32) uint64 { return uint64(int64(v)) }

func stringSize(num protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(s))
}

func varintSize(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

// tensorInfoSize is ti's encoded size; ok is false where protobuf's
// encoding is not this one's (unknown fields, a name not valid UTF-8).
func tensorInfoSize(ti *pb.TensorInfo) (n, packed int, ok bool) {
	if !utf8.ValidString(ti.Name) || len(ti.ProtoReflect().GetUnknown()) > 0 {
		return 0, 0, false
	}
	for _, d := range ti.Shape {
		packed += protowire.SizeVarint(uint64(d))
	}
	n = stringSize(1, ti.Name) + varintSize(2, int32Varint(ti.ElemBytes)) + varintSize(4, uint64(ti.Bytes))
	if len(ti.Shape) > 0 {
		n += protowire.SizeTag(3) + protowire.SizeBytes(packed)
	}
	return n, packed, true
}

func stepHeaderSize(h *pb.StepHeader) (int, bool) {
	if h == nil || !utf8.ValidString(h.SessionId) || len(h.ProtoReflect().GetUnknown()) > 0 {
		return 0, false
	}
	n := stringSize(1, h.SessionId) + varintSize(2, int32Varint(int32(h.Phase))) + varintSize(3, int32Varint(h.Step))
	for _, ti := range h.Tensors {
		if ti == nil {
			return 0, false
		}
		s, _, ok := tensorInfoSize(ti)
		if !ok {
			return 0, false
		}
		n += protowire.SizeTag(4) + protowire.SizeBytes(s)
	}
	return n, true
}

func appendStepHeader(b []byte, h *pb.StepHeader) []byte {
	b = appendString(b, 1, h.SessionId)
	b = appendVarintField(b, 2, int32Varint(int32(h.Phase)))
	b = appendVarintField(b, 3, int32Varint(h.Step))
	for _, ti := range h.Tensors {
		s, packed, _ := tensorInfoSize(ti)
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(s))
		b = appendString(b, 1, ti.Name)
		b = appendVarintField(b, 2, int32Varint(ti.ElemBytes))
		if len(ti.Shape) > 0 {
			b = protowire.AppendTag(b, 3, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(packed))
			for _, d := range ti.Shape {
				b = protowire.AppendVarint(b, uint64(d))
			}
		}
		b = appendVarintField(b, 4, uint64(ti.Bytes))
	}
	return b
}

// trailerInts are the trailer's int64 fields, numbers 1 to 7 in order.
func trailerInts(t *pb.StepTrailer) [7]int64 {
	return [7]int64{t.QueueWaitNs, t.ReceiveNs, t.ExecuteNs, t.SendNs, t.ImportNs, t.SerializeNs, t.SpanNs}
}

func stepTrailerSize(t *pb.StepTrailer) (int, bool) {
	if t == nil || !utf8.ValidString(t.UtilSource) || len(t.ProtoReflect().GetUnknown()) > 0 {
		return 0, false
	}
	n := 0
	for i, v := range trailerInts(t) {
		n += varintSize(protowire.Number(i+1), uint64(v))
	}
	if math.Float64bits(t.Utilization) != 0 { // -0 is sent, as protobuf does
		n += protowire.SizeTag(8) + protowire.SizeFixed64()
	}
	return n + stringSize(9, t.UtilSource), true
}

func appendStepTrailer(b []byte, t *pb.StepTrailer) []byte {
	for i, v := range trailerInts(t) {
		b = appendVarintField(b, protowire.Number(i+1), uint64(v))
	}
	if u := math.Float64bits(t.Utilization); u != 0 {
		b = protowire.AppendFixed64(protowire.AppendTag(b, 8, protowire.Fixed64Type), u)
	}
	return appendString(b, 9, t.UtilSource)
}
