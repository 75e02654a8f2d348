package exec_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/exec/tcpcomm"
	"github.com/partbench/partbench/partition"
)

// failingClose is a communicator whose Close fails after closing the real
// one, as a wait log that cannot be written does.
type failingClose struct {
	pexec.Comm
	err error
}

func (c failingClose) Close() error {
	c.Comm.Close()
	return c.err
}

// A communicator that fails to close after a successful run: Run returns
// rank 0's results, complete (every measured iteration), together with a
// *CloseError that wraps the cause; a run whose communicator closes cleanly
// returns no error.
func TestRunCloseError(t *testing.T) {
	cfg, err := configs.Load("test/single-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Run.Warmup, cfg.Run.Iterations = 1, 2
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("wait log: disk full")
	for _, closeErr := range []error{nil, cause} {
		addr := freeAddr(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		env := launch.Env{Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, Source: launch.SourceRankEnv, RendezvousAddr: addr}
		results, err := pexec.Run(ctx, pexec.RunOptions{Plan: plan, Env: env, Backend: "cpu", JoinTimeout: 20 * time.Second,
			NewCompute: func(p *partition.Plan, rank int) (pexec.Compute, error) { return cpu.New(p, rank) },
			NewComm: func(ctx context.Context, sess *rendezvous.Session, p *partition.Plan, rank int, _ pexec.Compute) (pexec.Comm, error) {
				c, err := tcpcomm.New(ctx, sess, rank, p.Size(), "127.0.0.1")
				if err != nil || closeErr == nil {
					return c, err
				}
				return failingClose{c, closeErr}, nil
			}})
		cancel()
		if len(results) != 1 || len(results[0].StepEndS) != cfg.Run.Iterations {
			t.Fatalf("close error %v: results %d ranks, want 1 with %d iterations", closeErr, len(results), cfg.Run.Iterations)
		}
		var ce *pexec.CloseError
		switch {
		case closeErr == nil && err != nil:
			t.Fatalf("clean close: %v", err)
		case closeErr != nil && (!errors.As(err, &ce) || !errors.Is(err, cause) || ce.Rank != 0):
			t.Fatalf("failing close: error %v (%T), want a *CloseError of rank 0 wrapping %v", err, err, cause)
		}
	}
}
