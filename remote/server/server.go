package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/wire"
)

// ServerConfig sets a server's limits. Zero values take the defaults below.
type ServerConfig struct {
	// Token is required on every call when set; a non-loopback listen
	// address refuses to start without one.
	Token string
	// TLSCert and TLSKey (PEM files) serve over TLS, either transport;
	// ClientCA, when set, requires client certificates signed by it.
	TLSCert, TLSKey, ClientCA string
	// certPEM and keyPEM are TLSCert's and TLSKey's contents once read
	// (ServeOptions.ReadFiles); unset, the files are read when listening.
	certPEM, keyPEM []byte
	// MemoryBudgetBytes caps the memory of all open sessions, the requests'
	// receive buffers and authenticated connections' buffers (default 1 GiB).
	MemoryBudgetBytes int64
	// MaxMessageBytes caps one protobuf message (default 4 MiB); data is
	// streamed in chunks of at most MaxMessageBytes − 1 KiB.
	MaxMessageBytes int
	// MaxStepBytes caps the payload of one request or reply (default 64 GiB).
	MaxStepBytes int64
	// MaxConcurrent steps execute at once (default 1); MaxQueue more wait
	// (default 64); a request beyond that is refused, never dropped silently.
	MaxConcurrent, MaxQueue int
	// IdleTimeout frees a session unused for this long (default 5 min).
	IdleTimeout time.Duration
	// CallTimeout bounds every call on the server side (default 10 min);
	// on raw TCP a call's context may run up to CallTimeout/16 (at most a
	// second) longer, so that its deadline need not be moved every call.
	CallTimeout time.Duration
	// HandshakeTimeout closes a connection that has not authenticated
	// within it (default 10 s): the raw-TCP hello, or the first gRPC call
	// with the right token.
	HandshakeTimeout time.Duration
	// ReadTimeout bounds the wait for each message of a request once its
	// Step has begun (default 30 s): a client that sends a header and then
	// nothing is cut off, and its receive buffers are released. On gRPC
	// the cut comes up to ReadTimeout/16 (at most a second) later.
	ReadTimeout time.Duration
	// MaxUnauthenticated connections may be open at once on each transport
	// (default 64); one more is closed at once.
	MaxUnauthenticated int
	// Util measures the device's utilization over each request and returns
	// it in the trailer (default wire.CPUBusy).
	Util wire.UtilSampler
	// Generator, when set, is the serving engine Generate calls run on
	// (servingroom.go); its memory is reserved from the budget.
	Generator Generator
	// StepOnly serves gRPC as a server from before the Session RPC did:
	// Session answers Unimplemented and clients step over Step calls.
	StepOnly bool
	// MaxSessionStreams is how many Session streams (a session's steps on
	// one open stream) one gRPC connection may hold open at once (default
	// DefaultMaxSessionStreams, at most MaxSessionStreamsLimit); a session
	// beyond them steps over Step calls.
	MaxSessionStreams int
	// Poll is how a raw-TCP connection's reads wait for the next request
	// (wire.PollEnv's values; empty: that variable, else auto).
	Poll string
}

func (c *ServerConfig) defaults() {
	if c.MemoryBudgetBytes == 0 {
		c.MemoryBudgetBytes = 1 << 30
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = 4 << 20
	}
	if c.MaxStepBytes == 0 {
		c.MaxStepBytes = 64 << 30
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = 1
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = 64
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 5 * time.Minute
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 10 * time.Minute
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 30 * time.Second
	}
	if c.MaxUnauthenticated == 0 {
		c.MaxUnauthenticated = 64
	}
	if c.Util == nil {
		c.Util = wire.CPUBusy{}
	}
	if c.MaxSessionStreams == 0 {
		c.MaxSessionStreams = DefaultMaxSessionStreams
	}
}

// forcedStopWait is how long a forced shutdown (drain deadline passed, or
// a second signal) waits for calls it cut off to return; a call inside an
// engine step returns when the step does, after the server has stopped.
const forcedStopWait = time.Second

