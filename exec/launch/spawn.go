//go:build unix

package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultGrace is how long Spawn lets the other ranks exit on their own
// after one has failed (or after a forwarded signal) before killing them.
const DefaultGrace = 10 * time.Second

// DefaultInterruptGrace is how long Spawn lets the ranks exit after it
// forwarded SIGINT/SIGTERM before killing them: a rank ends within 750 ms
// of a signal by itself, and the launcher must end within a second.
const DefaultInterruptGrace = 900 * time.Millisecond

// SpawnOptions configures Spawn.
type SpawnOptions struct {
	// NProc is the number of ranks to start (≥ 1).
	NProc int
	// Argv is the command every rank runs (argv[0] is looked up in PATH).
	// The caller removes its own --nproc flag so the children do not spawn.
	Argv []string
	// Env is the base environment (nil: this process's). Launcher variables
	// that Detect would read before RANK (OMPI_*, PMI_*, PMIX_*, the SLURM_*
	// task identity) are removed; RANK, WORLD_SIZE, LOCAL_RANK,
	// LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT are set per child.
	Env []string
	// Dir is the children's working directory ("" = this process's).
	Dir string
	// Stdout and Stderr receive the children's output (nil: this process's).
	Stdout, Stderr io.Writer
	// Prefix prefixes every output line with "[rank N] ". Without it the
	// output passes straight through (ranks other than 0 are quiet by
	// themselves).
	Prefix bool
	// Grace is how long the surviving ranks get to exit after one fails or
	// after a signal is forwarded, before SIGKILL (0: DefaultGrace).
	Grace time.Duration
	// MasterAddr is the rendezvous host given to the children ("": 127.0.0.1).
	MasterAddr string
	// MasterPort is the rendezvous port (0: a free port picked by Spawn).
	MasterPort int
	// InterruptGrace replaces Grace after a forwarded SIGINT/SIGTERM (0:
	// DefaultInterruptGrace): the user asked to stop, so the ranks get only
	// the time a clean exit needs.
	InterruptGrace time.Duration
	// JobID identifies the run to the rendezvous; every child gets it as
	// PARTBENCH_JOB_ID ("": a random one), so that two runs on one port
	// cannot join each other.
	JobID string
	// Signals, when set, replaces SIGINT/SIGTERM delivered to this process as
	// the source of signals to forward (tests inject them).
	Signals <-chan os.Signal
}

// RankExit is how one child ended.
type RankExit struct {
	Rank int
	// Code is the exit status, or 128+signal for a child killed by a signal.
	Code int
	// Signal is the signal that killed the child (0 if it exited).
	Signal syscall.Signal
	// Killed is true when the signal came from Spawn itself (grace expired,
	// a second interrupt, cancellation, or another rank failing to start).
	Killed bool
	// At is when the child ended, since Spawn started.
	At time.Duration
}

func (r RankExit) String() string {
	switch {
	case r.Killed:
		return fmt.Sprintf("rank %d killed by the launcher (%v)", r.Rank, r.Signal)
	case r.Signal != 0:
		return fmt.Sprintf("rank %d killed by signal %d (%v)", r.Rank, int(r.Signal), r.Signal)
	default:
		return fmt.Sprintf("rank %d exited with status %d", r.Rank, r.Code)
	}
}

// ExitPeerFailed is a rank's exit status when it stopped only because
// another rank of the job failed or was lost (partbench's ranks exit with it
// for rendezvous.PeerFailed errors): Spawn reports the failing rank, not the
// ranks it took down, whichever the operating system reaped first.
const ExitPeerFailed = 5

// SpawnError reports a run that did not end with every rank exiting 0.
type SpawnError struct {
	// Code is the launcher's exit code (what Spawn returned).
	Code int
	// First is the exit that decided Code (Rank −1 when none did).
	First RankExit
	// Ranks lists every child, in the order they ended.
	Ranks []RankExit
	// Killed counts children that Spawn killed.
	Killed int
	// Interrupt is the signal the launcher received, if any.
	Interrupt os.Signal
	// Cause is a start failure or the ctx error, if any.
	Cause error
	// Frozen says First is a rank that neither failed nor exited: the others
	// stopped because a peer was lost (Victim is the first of them), and the
	// launcher killed First after the grace period.
	Frozen bool
	Victim RankExit
}

