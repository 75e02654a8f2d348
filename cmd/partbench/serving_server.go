package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/serving"
	"github.com/partbench/partbench/sigexit"
)

// engineListening is the first line --serve-engine prints: the URL follows.
const engineListening = "partbench serving: engine listening on "

// runServeEngine serves the CPU engine over HTTP until SIGINT or SIGTERM,
// then stops taking requests and drains.
func (o *servingOptions) runServeEngine(fs *pflag.FlagSet, stdout io.Writer, cfg *configs.Config) error {
	if err := o.checkEngineFlags(fs, "--serve-engine"); err != nil {
		return err
	}
	if o.engineContext < 2 {
		return fmt.Errorf("--engine-context: must be ≥ 2 tokens per sequence (got %d)", o.engineContext)
	}
	plan, scfg, err := o.enginePlan(cfg, o.engineContext)
	if err != nil {
		return fmt.Errorf("--serve-engine: %w", err)
	}
	scfg.MaxConcurrency = 0 // a client-side cap
	ex, err := serving.NewPassExecutor(plan, "cpu", o.perSequence)
	if err != nil {
		return err
	}
	defer ex.Close()
	srv, err := serving.NewEngineServer(scfg, ex, o.engineContext)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.serveEngine)
	if err != nil {
		return fmt.Errorf("--serve-engine %s: %w", o.serveEngine, err)
	}
	ctx := o.ctx
	sigexit.DrainsOnSignal(ctx)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	engineDone := make(chan error, 1)
	engineCtx, stopEngine := context.WithCancel(context.Background())
	defer stopEngine()
	go func() { engineDone <- srv.Run(engineCtx) }()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "%shttp://%s\n", engineListening, ln.Addr())
	if f, ok := stdout.(*os.File); ok {
		f.Sync()
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		stopEngine()
		return fmt.Errorf("--serve-engine: %w", err)
	case err := <-engineDone:
		hs.Close()
		return err
	}
	// Drain: no new requests, the ones in flight finish (30 s at most).
	shut, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = hs.Shutdown(shut)
	stopEngine()
	if e := <-engineDone; e != nil && err == nil {
		err = e
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// runLoad sends the workload to --server (or to a --spawn-server child)
// and measures it at the client; with --config it prints the model of the
// CPU engine beside it (the server is assumed to run with these flags, as a
// spawned one does).
func (o *servingOptions) runLoad(fs *pflag.FlagSet, stdout io.Writer, cfg *configs.Config, rates, ps []float64, slo serving.Goodput) error {
	if err := o.checkEngineFlags(fs, "--server"); err != nil {
		return err
	}
	reqs, workload, err := o.requests(rates)
	if err != nil {
		return err
	}
	url := o.server
	if o.spawnServer {
		if cfg == nil {
			return fmt.Errorf("--spawn-server: --config names the model the engine serves")
		}
		if o.engineContext < longestOf(reqs) {
			o.engineContext = longestOf(reqs)
		}
		child, u, err := o.spawnEngine()
		if err != nil {
			return fmt.Errorf("--spawn-server: %w", err)
		}
		defer child.stop()
		url = u
	}
	model := o.modelName
	if model == "" && cfg != nil {
		model = cfg.Name
	}
	var measured *serving.Result
	if o.remoteTransport() {
		measured, err = o.runLoadRemote(reqs, url)
	} else {
		ctx, cancel := context.WithTimeout(o.ctx, time.Duration(o.measureTime*float64(time.Second)))
		defer cancel()
		measured, err = serving.Load(ctx, reqs, serving.LoadTarget{BaseURL: url, Model: model, RequestTimeout: time.Duration(o.measureTime * float64(time.Second))}, o.maxConcurrency)
	}
	if err != nil {
		return err
	}
	if cfg == nil {
		if o.saveRequests != "" {
			if err := o.writeRequests(measured.Requests); err != nil {
				return err
			}
		}
		m := serving.Summarize(measured, ps, slo)
		doc := &report.ServingDoc{Config: url, Client: true, Workload: workload, NumPrompts: len(reqs), Burstiness: o.burstiness,
			MaxConcurrency: o.maxConcurrency, Seed: o.seed, Sweep: &serving.Sweep{Points: []serving.Point{{RequestRate: rateOf(o, rates), Metrics: m}}}}
		return report.ToOutput(o.out, stdout, func(w io.Writer) error {
			if o.format == report.FormatJSON {
				return report.ServingJSON(w, version, doc)
			}
			return report.ServingText(w, doc, doc.Sweep.Points[0])
		})
	}
	plan, scfg, err := o.enginePlan(cfg, max(o.engineContext, longestOf(reqs)))
	if err != nil {
		return fmt.Errorf("--server: the model of the engine: %w", err)
	}
	return o.printMeasured(stdout, cfg, plan, scfg, reqs, measured, workload+", at "+url, rates, ps, slo)
}

func rateOf(o *servingOptions, rates []float64) float64 {
	if o.trace != "" || len(rates) != 1 {
		return 0
	}
	return rates[0]
}

type engineChild struct {
	cmd  *osexec.Cmd
	done chan error
}

// spawnEngine starts this binary's `serving --serve-engine` on a free
// loopback port with this run's config and engine flags, and returns the
// URL it printed (within 30 s).
func (o *servingOptions) spawnEngine() (*engineChild, string, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	args := []string{"serving", "--serve-engine", "127.0.0.1:0", "--config", o.config, "--engine-context", strconv.Itoa(o.engineContext),
		"--max-num-seqs", strconv.Itoa(o.maxNumSeqs), "--max-num-batched-tokens", strconv.Itoa(o.maxBatched), "--scheduler", o.scheduler}
	if o.perSequence {
		args = append(args, "--per-sequence")
	}
	prefix := engineListening
	if o.remoteTransport() {
		args, prefix = o.spawnServeArgs(), serveListening+o.transport+" listening on "
	}
	cmd := osexec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	c := &engineChild{cmd: cmd, done: make(chan error, 1)}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		io.Copy(io.Discard, out)
		c.done <- cmd.Wait()
	}()
	select {
	case l, ok := <-first:
		if ok && strings.HasPrefix(l, prefix) {
			return c, strings.TrimPrefix(l, prefix), nil
		}
		cmd.Process.Kill()
		<-c.done
		return nil, "", fmt.Errorf("the engine said %q, not %q", l, prefix+"ADDRESS")
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-c.done
		return nil, "", fmt.Errorf("the engine did not listen within 30 s")
	}
}

// stop sends SIGTERM and waits for the drain (killing after 30 s).
func (c *engineChild) stop() {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}
