package tcpcomm

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/exec/retry"
	"github.com/partbench/partbench/exec/shmcomm"
)

// addrInfo is what each rank publishes through the Exchanger.
type addrInfo struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
	// Host is the rank's host key when it takes shared memory with ranks on
	// its host ("" when its transport is tcp).
	Host string `json:"host,omitempty"`
	// CPUs is the set of CPUs the rank may run on (cpuMask), with Host.
	CPUs string `json:"cpus,omitempty"`
}

// New connects rank to every other rank of size. It listens on an ephemeral
// port of listenHost ("" = every interface), publishes the address through
// ex.AllGather (every rank calls New at the same point), and connects to all
// peers before returning. The advertised host is listenHost, else the
// session's LocalIP when ex has one, else the host name. Ranks on one host
// share memory unless TransportEnv says tcp (NewWith).
func New(ctx context.Context, ex Exchanger, rank, size int, listenHost string) (*Comm, error) {
	return NewWith(ctx, ex, rank, size, Options{ListenHost: listenHost})
}

// NewWith is New with the transport chosen by o: pairs of ranks on one host
// set up a shared segment on their new connection (shared-memory pairs) and
// move their messages through it; every other pair moves them over TCP.
func NewWith(ctx context.Context, ex Exchanger, rank, size int, o Options) (*Comm, error) {
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("tcpcomm: rank %d is outside a world of %d", rank, size)
	}
	if err := o.resolve(); err != nil {
		return nil, err
	}
	spin, err := o.resolveSpin()
	if err != nil {
		return nil, err
	}
	waitLog, err := waitLogDir()
	if err != nil {
		return nil, err
	}
	if j, ok := ex.(interface{ JobID() string }); ok {
		o.jobID = j.JobID()
	}
	listenHost := o.ListenHost
	c := &Comm{
		rank: rank, size: size, counter: commcount.New(), peers: make([]*peer, size),
		groupSeen: map[string]int{}, groupIDs: map[uint64]string{},
		failed: make(chan struct{}), closing: make(chan struct{}), stop: make(chan struct{}),
		transport: o.Transport, waitLog: waitLog,
	}
	c.peers[rank] = newPeer(c, rank, nil)
	if size == 1 {
		return c, nil
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultConnectTimeout)
	defer cancel()

	ln, err := net.Listen("tcp", net.JoinHostPort(listenHost, "0"))
	if err != nil {
		return nil, fmt.Errorf("tcpcomm: rank %d cannot listen on %q: %w", rank, listenHost, err)
	}
	defer ln.Close()
	stopLn := context.AfterFunc(ctx, func() { ln.Close() })
	defer stopLn()
	host := advertisedHost(listenHost, ex)
	port := ln.Addr().(*net.TCPAddr).Port
	var tok [tokenBytes]byte
	_, _ = rand.Read(tok[:])
	myInfo := addrInfo{Addr: net.JoinHostPort(host, fmt.Sprint(port)), Token: hex.EncodeToString(tok[:])}
	if o.Transport != TransportTCP {
		myInfo.Host = o.host
		if myInfo.Host == "" {
			myInfo.Host = hostKey()
		}
		myInfo.CPUs = cpuMask()
	}
	me, _ := json.Marshal(myInfo)
	raw, err := ex.AllGather(ctx, me)
	if err != nil {
		return nil, fmt.Errorf("tcpcomm: rank %d: exchanging addresses: %w", rank, err)
	}
	if len(raw) != size {
		return nil, fmt.Errorf("tcpcomm: address exchange returned %d entries for %d ranks", len(raw), size)
	}
	infos := make([]addrInfo, size)
	for r, b := range raw {
		if err := json.Unmarshal(b, &infos[r]); err != nil {
			return nil, fmt.Errorf("tcpcomm: rank %d published a bad address: %w", r, err)
		}
	}

	type result struct {
		rank int
		nc   net.Conn
		err  error
	}
	results := make(chan result, size)
	// accept the higher ranks (each handshake on its own, so a silent
	// stranger delays no one)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				select {
				case results <- result{rank: -1, err: err}:
				case <-ctx.Done():
				}
				return
			}
			go func() {
				from, err := acceptHandshake(nc, rank, size, tok)
				if err != nil {
					nc.Close() // a stranger, or a rank of another run
					return
				}
				select {
				case results <- result{rank: from, nc: nc}:
				case <-ctx.Done():
					nc.Close()
				}
			}()
		}
	}()
	// dial the lower ranks
	for q := 0; q < rank; q++ {
		go func() {
			nc, err := dialHandshake(ctx, infos[q], rank, q)
			select {
			case results <- result{rank: q, nc: nc, err: err}:
			case <-ctx.Done():
				if nc != nil {
					nc.Close()
				}
			}
		}()
	}
	conns := make([]net.Conn, size)
	for n := 0; n < size-1; n++ {
		var res result
		select {
		case res = <-results:
		case <-ctx.Done():
			res = result{rank: -1, err: ctx.Err()}
		}
		switch {
		case res.err != nil && res.rank < 0:
			err = fmt.Errorf("tcpcomm: rank %d waiting for connections from higher ranks: %w", rank, ctxOr(ctx, res.err))
		case res.err != nil:
			err = fmt.Errorf("tcpcomm: rank %d cannot connect to rank %d at %s: %w", rank, res.rank, infos[res.rank].Addr, ctxOr(ctx, res.err))
		case conns[res.rank] != nil:
			res.nc.Close()
			err = fmt.Errorf("tcpcomm: rank %d connected twice", res.rank)
		default:
			conns[res.rank] = res.nc
			continue
		}
		break
	}
	if err != nil {
		ln.Close()
		cancel()
		for _, nc := range conns {
			if nc != nil {
				nc.Close()
			}
		}
		return nil, err
	}
	segs, err := c.pairSegments(ctx, conns, infos, o)
	if err != nil {
		ln.Close()
		cancel()
		for r, nc := range conns {
			if nc != nil {
				nc.Close()
			}
			if segs[r] != nil {
				segs[r].Close()
			}
		}
		return nil, err
	}
	var masks []string
	for _, in := range infos {
		if in.Host != "" && in.Host == infos[c.rank].Host {
			masks = append(masks, in.CPUs)
		}
	}
	mode, length, why := spinPolicy(spin, len(masks), hostCPUs(masks))
	c.spin = fmt.Sprintf("%s (%s)", mode, why)
	for r, nc := range conns {
		if nc != nil {
			_ = nc.SetDeadline(time.Time{})
			c.peers[r] = newPeer(c, r, nc)
			if segs[r] != nil {
				c.peers[r].seg, c.peers[r].shm = segs[r], segs[r].Link()
				c.peers[r].shm.ConfigureSpin(mode, length)
				if c.waitLog != "" {
					c.peers[r].shm.Spin.KeepLog(waitLogMax)
				}
			}
		}
	}
	for _, p := range c.peers {
		p.start()
	}
	return c, nil
}

