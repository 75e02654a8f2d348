package wire

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/partbench/partbench/remote/remotepb"
)

// The raw-TCP twin carries the same messages as the gRPC transport, each an
// Envelope preceded by its length (4 bytes, big-endian), one call at a time
// per connection. A connection starts with a Hello carrying the token.
const TCPPrefixBytes = 4

// TCPConn reads and writes framed Envelopes and counts their bytes.
type TCPConn struct {
	c   net.Conn
	r   *bufio.Reader
	w   *bufio.Writer
	max int
	buf []byte
	// hold, when set, counts a message larger than TCPKeptMessageBytes
	// against the server's budget while it is read and decoded (release
	// gives it back); data chunks are read straight into counted buffers.
	hold    func(n int64) error
	release func(n int64)
}

// TCPIOBytes is each direction's buffer of an authenticated connection;
// TCPPreAuthIOBytes is an unauthenticated one's.
const (
	TCPIOBytes        = 256 << 10
	TCPPreAuthIOBytes = 4 << 10
	// TCPConnBytes is what an authenticated connection holds and counts
	// against the memory budget: both buffers (a message larger than
	// TCPKeptMessageBytes is read into a buffer that is not kept).
	TCPConnBytes        = 2 * TCPIOBytes
	TCPKeptMessageBytes = 64 << 10
)

// NewPreAuthTCPConn is a server's connection before its hello: small
// buffers and a message limit of max bytes until Authenticated.
func NewPreAuthTCPConn(c net.Conn, max int) *TCPConn {
	return &TCPConn{c: c, r: bufio.NewReaderSize(c, TCPPreAuthIOBytes), w: bufio.NewWriterSize(c, TCPPreAuthIOBytes), max: max}
}

// Conn is the connection under the framing.
func (t *TCPConn) Conn() net.Conn { return t.c }

// Reader is the connection's buffered reader (what it holds is read next).
func (t *TCPConn) Reader() *bufio.Reader { return t.r }

// SetBudget makes a message larger than TCPKeptMessageBytes count against a
// server's memory budget while it is read and decoded: hold takes its bytes
// (or refuses), release gives them back.
func (t *TCPConn) SetBudget(hold func(n int64) error, release func(n int64)) {
	t.hold, t.release = hold, release
}

// NewTCPConn frames an authenticated connection of at most maxMessage bytes a message.
func NewTCPConn(c net.Conn, maxMessage int) *TCPConn {
	return &TCPConn{c: c, r: bufio.NewReaderSize(c, TCPIOBytes), w: bufio.NewWriterSize(c, TCPIOBytes), max: maxMessage}
}

// Authenticated gives a connection that presented its token the full
// message limit and buffers (a hello cannot be followed by anything before
// its reply, so nothing is buffered in the small ones).
func (t *TCPConn) Authenticated(maxMessage int) {
	t.r = bufio.NewReaderSize(t.r, TCPIOBytes)
	t.w = bufio.NewWriterSize(t.c, TCPIOBytes)
	t.max = maxMessage
	t.buf = nil
}

// WriteEnvelope frames one envelope; Flush sends what is buffered. The
// envelope must not change while it is written (its size, computed first,
// is reused by the encoding).
func (t *TCPConn) WriteEnvelope(e *pb.Envelope) (int64, error) {
	// A step's header and trailer frames are encoded without protobuf's
	// reflection, to the same bytes.
	if b, n, ok := appendStepFrame(binary.BigEndian.AppendUint32(t.buf[:0], 0), e); ok {
		binary.BigEndian.PutUint32(b, uint32(n))
		t.buf = b
		if cap(t.buf) > TCPKeptMessageBytes {
			t.buf = nil
		}
		if _, err := t.w.Write(b); err != nil {
			return 0, err
		}
		return int64(n + TCPPrefixBytes), nil
	}
	n := proto.Size(e)
	var err error
	t.buf, err = proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(binary.BigEndian.AppendUint32(t.buf[:0], uint32(n)), e)
	if err != nil {
		return 0, err
	}
	_, err = t.w.Write(t.buf)
	if cap(t.buf) > TCPKeptMessageBytes {
		t.buf = nil
	}
	if err != nil {
		return 0, err
	}
	return int64(n + TCPPrefixBytes), nil
}

