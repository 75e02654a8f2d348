package hf

import (
	"context"
	"fmt"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// CheckOptions are CheckModelDir's backends and bounds.
type CheckOptions struct {
	// Backend runs each partitioning; Reference runs the single rank every
	// partitioning is compared with (nil: Backend). With a Reference, the
	// single rank on Backend is checked too.
	Backend   Backend
	Reference *Backend
	// DecodeSteps and Tolerance are exec.CheckOptions' (0: their defaults;
	// Tolerance 0 with a Reference: Backend.Tolerance).
	DecodeSteps int
	Tolerance   float64
}

// checkOptions are exec.Check's options with m's slices as every rank's
// weights, the seeded token schedule fed.
func (m *Model) checkOptions(o CheckOptions) pexec.CheckOptions {
	with := func(b Backend) func(*partition.Plan, int) (pexec.Compute, error) {
		return func(plan *partition.Plan, rank int) (pexec.Compute, error) {
			return b.NewCompute(plan, rank, m.Shards, nil)
		}
	}
	co := pexec.CheckOptions{DecodeSteps: o.DecodeSteps, Tolerance: o.Tolerance, NewCompute: with(o.Backend), NewComms: o.Backend.NewComms}
	if o.Reference != nil {
		co.NewReference = with(*o.Reference)
		if co.Tolerance == 0 {
			co.Tolerance = o.Backend.Tolerance
		}
	}
	return co
}

// CheckModelDir checks every partitioning of at most maxRanks ranks that
// run's model allows (configs.ModelDirRun.Partitionings) against the single
// rank, all with the checkpoint's weights: one result per partitioning, in
// order (the single rank itself only when it runs on another backend than
// the reference). A partitioning that fails is a result that did not pass;
// an error is a failure to read the directory or to run.
func CheckModelDir(ctx context.Context, run configs.ModelDirRun, maxRanks int, o CheckOptions) ([]pexec.CheckResult, error) {
	if err := o.Backend.check(); err != nil {
		return nil, err
	}
	base, err := run.Config()
	if err != nil {
		return nil, err
	}
	m, err := OpenFor(base, base.Model.Dir)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	co := m.checkOptions(o)
	var out []pexec.CheckResult
	for _, p := range run.Partitionings(base.Model, maxRanks) {
		if p.TP*p.PP == 1 && o.Reference == nil {
			continue // the reference itself
		}
		cfg, err := p.Config()
		if err != nil {
			return nil, err
		}
		res, err := pexec.Check(ctx, cfg, co)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Name, err)
		}
		out = append(out, res)
	}
	return out, nil
}
