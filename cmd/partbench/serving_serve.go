package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/cliflag"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/gcpace"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/remote/wire"
	"github.com/partbench/partbench/serving"
)

// engineHostOptions are `partbench serve`'s flags of the serving engine it
// hosts beside its sessions (Generate calls on either transport).
type engineHostOptions struct {
	config      string
	calibration string
	context     int
	maxNumSeqs  int
	maxBatched  int
	scheduler   string
	perSequence bool
}

// engineHostFlags are the flags that act only with --engine-config.
var engineHostFlags = []string{"engine-context", "max-num-seqs", "max-num-batched-tokens", "scheduler", "per-sequence"}

func addEngineHostFlags(f *pflag.FlagSet, o *engineHostOptions) {
	f.StringVar(&o.config, "engine-config", "", "also host a continuous-batching serving engine of this single-rank config (TOML file or preset) for 'partbench serving --server HOST:PORT --transport grpc|tcp'")
	f.IntVar(&o.context, "engine-context", 512, "with --engine-config: tokens one sequence may reach (prompt + output): the engine's KV slot")
	f.IntVar(&o.maxNumSeqs, "max-num-seqs", 8, "with --engine-config: sequences the engine holds and batches at once (its KV slots)")
	f.IntVar(&o.maxBatched, "max-num-batched-tokens", 256, "with --engine-config: new tokens per iteration (the rows of one batched pass)")
	cliflag.Choice(f, &o.scheduler, "scheduler", "with --engine-config: continuous, chunked (chunked prefill) or static",
		serving.PolicyChunked, serving.PolicyContinuous, serving.PolicyStatic)
	f.BoolVar(&o.perSequence, "per-sequence", false, "with --engine-config: run each scheduled sequence's pass in turn instead of one batched pass per iteration")
}

// start builds the engine on the named backend and runs its loop until
// the returned stop is called; it says on stderr what it runs.
func (o *engineHostOptions) start(fs *pflag.FlagSet, backendName string, stderr io.Writer) (*serving.EngineServer, func(), error) {
	if o.config == "" {
		if cliflag.Changed(fs, engineHostFlags...) {
			return nil, nil, fmt.Errorf("--%s: acts with --engine-config only", strings.Join(engineHostFlags, ", --"))
		}
		return nil, func() {}, nil
	}
	if o.context < 2 {
		return nil, nil, fmt.Errorf("--engine-context: must be ≥ 2 tokens per sequence (got %d)", o.context)
	}
	cfgs, _, err := configs.LoadCalibrated([]string{o.config}, "")
	if err != nil {
		return nil, nil, fmt.Errorf("--engine-config: %w", err)
	}
	so := &servingOptions{maxNumSeqs: o.maxNumSeqs, maxBatched: o.maxBatched, scheduler: o.scheduler, router: serving.RouterRoundRobin}
	plan, scfg, err := so.enginePlan(cfgs[0], o.context)
	if err != nil {
		return nil, nil, fmt.Errorf("--engine-config: %w", err)
	}
	ex, err := serving.NewPassExecutor(plan, backendName, o.perSequence)
	if err != nil {
		return nil, nil, fmt.Errorf("--engine-config: %w", err)
	}
	srv, err := serving.NewEngineServer(scfg, ex, o.context)
	if err != nil {
		ex.Close()
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	fmt.Fprintf(stderr, "partbench serve: serving engine %s on --backend %s: %s, %d slots of %d tokens, %d tokens per iteration, %s scheduler, %d B\n",
		plan.Config.Name, backendName, ex.Mode(), o.maxNumSeqs, o.context, o.maxBatched, o.scheduler, ex.AllocatedBytes())
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(stderr, "partbench serve: serving engine: %v\n", err)
		}
		ex.Close()
	}
	return srv, stop, nil
}

// serveListening is the first line `partbench serve` prints; the
// transport and the address follow.
const serveListening = "partbench serve: "

