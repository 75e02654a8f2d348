package wire

import (
	"math"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/partbench/partbench/remote/remotepb"
)

func headerEnvelope(h *pb.StepHeader) *pb.Envelope {
	return &pb.Envelope{Kind: &pb.Envelope_Frame{Frame: &pb.Frame{Kind: &pb.Frame_Header{Header: h}}}}
}

func trailerEnvelope(t *pb.StepTrailer) *pb.Envelope {
	return &pb.Envelope{Kind: &pb.Envelope_Frame{Frame: &pb.Frame{Kind: &pb.Frame_Trailer{Trailer: t}}}}
}

// stepFrames are header and trailer envelopes as the step sends them, and
// at the edges of their fields' ranges.
func stepFrames() []*pb.Envelope {
	return []*pb.Envelope{
		headerEnvelope(&pb.StepHeader{}),
		headerEnvelope(&pb.StepHeader{SessionId: "0123456789abcdef0123456789abcdef", Phase: pb.Phase_PHASE_DECODE, Step: 7,
			Tensors: []*pb.TensorInfo{{Name: "tokens", ElemBytes: 4, Shape: []int64{8, 1}, Bytes: 32}}}),
		headerEnvelope(&pb.StepHeader{SessionId: "s", Phase: pb.Phase_PHASE_RESUME, Step: -3, Tensors: []*pb.TensorInfo{
			{Name: "hidden", ElemBytes: 2, Shape: []int64{1, 128, 4096}, Bytes: 1 << 20},
			{Name: "", ElemBytes: math.MinInt32, Shape: []int64{0, -1, math.MaxInt64, math.MinInt64}, Bytes: -5},
			{Name: "kv·缓存"},
		}}),
		headerEnvelope(&pb.StepHeader{Phase: pb.Phase(99), Step: math.MaxInt32}), // an enum value this build does not name
		trailerEnvelope(&pb.StepTrailer{}),
		trailerEnvelope(&pb.StepTrailer{QueueWaitNs: 1, ReceiveNs: 300, ExecuteNs: 9e9, SendNs: 4, ImportNs: 5, SerializeNs: 6,
			SpanNs: math.MaxInt64, Utilization: 0.4375, UtilSource: "cpu-busy"}),
		trailerEnvelope(&pb.StepTrailer{QueueWaitNs: -1, Utilization: math.Inf(1), UtilSource: "nvml-gpm-sm-activity"}),
	}
}

// checkSameAsProtobuf fails unless decodeStepFrame either declines b or
// decodes it to exactly what proto.Unmarshal does; it reports whether the
// fast path took it.
func checkSameAsProtobuf(t *testing.T, b []byte) bool {
	t.Helper()
	fast, ok := decodeStepFrame(b)
	slow := &pb.Envelope{}
	err := proto.Unmarshal(b, slow)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("%x: decodeStepFrame took a message protobuf refuses (%v)", b, err)
	}
	if !proto.Equal(fast, slow) {
		t.Fatalf("%x: decodeStepFrame read %v, protobuf %v", b, fast, slow)
	}
	return true
}

// TestDecodeStepFrame: every header and trailer protobuf encodes is read by
// the fast path, to the message protobuf decodes.
func TestDecodeStepFrame(t *testing.T) {
	for _, e := range stepFrames() {
		b, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if !checkSameAsProtobuf(t, b) {
			t.Errorf("%v: the fast path declined a step frame protobuf wrote", e)
		}
	}
}

// TestDecodeStepFrameOtherEncodings: encodings protobuf accepts but does
// not write are read the same (an unpacked shape, a field repeated: the
// last wins), and what the fast path does not know goes to protobuf.
func TestDecodeStepFrameOtherEncodings(t *testing.T) {
	frame := func(num protowire.Number, msg []byte) []byte {
		f := protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), msg)
		return protowire.AppendBytes(protowire.AppendTag(nil, envelopeFrameField, protowire.BytesType), f)
	}
	varint := func(b []byte, num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
	}
	bytesField := func(b []byte, num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
	// TensorInfo{shape: [3, 5]} unpacked, then its elem_bytes twice (2, then 4).
	unpacked := varint(varint(varint(varint(nil, 3, 3), 3, 5), 2, 2), 2, 4)
	header := bytesField(varint(nil, 3, 9), 4, unpacked)
	trailerTwice := varint(varint(nil, 1, 10), 1, 20) // queue_wait_ns 10, then 20
	for _, c := range []struct {
		name string
		b    []byte
		fast bool // whether the fast path should take it
	}{
		{"unpacked shape, a field twice", frame(frameHeaderField, header), true},
		{"a trailer field twice", frame(frameTrailerField, trailerTwice), true},
		{"an unknown field in the header", frame(frameHeaderField, varint(header, 15, 1)), false},
		{"an unknown field in the trailer", frame(frameTrailerField, varint(nil, 10, 1)), false},
		{"utilization as a varint", frame(frameTrailerField, varint(nil, 8, 1)), false},
		{"a session id that is not UTF-8", frame(frameHeaderField, bytesField(nil, 1, []byte{0xff, 0xfe})), false},
		{"a data frame", frame(frameDataField, []byte("abc")), false},
		{"two frames in one envelope", append(frame(frameHeaderField, header), frame(frameHeaderField, header)...), false},
		{"a hello", bytesField(nil, 1, bytesField(nil, 1, []byte("token"))), false},
		{"truncated", frame(frameHeaderField, header)[:5], false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := checkSameAsProtobuf(t, c.b); got != c.fast {
				t.Errorf("fast path took it: %v, want %v", got, c.fast)
			}
		})
	}
	// The first case by hand: step 9, one tensor of shape [3, 5], elem_bytes 4 (the last of two).
	e, ok := decodeStepFrame(frame(frameHeaderField, header))
	if ti := e.GetFrame().GetHeader().GetTensors(); !ok || e.GetFrame().GetHeader().Step != 9 || len(ti) != 1 || ti[0].ElemBytes != 4 || len(ti[0].Shape) != 2 || ti[0].Shape[1] != 5 {
		t.Errorf("decoded %v", e)
	}
}

