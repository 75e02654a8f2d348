package remote

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
)

// ServerConfig sets a server's limits. Zero values take the defaults below.
type ServerConfig struct {
	// Token is required on every call when set; a non-loopback listen
	// address refuses to start without one.
	Token string
	// TLSCert and TLSKey (PEM files) serve gRPC over TLS; ClientCA, when
	// set, requires client certificates signed by it.
	TLSCert, TLSKey, ClientCA string
	// MemoryBudgetBytes caps the memory of all open sessions (default 1 GiB).
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
	// CallTimeout bounds every call on the server side (default 10 min).
	CallTimeout time.Duration
	// Util measures the device's utilization over each request and returns
	// it in the trailer (default CPUBusy).
	Util UtilSampler
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
	if c.Util == nil {
		c.Util = CPUBusy{}
	}
}

// chunkBytes is the data carried per Frame: a message less room for framing.
func chunkBytes(maxMessage int) int { return maxMessage - 1024 }

// Server holds sessions and serves them over gRPC and raw TCP.
type Server struct {
	cfg    ServerConfig
	engine Engine

	mu       sync.Mutex
	sessions map[string]*session
	reserved int64
	closed   bool

	slots   chan struct{}
	waiting atomic.Int64

	// Bytes counts every Step stream the server served, both transports.
	Bytes commcount.Transfer

	grpc     *grpcServer
	tcp      []*tcpServer
	stopIdle chan struct{}
	idleDone chan struct{}
}

type session struct {
	id       string
	owner    string // connection identity (transport, connection number)
	mode     partition.RemoteMode
	bytes    int64
	eng      EngineSession
	mu       sync.Mutex // one step at a time
	lastUsed atomic.Int64
	bufMu    sync.Mutex
	bufs     *recvBuffers
}

