package wire

import (
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/partbench/partbench/remote/remotepb"
)

// A raw-TCP step sends and receives two small protobuf messages besides its
// data: the header frame (both ways) and the reply's trailer. protobuf's
// reflective decoder was a large part of the CPU a decode step spends on
// each end beyond a plain echo's (docs/measurements/remote-loopback.md);
// decodeStepFrame reads the common shape of both directly. It accepts only what protobuf would decode to the same message
// (known fields with their wire types, a frame that is the envelope's only
// field, valid UTF-8), and leaves anything else — an unknown field, a field
// of another wire type, merged oneofs, an error — to proto.Unmarshal, so
// what a message means does not depend on which path read it.

// Field numbers (remotepb/remote.proto).
const (
	frameHeaderField  = 1 // Frame.header
	frameTrailerField = 3 // Frame.trailer
)

// decodeStepFrame decodes b as an Envelope holding only a Frame holding
// only a StepHeader or a StepTrailer; ok is false for anything else.
func decodeStepFrame(b []byte) (e *pb.Envelope, ok bool) {
	fb, ok := onlyMessageField(b, envelopeFrameField)
	if !ok || len(fb) == 0 {
		return nil, false
	}
	num, typ, n := protowire.ConsumeTag(fb)
	if n < 0 || typ != protowire.BytesType {
		return nil, false
	}
	v, m := protowire.ConsumeBytes(fb[n:])
	if m < 0 || n+m != len(fb) {
		return nil, false
	}
	// The envelope, its frame, their oneof wrappers and the message are
	// one allocation.
	switch num {
	case frameHeaderField:
		m := &headerFrame{}
		if !decodeStepHeader(v, &m.h) {
			return nil, false
		}
		m.fk.Header, m.f.Kind = &m.h, &m.fk
		m.ek.Frame, m.e.Kind = &m.f, &m.ek
		return &m.e, true
	case frameTrailerField:
		m := &trailerFrame{}
		if !decodeStepTrailer(v, &m.t) {
			return nil, false
		}
		m.fk.Trailer, m.f.Kind = &m.t, &m.fk
		m.ek.Frame, m.e.Kind = &m.f, &m.ek
		return &m.e, true
	}
	return nil, false
}

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

// onlyMessageField returns the contents of b's field num when it is b's
// only field and of the bytes wire type.
func onlyMessageField(b []byte, num protowire.Number) ([]byte, bool) {
	got, typ, n := protowire.ConsumeTag(b)
	if n < 0 || got != num || typ != protowire.BytesType {
		return nil, false
	}
	v, m := protowire.ConsumeBytes(b[n:])
	if m < 0 || n+m != len(b) {
		return nil, false
	}
	return v, true
}

// field is one field of a message: its number, wire type and value (v for
// varint and fixed64, s for bytes); nextField reads it.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	s   []byte
}

// nextField reads the field at the start of b and returns the rest; ok is false
// for a malformed field or one of the group or fixed32 wire types (none of
// the step's messages has them).
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