// Server holds sessions and serves them over gRPC and raw TCP.
type Server struct {
	cfg    ServerConfig
	engine wire.Engine

	mu       sync.Mutex
	sessions map[string]*session
	reserved int64 // sessions and requests' receive buffers
	// connReserved is authenticated connections' buffers and open session
	// streams' state (SessionStreamBytes each); both count against
	// MemoryBudgetBytes.
	connReserved int64
	closed       bool

	slots   chan struct{}
	waiting atomic.Int64

	// Bytes counts every step the server served (Step and Session streams,
	// raw TCP).
	Bytes commcount.Transfer

	grpc     *grpcServer
	tcp      []*tcpServer
	poll     wire.Poll // the raw-TCP listeners' read policy (ListenTCP)
	stopIdle chan struct{}
	idleDone chan struct{}
	reads    *readWatch // the gRPC server's receives under ReadTimeout
	// draining is closed when Shutdown begins: session streams waiting
	// for their next step end, so that the drain need not wait for them.
	draining chan struct{}
	streams  atomic.Int64 // open Session streams, all connections
}

type session struct {
	id       string
	owner    string // connection identity (transport, connection number)
	mode     partition.RemoteMode
	bytes    int64
	eng      wire.EngineSession
	lastUsed atomic.Int64

	mu     sync.Mutex // one step at a time; guards closed
	closed bool       // the engine session is closed: no step may run

	// Under Server.mu: requests between header and reply (the idle reaper
	// leaves the session alone while any is), whether the session was
	// freed, and the receive buffers kept for its next request, whose
	// bufBytes count in Server.reserved.
	inUse    int
	gone     bool
	bufs     *recvBuffers
	bufBytes int64
	// freed is closed when the session is freed: a session stream waiting
	// for its next step ends then.
	freed chan struct{}
}

// NewServer makes a server over engine.
func NewServer(cfg ServerConfig, engine wire.Engine) (*Server, error) {
	cfg.defaults()
	if cfg.MaxMessageBytes < 64<<10 {
		return nil, fmt.Errorf("server: max message bytes %d: must be at least 65536", cfg.MaxMessageBytes)
	}
	if cfg.MaxConcurrent < 0 || cfg.MaxQueue < 0 || cfg.MemoryBudgetBytes < 0 || cfg.MaxUnauthenticated < 0 ||
		cfg.HandshakeTimeout < 0 || cfg.ReadTimeout < 0 {
		return nil, fmt.Errorf("server: max concurrent %d, max queue %d, memory budget %d, max unauthenticated %d, handshake timeout %v, read timeout %v: must not be negative",
			cfg.MaxConcurrent, cfg.MaxQueue, cfg.MemoryBudgetBytes, cfg.MaxUnauthenticated, cfg.HandshakeTimeout, cfg.ReadTimeout)
	}
	if cfg.MaxSessionStreams < 0 || cfg.MaxSessionStreams > MaxSessionStreamsLimit {
		return nil, fmt.Errorf("server: max session streams %d: must be 1 to %d (0: the default, %d)", cfg.MaxSessionStreams, MaxSessionStreamsLimit, DefaultMaxSessionStreams)
	}
	s := &Server{cfg: cfg, engine: engine, sessions: map[string]*session{},
		slots: make(chan struct{}, cfg.MaxConcurrent), stopIdle: make(chan struct{}), idleDone: make(chan struct{}),
		reads: newReadWatch(cfg.ReadTimeout), draining: make(chan struct{})}
	if err := s.hostGenerator(); err != nil {
		return nil, err
	}
	go s.reapIdle()
	return s, nil
}

// checkListen refuses a non-loopback address without a token.
func (s *Server) checkListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen %q: %v", addr, err)
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback && s.cfg.Token == "" {
		return fmt.Errorf("listen %s: a non-loopback address requires a token (--token-file); without one listen on 127.0.0.1", addr)
	}
	return nil
}

