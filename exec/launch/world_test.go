package launch

import (
	"strings"
	"testing"
)

func TestParseRendezvous(t *testing.T) {
	for _, c := range []struct {
		addr string
		size int
		host string
		port int
		err  string
	}{
		{"10.0.0.1:29500", 4, "10.0.0.1", 29500, ""},
		{":29500", 4, DefaultRendezvousHost, 29500, ""},
		{"h:0", 1, "h", 0, ""}, // one rank: nobody else needs the port
		{"h:0", 3, "", 0, `--rendezvous "h:0": port 0 would let rank 0 pick a port the other 2 ranks cannot know`},
		{"h", 2, "", 0, `--rendezvous "h": not host:port`},
		{"h:70000", 2, "", 0, `--rendezvous "h:70000": port "70000" is not a number from 1 to 65535`},
		{"h:x", 2, "", 0, `--rendezvous "h:x": port "x" is not a number`},
	} {
		host, port, err := ParseRendezvous(c.addr, c.size)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.addr, err, c.err)
			}
			continue
		}
		if err != nil || host != c.host || port != c.port {
			t.Errorf("%q: %q %d %v, want %q %d", c.addr, host, port, err, c.host, c.port)
		}
	}
}

func TestCheckWorld(t *testing.T) {
	for _, c := range []struct {
		nproc, nnodes, size int
		err                 string
	}{
		{4, 0, 4, ""},
		{2, 2, 4, ""}, // 2 nodes × 2 = 4
		{0, 0, 4, "--nproc 0: c needs tp 2 × pp 2 = 4 ranks"},
		{3, 1, 4, "--nproc 3: c needs tp 2 × pp 2 = 4 ranks"},
		{3, 2, 4, "--nnodes 2 × --nproc-per-node 3 = 6 ranks: c needs tp 2 × pp 2 = 4"},
	} {
		err := CheckWorld(c.nproc, c.nnodes, "c", "tp 2 × pp 2", c.size)
		if (c.err == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("%+v: %v, want %q", c, err, c.err)
		}
	}
}
