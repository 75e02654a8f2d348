package rendezvous

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// jobName is a job id for messages.
func jobName(id string) string {
	if id == "" {
		return "(none: no launcher job id; set PARTBENCH_JOB_ID)"
	}
	return id
}

// strangerReason is what rank 0 tells a rank of another job.
func strangerReason(o Options, addr string, f *frame) string {
	return fmt.Sprintf("rank %d (%s, pid %d) of job %s reached the rendezvous at %s of job %s (rank 0 on %s, pid %d): "+
		"two jobs share one rendezvous port; give each its own (MASTER_PORT or --rendezvous)",
		f.Rank, f.Host, f.PID, jobName(f.Job), addr, jobName(o.JobID), o.Hostname, os.Getpid())
}

// refusedNote adds the strangers rank 0 turned away to a timeout reason.
func refusedNote(refused []string) string {
	if len(refused) == 0 {
		return ""
	}
	if len(refused) > 4 {
		refused = append(refused[:4], "…")
	}
	return "; refused " + strings.Join(refused, ", ") + " (another job on this port)"
}

// refuse answers a stranger's hello with the reason and hangs up.
func refuse(c *conn, reason string) {
	_ = writePreambleAndFrame(c, &frame{Type: tFail, Reason: reason}, time.Second)
	_ = c.nc.Close()
}

// dialAddr is where to reach a rank 0 listening for addr.
func dialAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// askHolder asks whatever holds addr who it is: a partbench rank 0 in its
// join answers with its job, host, pid and world size.
func askHolder(ctx context.Context, addr string, timeout time.Duration) (*frame, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	dl, _ := ctx.Deadline()
	_ = nc.SetDeadline(dl)
	c := newConn(nc)
	if err := writePreambleAndFrame(c, &frame{Type: tWho}, timeout); err != nil {
		return nil, err
	}
	if _, err := readPreamble(c.rd); err != nil {
		return nil, err
	}
	f, err := c.readFrame()
	if err != nil {
		return nil, err
	}
	if f.Type != tHolder {
		return nil, fmt.Errorf("unexpected %q answer", f.Type)
	}
	return f, nil
}

// describeHolder says who holds addr, as far as it can tell within half a second.
func describeHolder(ctx context.Context, addr string) string {
	f, err := askHolder(ctx, addr, 500*time.Millisecond)
	switch {
	case err == errNotRendezvous:
		return "the port is held by another program, not a partbench rendezvous"
	case err != nil:
		return "the port is held by another process, which did not say who it is"
	}
	return fmt.Sprintf("the port is held by rank 0 of partbench job %s on %s, pid %d, a world of %d ranks",
		jobName(f.Job), f.Host, f.PID, f.Size)
}

// Refuse is rank 0's join for a run that cannot start (its output
// directory is unwritable, say): it listens only to tell every rank that
// arrives within a short linger (2 s) why, so that they end at once instead
// of after their join timeout. It returns the join's error (reason).
// Other ranks, and a world of one, return at once.
func Refuse(ctx context.Context, opts Options, reason string) error {
	failure := &JoinError{Reason: reason}
	if err := opts.normalize(); err != nil || opts.Rank != 0 || opts.Size == 1 {
		return failure
	}
	_, _ = join0(ctx, opts, time.Now(), failure) // if rank 0 cannot even listen, the others time out
	return failure
}