// authorize compares a presented token with the server's in constant time.
func (s *Server) authorize(presented string) error {
	if s.cfg.Token == "" {
		return nil
	}
	a, b := sha256.Sum256([]byte(presented)), sha256.Sum256([]byte(s.cfg.Token))
	if presented == "" || subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
		return status.Error(codes.Unauthenticated, "missing or wrong bearer token")
	}
	return nil
}

// Sessions is the number of open sessions.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// SessionStreams is the number of open gRPC Session streams.
func (s *Server) SessionStreams() int64 { return s.streams.Load() }

// Waiting is how many requests wait in the queue for an execution slot.
func (s *Server) Waiting() int64 { return s.waiting.Load() }

// ReservedBytes is the memory the open sessions and the requests' receive
// buffers hold.
func (s *Server) ReservedBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reserved
}

func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// open checks the config, reserves the session's memory before the engine
// allocates anything, and binds the session to owner.
func (s *Server) open(owner string, req *pb.OpenRequest) (*pb.OpenResponse, error) {
	mode, err := wire.ModeOf(req.Mode)
	if err != nil {
		return nil, err
	}
	var cfg configs.Config
	if err := json.Unmarshal(req.ConfigJson, &cfg); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "open: config_json: %v", err)
	}
	if h := cfg.Hash(); h != req.ConfigHash {
		return nil, status.Errorf(codes.InvalidArgument, "open: config hash %q does not match the config sent (hash %s)", req.ConfigHash, h)
	}
	plan, err := partition.NewPlan(&cfg)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "open: %v", err)
	}
	need, err := s.engine.SessionBytes(plan, mode)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "open: %v", err)
	}
	id, err := newID()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "open: session id: %v", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, status.Error(codes.Unavailable, "open: server is shutting down")
	}
	if s.reserved+s.connReserved+need > s.cfg.MemoryBudgetBytes {
		free, conns := s.cfg.MemoryBudgetBytes-s.reserved, s.connReserved
		s.mu.Unlock()
		return nil, status.Errorf(codes.ResourceExhausted,
			"open: a %s session of %s needs %d B (weights, KV cache at full context, activations); the server's budget is %d B of which %d B are free of sessions and requests (connections' buffers hold %d B of that)",
			mode, cfg.Name, need, s.cfg.MemoryBudgetBytes, free, conns)
	}
	s.reserved += need
	s.mu.Unlock()
	eng, err := s.engine.OpenSession(plan, mode, partition.RemoteOptions{Logits: req.Logits})
	if err != nil {
		s.mu.Lock()
		s.reserved -= need
		s.mu.Unlock()
		return nil, status.Errorf(codes.Internal, "open: engine: %v", err)
	}
	se := &session{id: id, owner: owner, mode: mode, bytes: need, eng: eng, freed: make(chan struct{})}
	se.lastUsed.Store(time.Now().UnixNano())
	s.mu.Lock()
	s.sessions[id] = se
	s.mu.Unlock()
	return &pb.OpenResponse{SessionId: id, SessionBytes: need, MaxChunkBytes: int64(wire.ChunkBytes(s.cfg.MaxMessageBytes))}, nil
}

// lookup finds a session of owner; another owner's session is reported
// exactly as a missing one, so ids cannot be probed.
func (s *Server) lookup(owner, id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookupLocked(owner, id)
}

func (s *Server) lookupLocked(owner, id string) (*session, error) {
	se, ok := s.sessions[id]
	if !ok || se.owner != owner {
		return nil, status.Errorf(codes.NotFound, "session %.8s…: not open on this connection (closed, idle longer than %v, or its client disconnected)", id, s.cfg.IdleTimeout)
	}
	return se, nil
}

// use is lookup for a request: the session counts as in use (the idle
// reaper skips it) until done.
func (s *Server) use(owner, id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, err := s.lookupLocked(owner, id)
	if err != nil {
		return nil, err
	}
	se.inUse++
	return se, nil
}

