//go:build unix

package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// scrubbed reports whether Spawn removes an inherited variable: every
// variable that Detect reads before RANK/WORLD_SIZE, and the ones it sets.
func scrubbed(name string) bool {
	for _, p := range []string{"OMPI_", "PMI_", "PMIX_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch name {
	case "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
		"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NPROCS",
		"SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NODEID",
		JobIDVar, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT":
		return true
	}
	return false
}

// childEnv is base without launcher identity, plus rank's variables.
func childEnv(base []string, rank, n int, addr string, port int) []string {
	out := make([]string, 0, len(base)+6)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !scrubbed(name) {
			out = append(out, kv)
		}
	}
	return append(out,
		"RANK="+strconv.Itoa(rank),
		"WORLD_SIZE="+strconv.Itoa(n),
		"LOCAL_RANK="+strconv.Itoa(rank),
		"LOCAL_WORLD_SIZE="+strconv.Itoa(n),
		"MASTER_ADDR="+addr,
		"MASTER_PORT="+strconv.Itoa(port),
	)
}

// freePort asks the kernel for a free TCP port on host.
func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("launch: no free rendezvous port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// rankExit decodes how a child ended.
func rankExit(rank int, ps *os.ProcessState) RankExit {
	ex := RankExit{Rank: rank}
	if ps == nil {
		ex.Code = 1
		return ex
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ex.Signal = ws.Signal()
		ex.Code = 128 + int(ex.Signal)
		return ex
	}
	ex.Code = ps.ExitCode()
	return ex
}

// severity orders exits: killed by a signal from outside > a non-zero
// status of the rank's own > ExitPeerFailed (it stopped because another
// rank failed) > killed by Spawn > 0. A failing rank and the ranks it takes
// down end within milliseconds of each other, in an order the reaping does
// not keep; the status says which one was the cause.
func severity(e RankExit) int {
	switch {
	case e.Killed:
		return 1
	case e.Signal != 0:
		return 4
	case e.Code == ExitPeerFailed:
		return 2
	case e.Code != 0:
		return 3
	}
	return 0
}

// verdict picks the exit code and error of a finished run. Priority: a rank
// that could not start (127 not found, 126 otherwise); the worst exit by
// severity, first among equals; the launcher's interrupt (128+signal);
// cancellation (1); a rank Spawn killed.
func verdict(exits []RankExit, interrupt os.Signal, startErr, ctxErr error) (int, error) {
	sort.SliceStable(exits, func(i, j int) bool { return exits[i].At < exits[j].At })
	first := RankExit{Rank: -1}
	best, killed := 0, 0
	for _, e := range exits {
		if e.Killed {
			killed++
		}
		if s := severity(e); s > best {
			best, first = s, e
		}
	}
	code := 0
	switch {
	case startErr != nil:
		code = exitStartFailed
		if errors.Is(startErr, exec.ErrNotFound) || errors.Is(startErr, fs.ErrNotExist) {
			code = exitNotFound
		}
	case best >= 2:
		code = first.Code
	case interrupt != nil:
		code = 1
		if s, ok := interrupt.(syscall.Signal); ok {
			code = 128 + int(s)
		}
	case ctxErr != nil:
		code = 1
	case best == 1:
		code = first.Code
	}
	if code == 0 {
		return 0, nil
	}
	cause := startErr
	if cause == nil {
		cause = ctxErr
	}
	se := &SpawnError{Code: code, First: first, Ranks: exits, Killed: killed, Interrupt: interrupt, Cause: cause}
	// Only peers of a lost rank failed, and a rank had to be killed after the
	// grace period: that rank is the one that froze (it neither failed nor
	// exited when the others did). Name it, not the first of its victims;
	// the exit code stays the victims' (ExitPeerFailed).
	if best == 2 && startErr == nil && interrupt == nil && ctxErr == nil {
		for _, e := range exits {
			if e.Killed {
				se.Victim, se.First, se.Frozen = first, e, true
				break
			}
		}
	}
	return code, se
}

// prefixWriter writes whole lines, each prefixed, to a shared writer.
type prefixWriter struct {
	w      io.Writer
	mu     *sync.Mutex
	prefix []byte
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		p.emit(p.buf[:i+1])
		p.buf = p.buf[i+1:]
	}
	if len(p.buf) > 64<<10 { // a very long line: emit what there is
		p.emit(append(p.buf, '\n'))
		p.buf = nil
	}
	return len(b), nil
}

func (p *prefixWriter) emit(line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]byte, 0, len(p.prefix)+len(line))
	_, _ = p.w.Write(append(append(out, p.prefix...), line...))
}

// flush writes a last line that had no newline.
func (p *prefixWriter) flush() {
	if len(p.buf) > 0 {
		p.emit(append(p.buf, '\n'))
		p.buf = nil
	}
}

type syncWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// pipeOut carries one output stream of a child through a pipe into dst.
// Spawn reads the pipe itself (rather than letting the child's Wait do it) so
// that a child's exit is seen when it happens, not when its output ends.
type pipeOut struct {
	r, w *os.File
	dst  io.Writer
	done chan struct{}
}

func newPipeOut(dst io.Writer) (*pipeOut, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &pipeOut{r: r, w: w, dst: dst, done: make(chan struct{})}, nil
}

// started closes the parent's write end and, if the child runs, copies.
func (p *pipeOut) started(ok bool) {
	_ = p.w.Close()
	if !ok {
		_ = p.r.Close()
		close(p.done)
		return
	}
	go func() {
		defer close(p.done)
		_, _ = io.Copy(p.dst, p.r)
		if pw, ok := p.dst.(*prefixWriter); ok {
			pw.flush()
		}
	}()
}

// finish waits for the output to end, at most timeout (a grandchild may
// hold the pipe open), then stops reading.
func (p *pipeOut) finish(timeout time.Duration) {
	select {
	case <-p.done:
	case <-time.After(timeout):
	}
	_ = p.r.Close()
	<-p.done
}