// NewServer makes a server over engine.
func NewServer(cfg ServerConfig, engine Engine) (*Server, error) {
	cfg.defaults()
	if cfg.MaxMessageBytes < 64<<10 {
		return nil, fmt.Errorf("server: max message bytes %d: must be at least 65536", cfg.MaxMessageBytes)
	}
	if cfg.MaxConcurrent < 0 || cfg.MaxQueue < 0 || cfg.MemoryBudgetBytes < 0 {
		return nil, fmt.Errorf("server: max concurrent %d, max queue %d, memory budget %d: must not be negative",
			cfg.MaxConcurrent, cfg.MaxQueue, cfg.MemoryBudgetBytes)
	}
	s := &Server{cfg: cfg, engine: engine, sessions: map[string]*session{},
		slots: make(chan struct{}, cfg.MaxConcurrent), stopIdle: make(chan struct{}), idleDone: make(chan struct{})}
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

// ReservedBytes is the memory the open sessions hold.
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

func modeOf(m pb.Mode) (partition.RemoteMode, error) {
	switch m {
	case pb.Mode_MODE_NAIVE:
		return partition.RemoteNaive, nil
	case pb.Mode_MODE_KV:
		return partition.RemoteKV, nil
	case pb.Mode_MODE_STATEFUL:
		return partition.RemoteStateful, nil
	}
	return "", status.Errorf(codes.InvalidArgument, "open: mode %v: a server session is naive, kv or stateful (local runs in the client)", m)
}

func pbMode(m partition.RemoteMode) pb.Mode {
	switch m {
	case partition.RemoteNaive:
		return pb.Mode_MODE_NAIVE
	case partition.RemoteKV:
		return pb.Mode_MODE_KV
	case partition.RemoteStateful:
		return pb.Mode_MODE_STATEFUL
	case partition.RemoteLocal:
		return pb.Mode_MODE_LOCAL
	}
	return pb.Mode_MODE_UNSPECIFIED
}

// open checks the config, reserves the session's memory before the engine
// allocates anything, and binds the session to owner.
func (s *Server) open(owner string, req *pb.OpenRequest) (*pb.OpenResponse, error) {
	mode, err := modeOf(req.Mode)
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
	if s.reserved+need > s.cfg.MemoryBudgetBytes {
		free := s.cfg.MemoryBudgetBytes - s.reserved
		s.mu.Unlock()
		return nil, status.Errorf(codes.ResourceExhausted,
			"open: a %s session of %s needs %d B (weights, KV cache at full context, activations); the server's budget is %d B of which %d B are free",
			mode, cfg.Name, need, s.cfg.MemoryBudgetBytes, free)
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
	se := &session{id: id, owner: owner, mode: mode, bytes: need, eng: eng}
	se.lastUsed.Store(time.Now().UnixNano())
	s.mu.Lock()
	s.sessions[id] = se
	s.mu.Unlock()
	return &pb.OpenResponse{SessionId: id, SessionBytes: need, MaxChunkBytes: int64(chunkBytes(s.cfg.MaxMessageBytes))}, nil
}

// lookup finds a session of owner; another owner's session is reported
// exactly as a missing one, so ids cannot be probed.
func (s *Server) lookup(owner, id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.sessions[id]
	if !ok || se.owner != owner {
		return nil, status.Errorf(codes.NotFound, "session %.8s…: not open on this connection (closed, idle longer than %v, or its client disconnected)", id, s.cfg.IdleTimeout)
	}
	return se, nil
}

func (s *Server) free(se *session) {
	s.mu.Lock()
	if s.sessions[se.id] != se {
		s.mu.Unlock()
		return
	}
	delete(s.sessions, se.id)
	s.reserved -= se.bytes
	s.mu.Unlock()
	se.mu.Lock() // let a running step finish
	se.eng.Close()
	se.mu.Unlock()
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
			if se.lastUsed.Load() < cut && se.mu.TryLock() {
				se.mu.Unlock()
				idle = append(idle, se)
			}
		}
		s.mu.Unlock()
		for _, se := range idle {
			s.free(se)
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

// serveStep runs one Step: header, data, execute, reply.
func (s *Server) serveStep(ctx context.Context, owner string, st frameStream) error {
	f, err := st.Recv()
	if err != nil {
		return err
	}
	h := f.GetHeader()
	if h == nil {
		return status.Error(codes.InvalidArgument, "step: the first frame must be a header")
	}
	span := time.Now()
	stopUtil, utilOpen := s.cfg.Util.Start(), true
	defer func() {
		if utilOpen { // a failed request still closes its window
			stopUtil()
		}
	}()
	se, err := s.lookup(owner, h.SessionId)
	if err != nil {
		return err
	}
	var phase partition.Phase
	switch h.Phase {
	case pb.Phase_PHASE_PREFILL:
		phase = partition.Prefill
	case pb.Phase_PHASE_DECODE:
		phase = partition.Decode
	case pb.Phase_PHASE_LOAD:
		phase = PhaseLoad
	case pb.Phase_PHASE_PAUSE:
		phase = PhasePause
	case pb.Phase_PHASE_RESUME:
		phase = PhaseResume
	default:
		return status.Errorf(codes.InvalidArgument, "step: phase %v", h.Phase)
	}
	var total int64
	in := &StepInput{Phase: phase, Step: int(h.Step)}
	for _, ti := range h.Tensors {
		if err := checkTensor(ti.Name, int(ti.ElemBytes), ti.Shape, ti.Bytes); err != nil {
			return status.Errorf(codes.InvalidArgument, "step: %v", err)
		}
		total += ti.Bytes
		if total > s.cfg.MaxStepBytes {
			return status.Errorf(codes.ResourceExhausted, "step: payload of more than %d B exceeds the server's limit of %d B per request", total, s.cfg.MaxStepBytes)
		}
	}
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
	t0 := time.Now()
	bufs := se.takeBuffers()
	for i, ti := range h.Tensors {
		t := Tensor{Name: ti.Name, ElemBytes: int(ti.ElemBytes), Shape: ti.Shape, Data: bufs.get(i, ti.Bytes)}
		for off := 0; off < len(t.Data); {
			n, err := st.RecvData(t.Data[off:])
			if err != nil {
				return status.Errorf(status.Code(err), "step: tensor %q at byte %d of %d: %s", ti.Name, off, ti.Bytes, status.Convert(err).Message())
			}
			off += n
		}
		in.Tensors = append(in.Tensors, t)
	}
	recv := time.Since(t0)
	se.mu.Lock()
	out, err := se.eng.Step(ctx, in)
	se.mu.Unlock()
	se.putBuffers(bufs)
	se.lastUsed.Store(time.Now().UnixNano())
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
	if err := sendData(st, out.Tensors, chunkBytes(s.cfg.MaxMessageBytes)); err != nil {
		return err
	}
	sent := time.Since(t1)
	u := stopUtil()
	utilOpen = false
	return st.Send(&pb.Frame{Kind: &pb.Frame_Trailer{Trailer: &pb.StepTrailer{
		QueueWaitNs: wait.Nanoseconds(), ReceiveNs: recv.Nanoseconds(), ExecuteNs: out.Execute.Nanoseconds(), SendNs: sent.Nanoseconds(),
		ImportNs: out.Import.Nanoseconds(), SerializeNs: out.Serialize.Nanoseconds(), SpanNs: time.Since(span).Nanoseconds(),
		Utilization: u.Fraction, UtilSource: u.Source}}})
}

// sendData streams tensors' bytes in chunks of at most chunk bytes.
func sendData(st frameStream, ts []Tensor, chunk int) error {
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
// payload. Engines copy what they keep (EngineSession.Step must not retain
// a request's tensor data).
type recvBuffers [][]byte

func (b *recvBuffers) get(i int, n int64) []byte {
	for len(*b) <= i {
		*b = append(*b, nil)
	}
	if int64(len((*b)[i])) != n {
		(*b)[i] = make([]byte, n)
	}
	return (*b)[i]
}

// takeBuffers hands the session's buffers to one request (a concurrent
// request on the same session gets fresh ones).
func (se *session) takeBuffers() *recvBuffers {
	se.bufMu.Lock()
	defer se.bufMu.Unlock()
	b := se.bufs
	se.bufs = nil
	if b == nil {
		b = &recvBuffers{}
	}
	return b
}

func (se *session) putBuffers(b *recvBuffers) {
	se.bufMu.Lock()
	defer se.bufMu.Unlock()
	se.bufs = b
}

// Shutdown stops accepting, lets running calls finish until ctx ends, then
// closes what is left and frees every session.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
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