func (s *Server) done(se *session) {
	s.mu.Lock()
	se.inUse--
	s.mu.Unlock()
	se.lastUsed.Store(time.Now().UnixNano())
}

// free removes a session, returns its memory (and its kept receive
// buffers) to the budget and closes its engine session, at once or, when a
// step is running on it, once that step has finished (free does not wait:
// a connection's end and a forced shutdown must not hang on an engine);
// a request that waited for it then finds it closed.
func (s *Server) free(se *session) {
	s.mu.Lock()
	ok := s.detachLocked(se)
	s.mu.Unlock()
	if !ok {
		return
	}
	if se.mu.TryLock() {
		se.closed = true
		se.eng.Close()
		se.mu.Unlock()
		return
	}
	go se.closeEngine()
}

// detachLocked removes se from the sessions and the budget; false if it
// was gone already.
func (s *Server) detachLocked(se *session) bool {
	if s.sessions[se.id] != se {
		return false
	}
	delete(s.sessions, se.id)
	s.reserved -= se.bytes + se.bufBytes
	se.bufs, se.bufBytes, se.gone = nil, 0, true
	close(se.freed)
	return true
}

func (se *session) closeEngine() {
	se.mu.Lock() // let a running step finish
	defer se.mu.Unlock()
	se.closed = true
	se.eng.Close()
}

func (s *Server) closeSession(owner, id string) error {
	se, err := s.lookup(owner, id)
	if err != nil {
		return err
	}
	s.free(se)
	return nil
}

// dropOwner frees every session of a connection that ended.
func (s *Server) dropOwner(owner string) {
	s.mu.Lock()
	var mine []*session
	for _, se := range s.sessions {
		if se.owner == owner {
			mine = append(mine, se)
		}
	}
	s.mu.Unlock()
	for _, se := range mine {
		s.free(se)
	}
}

func (s *Server) reapIdle() {
	defer close(s.idleDone)
	t := time.NewTicker(max(s.cfg.IdleTimeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.stopIdle:
			return
		case <-t.C:
		}
		cut := time.Now().Add(-s.cfg.IdleTimeout).UnixNano()
		s.mu.Lock()
		var idle []*session
		for _, se := range s.sessions {
			// A session with a request between header and reply is in use,
			// however long that request waits.
			if se.inUse == 0 && se.lastUsed.Load() < cut && s.detachLocked(se) {
				idle = append(idle, se)
			}
		}
		s.mu.Unlock()
		for _, se := range idle {
			se.closeEngine() // idle: no step runs on it
		}
	}
}

// acquire waits for an execution slot: the bounded queue.
func (s *Server) acquire(ctx context.Context) (time.Duration, error) {
	if n := s.waiting.Add(1); n > int64(s.cfg.MaxQueue) {
		s.waiting.Add(-1)
		return 0, status.Errorf(codes.ResourceExhausted, "server queue full: %d requests waiting (max %d); retry later", n-1, s.cfg.MaxQueue)
	}
	defer s.waiting.Add(-1)
	t0 := time.Now()
	// A free slot is taken without the context's done channel (made on
	// first use) or a two-way select.
	select {
	case s.slots <- struct{}{}:
		return time.Since(t0), nil
	default:
	}
	select {
	case s.slots <- struct{}{}:
		return time.Since(t0), nil
	case <-ctx.Done():
		return time.Since(t0), status.FromContextError(ctx.Err()).Err()
	}
}

func (s *Server) release() { <-s.slots }

// frameStream is one Step exchange on either transport; Send and Recv count
// wire bytes.
type frameStream interface {
	Send(*pb.Frame) error
	Recv() (*pb.Frame, error)
	// SendData sends one data chunk without copying it; RecvData receives
	// the next message, which must be a data chunk of at most len(dst)
	// bytes, into dst.
	SendData(d []byte) error
	RecvData(dst []byte) (int, error)
}

