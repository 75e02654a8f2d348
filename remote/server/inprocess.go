package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/partbench/partbench/remote/wire"
)

// InProcess is a server in this process on loopback: a network round trip
// through the kernel without a process boundary. It listens on a free port
// of 127.0.0.1 per transport the first time that transport is asked for, so
// a client reaches it through the client API alone (Addr, then Dial).
type InProcess struct {
	srv   *Server
	mu    sync.Mutex
	addrs map[string]string
}

// StartInProcess makes an in-process server over engine with cfg's limits.
func StartInProcess(cfg ServerConfig, engine wire.Engine) (*InProcess, error) {
	s, err := NewServer(cfg, engine)
	if err != nil {
		return nil, err
	}
	return &InProcess{srv: s, addrs: map[string]string{}}, nil
}

// Addr is the loopback host:port of transport ("grpc" or "tcp"), listening
// on first use.
func (p *InProcess) Addr(transport string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.addrs[transport]; ok {
		return a, nil
	}
	var a fmt.Stringer
	var err error
	switch transport {
	case "grpc":
		a, err = p.srv.ListenGRPC("127.0.0.1:0")
	case "tcp":
		a, err = p.srv.ListenTCP("127.0.0.1:0")
	default:
		return "", fmt.Errorf("transport %q: must be grpc or tcp", transport)
	}
	if err != nil {
		return "", err
	}
	p.addrs[transport] = a.String()
	return a.String(), nil
}

// Close drains and stops the server, waiting at most wait.
func (p *InProcess) Close(wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return p.srv.Shutdown(ctx)
}
