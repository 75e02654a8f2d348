package suite

import (
	"context"
	"io"
	"strconv"

	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/remote/wire"
)

// Servers are the servers a suite's remote baselines talk to: one in this
// process (ServerInProcess) and a spawned `partbench serve` per dial of
// every other baseline, each with the spec's backend and the memory budget.
type Servers struct {
	inproc   *InProcess
	backend  string
	budget   int64
	stderr   io.Writer
	children []*remote.ServerChild
}

// NewServers starts the in-process server over engine; Close stops it and
// every spawned server (their drain messages go to stderr).
func NewServers(engine wire.Engine, backend string, budgetBytes int64, stderr io.Writer) (*Servers, error) {
	inproc, err := NewInProcess(engine, budgetBytes)
	if err != nil {
		return nil, err
	}
	return &Servers{inproc: inproc, backend: backend, budget: budgetBytes, stderr: stderr}, nil
}

// Dial is the suite's Dialer: baseline b's client, connected to the
// in-process server or to a server spawned for it on a free loopback port.
func (s *Servers) Dial(ctx context.Context, b Baseline) (*remote.Client, error) {
	if b.Server == ServerInProcess {
		return s.inproc.Dial(ctx, b)
	}
	child, addr, err := remote.SpawnServer(b.Transport, s.stderr, "--backend", s.backend, "--memory-budget", strconv.FormatInt(s.budget, 10))
	if err != nil {
		return nil, err
	}
	s.children = append(s.children, child)
	return remote.DialWithin(ctx, remote.ClientConfig{Addr: addr, Transport: b.Transport})
}

// Close stops every server.
func (s *Servers) Close() {
	for _, c := range s.children {
		c.Stop(s.stderr)
	}
	s.inproc.Close()
}
