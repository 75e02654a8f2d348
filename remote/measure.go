package remote

import (
	"context"
	"fmt"
	"io"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/gcpace"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/wire"
	"github.com/partbench/partbench/topology"
)

// MeasureOptions are `partbench remote`'s choices; the field comments name
// the flags that set them.
type MeasureOptions struct {
	Config string // --config: file or preset
	Mode   string // --mode: a partition.RemoteMode or "all"
	Link   string // --link: the client link pricing the overhead column
	Out    string // --output-dir: where results.csv and results.json go
	Trials int    // --trials
	Warmup int    // --warmup
	Conn   ConnectOptions
	// Local runs local mode in this process (partbench remote: the CPU
	// backend's engine, server.BackendEngine).
	Local wire.Engine
}

// ParseModes reads --mode: one partition.RemoteMode, or "all" for every one.
func ParseModes(mode string) ([]partition.RemoteMode, error) {
	if mode == "all" {
		return partition.RemoteModes, nil
	}
	m, err := partition.ParseRemoteMode(mode)
	if err != nil {
		return nil, fmt.Errorf("--mode: %w (or all)", err)
	}
	return []partition.RemoteMode{m}, nil
}

// Measure checks o, connects to the server when a mode other than local
// needs one (a spawned child's stderr to stderr), runs the trials (local mode on
// o.Local), and writes results.csv and results.json to o.Out. The
// results file records the server's address and the transport.
func Measure(ctx context.Context, o MeasureOptions, stderr io.Writer) (*Trials, *ResultsFile, error) {
	if o.Config == "" {
		return nil, nil, fmt.Errorf("remote: --config is required (e.g. --config test/single-tiny)")
	}
	modes, err := ParseModes(o.Mode)
	if err != nil {
		return nil, nil, err
	}
	link, err := topology.ParseClientLink("--link", o.Link)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := configs.Load(o.Config)
	if err != nil {
		return nil, nil, err
	}
	needServer := false
	for _, m := range modes {
		needServer = needServer || m.Served()
	}
	if err := o.Conn.Check("remote", needServer, "--mode "+o.Mode); err != nil {
		return nil, nil, err
	}
	topts := TrialOptions{Config: cfg, Modes: modes, Trials: o.Trials, Warmup: o.Warmup, Link: link, Engine: o.Local}
	addr := o.Conn.Server
	if needServer {
		c, err := Connect(ctx, o.Conn, stderr)
		if err != nil {
			return nil, nil, err
		}
		defer c.Close()
		topts.Client, addr = c.Client, c.Addr
	}
	// Set up: pace this client's collector before its steps are timed.
	gc := gcpace.Apply(gcpace.Headroom)
	tr, err := RunTrials(ctx, topts)
	if err != nil {
		return nil, nil, err
	}
	rf := NewResultsFile(tr)
	rf.Server, rf.Transport = addr, o.Conn.Transport
	rf.Notes = append(rf.Notes, "client: "+gc)
	if topts.Client != nil && topts.Client.PollPolicy() != "" {
		rf.Notes = append(rf.Notes, "client: raw-TCP reads poll before sleeping: "+topts.Client.PollPolicy())
	}
	if err := rf.Write(o.Out); err != nil {
		return nil, nil, err
	}
	return tr, rf, nil
}
