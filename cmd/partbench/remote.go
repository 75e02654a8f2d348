package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/remote/server"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sigexit"
	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/nvmldiscover"
)

// exitPayloadMismatch is the exit code when measured payload bytes differ
// from the model's (as run's NCCL byte check).
const exitPayloadMismatch = 4

func newServeCmd() *cobra.Command {
	var o server.ServeOptions
	var backendName string
	var eh engineHostOptions
	cmd := &cobra.Command{
		Use:   "serve [--listen 127.0.0.1:50051] [--token-file T] [--tls-cert C --tls-key K] [--backend cpu|cuda] [--transport grpc|tcp]",
		Short: "Serve the model to remote clients (partbench remote): sessions, a bounded queue, byte counts",
		Long: `Serve a device to clients that have none. Listens on loopback by default; any other
address requires --token-file (bearer token). Drains on SIGTERM or interrupt: requests in flight
finish (up to --drain-timeout), new ones are refused; a second signal stops at once (exit 128 +
the signal: 130, 143). Nothing is written to disk. Bounds (docs/reliability.md, "Server bounds"):
at most 64 unauthenticated connections per transport, each closed after 10 s without the token;
a request's declared sizes are checked against the memory budget before anything is allocated.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkSessionStreamsFlag(cmd, o); err != nil {
				return err
			}
			eng, err := server.BackendEngine(backendName)
			if err != nil {
				return err
			}
			if backendName == configs.BackendCUDA {
				s, err := nvmldiscover.NewSMSampler(0)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "partbench serve: no SM activity: %v\n", err)
				} else {
					defer s.Close()
					o.Util = remote.Activity{Meter: s}
				}
			}
			// Every file is read (small regular files only) before a signal
			// means a drain; a second signal then stops the drain at once.
			if err := o.ReadFiles(); err != nil {
				return err
			}
			gen, stopEngine, err := eh.start(cmd.Flags(), backendName, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer stopEngine()
			if gen != nil {
				o.Generator = gen
			}
			stop, unwatch := server.SecondSignal()
			defer unwatch()
			o.Stop = stop
			sigexit.DrainsOnSignal(cmd.Context())
			return server.Serve(cmd.Context(), o, eng, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:50051", "host:port to listen on (port 0: any free port, printed)")
	f.StringVar(&o.Transport, "transport", "grpc", "grpc, or tcp (the raw-TCP framing of the same protocol)")
	f.StringVar(&o.TokenFile, "token-file", "", "file holding the bearer token every call must present (required off loopback)")
	f.StringVar(&o.TLSCert, "tls-cert", "", "PEM certificate: serve over TLS (with --tls-key), either transport")
	f.StringVar(&o.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&backendName, "backend", configs.BackendCPU, "device backend: cpu or cuda")
	f.Int64Var(&o.MemoryBudgetBytes, "memory-budget", 1<<30, "bytes all open sessions and requests' receive buffers may hold; a session or request that would not fit is refused before allocation")
	f.DurationVar(&o.IdleTimeout, "idle-timeout", 5*time.Minute, "free a session unused this long")
	f.DurationVar(&o.DrainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM, how long requests in flight may finish")
	f.IntVar(&o.MaxConcurrent, "max-concurrent", 1, "requests executing at once")
	f.IntVar(&o.MaxQueue, "max-queue", 64, "requests waiting beyond those; more are refused (ResourceExhausted)")
	f.IntVar(&o.MaxSessionStreams, "max-session-streams", server.DefaultMaxSessionStreams,
		fmt.Sprintf("gRPC: sessions per connection whose steps may each keep one stream open (1 to %d); a session beyond them steps over one call per step", server.MaxSessionStreamsLimit))
	addEngineHostFlags(f, &eh) // serving_serve.go
	return cmd
}

// checkSessionStreamsFlag refuses a --max-session-streams outside its
// range, or given to the raw-TCP transport, where it cannot act.
func checkSessionStreamsFlag(cmd *cobra.Command, o server.ServeOptions) error {
	n := o.MaxSessionStreams
	if n < 1 || n > server.MaxSessionStreamsLimit {
		return fmt.Errorf("--max-session-streams %d: must be 1 to %d (open gRPC session streams per connection)", n, server.MaxSessionStreamsLimit)
	}
	if cmd.Flags().Changed("max-session-streams") && o.Transport == "tcp" {
		return fmt.Errorf("--max-session-streams %d: applies to --transport grpc only (a raw-TCP session steps on its connection, with no stream to keep open)", n)
	}
	return nil
}

func newRemoteCmd() *cobra.Command {
	o := &remote.MeasureOptions{}
	var format string
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
			var err error
			if o.Local, err = server.BackendEngine(configs.BackendCPU); err != nil {
				return err
			}
			tr, rf, err := remote.Measure(cmd.Context(), *o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			stdout := cmd.OutOrStdout()
			if err := report.WriteTables(stdout, format, "remote", version, report.RemoteResultsGrids(rf)...); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s and %s\n", filepath.Join(o.Out, "results.csv"), filepath.Join(o.Out, "results.json")) // stdout holds only the tables
			if len(tr.Mismatches) > 0 {
				return &exitError{code: exitPayloadMismatch, err: fmt.Errorf("payload bytes differ from the model (partition.RemoteBytesOf) in %d requests: %s",
					len(tr.Mismatches), strings.Join(tr.Mismatches, "; "))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Config, "config", "", "model config (TOML file or preset; single rank: parallel.tp = pp = 1)")
	f.StringVar(&o.Conn.Server, "server", "", "server address host:port")
	f.BoolVar(&o.Conn.Spawn, "spawn-server", false, "start a local 'partbench serve' child on a free loopback port, run, stop it")
	f.StringVar(&o.Conn.Transport, "transport", "grpc", "grpc or tcp")
	f.StringVar(&o.Conn.TokenFile, "token-file", "", "file holding the server's bearer token")
	f.StringVar(&o.Conn.TLSCA, "tls-ca", "", "PEM CA that signed the server's TLS certificate (turns TLS on, either transport)")
	f.StringVar(&o.Mode, "mode", "all", "naive, kv, stateful, local, or all")
	f.IntVar(&o.Trials, "trials", 3, "recorded trials per mode")
	f.IntVar(&o.Warmup, "warmup", 1, "unrecorded trials per mode first")
	cliflag.OutputDir(f, &o.Out, "results", "directory for results.csv and results.json", "out")
	f.StringVar(&o.Link, "link", "loopback", "client link whose bandwidth prices payload in the overhead column: "+strings.Join(topology.ClientLinkNames(), ", ")+", or BYTES_PER_S[:LATENCY_S]")
	cliflag.Format(f, &format, cliflag.TableFormats...)
	f.DurationVar(&o.Conn.CallTimeout, "call-timeout", 2*time.Minute, "deadline of every call")
	return cmd
}
