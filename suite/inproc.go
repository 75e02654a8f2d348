package suite

import (
	"context"
	"fmt"
	"time"

	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/remote/wire"
)

// InProcess serves engine on a free loopback port in this process, for
// baselines with server = "in-process" (and for tests): a network round trip
// through the kernel's loopback without a process boundary. The server room
// starts it (server.StartInProcess); the suite reaches it only as a client.
type InProcess struct {
	p *server.InProcess
}

// NewInProcess makes an in-process server over engine (listening lazily per
// transport).
func NewInProcess(engine wire.Engine, budgetBytes int64) (*InProcess, error) {
	p, err := server.StartInProcess(server.ServerConfig{MemoryBudgetBytes: budgetBytes}, engine)
	if err != nil {
		return nil, err
	}
	return &InProcess{p: p}, nil
}

// Dial connects a client to the in-process server over b's transport.
func (p *InProcess) Dial(ctx context.Context, b Baseline) (*remote.Client, error) {
	transport := b.Transport
	if transport != "tcp" {
		transport = "grpc"
	}
	addr, err := p.p.Addr(transport)
	if err != nil {
		return nil, fmt.Errorf("in-process server: %w", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return remote.Dial(dctx, remote.ClientConfig{Addr: addr, Transport: b.Transport})
}

// Close drains and stops the server.
func (p *InProcess) Close() error { return p.p.Close(10 * time.Second) }