func (e *SpawnError) Error() string {
	var msg string
	switch {
	case e.Cause != nil && (e.First.Rank < 0 || e.Code == exitStartFailed || e.Code == exitNotFound):
		msg = e.Cause.Error()
	case e.Frozen:
		msg = fmt.Sprintf("launch: rank %d stopped responding: it did not exit when %s because a peer was lost, and was killed by the launcher after the grace period",
			e.First.Rank, e.Victim)
	case e.First.Rank >= 0 && !e.First.Killed:
		msg = "launch: " + e.First.String()
	case e.Interrupt != nil:
		msg = fmt.Sprintf("launch: interrupted by %v", e.Interrupt)
	case e.Cause != nil:
		msg = "launch: " + e.Cause.Error()
	default:
		msg = "launch: " + e.First.String()
	}
	if e.Interrupt != nil && !strings.HasPrefix(msg, "launch: interrupted") {
		msg += fmt.Sprintf(" (launcher interrupted by %v)", e.Interrupt)
	}
	if e.Killed > 0 {
		msg += fmt.Sprintf("; %d rank(s) killed by the launcher", e.Killed)
	}
	return msg
}

func (e *SpawnError) Unwrap() error { return e.Cause }

// Exit codes for failures before a child ran (as a shell reports them).
const (
	exitStartFailed = 126
	exitNotFound    = 127
)

// child is one started rank.
type child struct {
	rank     int
	cmd      *exec.Cmd
	pgid     int
	exited   bool
	exitedAt time.Time
	ownSig   syscall.Signal // the last signal Spawn sent on its own initiative
}

