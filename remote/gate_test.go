package remote

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/wire"
)

// gateStartedLine is what a gateEngine with an announce writer prints when
// a step enters it (a server child's tests wait for the line).
const gateStartedLine = "gate: step started"

// gateEngine wraps a wire.Engine so that tests order events on what the server
// does instead of on sleeps: every step reports that it entered the engine
// (a value on started, a line on announce) and, past the first free steps,
// waits until open is closed (or its context ends) before it runs.
type gateEngine struct {
	wire.Engine
	started  chan struct{}
	announce io.Writer
	open     chan struct{}
	free     int64 // steps that run without waiting for open
	steps    atomic.Int64
}

func newGateEngine(e wire.Engine) *gateEngine {
	return &gateEngine{Engine: e, started: make(chan struct{}, 4096), open: make(chan struct{})}
}

type gateSession struct {
	wire.EngineSession
	g *gateEngine
}

func (g *gateEngine) OpenSession(p *partition.Plan, m partition.RemoteMode, o partition.RemoteOptions) (wire.EngineSession, error) {
	s, err := g.Engine.OpenSession(p, m, o)
	if err != nil {
		return nil, err
	}
	return gateSession{s, g}, nil
}

func (s gateSession) Step(ctx context.Context, in *wire.StepInput) (*wire.StepOutput, error) {
	n := s.g.steps.Add(1)
	if s.g.announce != nil {
		fmt.Fprintln(s.g.announce, gateStartedLine)
	}
	select {
	case s.g.started <- struct{}{}:
	default:
	}
	if n > s.g.free {
		select {
		case <-s.g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.EngineSession.Step(ctx, in)
}

// waitStarted waits until n more steps entered the engine (20 s at most).
func (g *gateEngine) waitStarted(t testing.TB, n int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case <-g.started:
		case <-timeout:
			t.Fatalf("%d of %d steps entered the engine in 20 s", i, n)
		}
	}
}
