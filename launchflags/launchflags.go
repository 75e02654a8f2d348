package launchflags

import (
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/exec/launch"
)

// Nodes are torchrun's multi-node flags for the built-in launcher:
// this launcher starts ranks nodeRank·N … nodeRank·N+N−1 of nnodes·N.
type Nodes struct {
	NNodes     int
	nodeRank   int
	masterAddr string
	masterPort int
	rdzvID     string
}

func (n *Nodes) AddFlags(f *pflag.FlagSet) {
	f.IntVar(&n.NNodes, "nnodes", 1, "nodes taking part, each starting --nproc-per-node ranks with its own launcher")
	f.IntVar(&n.nodeRank, "node-rank", 0, "this node's index among --nnodes (0 hosts the rendezvous)")
	f.StringVar(&n.rdzvID, "rdzv-id", "", "the job's id, the same on every node (default: derived from the rendezvous address)")
	f.StringVar(&n.masterAddr, "master-addr", "", "node 0's address (default: MASTER_ADDR, else "+launch.DefaultRendezvousHost+")")
	f.IntVar(&n.masterPort, "master-port", -1, "node 0's rendezvous port; 0 on node 0: pick a free one and print it (default: MASTER_PORT, else a free port on one node)")
	cliflag.DefaultInUsage(f, "master-port")
}