// serveStep runs one Step: header, checks, data, execute, reply. Every
// declared size is checked (MaxStepBytes, the engine's own payload when it
// knows it, the memory budget) before a byte is allocated; receive buffers
// then grow as data arrives, so a header alone costs no memory; the
// execution slot is taken only once the whole request has arrived.
func (s *Server) serveStep(ctx context.Context, owner string, st frameStream) error {
	f, err := st.Recv()
	if err != nil {
		return err
	}
	h := f.GetHeader()
	if h == nil {
		return status.Error(codes.InvalidArgument, "step: the first frame must be a header")
	}
	return s.serveHeader(ctx, owner, h, st)
}

// serveHeader runs the rest of a step whose header h has arrived.
func (s *Server) serveHeader(ctx context.Context, owner string, h *pb.StepHeader, st frameStream) error {
	span := time.Now()
	stopUtil, utilOpen := s.cfg.Util.Start(), true
	defer func() {
		if utilOpen { // a failed request still closes its window
			stopUtil()
		}
	}()
	var phase partition.Phase
	switch h.Phase {
	case pb.Phase_PHASE_PREFILL:
		phase = partition.Prefill
	case pb.Phase_PHASE_DECODE:
		phase = partition.Decode
	case pb.Phase_PHASE_LOAD:
		phase = wire.PhaseLoad
	case pb.Phase_PHASE_PAUSE:
		phase = wire.PhasePause
	case pb.Phase_PHASE_RESUME:
		phase = wire.PhaseResume
	default:
		return status.Errorf(codes.InvalidArgument, "step: phase %v", h.Phase)
	}
	var total int64
	in := &wire.StepInput{Phase: phase, Step: int(h.Step)}
	for _, ti := range h.Tensors {
		if err := wire.CheckTensor(ti.Name, int(ti.ElemBytes), ti.Shape, ti.Bytes); err != nil {
			return status.Errorf(codes.InvalidArgument, "step: %v", err)
		}
		total += ti.Bytes
		if total > s.cfg.MaxStepBytes {
			return status.Errorf(codes.ResourceExhausted, "step: payload of more than %d B exceeds the server's limit of %d B per request", total, s.cfg.MaxStepBytes)
		}
		in.Tensors = append(in.Tensors, wire.Tensor{Name: ti.Name, ElemBytes: int(ti.ElemBytes), Shape: ti.Shape})
	}
	se, err := s.use(owner, h.SessionId)
	if err != nil {
		return err
	}
	defer s.done(se)
	if c, ok := se.eng.(wire.RequestChecker); ok {
		if err := c.CheckRequest(in, h.Tensors); err != nil {
			return status.Errorf(codes.InvalidArgument, "step: %v", err)
		}
	}
	t0 := time.Now()
	bufs, err := s.takeBuffers(se, h.Tensors, total)
	if err != nil {
		return err
	}
	keep := false
	defer func() { s.putBuffers(se, bufs, keep) }()
	maxChunk := s.cfg.MaxMessageBytes
	for i, ti := range h.Tensors {
		d, err := bufs.recv(i, ti.Bytes, maxChunk, st)
		if err != nil {
			return status.Errorf(status.Code(err), "step: tensor %q at byte %d of %d: %s", ti.Name, len(d), ti.Bytes, status.Convert(err).Message())
		}
		in.Tensors[i].Data = d
	}
	recv := time.Since(t0)
	wait, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	held := true
	defer func() {
		if held {
			s.release()
		}
	}()
	se.mu.Lock()
	var out *wire.StepOutput
	if se.closed {
		err = fmt.Errorf("session %.8s… closed (by its client, its connection's end or the server's shutdown) while this request waited", se.id)
	} else {
		out, err = se.eng.Step(ctx, in)
	}
	se.mu.Unlock()
	keep = err == nil
	s.release()
	held = false
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "step: engine: %v", err)
	}
	t1 := time.Now()
	rh := &pb.StepHeader{SessionId: h.SessionId, Phase: h.Phase, Step: h.Step}
	for _, t := range out.Tensors {
		rh.Tensors = append(rh.Tensors, &pb.TensorInfo{Name: t.Name, ElemBytes: int32(t.ElemBytes), Shape: t.Shape, Bytes: int64(len(t.Data))})
	}
	if err := st.Send(&pb.Frame{Kind: &pb.Frame_Header{Header: rh}}); err != nil {
		return err
	}
	if err := sendData(st, out.Tensors, wire.ChunkBytes(s.cfg.MaxMessageBytes)); err != nil {
		return err
	}
	sent := time.Since(t1)
	u := stopUtil()
	utilOpen = false
	if err := st.Send(&pb.Frame{Kind: &pb.Frame_Trailer{Trailer: &pb.StepTrailer{
		QueueWaitNs: wait.Nanoseconds(), ReceiveNs: recv.Nanoseconds(), ExecuteNs: out.Execute.Nanoseconds(), SendNs: sent.Nanoseconds(),
		ImportNs: out.Import.Nanoseconds(), SerializeNs: out.Serialize.Nanoseconds(), SpanNs: time.Since(span).Nanoseconds(),
		Utilization: u.Fraction, UtilSource: u.Source}}}); err != nil {
		return err
	}
	// The reply is complete: a buffering transport sends it now, before the
	// session's and the buffers' bookkeeping (the deferred calls), which the
	// client need not wait for.
	if f, ok := st.(replyFlusher); ok {
		return f.flushReply()
	}
	return nil
}

