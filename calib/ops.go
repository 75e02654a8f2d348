package calib

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// OpsConfig is the config whose compute ops CheckOps times: one rank of the
// tiny model, so no communication and no other rank shares the machine.
const OpsConfig = "test/single-tiny"

// CheckOps holds the calibrated model against the CPU backend op by op: it
// applies cal to the one-rank config name, runs its prefill and decode
// Programs through exec/cpu (compute ops only, each timed; repeats
// iterations after one warm-up), and sums per phase and op kind the median
// measured time and the time of the same ops in sim's timeline (prefill,
// and the decode step the estimate measures TPOT over). It shows which
// kinds of op the profile's single FLOP rate and byte rates describe, and
// which they do not.
func CheckOps(ctx context.Context, cal *configs.Calibration, name string, repeats int) ([]configs.OpSample, error) {
	cfg, plan, model, err := opCheckModelPlan(cal, name)
	if err != nil {
		return nil, err
	}
	c, err := deviceCompute(configs.BackendCPU, 0, plan, 0)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	progs := map[partition.Phase]partition.Program{
		partition.Prefill: plan.Program(0, partition.Prefill),
		partition.Decode:  plan.Program(0, partition.Decode),
	}
	meas := map[partition.Phase][][]float64{}
	for ph, p := range progs {
		meas[ph] = make([][]float64, len(p.Ops))
	}
	decodeSteps := cfg.Workload.OutputTokens - 1
	run := func(ph partition.Phase, step int, keep bool) error {
		prog := progs[ph]
		past := pexec.Past(plan, ph, step)
		for i := range prog.Ops {
			op := &prog.Ops[i]
			start := time.Now()
			if err := c.Exec(ctx, op, past(op)); err != nil {
				return fmt.Errorf("op check: %s %s: %w", ph, op.Name, err)
			}
			if keep {
				meas[ph][i] = append(meas[ph][i], time.Since(start).Seconds())
			}
		}
		return nil
	}
	for it := 0; it <= max(1, repeats); it++ {
		if err := run(partition.Prefill, 0, it > 0); err != nil {
			return nil, err
		}
		for s := 0; s < decodeSteps; s++ {
			if err := run(partition.Decode, s, it > 0); err != nil {
				return nil, err
			}
		}
	}

	sums := map[opCheckKey]*configs.OpSample{}
	for ph, p := range progs {
		for i, op := range p.Ops {
			k := opCheckKey{string(ph), string(op.Kind)}
			if sums[k] == nil {
				sums[k] = &configs.OpSample{Config: cfg.Name, Phase: k.phase, Kind: k.kind, ModelS: model[k]}
			}
			sums[k].Calls++
			sums[k].MeasuredS += medianOf(meas[ph][i])
		}
	}
	for k, m := range model { // a kind sim's timeline holds and the Programs do not
		if sums[k] == nil {
			sums[k] = &configs.OpSample{Config: cfg.Name, Phase: k.phase, Kind: k.kind, ModelS: m}
		}
	}
	out := make([]configs.OpSample, 0, len(sums))
	for _, s := range sums {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Phase != out[j].Phase {
			return out[i].Phase > out[j].Phase // prefill first
		}
		return out[i].MeasuredS > out[j].MeasuredS
	})
	return out, nil
}

// opCheckKey is an op check row: a phase and an op kind.
type opCheckKey struct{ phase, kind string }

// opCheckModelPlan is the model side of the op check of cal on the
// one-rank config name: the config with cal applied, its plan, and per
// phase and op kind the time of its ops in sim's timeline (prefill, and
// the decode step the estimate measures TPOT over).
func opCheckModelPlan(cal *configs.Calibration, name string) (*configs.Config, *partition.Plan, map[opCheckKey]float64, error) {
	cfg, err := configs.Load(name)
	if err != nil {
		return nil, nil, nil, err
	}
	cal.Apply(cfg)
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, fmt.Errorf("%s with the calibration: %w", name, err)
	}
	if cfg.Parallel.TP*cfg.Parallel.PP != 1 {
		return nil, nil, nil, fmt.Errorf("op check: %s has %d ranks; it needs a one-rank config", name, cfg.Parallel.TP*cfg.Parallel.PP)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	const steps = 6
	e, err := sim.EstimatePlan(plan, sim.Options{DecodeSteps: steps})
	if err != nil {
		return nil, nil, nil, err
	}
	model := map[opCheckKey]float64{}
	for _, sl := range e.Timeline.All() {
		if sl.Phase == partition.Decode && sl.Step != steps/2 {
			continue
		}
		model[opCheckKey{string(sl.Phase), string(sl.Op.Kind)}] += sl.EndS - sl.StartS - sl.WaitS
	}
	return cfg, plan, model, nil
}
