package tcpcomm

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/partbench/partbench/exec/shmcomm"
)

// Transport says how a pair of ranks moves its data.
type Transport string

const (
	// TransportAuto uses shared memory between ranks on one host where the
	// segment can be made, TCP otherwise.
	TransportAuto Transport = "auto"
	// TransportTCP uses TCP between every pair.
	TransportTCP Transport = "tcp"
	// TransportSHM uses shared memory between every pair on one host (an
	// error where it cannot) and TCP between hosts.
	TransportSHM Transport = "shm"
)

// TransportEnv sets the transport of a Comm whose Options do not (a flag
// such as `partbench run --transport` comes first).
const TransportEnv = "PARTBENCH_TRANSPORT"

// ParseTransport reads a transport name; what names the value in errors
// (a flag or the environment variable).
func ParseTransport(what, s string) (Transport, error) {
	switch t := Transport(strings.ToLower(strings.TrimSpace(s))); t {
	case TransportAuto, TransportTCP, TransportSHM:
		return t, nil
	}
	return "", fmt.Errorf("%s: unknown transport %q (want auto, tcp or shm)", what, s)
}

// Options are New's choices beyond rank and size.
type Options struct {
	// ListenHost is the interface to listen on ("" = every interface).
	ListenHost string
	// Transport is the data path between ranks on one host ("": the
	// environment's TransportEnv, else TransportAuto). Ranks on different
	// hosts always use TCP; the TCP connection of a shared-memory pair stays
	// open to carry the goodbye and to report a lost peer.
	Transport Transport
	// ShmDir is where shared segments are created ("": shmcomm.DefaultDir).
	ShmDir string
	// RingBytes is each direction's ring (0: DefaultRingBytes).
	RingBytes int
	// Spin is the shared-memory waits' spin policy ("": the environment's
	// SpinEnv, else auto): see SpinEnv.
	Spin string

	host  string // this rank's host key ("": hostKey()); tests place ranks on hosts
	jobID string // the job's identity, from the Exchanger (a rendezvous Session)
}

// segmentName names the segment of the pair (rank, q) that rank creates:
// the job's identity (the launcher's job id, which every rank of the job
// shares, so a segment a crashed job left behind says whose it was), the
// two ranks, the creator's process id and 6 random bytes of the token (two
// jobs of one id on one host do not collide). A job id is kept to 64 of
// the characters [A-Za-z0-9._-], others become '_'; no job id is "nojob".
func segmentName(jobID string, rank, q int, tok [shmcomm.TokenBytes]byte) string {
	job := []byte(jobID)
	if len(job) > 64 {
		job = job[:64]
	}
	for i, b := range job {
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-') {
			job[i] = '_'
		}
	}
	if len(job) == 0 {
		job = []byte("nojob")
	}
	return fmt.Sprintf("partbench-%s-r%d-r%d-p%d-%s", job, rank, q, os.Getpid(), hex.EncodeToString(tok[:6]))
}

func (o *Options) resolve() error {
	if o.Transport == "" {
		if v, ok := os.LookupEnv(TransportEnv); ok && v != "" {
			t, err := ParseTransport(TransportEnv, v)
			if err != nil {
				return fmt.Errorf("tcpcomm: %w", err)
			}
			o.Transport = t
		} else {
			o.Transport = TransportAuto
		}
	} else if _, err := ParseTransport("tcpcomm: Options.Transport", string(o.Transport)); err != nil {
		return err
	}
	if o.RingBytes == 0 {
		o.RingBytes = DefaultRingBytes
	}
	if o.Transport != TransportTCP && o.ShmDir == "" {
		o.ShmDir = defaultShmDir()
	}
	return nil
}

// DefaultRingBytes is each direction's shared ring: 256 KiB holds every
// decode-step message of the test configs at once (the tiny configs' are
// ≤ 1 KiB); larger messages stream through it. A host's ranks hold one
// pair of rings per pair of ranks: 8 local ranks map 28 × 512 KiB.
const DefaultRingBytes = 256 << 10