// replyFlusher is a frameStream that buffers what it sends (raw TCP):
// flushReply sends what is buffered.
type replyFlusher interface{ flushReply() error }

// sendData streams tensors' bytes in chunks of at most chunk bytes.
func sendData(st frameStream, ts []wire.Tensor, chunk int) error {
	for _, t := range ts {
		for off := 0; off < len(t.Data); off += chunk {
			if err := st.SendData(t.Data[off:min(off+chunk, len(t.Data))]); err != nil {
				return err
			}
		}
	}
	return nil
}

// recvBuffers are a session's request buffers, one per tensor position,
// kept between requests: a naive session receives the same weights every
// step, and allocating (and zeroing) them anew would cost a pass over the
// payload. Engines copy what they keep (wire.EngineSession.Step must not retain
// a request's tensor data). Kept buffers count in the server's reserved
// bytes until the session ends or another request needs the room.
type recvBuffers struct {
	b     [][]byte
	reuse bool  // b has exactly the declared sizes: receive in place
	bytes int64 // reserved for this request
}

// recv receives tensor i of n bytes. A kept buffer of the right size is
// filled in place; otherwise the buffer grows with the data (doubling, at
// least one message ahead), so what is allocated is at most about twice
// what has arrived, never what was declared.
func (b *recvBuffers) recv(i int, n int64, maxChunk int, st frameStream) ([]byte, error) {
	for len(b.b) <= i {
		b.b = append(b.b, nil)
	}
	if b.reuse && int64(len(b.b[i])) == n {
		d := b.b[i]
		for off := 0; off < len(d); {
			k, err := st.RecvData(d[off:])
			if err != nil {
				return d[:off], err
			}
			off += k
		}
		return d, nil
	}
	d := b.b[i][:0]
	for int64(len(d)) < n {
		want := min(n, int64(len(d))+int64(maxChunk))
		if int64(cap(d)) < want {
			nd := make([]byte, len(d), min(n, max(want, 2*int64(cap(d)))))
			copy(nd, d)
			d = nd
		}
		k, err := st.RecvData(d[len(d):cap(d)])
		if err != nil {
			return d, err
		}
		d = d[:len(d)+k]
	}
	b.b[i] = d
	return d, nil
}

// reserveConn counts an authenticated connection's buffers or an open
// session stream (n bytes) against the budget; false when they do not fit.
func (s *Server) reserveConn(n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserved+s.connReserved+n > s.cfg.MemoryBudgetBytes-smallHeadroom(s.cfg.MemoryBudgetBytes) {
		return false
	}
	s.connReserved += n
	return true
}

