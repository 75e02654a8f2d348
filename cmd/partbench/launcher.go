package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/report"
)

// launch is `run --nproc N`: it checks the config and every flag once, here,
// so a mistake prints one error rather than one per rank, then starts the
// ranks and returns the worst one's exit code. After SIGINT/SIGTERM it ends
// within a second with 128+signal, its ranks with it.
func (o *runOptions) launch(ctx context.Context) error {
	if o.nproc < 1 {
		return fmt.Errorf("--nproc %d: must be at least 1 (the number of local ranks to start)", o.nproc)
	}
	cfg, err := o.loadRunConfig()
	if err != nil {
		return err
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return err
	}
	if plan.Size() != o.nproc {
		return fmt.Errorf("--nproc %d: %s needs %s = %d ranks", o.nproc, cfg.Name, plan.Factors(), plan.Size())
	}
	if o.backend != "cuda" { // cuda is checked by each rank on its own GPU
		if _, _, _, _, err := o.backendFor(cfg, launch.Env{}); err != nil {
			return err
		}
	}
	spawn := launch.SpawnOptions{NProc: o.nproc}
	if o.rendezvous != "" {
		host, port, err := parseRendezvous(o.rendezvous, o.nproc)
		if err != nil {
			return err
		}
		spawn.MasterAddr, spawn.MasterPort = host, port
	}
	if err := report.CheckOutDir(o.outDir); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	spawn.Argv = append([]string{exe}, o.rankArgs()...)
	boundsOwnExit(ctx)
	// Spawn forwards the signal itself (and kills ranks that outlive the
	// bound); a cancelled ctx would send SIGTERM before SIGINT is forwarded.
	code, err := launch.Spawn(context.WithoutCancel(ctx), spawn)
	if err != nil {
		return &exitError{code: max(code, 1), err: err}
	}
	if code != 0 {
		return &exitError{code: code, err: fmt.Errorf("a rank exited with status %d", code)}
	}
	return nil
}

// parseRendezvous checks --rendezvous host:port for a world of size ranks.
func parseRendezvous(addr string, size int) (string, int, error) {
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
		host = launch.DefaultRendezvousHost
	}
	return host, port, nil
}

// preflightRank checks, before a rank joins, what would otherwise fail late:
// --rendezvous (then used as the rank's address), and on rank 0 a writable
// --out. A rank 0 that cannot save results does not run, and tells the ranks
// that reach it why, so they end at once rather than after the join timeout.
func (o *runOptions) preflightRank(ctx context.Context, cfg *configs.Config, env *launch.Env) error {
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return err
	}
	if o.rendezvous != "" {
		if _, _, err := parseRendezvous(o.rendezvous, plan.Size()); err != nil {
			return err
		}
		env.RendezvousAddr = o.rendezvous
	}
	if env.Rank != 0 {
		return nil
	}
	if err := report.CheckOutDir(o.outDir); err != nil {
		_ = rendezvous.Refuse(ctx, rendezvous.Options{
			Addr: env.RendezvousAddr, Rank: 0, Size: plan.Size(), LaunchedSize: env.Size,
			ConfigHash: cfg.Hash(), JobID: env.JobID, JoinTimeout: o.joinTimeout,
		}, "rank 0 cannot run: "+err.Error())
		return err
	}
	return nil
}

// writeResults writes results.json and results.csv into --out; when that
// fails, the results go to stdout as JSON (unless they were printed so
// already) and the error says so.
func (o *runOptions) writeResults(stdout io.Writer, doc *report.RunDoc) error {
	asJSON := func(w io.Writer) error { return report.RunJSON(w, doc) }
	fallback := asJSON
	if o.format == report.FormatJSON {
		fallback = nil
	}
	return report.WriteOutFiles(o.outDir, []report.OutFile{
		{Name: "results.json", Write: asJSON},
		{Name: "results.csv", Write: func(w io.Writer) error { return report.RunCSV(w, doc) }},
	}, stdout, fallback)
}