var defaultShmDir = sync.OnceValue(shmcomm.DefaultDir)

// hostKey names this host for deciding which pairs may share memory: the
// host name and the kernel's boot id (containers of one machine share the
// boot id but may not share /dev/shm: the segment's token check catches
// that, and auto falls back to TCP).
func hostKey() string {
	h, _ := os.Hostname()
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return h + "/" + strings.TrimSpace(string(b))
}

// shmOffer is what the lower rank of a same-host pair sends on the new
// connection: the segment it made (or why it could not), and the answer.
type shmOffer struct {
	Path      string `json:"path,omitempty"`
	Token     string `json:"token,omitempty"`
	RingBytes int    `json:"ring_bytes,omitempty"`
	Err       string `json:"err,omitempty"`
}

type shmAnswer struct {
	OK  bool   `json:"ok"`
	Err string `json:"err,omitempty"`
}

func writeJSON(w io.Writer, v any) error {
	b, _ := json.Marshal(v)
	if _, err := w.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(b)))); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

func readJSON(r io.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	if l := binary.LittleEndian.Uint32(n[:]); l > 4096 {
		return fmt.Errorf("a %d B shared-memory handshake (at most 4096 B)", l)
	}
	b := make([]byte, binary.LittleEndian.Uint32(n[:]))
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// pairShm sets up the shared segment of the pair (rank, q) over their new
// connection nc: the lower rank creates it and offers it, the higher maps it
// and answers, then the lower unlinks it whatever the answer, so no file
// outlives the set-up. It returns this side's segment, or nil and why the
// pair stays on TCP.
func pairShm(ctx context.Context, nc net.Conn, rank, q int, o Options) (*shmcomm.Segment, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(DefaultConnectTimeout)
	}
	_ = nc.SetDeadline(dl)
	defer nc.SetDeadline(time.Time{})
	if rank < q {
		var tok [shmcomm.TokenBytes]byte
		_, _ = rand.Read(tok[:])
		name := segmentName(o.jobID, rank, q, tok)
		seg, err := shmcomm.Create(o.ShmDir, name, o.RingBytes, tok)
		offer := shmOffer{Token: hex.EncodeToString(tok[:]), RingBytes: o.RingBytes}
		if err != nil {
			offer.Err = err.Error()
		} else {
			offer.Path = seg.Path()
			defer seg.Unlink()
		}
		var ans shmAnswer
		werr := writeJSON(nc, offer)
		if werr == nil {
			werr = readJSON(nc, &ans)
		}
		switch {
		case err != nil:
			return nil, err
		case werr != nil:
			seg.Close()
			return nil, fmt.Errorf("shared-memory handshake with rank %d: %w", q, werr)
		case !ans.OK:
			seg.Close()
			return nil, fmt.Errorf("rank %d could not map %s: %s", q, seg.Path(), ans.Err)
		}
		return seg, nil
	}
	var offer shmOffer
	if err := readJSON(nc, &offer); err != nil {
		return nil, fmt.Errorf("shared-memory handshake with rank %d: %w", q, err)
	}
	if offer.Err != "" {
		_ = writeJSON(nc, shmAnswer{Err: "no segment offered"})
		return nil, fmt.Errorf("rank %d could not make a segment: %s", q, offer.Err)
	}
	var tok [shmcomm.TokenBytes]byte
	b, err := hex.DecodeString(offer.Token)
	if err == nil && len(b) != len(tok) {
		err = fmt.Errorf("token of %d B", len(b))
	}
	var seg *shmcomm.Segment
	if err == nil {
		copy(tok[:], b)
		seg, err = shmcomm.Open(offer.Path, offer.RingBytes, tok)
	}
	ans := shmAnswer{OK: err == nil}
	if err != nil {
		ans.Err = err.Error()
	}
	if werr := writeJSON(nc, ans); werr != nil {
		if seg != nil {
			seg.Close()
		}
		return nil, fmt.Errorf("shared-memory handshake with rank %d: %w", q, werr)
	}
	if err != nil {
		return nil, err
	}
	return seg, nil
}