func (s *Server) releaseConn(n int64) {
	s.mu.Lock()
	s.connReserved -= n
	s.mu.Unlock()
}

// ConnBytes is the memory authenticated connections' buffers and open
// session streams hold; it counts against the budget beside ReservedBytes.
func (s *Server) ConnBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connReserved
}

// SmallRequestBytes is the size up to which a request may use the budget's
// headroom (smallHeadroom): token ids of stateful requests, the common
// case, keep being served while large payloads fill the rest of the budget.
const SmallRequestBytes = 64 << 10

// smallHeadroom is the part of the budget only small requests may use:
// 1/16 of it, at most 1 MiB.
func smallHeadroom(budget int64) int64 { return min(budget/16, 1<<20) }

// takeBuffers reserves a request's receive memory against the budget and
// hands it the session's kept buffers when they have the declared sizes
// (a concurrent request on the same session gets fresh ones). Kept buffers
// of other sessions are given up before a request is refused.
func (s *Server) takeBuffers(se *session, ts []*pb.TensorInfo, total int64) (*recvBuffers, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept, keptBytes := se.bufs, se.bufBytes
	se.bufs, se.bufBytes = nil, 0
	if kept != nil && keptBytes == total && len(kept.b) == len(ts) {
		same := true
		for i, t := range ts {
			same = same && int64(len(kept.b[i])) == t.Bytes
		}
		if same {
			kept.reuse = true
			return kept, nil // already reserved
		}
	}
	s.reserved -= keptBytes
	limit := s.cfg.MemoryBudgetBytes
	if total > SmallRequestBytes {
		limit -= smallHeadroom(s.cfg.MemoryBudgetBytes)
	}
	if s.reserved+s.connReserved+total > limit {
		for _, o := range s.sessions {
			if o.bufs != nil {
				s.reserved -= o.bufBytes
				o.bufs, o.bufBytes = nil, 0
			}
		}
	}
	if s.reserved+s.connReserved+total > limit {
		return nil, status.Errorf(codes.ResourceExhausted,
			"step: receiving %d B would exceed the server's memory budget of %d B (%d B held by sessions and requests, %d B by connections' buffers, %d B kept for requests of at most %d B); retry later or use a smaller request",
			total, s.cfg.MemoryBudgetBytes, s.reserved, s.connReserved, s.cfg.MemoryBudgetBytes-limit, SmallRequestBytes)
	}
	s.reserved += total
	return &recvBuffers{bytes: total}, nil
}

// putBuffers ends a request: its buffers are kept for the session's next
// request when keep is set and the session is still open, else released
// with their reservation.
func (s *Server) putBuffers(se *session, b *recvBuffers, keep bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if keep && !se.gone && se.bufs == nil {
		b.reuse = false
		se.bufs, se.bufBytes = b, b.bytes
		return
	}
	s.reserved -= b.bytes
}

// Shutdown stops accepting, lets running calls finish until ctx ends, then
// closes what is left and frees every session.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		close(s.draining)
	}
	s.closed = true
	s.mu.Unlock()
	var wg sync.WaitGroup
	var forced atomic.Bool
	if s.grpc != nil {
		wg.Add(1)
		go func() { defer wg.Done(); forced.Store(s.grpc.drain(ctx) || forced.Load()) }()
	}
	for _, t := range s.tcp {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if t.drain(ctx) {
				forced.Store(true)
			}
		}()
	}
	wg.Wait()
	close(s.stopIdle)
	<-s.idleDone
	s.mu.Lock()
	var all []*session
	for _, se := range s.sessions {
		all = append(all, se)
	}
	s.mu.Unlock()
	for _, se := range all {
		s.free(se)
	}
	if forced.Load() {
		return errors.New("server: drain deadline passed; remaining calls were cut off")
	}
	return nil
}
