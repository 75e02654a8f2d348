package launch

import (
	"fmt"
	"net"
	"strconv"
)

// ParseRendezvous checks a --rendezvous host:port for a world of size ranks
// and returns its host (DefaultRendezvousHost when empty) and port. Port 0
// is refused for more than one rank: the others could not know the port.
func ParseRendezvous(addr string, size int) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("--rendezvous %q: not host:port (%v)", addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("--rendezvous %q: port %q is not a number from 1 to 65535", addr, ps)
	}
	if port == 0 && size > 1 {
		return "", 0, fmt.Errorf("--rendezvous %q: port 0 would let rank 0 pick a port the other %d ranks cannot know; give a port from 1 to 65535 (or leave --rendezvous out under `run --nproc`, which picks a free one)", addr, size-1)
	}
	if host == "" {
		host = DefaultRendezvousHost
	}
	return host, port, nil
}

// CheckWorld checks that nnodes nodes of nproc local ranks each (nnodes ≤ 1:
// one node) are the size ranks a job needs; name and factors say whose
// count it is (a config and its "tp 2 × pp 2"). Errors name the launcher
// flags --nproc, --nnodes and --nproc-per-node.
func CheckWorld(nproc, nnodes int, name, factors string, size int) error {
	world := nproc * max(nnodes, 1)
	if size != world && nnodes > 1 {
		return fmt.Errorf("--nnodes %d × --nproc-per-node %d = %d ranks: %s needs %s = %d", nnodes, nproc, world, name, factors, size)
	}
	if size != world {
		return fmt.Errorf("--nproc %d: %s needs %s = %d ranks", nproc, name, factors, size)
	}
	return nil
}
