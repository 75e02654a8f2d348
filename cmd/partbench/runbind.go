package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/launch"
)

// addBindFlag adds --bind-to: how a rank's threads are bound to its host's
// CPUs. It reaches every rank of `run --nproc-per-node`.
func (o *runOptions) addBindFlag(f *pflag.FlagSet) {
	f.StringVar(&o.bindTo, "bind-to", "auto", "bind each local rank's threads to its own block of the host's CPUs: auto (CPU-backend ranks, when they do not outnumber the CPUs; twice the CPUs: two to a CPU, each tensor-parallel pair on one), core (every backend's, likewise) or none (as mpirun's --bind-to)")
}

// checkBind refuses a --bind-to that is no mode, or that cannot act:
// --check and --emulate-ranks run every rank in this process.
func (o *runOptions) checkBind(f *pflag.FlagSet) error {
	if _, err := launch.ParseBind(o.bindTo); err != nil {
		return err
	}
	if f.Changed("bind-to") && (o.check || o.emulate > 0) {
		return fmt.Errorf("--bind-to %s: --check and --emulate-ranks run every rank in this process, with no rank to bind", o.bindTo)
	}
	return nil
}

// bindRank binds this rank, of backend name and a job whose
// tensor-parallel groups are tp consecutive ranks, as --bind-to says and
// keeps the note for the report.
func (o *runOptions) bindRank(name string, env launch.Env, tp int) error {
	b, err := launch.ParseBind(o.bindTo)
	if err != nil {
		return err
	}
	note, err := launch.BindRank(b, env, name == configs.BackendCPU, tp)
	if err != nil {
		return err
	}
	if note != "" {
		o.notes = append(o.notes, note)
	}
	return nil
}