// TestDecodeStepFrameMutations: step frames with bytes changed, cut or
// added are either declined or read as protobuf reads them.
func TestDecodeStepFrameMutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var fast, declined int
	for _, e := range stepFrames() {
		orig, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		for range 2000 {
			b := append([]byte(nil), orig...)
			switch rng.IntN(3) {
			case 0:
				for range 1 + rng.IntN(3) {
					b[rng.IntN(len(b))] = byte(rng.Uint32())
				}
			case 1:
				b = b[:rng.IntN(len(b))]
			default:
				for range 1 + rng.IntN(4) {
					b = append(b, byte(rng.Uint32()))
				}
			}
			if checkSameAsProtobuf(t, b) {
				fast++
			} else {
				declined++
			}
		}
	}
	// Both paths must be exercised for the check to mean anything.
	if fast == 0 || declined == 0 {
		t.Errorf("fast path took %d mutated frames, declined %d", fast, declined)
	}
}

// FuzzDecodeStepFrame: as TestDecodeStepFrameMutations, from the fuzzer.
func FuzzDecodeStepFrame(f *testing.F) {
	for _, e := range stepFrames() {
		b, err := proto.Marshal(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkSameAsProtobuf(t, b) })
}

// randomStepFrame is a header or trailer envelope with random field values,
// zeros, negatives, -0 and non-ASCII text among them.
func randomStepFrame(rng *rand.Rand) *pb.Envelope {
	i64 := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return -rng.Int64N(1 << 40)
		default:
			return rng.Int64() >> rng.IntN(63)
		}
	}
	i32 := func() int32 { return int32(i64()) }
	str := func() string {
		return []string{"", "tokens", "0123456789abcdef0123456789abcdef", "kv·缓存", "cpu-busy"}[rng.IntN(5)]
	}
	if rng.IntN(2) == 0 {
		u := []float64{0, math.Copysign(0, -1), 0.5, 1, math.NaN(), math.Inf(-1), rng.Float64()}[rng.IntN(7)]
		return trailerEnvelope(&pb.StepTrailer{QueueWaitNs: i64(), ReceiveNs: i64(), ExecuteNs: i64(), SendNs: i64(), ImportNs: i64(),
			SerializeNs: i64(), SpanNs: i64(), Utilization: u, UtilSource: str()})
	}
	h := &pb.StepHeader{SessionId: str(), Phase: pb.Phase(i32()), Step: i32()}
	for range rng.IntN(4) {
		ti := &pb.TensorInfo{Name: str(), ElemBytes: i32(), Bytes: i64()}
		for range rng.IntN(4) {
			ti.Shape = append(ti.Shape, i64())
		}
		h.Tensors = append(h.Tensors, ti)
	}
	return headerEnvelope(h)
}

// TestAppendStepFrame: the fast encoder writes exactly protobuf's bytes for
// every step frame, and its size.
func TestAppendStepFrame(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	es := stepFrames()
	for range 3000 {
		es = append(es, randomStepFrame(rng))
	}
	for _, e := range es {
		want, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, n, ok := appendStepFrame([]byte{9}, e) // appends after what is there
		if !ok || n != len(want) || string(got[1:]) != string(want) || got[0] != 9 {
			t.Fatalf("%v: fast encoding (ok %v, size %d)\n%x, protobuf's (%d B)\n%x", e, ok, n, got, len(want), want)
		}
	}
}

// TestAppendStepFrameDeclines: messages protobuf would encode otherwise or
// refuse are left to it.
func TestAppendStepFrameDeclines(t *testing.T) {
	withUnknown := &pb.StepTrailer{SpanNs: 1}
	withUnknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 20, protowire.VarintType), 1))
	for name, e := range map[string]*pb.Envelope{
		"a hello":                    {Kind: &pb.Envelope_Hello{Hello: &pb.Hello{Token: "t"}}},
		"a data frame":               {Kind: &pb.Envelope_Frame{Frame: &pb.Frame{Kind: &pb.Frame_Data{Data: []byte("x")}}}},
		"an empty frame":             {Kind: &pb.Envelope_Frame{Frame: &pb.Frame{}}},
		"a trailer's unknown field":  trailerEnvelope(withUnknown),
		"a session id not UTF-8":     headerEnvelope(&pb.StepHeader{SessionId: "\xff"}),
		"a tensor name not UTF-8":    headerEnvelope(&pb.StepHeader{Tensors: []*pb.TensorInfo{{Name: "a\xffb"}}}),
		"a util source not UTF-8":    trailerEnvelope(&pb.StepTrailer{UtilSource: "\xfe"}),
		"a header with a nil tensor": headerEnvelope(&pb.StepHeader{Tensors: []*pb.TensorInfo{nil}}),
	} {
		if b, _, ok := appendStepFrame(nil, e); ok {
			t.Errorf("%s: encoded by the fast path (%x)", name, b)
		}
	}
}
