package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// exitPayloadMismatch is the exit code when measured payload bytes differ
// from the model's (as run's NCCL byte check).
const exitPayloadMismatch = 4

func newServeCmd() *cobra.Command {
	var o remote.ServeOptions
	var backendName string
	cmd := &cobra.Command{
		Use:   "serve [--listen 127.0.0.1:50051] [--token-file T] [--tls-cert C --tls-key K] [--backend cpu|cuda] [--transport grpc|tcp]",
		Short: "Serve the model to remote clients (partbench remote): sessions, a bounded queue, byte counts",
		Long: `Serve a device to clients that have none. Listens on loopback by default; any other
address requires --token-file (bearer token). Drains on SIGTERM or interrupt: requests in flight
finish (up to --drain-timeout), new ones are refused. Nothing is written to disk.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eng, err := remote.BackendEngine(backendName)
			if err != nil {
				return err
			}
			if backendName == configs.BackendCUDA {
				s, err := remote.NewNVMLSampler(0)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "partbench serve: no SM activity: %v\n", err)
				} else {
					defer s.Close()
					o.Util = s
				}
			}
			drainsOnSignal(cmd.Context())
			return remote.Serve(cmd.Context(), o, eng, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:50051", "host:port to listen on (port 0: any free port, printed)")
	f.StringVar(&o.Transport, "transport", "grpc", "grpc, or tcp (the raw-TCP framing of the same protocol)")
	f.StringVar(&o.TokenFile, "token-file", "", "file holding the bearer token every call must present (required off loopback)")
	f.StringVar(&o.TLSCert, "tls-cert", "", "PEM certificate: serve gRPC over TLS (with --tls-key)")
	f.StringVar(&o.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&backendName, "backend", configs.BackendCPU, "device backend: cpu or cuda")
	f.Int64Var(&o.MemoryBudgetBytes, "memory-budget", 1<<30, "bytes all open sessions may hold; a session that would not fit is refused before allocation")
	f.DurationVar(&o.IdleTimeout, "idle-timeout", 5*time.Minute, "free a session unused this long")
	f.DurationVar(&o.DrainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM, how long requests in flight may finish")
	f.IntVar(&o.MaxConcurrent, "max-concurrent", 1, "requests executing at once")
	f.IntVar(&o.MaxQueue, "max-queue", 64, "requests waiting beyond those; more are refused (ResourceExhausted)")
	return cmd
}

type remoteOptions struct {
	config, server, transport, tokenFile, tlsCA, mode, out, link, format string
	trials, warmup                                                       int
	spawn                                                                bool
	callTimeout                                                          time.Duration
}

func newRemoteCmd() *cobra.Command {
	o := &remoteOptions{}
	cmd := &cobra.Command{
		Use:   "remote --config FILE (--server ADDR | --spawn-server) [--mode naive|kv|stateful|local|all] [--trials 3] [--warmup 1] [--output-dir DIR]",
		Short: "Measure the model on a remote device per mode: latency, bytes, utilization, where the time goes",
		Long: `Drive a 'partbench serve' server in each mode (seeds 000 and 001):
  local     the model in this process (no network)
  naive     a stateless server: weights and KV cache travel with every request
  kv        weights stay on the server; the KV cache travels both ways
  stateful  weights and KV cache stay on the server; token ids travel
Every mode generates the same tokens (checked). Payload bytes of every request must equal the
model's (partition.RemoteBytesOf): exit 4 otherwise. Writes results.csv and results.json to --output-dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "model config (TOML file or preset; single rank: parallel.tp = pp = 1)")
	f.StringVar(&o.server, "server", "", "server address host:port")
	f.BoolVar(&o.spawn, "spawn-server", false, "start a local 'partbench serve' child on a free loopback port, run, stop it")
	f.StringVar(&o.transport, "transport", "grpc", "grpc or tcp")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the server's bearer token")
	f.StringVar(&o.tlsCA, "tls-ca", "", "PEM CA that signed the server's TLS certificate (turns TLS on)")
	f.StringVar(&o.mode, "mode", "all", "naive, kv, stateful, local, or all")
	f.IntVar(&o.trials, "trials", 3, "recorded trials per mode")
	f.IntVar(&o.warmup, "warmup", 1, "unrecorded trials per mode first")
	cliflag.OutputDir(f, &o.out, "results", "directory for results.csv and results.json", "out")
	f.StringVar(&o.link, "link", "loopback", "client link whose bandwidth prices payload in the overhead column: "+strings.Join(topology.ClientLinkNames(), ", ")+", or BYTES_PER_S[:LATENCY_S]")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	f.DurationVar(&o.callTimeout, "call-timeout", 2*time.Minute, "deadline of every call")
	return cmd
}

func (o *remoteOptions) modes() ([]partition.RemoteMode, error) {
	if o.mode == "all" {
		return partition.RemoteModes, nil
	}
	m, err := partition.ParseRemoteMode(o.mode)
	if err != nil {
		return nil, fmt.Errorf("--mode: %w (or all)", err)
	}
	return []partition.RemoteMode{m}, nil
}

func (o *remoteOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	if o.config == "" {
		return fmt.Errorf("remote: --config is required (e.g. --config test/single-tiny)")
	}
	modes, err := o.modes()
	if err != nil {
		return err
	}
	link, err := topology.ParseClientLink("--link", o.link)
	if err != nil {
		return err
	}
	cfg, err := configs.Load(o.config)
	if err != nil {
		return err
	}
	needServer := false
	for _, m := range modes {
		needServer = needServer || m != partition.RemoteLocal
	}
	if o.server != "" && o.spawn {
		return fmt.Errorf("remote: give --server or --spawn-server, not both")
	}
	addr := o.server
	if needServer && addr == "" && !o.spawn {
		return fmt.Errorf("remote: --mode %s needs a server: --server HOST:PORT or --spawn-server", o.mode)
	}
	if needServer && o.spawn {
		child, a, err := remote.SpawnServer(o.transport, stderr)
		if err != nil {
			return fmt.Errorf("--spawn-server: %w", err)
		}
		defer child.Stop(stderr)
		addr = a
	}
	topts := remote.TrialOptions{Config: cfg, Modes: modes, Trials: o.trials, Warmup: o.warmup, Link: link}
	if topts.Engine, err = remote.BackendEngine(configs.BackendCPU); err != nil {
		return err
	}
	if needServer {
		cc := remote.ClientConfig{Addr: addr, Transport: o.transport, TLSCA: o.tlsCA, CallTimeout: o.callTimeout}
		if o.tokenFile != "" {
			if cc.Token, err = remote.ReadTokenFile("--token-file", o.tokenFile); err != nil {
				return err
			}
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		c, err := remote.Dial(dctx, cc)
		cancel()
		if err != nil {
			return fmt.Errorf("--server %s: %w", addr, err)
		}
		defer c.Close()
		topts.Client = c
	}
	tr, err := remote.RunTrials(ctx, topts)
	if err != nil {
		return err
	}
	rf := remote.NewResultsFile(tr)
	rf.Server, rf.Transport = addr, o.transport
	if err := rf.Write(o.out); err != nil {
		return err
	}
	if err := report.WriteTables(stdout, o.format, "remote", version, report.RemoteResultsGrids(rf)...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s/results.csv and %s/results.json\n", o.out, o.out)
	if len(tr.Mismatches) > 0 {
		return &exitError{code: exitPayloadMismatch, err: fmt.Errorf("payload bytes differ from the model (partition.RemoteBytesOf) in %d requests: %s",
			len(tr.Mismatches), strings.Join(tr.Mismatches, "; "))}
	}
	return nil
}

// modelRemote is model --dry-run --remote-link: every mode of each config
// priced over the client link.
func modelRemote(w io.Writer, format string, cfgs []*configs.Config, linkSpec, mode string, overheadS float64, opts sim.Options) error {
	if format != report.FormatTable && format != report.FormatMarkdown {
		return fmt.Errorf("--remote-link: --format must be table or markdown (got %q)", format)
	}
	link, err := topology.ParseClientLink("--remote-link", linkSpec)
	if err != nil {
		return err
	}
	var highlight partition.RemoteMode
	if mode != "" && mode != "all" {
		if highlight, err = partition.ParseRemoteMode(mode); err != nil {
			return fmt.Errorf("--mode: %w (or all)", err)
		}
	}
	for i, cfg := range cfgs {
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return err
		}
		e, err := sim.EstimateRemote(plan, sim.RemoteOptions{Link: link, RequestOverheadS: overheadS}, opts)
		if err != nil {
			return fmt.Errorf("config %s: %w", cfg.Name, err)
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s over %s (%s)\n\n", cfg.Name, link.Name, link.Source)
		if err := report.WriteGrids(w, format, report.RemoteEstimateGrids(e, highlight)...); err != nil {
			return err
		}
	}
	return nil
}

// calibratedRequestOverhead is the remote per-request overhead a calibration
// file measured (ok false without a file or without the measurement).
func calibratedRequestOverhead(path string) (float64, bool, error) {
	if path == "" {
		return 0, false, nil
	}
	cal, err := configs.LoadCalibration(path)
	if err != nil {
		return 0, false, fmt.Errorf("--calibration: %w", err)
	}
	if cal.Remote == nil {
		return 0, false, nil
	}
	return cal.Remote.RequestOverheadS, true, nil
}
