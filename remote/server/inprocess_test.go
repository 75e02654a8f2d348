package server

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestStartInProcess: each transport listens once, on loopback, on first
// use (the same address when asked again, a different one per transport);
// an unknown transport is refused by name; Close stops the listeners.
func TestStartInProcess(t *testing.T) {
	p, err := StartInProcess(ServerConfig{}, &ArithEngine{})
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]string{}
	for _, tr := range []string{"grpc", "tcp"} {
		a, err := p.Addr(tr)
		if err != nil {
			t.Fatalf("%s: %v", tr, err)
		}
		if again, err := p.Addr(tr); err != nil || again != a {
			t.Errorf("%s asked again: %q, %v; want %q", tr, again, err, a)
		}
		if host, _, err := net.SplitHostPort(a); err != nil || host != "127.0.0.1" {
			t.Errorf("%s listens on %q, want 127.0.0.1:port", tr, a)
		}
		c, err := net.DialTimeout("tcp", a, 10*time.Second)
		if err != nil {
			t.Fatalf("%s at %s: %v", tr, a, err)
		}
		c.Close()
		addrs[tr] = a
	}
	if addrs["grpc"] == addrs["tcp"] {
		t.Errorf("both transports on %s", addrs["grpc"])
	}
	if _, err := p.Addr("udp"); err == nil || !strings.Contains(err.Error(), `transport "udp": must be grpc or tcp`) {
		t.Errorf("udp: %v", err)
	}
	if err := p.Close(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for tr, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s at %s still accepts after Close", tr, a)
		}
	}
}