// SpawnOptions checks the node flags and resolves the rendezvous address
// the children are given; a port picked here is printed on stderr for the
// other nodes' launchers.
func (n *Nodes) SpawnOptions(f *pflag.FlagSet, nproc int, endpoint string, stderr io.Writer) (launch.SpawnOptions, error) {
	opts := launch.SpawnOptions{NProc: nproc}
	switch {
	case n.NNodes < 1:
		return opts, fmt.Errorf("--nnodes: must be ≥ 1 (got %d)", n.NNodes)
	case n.nodeRank < 0 || n.nodeRank >= n.NNodes:
		return opts, fmt.Errorf("--node-rank: must be in [0, %d) for --nnodes %d (got %d)", n.NNodes, n.NNodes, n.nodeRank)
	case endpoint != "" && (f.Changed("master-addr") || f.Changed("master-port")):
		return opts, fmt.Errorf("--rdzv-endpoint %s: give it or --master-addr/--master-port, not both", endpoint)
	}
	host, port := n.masterAddr, n.masterPort
	if endpoint != "" {
		h, p, err := net.SplitHostPort(endpoint)
		if err != nil {
			return opts, fmt.Errorf("--rdzv-endpoint %q: not host:port: %w", endpoint, err)
		}
		if port, err = strconv.Atoi(p); err != nil {
			return opts, fmt.Errorf("--rdzv-endpoint %q: port %q is not a number", endpoint, p)
		}
		host = h
	}
	if port > 65535 || port < -1 {
		return opts, fmt.Errorf("--master-port: must be in [0, 65535] (got %d)", port)
	}
	if n.NNodes == 1 {
		opts.MasterAddr, opts.MasterPort = host, max(port, 0)
		return opts, nil
	}
	if port < 0 {
		return opts, fmt.Errorf("--nnodes %d: give node 0's port with --master-port or --rdzv-endpoint HOST:PORT (0 on node 0: pick one)", n.NNodes)
	}
	if host == "" {
		host = launch.DefaultRendezvousHost
	}
	if port == 0 {
		if n.nodeRank != 0 {
			return opts, fmt.Errorf("--master-port 0: only node 0 picks the port; give node %d the port node 0 printed", n.nodeRank)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return opts, fmt.Errorf("--master-addr %s: cannot pick a port there: %w", host, err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		fmt.Fprintf(stderr, "partbench: rendezvous on %s (other nodes: --rdzv-endpoint %s)\n", net.JoinHostPort(host, strconv.Itoa(port)), net.JoinHostPort(host, strconv.Itoa(port)))
	}
	opts.MasterAddr, opts.MasterPort = host, port
	// Every node's launcher must give its ranks one job id, or the
	// rendezvous refuses the other nodes' ranks as another job's.
	opts.JobID = n.rdzvID
	if opts.JobID == "" {
		opts.JobID = "pb-rdzv-" + net.JoinHostPort(host, strconv.Itoa(port))
	}
	return opts, nil
}

// Endpoint is --master-addr:--master-port when either was given ("" when
// not), for a single node's launcher.
func (n *Nodes) Endpoint(f *pflag.FlagSet) string {
	if !f.Changed("master-addr") && !f.Changed("master-port") {
		return ""
	}
	host, port := n.masterAddr, n.masterPort
	if host == "" {
		host = launch.DefaultRendezvousHost
	}
	return net.JoinHostPort(host, strconv.Itoa(max(port, 0)))
}

// ChildArgs tell each child which node it is on.
func (n *Nodes) ChildArgs() []string {
	if n.NNodes == 1 {
		return nil
	}
	return []string{"--nnodes", strconv.Itoa(n.NNodes), "--node-rank", strconv.Itoa(n.nodeRank)}
}

// Place turns a child's local identity (RANK = LOCAL_RANK of the launcher's
// N) into its place among nnodes·N ranks. Under mpirun, srun or torchrun
// the launcher's variables already say it (WORLD_SIZE > LOCAL_WORLD_SIZE),
// and env is returned unchanged.
func (n *Nodes) Place(env launch.Env) launch.Env {
	if n.NNodes <= 1 || env.Source != launch.SourceRankEnv || env.Size != env.LocalSize {
		return env
	}
	env.Rank += n.nodeRank * env.LocalSize
	env.Size *= n.NNodes
	return env
}

// RankError is what a rank reports when it fails: rank 0 (or every rank
// with --verbose) the whole error, the others its first line, so that N
// failing ranks print N lines and one library search list.
func RankError(rank int, verbose bool, err error) error {
	msg := err.Error()
	if first, _, multi := strings.Cut(msg, "\n"); multi && rank != 0 && !verbose {
		return fmt.Errorf("rank %d: %s (rank 0 prints the details; --verbose: every rank)", rank, strings.TrimSuffix(first, ":"))
	}
	return fmt.Errorf("rank %d: %w", rank, err)
}

// Spawn is the built-in launcher's options for nproc local ranks: several
// nodes as SpawnOptions resolves them; on one node, the rendezvous address
// rdzv (else --master-addr/--master-port, else none: Spawn picks a free
// port), checked by launch.ParseRendezvous.
func (n *Nodes) Spawn(f *pflag.FlagSet, nproc int, rdzv string, stderr io.Writer) (launch.SpawnOptions, error) {
	if n.NNodes > 1 {
		return n.SpawnOptions(f, nproc, rdzv, stderr)
	}
	opts := launch.SpawnOptions{NProc: nproc}
	if rdzv == "" && f.Changed("master-addr") && !f.Changed("master-port") {
		// A host without a port: Spawn picks a free port there (port 0
		// would reach the ranks, which cannot share a picked port).
		opts.MasterAddr = n.masterAddr
		return opts, nil
	}
	if rdzv == "" {
		rdzv = n.Endpoint(f)
	}
	if rdzv != "" {
		host, port, err := launch.ParseRendezvous(rdzv, nproc)
		if err != nil {
			return opts, err
		}
		opts.MasterAddr, opts.MasterPort = host, port
	}
	return opts, nil
}

// Forward returns "--name=value" for every flag of f set on the command
// line, in name order, except those named in skip: how a launcher hands its
// own flags to the ranks it starts (each rank parses them as it would have).
func Forward(f *pflag.FlagSet, skip ...string) []string {
	var a []string
	f.Visit(func(fl *pflag.Flag) {
		if !slices.Contains(skip, fl.Name) {
			a = append(a, "--"+fl.Name+"="+fl.Value.String())
		}
	})
	return a
}