// runLoadRemote loads a partbench serve that hosts an engine, over gRPC or
// raw TCP, and measures at the client.
func (o *servingOptions) runLoadRemote(reqs []serving.Request, addr string) (*serving.Result, error) {
	cc := remote.ClientConfig{Addr: addr, Transport: o.transport, CallTimeout: time.Duration(o.measureTime * float64(time.Second))}
	if o.tokenFile != "" {
		tok, err := wire.ReadTokenFile("--token-file", o.tokenFile)
		if err != nil {
			return nil, err
		}
		cc.Token = tok
	}
	cc.TLSCA = o.tlsCA
	ctx, cancel := context.WithTimeout(o.ctx, 30*time.Second)
	c, err := remote.DialGenerate(ctx, cc)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("--server %s: %w", addr, err)
	}
	defer c.Close()
	// Set up: pace the load generator's collector before it times requests
	// (gcpace; the spawned or remote server paces its own).
	gcpace.Apply(gcpace.Headroom)
	ctx, cancel = context.WithTimeout(o.ctx, time.Duration(o.measureTime*float64(time.Second)))
	defer cancel()
	return serving.LoadRemote(ctx, reqs, serving.RemoteTarget{Client: c, RequestTimeout: time.Duration(o.measureTime * float64(time.Second))}, o.maxConcurrency)
}

// spawnServeArgs are the arguments of a `partbench serve` child hosting
// this run's engine on a free loopback port.
func (o *servingOptions) spawnServeArgs() []string {
	args := []string{"serve", "--listen", "127.0.0.1:0", "--transport", o.transport, "--backend", o.backend, "--engine-config", o.config,
		"--engine-context", fmt.Sprint(o.engineContext), "--max-num-seqs", fmt.Sprint(o.maxNumSeqs),
		"--max-num-batched-tokens", fmt.Sprint(o.maxBatched), "--scheduler", o.scheduler}
	if o.perSequence {
		args = append(args, "--per-sequence")
	}
	return args
}

// remoteTransport reports whether the load goes to a partbench serve
// (gRPC or raw TCP) rather than an HTTP completions server.
func (o *servingOptions) remoteTransport() bool { return o.transport == "grpc" || o.transport == "tcp" }

// checkTransport resolves --transport and refuses the client flags that
// cannot act.
func (o *servingOptions) checkTransport(fs *pflag.FlagSet) error {
	loading := o.server != "" || o.spawnServer
	if !loading {
		if cliflag.Changed(fs, "transport", "token-file", "tls-ca", "backend") {
			return fmt.Errorf("--transport, --token-file, --tls-ca and --backend act with --server or --spawn-server only")
		}
		return nil
	}
	url := strings.HasPrefix(o.server, "http://") || strings.HasPrefix(o.server, "https://")
	switch o.transport {
	case "":
		o.transport = "http"
		if o.server != "" && !url {
			o.transport = "grpc"
		}
	case "http", "grpc", "tcp":
	default:
		return fmt.Errorf("--transport: must be http, grpc or tcp (got %q)", o.transport)
	}
	switch {
	case o.remoteTransport() && url:
		return fmt.Errorf("--server %s: with --transport %s, give HOST:PORT of a 'partbench serve --engine-config', not a URL", o.server, o.transport)
	case !o.remoteTransport() && (o.tokenFile != "" || o.tlsCA != ""):
		return fmt.Errorf("--token-file and --tls-ca act with --transport grpc or tcp (partbench serve), not http")
	case o.backend != "cpu" && !(o.spawnServer && o.remoteTransport()):
		return fmt.Errorf("--backend %s: picks the engine of a spawned 'partbench serve' (--spawn-server --transport grpc|tcp); --server's engine runs where it was started", o.backend)
	case o.remoteTransport() && cliflag.Changed(fs, "served-model-name"):
		return fmt.Errorf("--served-model-name: the \"model\" field of an HTTP completion; a Generate call (--transport %s) has none", o.transport)
	case o.spawnServer && o.remoteTransport() && (o.tokenFile != "" || o.tlsCA != ""):
		return fmt.Errorf("--token-file and --tls-ca: a spawned server listens on loopback without them; they act with --server")
	}
	return nil
}
