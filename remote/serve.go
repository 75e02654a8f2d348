package remote

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
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
	ServerConfig               // limits; Token and TLS are set from the fields above
}

// ReadTokenFile reads a token file: one non-empty token.
func ReadTokenFile(flag, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, path, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("%s %s: the file must hold one non-empty token on one line", flag, path)
	}
	return tok, nil
}

// Serve runs a server over engine until ctx ends (SIGTERM in the command),
// then drains: running requests finish within DrainTimeout, new ones are
// refused. It prints "partbench serve: <transport> listening on <addr>" to
// out once the listener is up, so a parent process can read the port.
func Serve(ctx context.Context, o ServeOptions, engine Engine, out io.Writer) error {
	cfg := o.ServerConfig
	if o.TokenFile != "" {
		tok, err := ReadTokenFile("--token-file", o.TokenFile)
		if err != nil {
			return err
		}
		cfg.Token = tok
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return fmt.Errorf("--tls-cert %q and --tls-key %q: give both or neither", o.TLSCert, o.TLSKey)
	}
	cfg.TLSCert, cfg.TLSKey = o.TLSCert, o.TLSKey
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
	fmt.Fprintf(out, "partbench serve: %s listening on %s\n", o.Transport, addr)
	<-ctx.Done()
	fmt.Fprintf(out, "partbench serve: draining (up to %s)\n", o.DrainTimeout)
	dctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
	defer cancel()
	if err := s.Shutdown(dctx); err != nil {
		return err
	}
	fmt.Fprintln(out, "partbench serve: drained")
	return nil
}
