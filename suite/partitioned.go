package suite

import (
	"context"
	"fmt"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/remote/wire"
	"github.com/partbench/partbench/sim"
)

// partitionedSteps is the decode steps a partitioned cell runs after the
// prefill: the local baseline's (plan.DecodeSteps), none for an encoder.
func partitionedSteps(plan *partition.Plan) int {
	if plan.Model.Encoder {
		return 0
	}
	return plan.DecodeSteps()
}

// partitionedModel is sim's and the Program's view of a partitioned cell:
// the headline latency (sim.EstimatePlan: the prefill's TTFT, a decode
// step's TPOT, or TTFT + steps × TPOT for smoke), the inter-rank wire bytes
// of the same unit from the Programs (plan.Counts), and the whole
// generation's modeled time.
func partitionedModel(plan *partition.Plan, kind string) (lat, bytes, gen float64, err error) {
	e, err := sim.EstimatePlan(plan, sim.Options{})
	if err != nil {
		return 0, 0, 0, err
	}
	steps := partitionedSteps(plan)
	pre, dec := programWire(plan, partition.Prefill), programWire(plan, partition.Decode)
	gen = e.Prefill.TTFTS + float64(steps)*e.Decode.TPOTS
	switch kind {
	case KindDecode:
		return e.Decode.TPOTS, float64(dec), gen, nil
	case KindSmoke:
		return gen, float64(pre + int64(steps)*dec), gen, nil
	default:
		return e.Prefill.TTFTS, float64(pre), gen, nil
	}
}

// programWire is the wire bytes every rank's phase Program sends its peers.
func programWire(plan *partition.Plan, phase partition.Phase) int64 {
	var snaps []commcount.Snapshot
	for r := range plan.Size() {
		snaps = append(snaps, plan.Counts(plan.Program(r, phase)))
	}
	return pexec.WireBytes(snaps)
}

// partitionedPrompts is the local baseline's prompt (remote.SeededPrompt)
// as one id list per sequence, so a partitioned cell generates from the same
// ids.
func partitionedPrompts(plan *partition.Plan) [][]int {
	flat := remote.SeededPrompt(plan)
	b := plan.Config.Workload.Batch
	n := len(flat) / b
	out := make([][]int, b)
	for i := range out {
		out[i] = make([]int, n)
		for j := range n {
			out[i][j] = int(flat[i*n+j])
		}
	}
	return out
}

// partitionedRun is one generation of a partitioned cell: every rank on the
// CPU backend in this process over exec/localcomm, greedy from the local
// baseline's prompt. newComms connects the ranks (localcomm.Comms; nil
// means that).
func partitionedRun(ctx context.Context, plan *partition.Plan, newComms func(int) []pexec.Comm) (*pexec.InProcessRun, wire.Utilization, error) {
	if newComms == nil {
		newComms = localcomm.Comms
	}
	in := &model.Inputs{Prompts: partitionedPrompts(plan), Greedy: true}
	newCompute, err := backend.Default().InputsCompute(configs.BackendCPU, in)
	if err != nil {
		return nil, wire.Utilization{}, err
	}
	stop := wire.CPUBusy{}.Start()
	run, err := pexec.RunInProcess(ctx, plan, pexec.InProcessOptions{
		DecodeSteps: partitionedSteps(plan),
		NewCompute:  newCompute,
		NewComms:    newComms,
	})
	return run, stop(), err
}

// partitionedRecord sums a partitioned run into the cell's headline, as
// recordOf does for the remote modes: NetBytes is the inter-rank wire bytes
// the communicators counted, ModelBytes the Programs'.
func partitionedRecord(s *Spec, hash string, cell Cell, plan *partition.Plan, run *pexec.InProcessRun, util wire.Utilization) Record {
	steps := len(run.StepS) - 1
	r := Record{Spec: s.Name, SpecHash: hash, Cell: cell.ID(), Baseline: cell.Baseline.Name, Workload: cell.Workload.Name,
		Kind: cell.Workload.Kind, Mode: cell.Baseline.RecordMode(), DecodeSteps: steps, Util: util.Fraction, UtilSource: util.Source}
	r.PrefillS = run.StepS[0]
	for _, t := range run.StepS[1:] {
		r.DecodeS += t
	}
	var decGot, decWant, allGot int64
	for k := range run.StepS {
		allGot += pexec.WireBytes(run.Counted[k])
		if k > 0 {
			decGot += pexec.WireBytes(run.Counted[k])
			decWant += pexec.WireBytes(run.Want[k])
		}
	}
	r.TotalBytes = allGot
	preGot, preWant := pexec.WireBytes(run.Counted[0]), pexec.WireBytes(run.Want[0])
	switch cell.Workload.Kind {
	case KindDecode:
		per := float64(max(steps, 1))
		r.LatencyS, r.NetBytes, r.ModelBytes = r.DecodeS/per, float64(decGot)/per, float64(decWant)/per
	case KindSmoke:
		r.LatencyS, r.NetBytes, r.ModelBytes = r.PrefillS+r.DecodeS, float64(allGot), float64(preWant+decWant)
	default:
		r.LatencyS, r.NetBytes, r.ModelBytes = r.PrefillS, float64(preGot), float64(preWant)
	}
	r.WireBytes = r.NetBytes
	r.Mismatches = append(r.Mismatches, run.CountDiffs...)
	r.Mismatches = append(r.Mismatches, run.Failures...)
	if len(run.Tokens) != steps+1 {
		r.Mismatches = append(r.Mismatches, fmt.Sprintf("%d steps returned tokens, want %d", len(run.Tokens), steps+1))
	}
	return r
}