// pairSegments sets up the shared segment of every pair on this host (both
// ranks publish the same host key), all pairs at once. Under
// TransportSHM a pair that cannot share memory fails New; under
// TransportAuto it stays on TCP.
func (c *Comm) pairSegments(ctx context.Context, conns []net.Conn, infos []addrInfo, o Options) ([]*shmcomm.Segment, error) {
	segs := make([]*shmcomm.Segment, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for q, nc := range conns {
		if nc == nil || infos[q].Host == "" || infos[q].Host != infos[c.rank].Host {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			segs[q], errs[q] = pairShm(ctx, nc, c.rank, q, o)
		}()
	}
	wg.Wait()
	var first error
	for q, err := range errs {
		if err == nil {
			continue
		}
		if o.Transport == TransportSHM && first == nil {
			first = fmt.Errorf("tcpcomm: rank %d: transport shm: ranks %d and %d are on one host (%s) but cannot share memory: %w", c.rank, c.rank, q, infos[q].Host, err)
		}
		c.fallbacks = append(c.fallbacks, fmt.Sprintf("rank %d: %v", q, err))
	}
	return segs, first
}

func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func advertisedHost(listenHost string, ex Exchanger) string {
	if ip := net.ParseIP(listenHost); listenHost != "" && (ip == nil || !ip.IsUnspecified()) {
		return listenHost
	}
	if l, ok := ex.(interface{ LocalIP() string }); ok && l.LocalIP() != "" {
		return l.LocalIP()
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "127.0.0.1"
}

func dialHandshake(ctx context.Context, to addrInfo, rank, q int) (net.Conn, error) {
	tok, err := hex.DecodeString(to.Token)
	if err != nil || len(tok) != tokenBytes {
		return nil, fmt.Errorf("bad token %q", to.Token)
	}
	var conn net.Conn
	err = dialBackoff.Do(ctx, time.Time{}, func() error {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", to.Addr)
		if err != nil {
			return err
		}
		if dl, ok := ctx.Deadline(); ok {
			_ = nc.SetDeadline(dl)
		}
		hs := make([]byte, 0, 12+tokenBytes)
		hs = append(hs, protoMagic[:]...)
		hs = binary.LittleEndian.AppendUint32(hs, protoVersion)
		hs = binary.LittleEndian.AppendUint32(hs, uint32(rank))
		hs = append(hs, tok...)
		var reply [12]byte
		if _, err = nc.Write(hs); err == nil {
			_, err = io.ReadFull(nc, reply[:])
		}
		if err != nil {
			nc.Close()
			return err
		}
		v, from := binary.LittleEndian.Uint32(reply[4:]), binary.LittleEndian.Uint32(reply[8:])
		if [4]byte(reply[:4]) != protoMagic || v != protoVersion || int(from) != q {
			nc.Close()
			return retry.Permanent(fmt.Errorf("unexpected handshake answer (version %d, rank %d)", v, from))
		}
		conn = nc
		return nil
	})
	return conn, err
}

// dialBackoff is the wait between attempts to reach a peer.
var dialBackoff = retry.Backoff{First: 10 * time.Millisecond, Max: 500 * time.Millisecond}

func acceptHandshake(nc net.Conn, rank, size int, tok [tokenBytes]byte) (int, error) {
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	var hs [12 + tokenBytes]byte
	if _, err := io.ReadFull(nc, hs[:]); err != nil {
		return 0, err
	}
	from := int(binary.LittleEndian.Uint32(hs[8:]))
	if [4]byte(hs[:4]) != protoMagic || binary.LittleEndian.Uint32(hs[4:]) != protoVersion ||
		[tokenBytes]byte(hs[12:]) != tok || from <= rank || from >= size {
		return 0, errors.New("bad handshake")
	}
	reply := append([]byte{}, protoMagic[:]...)
	reply = binary.LittleEndian.AppendUint32(reply, protoVersion)
	reply = binary.LittleEndian.AppendUint32(reply, uint32(rank))
	if _, err := nc.Write(reply); err != nil {
		return 0, err
	}
	return from, nil
}
