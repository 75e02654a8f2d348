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
// through the kernel's loopback without a process boundary.
type InProcess struct {
	srv   *server.Server
	addrs map[string]string
}

// NewInProcess makes an in-process server over engine (listening lazily per
// transport).
func NewInProcess(engine wire.Engine, budgetBytes int64) (*InProcess, error) {
	s, err := server.NewServer(server.ServerConfig{MemoryBudgetBytes: budgetBytes}, engine)
	if err != nil {
		return nil, err
	}
	return &InProcess{srv: s, addrs: map[string]string{}}, nil
}

// Dial connects a client to the in-process server over b's transport.
func (p *InProcess) Dial(ctx context.Context, b Baseline) (*remote.Client, error) {
	addr, ok := p.addrs[b.Transport]
	if !ok {
		var a fmt.Stringer
		var err error
		if b.Transport == "tcp" {
			a, err = p.srv.ListenTCP("127.0.0.1:0")
		} else {
			a, err = p.srv.ListenGRPC("127.0.0.1:0")
		}
		if err != nil {
			return nil, fmt.Errorf("in-process server: %w", err)
		}
		addr = a.String()
		p.addrs[b.Transport] = addr
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return remote.Dial(dctx, remote.ClientConfig{Addr: addr, Transport: b.Transport})
}

// Close drains and stops the server.
func (p *InProcess) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}
