package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sigexit"
)

// launch is `run --nproc N`: it checks the config and every flag once, here,
// so a mistake prints one error rather than one per rank, then starts the
// ranks and returns the worst one's exit code. After SIGINT/SIGTERM it ends
// within a second with 128+signal, its ranks with it.
func (o *runOptions) launch(ctx context.Context, flags *pflag.FlagSet, stderr io.Writer) error {
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
	if err := launch.CheckWorld(o.nproc, o.nodes.NNodes, cfg.Name, plan.Factors(), plan.Size()); err != nil {
		return err
	}
	if o.backend != "cuda" { // cuda is checked by each rank on its own GPU
		if _, err := o.backends.Setup(o.backend, cfg, launch.Env{}); err != nil {
			return err
		}
	}
	spawn, err := o.nodes.Spawn(flags, o.nproc, o.rendezvous, stderr)
	if err != nil {
		return err
	}
	if err := report.CheckOutDir(o.outDir); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	spawn.Argv = append(append([]string{exe}, rankArgs(flags)...), o.nodes.ChildArgs()...)
	return spawnRanks(ctx, spawn, "")
}

// spawnRanks starts the local ranks of opts, waits for all and returns the
// worst one's exit code as an exitError; prefix starts its message.
func spawnRanks(ctx context.Context, opts launch.SpawnOptions, prefix string) error {
	sigexit.BoundsOwnExit(ctx)
	// Spawn forwards the signal itself (and kills ranks that outlive the
	// bound); a cancelled ctx would send SIGTERM before SIGINT is forwarded.
	code, err := launch.Spawn(context.WithoutCancel(ctx), opts)
	if err != nil {
		return &exitError{code: max(code, 1), err: err}
	}
	if code != 0 {
		return &exitError{code: code, err: fmt.Errorf("%sa rank exited with status %d", prefix, code)}
	}
	return nil
}

// preflightRank checks, before a rank joins, what would otherwise fail late:
// --rendezvous (then used as the rank's address), and on rank 0 a writable
// --out. A rank 0 that cannot save results does not run, and tells the ranks
// that reach it why, so they end at once rather than after the join timeout.
func (o *runOptions) preflightRank(ctx context.Context, cfg *configs.Config, env *launch.Env) error {
	size := cfg.Parallel.Ranks() // the Plan is built once, by the backend's Setup
	*env = o.nodes.Place(*env)
	if o.rendezvous != "" {
		if _, _, err := launch.ParseRendezvous(o.rendezvous, size); err != nil {
			return err
		}
		env.RendezvousAddr = o.rendezvous
	}
	if env.Rank != 0 {
		return nil
	}
	if err := report.CheckOutDir(o.outDir); err != nil {
		_ = rendezvous.Refuse(ctx, rendezvous.Options{
			Addr: env.RendezvousAddr, Rank: 0, Size: size, LaunchedSize: env.Size,
			ConfigHash: cfg.Hash(), JobID: env.JobID, JoinTimeout: o.joinTimeout,
		}, "rank 0 cannot run: "+err.Error())
		return err
	}
	return nil
}