// Spawn starts opts.NProc copies of opts.Argv, waits for all of them and
// returns the worst exit code: a child killed by a signal (128+signal) beats
// a non-zero exit status, which beats 0; among equals the first to end wins.
// Children killed by Spawn after the grace period count only when nothing
// else failed. When a child fails, the others get opts.Grace to exit (the
// rendezvous aborts them) and are then killed with their process groups.
// SIGINT/SIGTERM (or ctx cancellation, as SIGTERM) is forwarded to every
// child; a second signal, or the grace period expiring, sends SIGKILL.
// err is nil exactly when every child exited 0 and nothing interrupted the run.
func Spawn(ctx context.Context, opts SpawnOptions) (int, error) {
	if opts.NProc < 1 {
		return 2, fmt.Errorf("launch: --nproc must be at least 1 (got %d)", opts.NProc)
	}
	if len(opts.Argv) == 0 {
		return 2, errors.New("launch: no command to spawn")
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.InterruptGrace <= 0 {
		opts.InterruptGrace = DefaultInterruptGrace
	}
	if opts.JobID == "" {
		opts.JobID = NewJobID()
	}
	if opts.MasterAddr == "" {
		opts.MasterAddr = DefaultRendezvousHost
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	if opts.MasterPort == 0 {
		p, err := freePort(opts.MasterAddr)
		if err != nil {
			return 1, err
		}
		opts.MasterPort = p
	}
	sigs := opts.Signals
	if sigs == nil {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(ch)
		sigs = ch
	}

	type result struct {
		c  *child
		ps *os.ProcessState
		at time.Duration
	}
	begin := time.Now()
	results := make(chan result, opts.NProc)
	var mu sync.Mutex // guards children and their exit state against kills
	var children []*child
	var outMu sync.Mutex

	// signalAll sends sig to every child's process group. own marks a signal
	// Spawn decided on (not one forwarded from the user). Groups of children
	// that already exited are signalled only with withExited and only if they
	// exited recently (their grandchildren may linger; an old pid may have
	// been reused).
	signalAll := func(sig syscall.Signal, own, withExited bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range children {
			if c.exited && (!withExited || time.Since(c.exitedAt) > opts.Grace+time.Second) {
				continue
			}
			if own && !c.exited {
				c.ownSig = sig
			}
			_ = syscall.Kill(-c.pgid, sig) // ESRCH: already gone
		}
	}

	var startErr error
	for r := 0; r < opts.NProc; r++ {
		cmd := exec.Command(opts.Argv[0], opts.Argv[1:]...)
		cmd.Env = append(childEnv(opts.Env, r, opts.NProc, opts.MasterAddr, opts.MasterPort), JobIDVar+"="+opts.JobID)
		cmd.Dir = opts.Dir
		cmd.SysProcAttr = sysProcAttr()
		c := &child{rank: r, cmd: cmd}
		var outs []*pipeOut
		for _, stream := range []struct {
			w   io.Writer
			set *io.Writer
		}{{opts.Stdout, &cmd.Stdout}, {opts.Stderr, &cmd.Stderr}} {
			if f, ok := stream.w.(*os.File); ok && !opts.Prefix {
				*stream.set = f // straight through
				continue
			}
			var dst io.Writer = &syncWriter{w: stream.w, mu: &outMu}
			if opts.Prefix {
				dst = &prefixWriter{w: stream.w, mu: &outMu, prefix: []byte("[rank " + strconv.Itoa(r) + "] ")}
			}
			po, err := newPipeOut(dst)
			if err != nil {
				startErr = fmt.Errorf("launch: output pipe for rank %d: %w", r, err)
				break
			}
			*stream.set = po.w
			outs = append(outs, po)
		}
		var err error
		if startErr == nil {
			mu.Lock()
			if err = cmd.Start(); err == nil {
				c.pgid = cmd.Process.Pid
				children = append(children, c)
			}
			mu.Unlock()
		}
		for _, po := range outs {
			po.started(err == nil && startErr == nil)
		}
		if startErr != nil {
			break
		}
		if err != nil {
			startErr = fmt.Errorf("launch: starting rank %d (%s): %w", r, opts.Argv[0], err)
			break
		}
		go func() {
			_ = cmd.Wait() // the exit status is in ProcessState
			now := time.Now()
			mu.Lock()
			c.exited, c.exitedAt = true, now
			mu.Unlock()
			for _, po := range outs { // output held open by grandchildren is cut
				po.finish(2 * time.Second)
			}
			results <- result{c: c, ps: cmd.ProcessState, at: now.Sub(begin)}
		}()
	}

	var (
		exits      []RankExit
		stopping   bool // a failure or signal started the grace period
		interrupt  os.Signal
		ctxErr     error
		graceTimer <-chan time.Time
		ctxDone    = ctx.Done()
		running    = len(children)
	)
	startGrace := func() {
		if !stopping {
			stopping = true
			graceTimer = time.After(opts.Grace)
		}
	}
	// shortenGrace: after a signal, the ranks get InterruptGrace at most.
	interruptGrace := func() {
		if !stopping || opts.InterruptGrace < opts.Grace {
			stopping = true
			graceTimer = time.After(opts.InterruptGrace)
		}
	}
	if startErr != nil {
		signalAll(syscall.SIGTERM, true, false)
		startGrace()
	}
	for running > 0 {
		select {
		case res := <-results:
			running--
			ex := rankExit(res.c.rank, res.ps)
			ex.At = res.at
			mu.Lock()
			ex.Killed = ex.Signal != 0 && ex.Signal == res.c.ownSig
			mu.Unlock()
			exits = append(exits, ex)
			if ex.Code != 0 {
				startGrace()
			}
		case sig := <-sigs:
			if interrupt != nil {
				// a second signal: no more waiting
				signalAll(syscall.SIGKILL, true, true)
				continue
			}
			interrupt = sig
			s, ok := sig.(syscall.Signal)
			if !ok {
				s = syscall.SIGTERM
			}
			signalAll(s, false, false)
			interruptGrace()
		case <-ctxDone:
			ctxDone = nil
			ctxErr = ctx.Err()
			signalAll(syscall.SIGTERM, true, false)
			startGrace()
		case <-graceTimer:
			graceTimer = nil
			signalAll(syscall.SIGKILL, true, true)
		}
	}
	if stopping {
		signalAll(syscall.SIGKILL, false, true) // grandchildren of ranks that ended first
	}
	return verdict(exits, interrupt, startErr, ctxErr)
}
