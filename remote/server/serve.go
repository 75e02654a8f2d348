package server

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/partbench/partbench/gcpace"
	"github.com/partbench/partbench/remote/wire"
)

// ServeOptions are `partbench serve`'s flags.
type ServeOptions struct {
	Listen    string // host:port (port 0: any free port)
	Transport string // "grpc" or "tcp"
	// TokenFile holds the bearer token (surrounding white space trimmed).
	TokenFile    string
	TLSCert      string
	TLSKey       string
	DrainTimeout time.Duration // after the context ends (default 30 s)
	// Stop, when it receives, ends a drain at once (SecondSignal).
	Stop         <-chan os.Signal
	ServerConfig // limits; Token and TLS are set from the fields above

	filesRead bool
}

// ReadFiles reads --token-file, --tls-cert and --tls-key (each a small
// regular file) into o's server config. `partbench serve` calls it before
// it starts to treat a signal as a drain; Serve calls it if it was not.
func (o *ServeOptions) ReadFiles() error {
	if o.filesRead {
		return nil
	}
	if o.TokenFile != "" {
		tok, err := wire.ReadTokenFile("--token-file", o.TokenFile)
		if err != nil {
			return err
		}
		o.Token = tok
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return fmt.Errorf("--tls-cert %q and --tls-key %q: give both or neither", o.TLSCert, o.TLSKey)
	}
	if o.TLSCert != "" {
		var err error
		if o.certPEM, err = wire.ReadSmallFile("--tls-cert", o.TLSCert, wire.MaxPEMFileBytes); err != nil {
			return err
		}
		if o.keyPEM, err = wire.ReadSmallFile("--tls-key", o.TLSKey, wire.MaxPEMFileBytes); err != nil {
			return err
		}
	}
	o.ServerConfig.TLSCert, o.ServerConfig.TLSKey = o.TLSCert, o.TLSKey
	o.filesRead = true
	return nil
}

// MemoryOverheadBytes is what a serving process holds beyond its memory
// budget: the runtime, the engine's code and scratch, goroutine stacks,
// unauthenticated connections. Serve asks the Go runtime to keep the
// process under budget + MemoryOverheadBytes (a soft limit: the garbage
// collector runs harder near it), unless GOMEMLIMIT is set.
const MemoryOverheadBytes = 64 << 20

func setMemoryLimit(budget int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(budget + MemoryOverheadBytes)
	}
}

// SecondSignal returns a channel that receives the second SIGINT or
// SIGTERM this process gets (the first starts a drain), for
// ServeOptions.Stop, and a function that stops watching.
func SecondSignal() (<-chan os.Signal, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	second := make(chan os.Signal, 1)
	quit := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case sig := <-sigs:
				if n++; n == 2 {
					second <- sig
					return
				}
			case <-quit:
				return
			}
		}
	}()
	var once sync.Once
	return second, func() { once.Do(func() { signal.Stop(sigs); close(quit) }) }
}

// StoppedError is a drain cut short by a second signal; the process exits
// 128 + that signal's number (130 for SIGINT, 143 for SIGTERM).
type StoppedError struct{ Signal os.Signal }

func (e *StoppedError) Error() string {
	return fmt.Sprintf("stopped at once by a second %v while draining; requests in flight were cut off", e.Signal)
}

// ExitCode is 128 + the signal's number.
func (e *StoppedError) ExitCode() int {
	if s, ok := e.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// Serve runs a server over engine until ctx ends (SIGTERM in the command),
// then drains: running requests finish within DrainTimeout, new ones are
// refused. It prints "partbench serve: <transport> listening on <addr>" to
// out once the listener is up, so a parent process can read the port.
func Serve(ctx context.Context, o ServeOptions, engine wire.Engine, out io.Writer) error {
	if err := o.ReadFiles(); err != nil {
		return err
	}
	cfg := o.ServerConfig
	if o.Listen == "" {
		o.Listen = "127.0.0.1:50051"
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = 30 * time.Second
	}
	s, err := NewServer(cfg, engine)
	if err != nil {
		return err
	}
	setMemoryLimit(s.cfg.MemoryBudgetBytes)
	var addr fmt.Stringer
	switch o.Transport {
	case "", "grpc":
		addr, err = s.ListenGRPC(o.Listen)
		o.Transport = "grpc"
	case "tcp":
		addr, err = s.ListenTCP(o.Listen)
	default:
		err = fmt.Errorf("--transport %q: must be grpc or tcp", o.Transport)
	}
	if err != nil {
		dctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Shutdown(dctx)
		return err
	}
	// The engine is set up: pace the collector by the live heap it left,
	// with at most half the memory budget as headroom (said after the
	// address, which stays the first line).
	gc := gcpace.Apply(min(gcpace.Headroom, s.cfg.MemoryBudgetBytes/2))
	fmt.Fprintf(out, "partbench serve: %s listening on %s\n", o.Transport, addr)
	fmt.Fprintf(out, "partbench serve: %s\n", gc)
	if o.Transport == "tcp" {
		fmt.Fprintf(out, "partbench serve: raw-TCP reads poll before sleeping: %s\n", s.PollPolicy())
	}
	<-ctx.Done()
	fmt.Fprintf(out, "partbench serve: draining (up to %s)\n", o.DrainTimeout)
	dctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
	defer cancel()
	stopped := make(chan os.Signal, 1)
	go func() {
		select {
		case sig := <-o.Stop:
			stopped <- sig
			cancel()
		case <-dctx.Done():
		}
	}()
	err = s.Shutdown(dctx)
	cancel()
	select {
	case sig := <-stopped:
		return &StoppedError{Signal: sig}
	default:
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "partbench serve: drained")
	return nil
}
