package remote

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/partbench/partbench/remote/wire"
)

// dialTimeout bounds connecting to a server (its calls have their own
// deadline, ClientConfig.CallTimeout).
const dialTimeout = 30 * time.Second

// ConnectOptions say which server a command talks to: one at Server, or a
// `partbench serve` child spawned on a free loopback port (Spawn). The
// field comments name the flags that set them.
type ConnectOptions struct {
	Server    string // --server HOST:PORT
	Spawn     bool   // --spawn-server
	Transport string // --transport grpc|tcp
	TokenFile string // --token-file: the server's bearer token
	TLSCA     string // --tls-ca: PEM CA of the server's certificate
	// CallTimeout is the deadline of every call (0: the client's default).
	CallTimeout time.Duration
	// SpawnArgs are extra `serve` flags for a spawned child.
	SpawnArgs []string
}

// Check refuses both --server and --spawn-server, and, when need is set,
// neither; --token-file and --tls-ca must be small regular files (read
// here, before any work) and --tls-ca needs --server (a spawned server
// listens on loopback without TLS). cmd names the command and why says
// what needs the server.
func (o ConnectOptions) Check(cmd string, need bool, why string) error {
	if o.Server != "" && o.Spawn {
		return fmt.Errorf("%s: give --server or --spawn-server, not both", cmd)
	}
	if need && o.Server == "" && !o.Spawn {
		return fmt.Errorf("%s: %s needs a server: --server HOST:PORT or --spawn-server", cmd, why)
	}
	if o.TokenFile != "" {
		if _, err := wire.ReadTokenFile("--token-file", o.TokenFile); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
	}
	if o.TLSCA != "" {
		if o.Spawn {
			return fmt.Errorf("%s: --tls-ca %s with --spawn-server: a spawned server listens on loopback without TLS; give --server HOST:PORT of a TLS server", cmd, o.TLSCA)
		}
		if _, err := wire.LoadPool(o.TLSCA); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
	}
	return nil
}

// Conn is a client to the server of ConnectOptions; Close closes the
// client and stops the spawned child, if any.
type Conn struct {
	*Client
	// Addr is the server's host:port (the spawned child's when spawned).
	Addr   string
	child  *ServerChild
	stderr io.Writer
}

// Close closes the client, then stops a spawned child (its exit status, if
// not clean, goes to the stderr given to Connect).
func (c *Conn) Close() {
	if c.Client != nil {
		c.Client.Close()
	}
	if c.child != nil {
		c.child.Stop(c.stderr)
	}
}

// DialWithin dials cc, giving the connection 30 s.
func DialWithin(ctx context.Context, cc ClientConfig) (*Client, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	return Dial(dctx, cc)
}

// Connect spawns a server when o.Spawn (its stderr to stderr), reads the
// token file, and dials. Errors name the flag they come from
// (--spawn-server, --token-file, --server ADDR).
func Connect(ctx context.Context, o ConnectOptions, stderr io.Writer) (*Conn, error) {
	c := &Conn{Addr: o.Server, stderr: stderr}
	if o.Spawn {
		child, addr, err := SpawnServer(o.Transport, stderr, o.SpawnArgs...)
		if err != nil {
			return nil, fmt.Errorf("--spawn-server: %w", err)
		}
		c.child, c.Addr = child, addr
	}
	cc := ClientConfig{Addr: c.Addr, Transport: o.Transport, TLSCA: o.TLSCA, CallTimeout: o.CallTimeout}
	if o.TokenFile != "" {
		tok, err := wire.ReadTokenFile("--token-file", o.TokenFile)
		if err != nil {
			c.Close()
			return nil, err
		}
		cc.Token = tok
	}
	cl, err := DialWithin(ctx, cc)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("--server %s: %w", c.Addr, err)
	}
	c.Client = cl
	return c, nil
}
