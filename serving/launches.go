package serving

import (
	"context"
	"fmt"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// This file is the host side of the GPU engine's iteration: the launches
// PassExecutor queues on exec/cuda (kernels, cuBLAS calls, copies and
// memsets, each one call from the host), counted from the engine's own ops
// the way runRows and runPerSequence run them, and the cost that prices an
// iteration at the larger of its device time and those launches' host
// time. The engine runs eagerly (no CUDA graph), so on a small model its
// host, not its GPU, sets the pace.

// EngineLaunches counts the launches of one iteration of an engine plan
// (EngineConfig's) on the GPU backend by running the engine's own pass
// order (passPlan.runRows, runSeq) into exec/cuda's LaunchCounter instead
// of a device: per pass, the layers' ops that treat rows alone once over
// its rows; per sequence, the ops before the layers and every layer's
// attention on its slot, with its rows copied into the batch and into and
// out of the slot around each attention; per sequence that samples, its
// last row copied back and the ops after the layers. Each sequence is
// taken to be on a slot whose last pass was at another position (one
// memset moves it): the engine's slots move every pass but the first pass
// of a request on a reused slot whose last pass was at position 0 too.
// Not safe for concurrent use.
type EngineLaunches struct {
	pp passPlan
	lc backend.LaunchCounter
}

// NewEngineLaunches counts for plan, which must be EngineConfig's, with
// the GPU backend's count (exec/cuda's LaunchCounter, through the backend
// registry).
func NewEngineLaunches(plan *partition.Plan) (*EngineLaunches, error) {
	if plan.Microbatches < 2 || plan.MicrobatchSize != 1 || len(plan.Ranks) != 1 {
		return nil, fmt.Errorf("serving engine: launches are counted on EngineConfig's plan (one rank, micro-batches of one sequence, one for the batch; got %d ranks, %d micro-batches of %d)",
			len(plan.Ranks), plan.Microbatches, plan.MicrobatchSize)
	}
	lc, err := backend.Default().LaunchCounter(configs.BackendCUDA, plan, 0)
	if err != nil {
		return nil, err
	}
	return &EngineLaunches{pp: passPlan{plan: plan, batchMB: plan.Microbatches - 1}, lc: lc}, nil
}

// launchSink counts a pass's ops and copies.
type launchSink struct{ lc backend.LaunchCounter }

func (s launchSink) execOp(_ context.Context, _ *Scheduled, op *partition.Op, past int) error {
	s.lc.Exec(op, past)
	return nil
}

func (s launchSink) copyRows(_ model.Buf, width, _, _, _, _, rows int) error {
	if width*rows > 0 {
		s.lc.CopyRows()
	}
	return nil
}

// Iteration is the launches of one iteration of batch (sequence i on slot
// i): batched, in passes of at most the plan's PrefillChunk rows, or one
// pass per sequence. It fails only on a batch the engine would refuse.
func (n *EngineLaunches) Iteration(batch []Scheduled, batched bool) (int, error) {
	n.lc.Reset()
	ctx, sink := context.Background(), launchSink{n.lc}
	if !batched {
		for i := range batch {
			if err := n.pp.runSeq(ctx, sink, &batch[i], i%n.pp.batchMB); err != nil {
				return 0, err
			}
		}
		return n.lc.Launches(), nil
	}
	next := 0
	err := n.pp.passesOf(batch, func(part []Scheduled, T int) error {
		slots := make([]int, len(part))
		for i := range slots {
			slots[i] = next % n.pp.batchMB
			next++
		}
		return n.pp.runRows(ctx, sink, part, slots, T)
	})
	return n.lc.Launches(), err
}

// HostBoundCost prices an iteration of the GPU engine: the larger of
// Device's time for it (the GPU's work, launched ahead of it) and its
// launches (Launches) × LaunchHostS, the host's time to queue them. The
// engine's host loop and its GPU overlap, so the slower of the two sets
// the iteration's pace.
type HostBoundCost struct {
	Device      Coster
	Launches    *EngineLaunches
	LaunchHostS float64
	// Batched says the engine runs one pass over an iteration's rows
	// (PassExecutor.Batched); else one pass per sequence, which Device
	// then prices as PerSequenceCost does.
	Batched bool
}

// TimeS prices a shape of decoding sequences (Simulate calls BatchTimeS):
// a shape has no per-sequence detail, so every sequence is taken to bring
// Tokens/Seqs rows and Samples of them to sample.
func (c HostBoundCost) TimeS(sh sim.IterationShape) (float64, error) {
	d, err := c.Device.TimeS(sh)
	if err != nil {
		return 0, err
	}
	seqs := make([]Seq, sh.Seqs)
	batch := make([]Scheduled, sh.Seqs)
	for i := range batch {
		batch[i] = Scheduled{Seq: &seqs[i], Q: max(1, sh.Tokens/max(1, sh.Seqs)), Sample: i < sh.Samples}
	}
	return c.hostBound(d, batch)
}

// BatchTimeS is max(device time, launches × LaunchHostS) of batch.
func (c HostBoundCost) BatchTimeS(batch []Scheduled) (float64, error) {
	var d float64
	var err error
	if bc, ok := c.Device.(BatchCoster); ok {
		d, err = bc.BatchTimeS(batch)
	} else {
		var sh sim.IterationShape
		for _, b := range batch {
			sh.Add(b.Q, b.Past, b.Sample)
		}
		d, err = c.Device.TimeS(sh)
	}
	if err != nil {
		return 0, err
	}
	return c.hostBound(d, batch)
}

// hostBound is the larger of device time d and batch's launches' host time.
func (c HostBoundCost) hostBound(d float64, batch []Scheduled) (float64, error) {
	n, err := c.Launches.Iteration(batch, c.Batched)
	if err != nil {
		return 0, err
	}
	return max(d, float64(n)*c.LaunchHostS), nil
}

// EngineCost is the model of PassExecutor running plan (EngineConfig's) on
// backendName, batched or per sequence, and a line saying how it prices an
// iteration. On the CPU backend an iteration costs its ops' time (one pass
// over the rows, or each sequence's pass alone). On the GPU backend
// (configs.BackendCUDA) it is HostBoundCost: the device time of the same
// passes run without CUDA graphs (the engine's Compute captures none),
// and its launches × launchHostS (the calibration's [engine] figure, else
// the hardware's kernel_launch_s: configs.EngineLaunchHostS).
func EngineCost(plan *partition.Plan, backendName string, batched bool, launchHostS float64) (Coster, string, error) {
	gpu := backendName == configs.BackendCUDA
	if gpu && !(launchHostS > 0) {
		return nil, "", fmt.Errorf("serving engine: the host cost of a launch must be > 0 s (got %g): the hardware's kernel_launch_s or the calibration's engine.launch_host_s", launchHostS)
	}
	priced := plan
	if gpu {
		eager := *plan
		eager.System.GPU.CUDAGraphs = false
		priced = &eager
	}
	im, err := sim.NewIterationModel(priced, sim.Options{})
	if err != nil {
		return nil, "", err
	}
	var dev Coster = im
	how := "one batched pass over each iteration's rows (attention and sampling per sequence)"
	if !batched {
		dev, how = PerSequenceCost{M: im}, "one pass per sequence"
	}
	if !gpu {
		if !batched {
			how = ""
		}
		return dev, how, nil
	}
	n, err := NewEngineLaunches(plan)
	if err != nil {
		return nil, "", err
	}
	slots := plan.Microbatches - 1
	seqs := make([]Seq, slots)
	decode := make([]Scheduled, slots)
	for i := range decode {
		decode[i] = Scheduled{Seq: &seqs[i], Q: 1, Past: 1, Sample: true}
	}
	k, err := n.Iteration(decode, batched)
	if err != nil {
		return nil, "", err
	}
	return HostBoundCost{Device: dev, Launches: n, LaunchHostS: launchHostS, Batched: batched},
		fmt.Sprintf("%s, on the GPU without CUDA graphs; an iteration costs the larger of its device time and its launches × %.3g µs of host time (%d launches to decode %d sequences)",
			how, launchHostS*1e6, k, slots), nil
}