// Flush sends what is buffered.
func (t *TCPConn) Flush() error { return t.w.Flush() }

// ReadEnvelope reads one envelope, refusing one longer than the limit before
// reading its body.
func (t *TCPConn) ReadEnvelope() (*pb.Envelope, int64, error) {
	n, err := t.ReadPrefix()
	if err != nil {
		return nil, 0, err
	}
	e, err := t.ReadBody(n)
	if err != nil {
		return nil, 0, err
	}
	return e, int64(n + TCPPrefixBytes), nil
}

// NextBuffered reports whether the next message, prefix and body, is in the
// read buffer already: reading it makes no system call and cannot wait.
func (t *TCPConn) NextBuffered() bool {
	b := t.r.Buffered()
	if b < TCPPrefixBytes {
		return false
	}
	hdr, err := t.r.Peek(TCPPrefixBytes)
	return err == nil && uint64(b-TCPPrefixBytes) >= uint64(binary.BigEndian.Uint32(hdr))
}

// ReadPrefix reads a message's length and checks it against the limit.
func (t *TCPConn) ReadPrefix() (int, error) {
	hdr, err := t.r.Peek(TCPPrefixBytes)
	if err != nil {
		if err == io.EOF && len(hdr) > 0 {
			err = io.ErrUnexpectedEOF // as io.ReadFull says of a partial prefix
		}
		return 0, err
	}
	n := int(binary.BigEndian.Uint32(hdr))
	t.r.Discard(TCPPrefixBytes)
	if n > t.max {
		return 0, status.Errorf(codes.ResourceExhausted, "message of %d B is larger than the limit of %d B", n, t.max)
	}
	return n, nil
}

// ReadBody reads and decodes an envelope of n bytes.
func (t *TCPConn) ReadBody(n int) (*pb.Envelope, error) {
	if n > TCPKeptMessageBytes && t.hold != nil {
		if err := t.hold(int64(n)); err != nil {
			// Read past it through the small buffer (no allocation), so the
			// client, still writing it, gets the reply rather than a reset.
			if _, derr := t.r.Discard(n); derr != nil {
				return nil, derr
			}
			return nil, err
		}
		defer t.release(int64(n))
	}
	if cap(t.buf) < n {
		t.buf = make([]byte, n)
	}
	b := t.buf[:n]
	if _, err := io.ReadFull(t.r, b); err != nil {
		return nil, err
	}
	e, ok := decodeStepFrame(b)
	var err error
	if !ok {
		e = &pb.Envelope{}
		err = proto.Unmarshal(b, e)
	}
	if cap(t.buf) > TCPKeptMessageBytes {
		t.buf = nil // a large message's buffer is not held between messages
	}
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "malformed message: %v", err)
	}
	return e, nil
}

// ErrEnvelope is the error message of err's gRPC status (code and text).
func ErrEnvelope(err error) *pb.Envelope {
	st := status.Convert(err)
	return &pb.Envelope{Kind: &pb.Envelope_Error{Error: &pb.Error{Code: int32(st.Code()), Message: st.Message()}}}
}

// EnvelopeErr is the error an error message carries (nil for any other).
func EnvelopeErr(e *pb.Envelope) error {
	if er := e.GetError(); er != nil {
		return status.Error(codes.Code(er.Code), er.Message)
	}
	return nil
}

// PreAuthMessageBytes caps a raw-TCP message before the connection has
// authenticated: a Hello is a token and a few bytes of framing.
const PreAuthMessageBytes = 16 << 10
