package rendezvous

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Wire format. A connection opens with a preamble, "PBRV" and the protocol
// version as a big-endian uint32, from the dialing rank and then (with its
// reply) from rank 0. Each message after it is one frame: a big-endian
// uint32 length, then that many bytes of JSON (a frame value).
const (
	// ProtocolVersion changes whenever the frames change meaning.
	ProtocolVersion = 2
	// MaxFrameBytes caps one frame (payloads travel base64-encoded, so a
	// Gather contribution may be up to about 3/4 of it).
	MaxFrameBytes = 64 << 20
)

var magic = [4]byte{'P', 'B', 'R', 'V'}

// Frame types.
const (
	tHello     = "hello"  // rank → 0: who I am
	tOK        = "ok"     // 0 → rank: everyone joined; the peer table
	tFail      = "fail"   // 0 → rank: the join failed, Reason says why
	tHeartbeat = "hb"     // both ways, every Options.Heartbeat
	tColl      = "coll"   // rank → 0: a contribution to collective Seq
	tResult    = "result" // 0 → rank: the outcome of collective Seq
	tAbort     = "abort"  // both ways: the run is over (Origin, Lost, Reason)
	tBye       = "bye"    // both ways: a clean close
	tWho       = "who"    // anyone → 0 during the join: who holds this port?
	tHolder    = "holder" // 0 → anyone: its job, host, pid, world size
	tPing      = "ping"   // rank → 0: what is your clock? (Seq)
	tPong      = "pong"   // 0 → rank: rank 0's wall clock (Seq, Time)
)

// Collective kinds.
const (
	kAllGather = "all_gather"
	kBroadcast = "broadcast"
	kBarrier   = "barrier"
	kGather    = "gather"
)

// frame is every message; unused fields are omitted on the wire.
type frame struct {
	Type     string   `json:"type"`
	Rank     int      `json:"rank,omitempty"`
	Size     int      `json:"size,omitempty"`
	Launched int      `json:"launched,omitempty"`
	Hash     string   `json:"hash,omitempty"`
	Job      string   `json:"job,omitempty"`
	Host     string   `json:"host,omitempty"`
	PID      int      `json:"pid,omitempty"`
	Peers    []Peer   `json:"peers,omitempty"`
	Seq      uint64   `json:"seq,omitempty"`
	Kind     string   `json:"kind,omitempty"`
	Payload  []byte   `json:"payload,omitempty"`
	Payloads [][]byte `json:"payloads,omitempty"`
	Origin   int      `json:"origin,omitempty"`
	Lost     *int     `json:"lost,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	// Time is rank 0's wall clock in a pong, Unix nanoseconds.
	Time int64 `json:"time,omitempty"`
}

// Peer is one rank's process, as it introduced itself.
type Peer struct {
	Rank int    `json:"rank"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
}

var errNotRendezvous = errors.New("not a partbench rendezvous peer")

// preamble is the 8 bytes that open a connection in each direction.
func preamble() []byte {
	b := make([]byte, 8, 8+256)
	copy(b[:4], magic[:])
	binary.BigEndian.PutUint32(b[4:], ProtocolVersion)
	return b
}

// readPreamble returns the peer's protocol version; errNotRendezvous when
// the bytes are not a partbench preamble at all.
func readPreamble(r io.Reader) (uint32, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	if [4]byte(b[:4]) != magic {
		return 0, errNotRendezvous
	}
	return binary.BigEndian.Uint32(b[4:]), nil
}

// encode is a frame's bytes on the wire, length prefix included.
func encode(f *frame) ([]byte, error) {
	body, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	if len(body) > MaxFrameBytes {
		return nil, fmt.Errorf("a %s frame of %d bytes exceeds the %d-byte cap", f.Type, len(body), MaxFrameBytes)
	}
	out := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(out, uint32(len(body)))
	copy(out[4:], body)
	return out, nil
}

// conn is one control connection. One goroutine reads; writes are serialized.
type conn struct {
	nc   net.Conn
	rd   *bufio.Reader
	idle *idleReader

	// the remote rank's identity
	rank int
	host string
	pid  int

	wmu     sync.Mutex
	wclosed bool

	bye        chanFlag      // the remote said goodbye
	stopHB     chanFlag      // set to stop the heartbeat goroutine
	readerDone chan struct{} // closed when the read loop returned
	shutOnce   sync.Once
}

func newConn(nc net.Conn) *conn {
	ir := &idleReader{nc: nc}
	return &conn{
		nc: nc, idle: ir, rd: bufio.NewReaderSize(ir, 64<<10), rank: -1,
		bye: newChanFlag(), stopHB: newChanFlag(), readerDone: make(chan struct{}),
	}
}

// idleReader refreshes the read deadline before every read when idle is
// set, so a connection counts as lost after idle of silence, however long a
// large frame takes in total.
type idleReader struct {
	nc   net.Conn
	idle time.Duration // set before the read loop starts, then constant
}

func (r *idleReader) Read(p []byte) (int, error) {
	if r.idle > 0 {
		_ = r.nc.SetReadDeadline(time.Now().Add(r.idle))
	}
	return r.nc.Read(p)
}

func (c *conn) readFrame() (*frame, error) { return readFrame(c.rd) }

// growStep is the most a frame's buffer grows before its bytes arrive: a
// length prefix alone (from a stranger or a corrupt stream) makes the reader
// allocate at most this, then at most twice what really arrived.
const growStep = 64 << 10

// readFrame decodes one frame from r: the length prefix, then the JSON body.
func readFrame(r io.Reader) (*frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrameBytes {
		return nil, fmt.Errorf("frame of %d bytes exceeds the %d-byte cap", n, MaxFrameBytes)
	}
	body, err := readN(r, int(n))
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	f := new(frame)
	if err := json.Unmarshal(body, f); err != nil {
		return nil, fmt.Errorf("bad frame: %w", err)
	}
	return f, nil
}

// readN reads exactly n bytes, growing its buffer as they arrive.
func readN(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, growStep))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, min(n-len(buf), max(len(buf), growStep)))...)[:len(buf)]
		}
		m, err := io.ReadFull(r, buf[len(buf):min(n, cap(buf))])
		buf = buf[:len(buf)+m]
		if err != nil {
			if err == io.EOF && len(buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// writeRaw writes encoded bytes; each chunk must make progress within timeout.
func (c *conn) writeRaw(b []byte, timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wclosed {
		return net.ErrClosed
	}
	for len(b) > 0 {
		n := min(len(b), 1<<20)
		_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
		m, err := c.nc.Write(b[:n])
		b = b[m:]
		if err != nil {
			return err
		}
	}
	return nil
}

// closeWrite sends FIN after any write in progress; later writes fail.
func (c *conn) closeWrite() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wclosed {
		return
	}
	c.wclosed = true
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
}

// shutdown closes the connection gracefully: FIN, then wait (at most
// linger) for the remote's FIN so nothing in flight is lost, then close.
func (c *conn) shutdown(linger time.Duration) {
	c.shutOnce.Do(func() {
		c.stopHB.set()
		c.closeWrite()
		select {
		case <-c.readerDone:
		case <-time.After(linger):
		}
		_ = c.nc.Close()
	})
}

// chanFlag is a one-way flag that can be waited on.
type chanFlag struct {
	once *sync.Once
	ch   chan struct{}
}

func newChanFlag() chanFlag { return chanFlag{once: new(sync.Once), ch: make(chan struct{})} }
func (f chanFlag) set()     { f.once.Do(func() { close(f.ch) }) }
func (f chanFlag) isSet() bool {
	select {
	case <-f.ch:
		return true
	default:
		return false
	}
}
