package calib

import (
	"context"
	"fmt"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/serving"
)

// The host cost of one launch of the GPU serving engine, measured through
// the engine itself (serving.PassExecutor on exec/cuda, the Go launch path
// `partbench serve --backend cuda` takes): decode iterations of
// EngineLaunchSeqs sequences of EngineLaunchConfig, their wall time over
// the launches they queued (kernels, cuBLAS calls, copies and memsets). On
// this tiny model each kernel takes less than its launch, so an iteration
// lasts as long as its host takes to queue it; the serving model prices
// the engine's iterations at the larger of their device time and their
// launches × this figure (serving.HostBoundCost).
const (
	EngineLaunchConfig  = "test/single-tiny"
	EngineLaunchSeqs    = 16
	engineLaunchContext = 128 // the slots' tokens, as gpu-check's serving step (--engine-context)
	engineWarmup        = 3
	engineFirstPast     = 8 // the tokens each sequence holds at the first iteration
	// engineIterations is the decode iterations timed per repeat (quick:
	// engineQuickIterations); every repeat's positions advance one a
	// step, within the slots' context.
	engineIterations      = 20
	engineQuickIterations = 8
)

// measureEngineLaunch sets cal.Engine, or notes why it could not.
func measureEngineLaunch(ctx context.Context, o Options, cal *configs.Calibration) {
	e, spread, modeled, err := engineLaunch(ctx, o)
	if err != nil {
		note(cal, "engine.launch_host_s not measured: %v", err)
		return
	}
	cal.Engine = e
	if e.Launches != modeled {
		w := fmt.Sprintf("the serving engine queued %d launches per decode iteration of %d sequences of %s where the serving model counts %d (serving.EngineLaunches): the model's host time is off by that ratio on this device",
			e.Launches, e.Seqs, e.Config, modeled)
		note(cal, "%s", w)
		cal.Info.Warnings = append(cal.Info.Warnings, w)
	}
	cal.Comments["engine"] = fmt.Sprintf("measured: %d decode iterations of %d sequences of %s through the serving engine's Go launch path on exec/cuda, wall time over launches, median of %d repeats (min %.3g s, max %.3g s)",
		e.Iterations, e.Seqs, e.Config, spread.N, spread.Min, spread.Max)
}

// engineLaunch runs the engine's decode iterations and returns its figure,
// the spread over repeats and the launches the serving model counts for one
// of those iterations.
func engineLaunch(ctx context.Context, o Options) (e *configs.EngineCalibration, sp configs.Spread, modeled int, err error) {
	cfg, err := configs.Load(EngineLaunchConfig)
	if err != nil {
		return nil, sp, 0, err
	}
	ec, err := serving.EngineConfig(cfg, EngineLaunchSeqs, engineLaunchContext)
	if err != nil {
		return nil, sp, 0, err
	}
	plan, err := partition.NewPlan(ec)
	if err != nil {
		return nil, sp, 0, err
	}
	ex, err := serving.NewPassExecutor(plan, configs.BackendCUDA, false)
	if err != nil {
		return nil, sp, 0, err
	}
	defer ex.Close()
	counter, err := serving.NewEngineLaunches(plan)
	if err != nil {
		return nil, sp, 0, err
	}
	iters := engineIterations
	if o.Quick {
		iters = engineQuickIterations
	}
	repeats := max(1, o.Repeats)
	seqs := make([]serving.Seq, EngineLaunchSeqs)
	batch := make([]serving.Scheduled, EngineLaunchSeqs)
	for i := range batch {
		seqs[i] = serving.Seq{Req: serving.Request{ID: i, InputLen: engineFirstPast, OutputLen: engineLaunchContext - engineFirstPast}}
		batch[i] = serving.Scheduled{Seq: &seqs[i], Q: 1, Past: engineFirstPast, Sample: true}
	}
	// Every position must stay inside the slots: fewer iterations per
	// repeat where many repeats are asked for.
	if iters = min(iters, (plan.Config.Workload.PromptTokens()-engineFirstPast-engineWarmup)/repeats); iters < 1 {
		return nil, sp, 0, fmt.Errorf("%d repeats of a decode step after %d tokens do not fit the engine's %d-token slots", repeats, engineFirstPast, engineLaunchContext)
	}
	modeled, err = counter.Iteration(batch, ex.Batched())
	if err != nil {
		return nil, sp, 0, err
	}
	run := func() error {
		if err := ex.Run(ctx, batch); err != nil {
			return err
		}
		for i := range batch {
			batch[i].Past++
		}
		return nil
	}
	for range engineWarmup {
		if err := run(); err != nil {
			return nil, sp, 0, err
		}
	}
	per := make([]float64, repeats)
	perIter := int64(0)
	for r := range per {
		l0, ok := ex.Launches()
		if !ok {
			return nil, sp, 0, fmt.Errorf("the GPU backend counts no launches")
		}
		start := time.Now()
		for range iters {
			if err := run(); err != nil {
				return nil, sp, 0, err
			}
		}
		wall := time.Since(start).Seconds()
		l1, _ := ex.Launches()
		if l1 <= l0 {
			return nil, sp, 0, fmt.Errorf("the engine queued no launch in %d decode iterations", iters)
		}
		perIter = (l1 - l0) / int64(iters)
		per[r] = wall / float64(l1-l0)
	}
	sp = spreadOf(per)
	return &configs.EngineCalibration{LaunchHostS: sp.Median, Config: EngineLaunchConfig, Seqs: EngineLaunchSeqs, Launches: int(perIter),
		Iterations: repeats * iters}, sp, modeled, nil
}
