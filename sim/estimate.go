package sim

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// Options tune an estimate.
type Options struct {
	// Collectives forces an algorithm or protocol (NCCL_ALGO / NCCL_PROTO).
	Collectives CollectiveOptions
	// DecodeSteps is how many decode steps the timeline runs to reach steady
	// state (default 16; TPOT is measured over the second half: unbalanced
	// pipelines need more than a handful of steps to settle).
	DecodeSteps int
	// Measured, when set, replaces the modeled time of compute ops with
	// times measured on a device (rank emulation); communication stays modeled.
	Measured *MeasuredOps
	// EveryRank simulates every rank's ops (a trace of every rank needs
	// them). Otherwise, where a stage's TP ranks are alike, one rank per
	// stage is simulated and stands for the others (Timeline.PerStage):
	// the Estimate is the same, bit for bit, in less time and memory.
	EveryRank bool
	// Unbound prices ranks that outnumber the host's cores as left to the
	// scheduler (`run --bind-to none`): the shared-core stretch and core
	// wait counted host-wide, also where `--bind-to auto` binds them two to
	// a core and they are counted per core (optable_share.go).
	Unbound bool

	// share stretches compute ops for a host's shared cores (optable_share.go).
	share *coreShare
	// stepwise simulates every decode step instead of extrapolating the
	// steady state (timeline_steady.go): the reference its tests hold the
	// extrapolation to.
	stepwise bool
	// noStageWrites simulates every alike pipeline stage instead of writing
	// it from the stage before (timeline_stages.go): the reference its
	// tests hold the writes to, bit for bit.
	noStageWrites bool
	// unpacked keeps a stepwise run's slices as Slices, appended as they
	// end, instead of packed (timeline_packed.go): the reference its tests
	// hold the packing to. Only with stepwise (the steady state, prefill
	// chunks and stage writes read packed slices).
	unpacked bool
	// summary computes only what FromEstimate reads (estimate_summary.go):
	// Refine's re-runs where SearchSpec.SummaryOnly is set.
	summary bool
}

// MeasuredOps holds measured compute-op times in seconds, indexed
// [rank][op index in the rank's Program]; a negative entry keeps the model.
type MeasuredOps struct {
	Prefill, Decode [][]float64
}

func (m *MeasuredOps) time(rank int, phase partition.Phase, index int) (float64, bool) {
	if m == nil {
		return 0, false
	}
	t := m.Prefill
	if phase == partition.Decode {
		t = m.Decode
	}
	if rank >= len(t) || index >= len(t[rank]) || t[rank][index] < 0 {
		return 0, false
	}
	return t[rank][index], true
}

// Estimate is the modeled cost of one strategy.
type Estimate struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Hardware    string `json:"hardware"`
	Topology    string `json:"topology"`
	// Runtime is the runtime profile the fixed costs come from ("" : the
	// hardware's own keys; configs [runtime], --runtime).
	Runtime string `json:"runtime,omitempty"`
	GPUs    int    `json:"gpus"`
	TP      int    `json:"tp"`
	PP      int    `json:"pp"`
	// DP is the replicas of the TP×PP group; GPUs = TP × PP × DP. The
	// timeline runs one replica (Ranks are replica 0's); throughput and
	// summed bytes cover all of them, latency is one replica's.
	DP             int    `json:"dp"`
	Microbatches   int    `json:"microbatches"`
	MicrobatchSize int    `json:"microbatch_size"`
	Batch          int    `json:"batch"`
	PromptTokens   int    `json:"prompt_tokens"`
	OutputTokens   int    `json:"output_tokens"`
	ParamsTotal    int64  `json:"params_total"`
	DType          string `json:"dtype"`
	// Ranks are replica 0's per-rank rows, held by rank kind (RankRows);
	// nil in a range end's or a summary's estimate.
	Ranks       RankRows        `json:"ranks"`
	Prefill     PhaseEstimate   `json:"prefill"`
	Decode      PhaseEstimate   `json:"decode"`
	Comm        CommEstimate    `json:"comm"`
	L2          L2Estimate      `json:"l2"`
	Collectives []CollectiveUse `json:"collectives"`
	// Range is min/median/max of the headline metrics over the GPU's stated
	// parameter ranges (hardware.ranges): the estimate rerun with every ranged
	// parameter at its fast end and at its slow end.
	Range Range    `json:"range"`
	Notes []string `json:"notes"`

	Plan     *partition.Plan `json:"-"`
	Timeline *Timeline       `json:"-"`
}

// RankEstimate is one rank's memory, L2 residency and time use.
type RankEstimate struct {
	Rank    int `json:"rank"`
	Stage   int `json:"stage"`
	TPIndex int `json:"tp_index"`
	partition.Memory
	Layers      []int   `json:"layers"`
	L2Residency float64 `json:"l2_residency"`
	// L2WorkingSetBytes is the weight bytes the rank re-reads every decode
	// step (its reused working set; residency = min(1, usable L2 / it)).
	L2WorkingSetBytes int64 `json:"l2_working_set_bytes"`
	// Busy is the time in ops, Idle the time waiting, within each phase's window.
	PrefillBusyS float64 `json:"prefill_busy_s"`
	PrefillIdleS float64 `json:"prefill_idle_s"`
	DecodeBusyS  float64 `json:"decode_busy_s"`
	DecodeIdleS  float64 `json:"decode_idle_s"`
	// Fixed costs in the modeled time (docs/costmodel.md, "Fixed costs"):
	// one decode step's, and the whole prefill's.
	DecodeFixed  FixedCosts `json:"decode_fixed"`
	PrefillFixed FixedCosts `json:"prefill_fixed"`

	// TableOps and ModelOps count the rank's ops of one prefill and one
	// decode step priced from the hardware profile's op-time table and by
	// the roofline or the link model (optable.go; recvs, which wait, not
	// counted).
	TableOps int `json:"table_ops,omitempty"`
	ModelOps int `json:"model_ops,omitempty"`
}

// FixedCosts is the part of a rank's modeled op time that does not depend
// on shapes: Kernels compute kernels each costing LaunchS / Kernels to
// launch (KernelLaunchS, or GraphKernelS inside a CUDA graph), the graph
// launch of a graphed decode step, and the host's work: the step overhead
// (scheduling, sampling) on the pass that samples, its per-sequence part
// there and its per-token part where tokens enter. HostS is the host's
// share (StepOverheadS + HostPerSeqS + HostPerTokenS); TotalS is the sum of
// all, the sum of OpCost.FixedS over the ops.
type FixedCosts struct {
	Kernels       int     `json:"kernels"`
	LaunchS       float64 `json:"launch_s"`
	GraphLaunchS  float64 `json:"graph_launch_s"`
	StepOverheadS float64 `json:"step_overhead_s"`
	HostPerSeqS   float64 `json:"host_per_seq_s"`
	HostPerTokenS float64 `json:"host_per_token_s"`
	HostS         float64 `json:"host_s"`
	TotalS        float64 `json:"total_s"`
}

// fixedCosts adds up the fixed costs of a Program's compute ops (the ops
// computeCost prices; communication has its own latency terms).
func fixedCosts(g topology.GPU, prog partition.Program) FixedCosts {
	var f FixedCosts
	for i := range prog.Ops {
		op := &prog.Ops[i]
		if _, comm := op.Kind.Comm(); comm {
			continue
		}
		f.Kernels++
		f.LaunchS += launchS(&g, prog.Phase)
		switch op.Kind {
		case partition.Input:
			f.HostPerTokenS += g.StepPerTokenS * float64(op.Rows)
		case partition.Sample:
			f.StepOverheadS += g.StepOverheadS
			f.HostPerSeqS += g.StepPerSeqS * float64(op.Seqs)
			if g.CUDAGraphs && prog.Phase == partition.Decode {
				f.GraphLaunchS += g.GraphLaunchS
			}
		}
	}
	f.HostS = f.StepOverheadS + f.HostPerSeqS + f.HostPerTokenS
	f.TotalS = f.LaunchS + f.GraphLaunchS + f.HostS
	return f
}

// PhaseEstimate is the timeline's verdict on one phase. Prefill fills
// TTFTS and PromptTokensPerS; decode fills TPOTS, TokensPerS and the bound.
type PhaseEstimate struct {
	TTFTS float64 `json:"ttft_s,omitempty"`
	// HostWaitS is, in the prefill, the most any rank's compute ops waited
	// for its host to queue them (topology.GPU.HostOpS): how much of TTFT
	// the host's pace adds; 0 without host_op_s.
	HostWaitS float64 `json:"host_wait_s,omitempty"`
	// ReplicaTTFTS, where TTFTS is the later of data-parallel replicas
	// priced from the profile's replica spread (optable_replicas.go), is one
	// replica's TTFT (TTFTS over the spread); 0 otherwise.
	ReplicaTTFTS     float64 `json:"replica_ttft_s,omitempty"`
	PromptTokensPerS float64 `json:"prompt_tokens_per_s,omitempty"`
	TPOTS            float64 `json:"tpot_s,omitempty"`
	TokensPerS       float64 `json:"tokens_per_s,omitempty"`
	// HBMLowerBoundTPOTS is a physical floor: the bytes every rank must move
	// in HBM per step (KV cache, weights beyond L2) over all GPUs at peak.
	HBMLowerBoundTPOTS float64 `json:"hbm_lower_bound_tpot_s,omitempty"`
	KVLength           int     `json:"kv_length,omitempty"`
	// HBMBytesPerStep and L2BytesPerStep sum every rank's modeled traffic in
	// one steady-state decode step.
	HBMBytesPerStep int64 `json:"hbm_bytes_per_step,omitempty"`
	L2BytesPerStep  int64 `json:"l2_bytes_per_step,omitempty"`
	// HBMFloorBytesPerStep is what the HBM floor counts: KV read and write,
	// and weights beyond each rank's usable L2.
	HBMFloorBytesPerStep int64 `json:"hbm_floor_bytes_per_step,omitempty"`
	Chunks               int   `json:"chunks,omitempty"`
	ChunkTokens          int   `json:"chunk_tokens,omitempty"`
	// BubbleFraction is the idle share of all ranks' time in the phase window.
	BubbleFraction float64 `json:"bubble_fraction"`
	// Bottleneck is what the busiest rank spends most of its window on.
	Bottleneck   Bound                 `json:"bottleneck"`
	TimeByBound  map[Bound]float64     `json:"time_by_bound_s"`
	CriticalRank int                   `json:"critical_rank"`
	Comm         partition.CommSummary `json:"comm"`
}

// CommEstimate is the communication of the strategy under each definition.
type CommEstimate struct {
	CollectiveCallsPerMicrobatch int `json:"collective_calls_per_microbatch"`
	P2PSendsPerMicrobatch        int `json:"p2p_sends_per_microbatch"`
	TokenSendsPerMicrobatch      int `json:"token_sends_per_microbatch"`
	// Per decode step, the most any rank makes.
	MaxCallsPerRankPerStep    int64 `json:"max_calls_per_rank_per_step"`
	MaxMessagesPerRankPerStep int64 `json:"max_messages_per_rank_per_step"`
	// BytesByLink covers one whole batch: prefill plus output_tokens − 1 decode steps.
	BytesByLink map[topology.LinkClass]int64 `json:"bytes_by_link"`
}

// L2Estimate is how much of each rank's reused weights fit the usable L2.
type L2Estimate struct {
	// WeightResidency is the smallest over ranks of usable L2 / reused weights (≤ 1).
	WeightResidency float64 `json:"weight_residency"`
	WorkingSetBytes int64   `json:"working_set_bytes"` // the largest rank's reused weights
	UsableL2Bytes   int64   `json:"usable_l2_bytes"`
	// WholeLayerResidency is usable L2 / one whole layer's weights: what
	// "each layer fits in L2" would need to be 1.
	WholeLayerResidency float64 `json:"whole_layer_residency"`
	WholeLayerBytes     int64   `json:"whole_layer_bytes"`
}

// CollectiveUse is how one kind of collective runs.
type CollectiveUse struct {
	Phase partition.Phase     `json:"phase"`
	Name  string              `json:"name"`
	Op    string              `json:"op"`
	Ranks int                 `json:"ranks"`
	Bytes int64               `json:"bytes"`
	Algo  commcount.Algorithm `json:"algo"`
	Proto string              `json:"proto"`
	Link  topology.LinkClass  `json:"link"`
	TimeS float64             `json:"time_s"`
	Count int                 `json:"count_per_rank"`
}

// Spread is min, median and max of one metric.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// Range holds the spreads of an estimate's headline metrics.
type Range struct {
	TTFTS      Spread `json:"ttft_s"`
	TPOTS      Spread `json:"tpot_s"`
	TokensPerS Spread `json:"tokens_per_s"`
}

// EstimatePlan models a plan's prefill and decode on its hardware, and again
// at both ends of the GPU's stated parameter ranges for Estimate.Range.
// With DP replicas the timeline runs replica 0 alone: replicas share no
// link (configs.ReplicasAlign puts each on whole nodes or inside one node,
// and every GPU has its own NVSwitch and network port), so each runs as
// replica 0 does; see docs/costmodel.md, "Data parallelism".
func EstimatePlan(plan *partition.Plan, opts Options) (*Estimate, error) {
	return estimateShared(plan, opts, &planWork{})
}

// estimateShared is EstimatePlan with the Programs and communication
// summaries kept in work (speed.go), shared by its three runs and by any
// later estimate of the same plan with other options (Refine's reruns).
func estimateShared(plan *partition.Plan, opts Options, work *planWork) (*Estimate, error) {
	full := plan
	plan = plan.OneReplica()
	if opts.summary && !summaryAllowed(plan, full.DP, opts) {
		opts.summary = false
	}
	e, err := estimatePlan(plan, opts, work)
	if errors.Is(err, errNoSummary) { // a bound the summary does not list: the whole estimate
		opts.summary = false
		e, err = estimatePlan(plan, opts, work)
	}
	if err != nil {
		return nil, err
	}
	if e, err = shareCores(plan, full.DP, opts, e, work); err != nil {
		return nil, err
	}
	defer e.addReplicas(full)
	e.Range = Range{
		TTFTS:      Spread{e.Prefill.TTFTS, e.Prefill.TTFTS, e.Prefill.TTFTS},
		TPOTS:      Spread{e.Decode.TPOTS, e.Decode.TPOTS, e.Decode.TPOTS},
		TokensPerS: Spread{e.Decode.TokensPerS, e.Decode.TokensPerS, e.Decode.TokensPerS},
	}
	g := plan.System.GPU
	if g.Ranges == (topology.ParamRanges{}) || opts.Measured != nil {
		return e, nil
	}
	for _, fast := range []bool{true, false} {
		p := *plan
		p.System.GPU = g.Bound(fast)
		b, err := estimateHeadline(&p, opts, work)
		if err != nil {
			return nil, err
		}
		if fast {
			e.Range.TTFTS.Min, e.Range.TPOTS.Min, e.Range.TokensPerS.Max = b.Prefill.TTFTS, b.Decode.TPOTS, b.Decode.TokensPerS
		} else {
			e.Range.TTFTS.Max, e.Range.TPOTS.Max, e.Range.TokensPerS.Min = b.Prefill.TTFTS, b.Decode.TPOTS, b.Decode.TokensPerS
		}
	}
	return e, nil
}

// estimateHeadline is estimatePlan's TTFT, TPOT and token rate alone, as
// the range ends need them: the same simulation, keeping no slices (only
// the sample ops' ends, speed.go) and no per-rank rows, so the numbers are
// the same to the bit in a fraction of the memory.
func estimateHeadline(plan *partition.Plan, opts Options, work *planWork) (*Estimate, error) {
	return estimateRun(plan, opts, work, runHeadline)
}

// estimatePlan is one timeline run of plan: the whole estimate, or with
// opts.summary only what FromEstimate reads.
func estimatePlan(plan *partition.Plan, opts Options, work *planWork) (*Estimate, error) {
	if opts.summary {
		return estimateRun(plan, opts, work, runSummary)
	}
	return estimateRun(plan, opts, work, runFull)
}

// runMode is what a timeline run keeps.
type runMode int

const (
	runFull     runMode = iota // the whole estimate, every slice of the timeline
	runHeadline                // TTFT, TPOT and the token rate (estimateHeadline)
	runSummary                 // FromEstimate's numbers (estimate_summary.go)
)

// estimateRun is estimatePlan; runHeadline leaves everything but the
// headline numbers out (estimateHeadline), runSummary everything but
// FromEstimate's (estimate_summary.go).
func estimateRun(plan *partition.Plan, opts Options, work *planWork, mode runMode) (*Estimate, error) {
	headline := mode == runHeadline
	full := mode == runFull
	if opts.DecodeSteps <= 0 {
		opts.DecodeSteps = 16
	}
	if opts.DecodeSteps < 3 {
		return nil, fmt.Errorf("sim: decode steps must be at least 3 (got %d)", opts.DecodeSteps)
	}
	cfg := plan.Config
	w := cfg.Workload
	e := &Estimate{
		Name: cfg.Name, Description: cfg.Description, Hardware: plan.System.GPU.Name, Topology: plan.System.Topology.Name, Runtime: cfg.Runtime.Name,
		GPUs: plan.Size(), TP: plan.TP, PP: plan.PP, DP: plan.DP, Microbatches: plan.Microbatches, MicrobatchSize: plan.MicrobatchSize,
		Batch: w.Batch, PromptTokens: w.PromptTokens(), OutputTokens: w.OutputTokens,
		ParamsTotal: plan.Params, DType: plan.Model.DType, Plan: plan,
	}

	usable := plan.System.GPU.UsableL2Bytes()
	e.L2 = L2Estimate{UsableL2Bytes: usable, WeightResidency: 1}
	lp := plan.LayerParams
	e.L2.WholeLayerBytes = lp.Total() * int64(plan.DTypeBytes)
	e.L2.WholeLayerResidency = math.Min(1, float64(usable)/float64(e.L2.WholeLayerBytes))

	// The TP ranks of a stage run the same ops on the same shapes: where
	// their links are alike too, one rank per stage (TP index 0) is
	// simulated for all of them (perStage). Count the simulated ops from
	// one Program pair per stage before building the rest.
	perStage := !opts.EveryRank && opts.Measured == nil && plan.TP > 1 && work.linksAlike(plan)
	// A range end (headline) has the nominal run's shapes and steps, which
	// passed this check.
	if !headline {
		if err := checkOpsFromShape(plan, opts, perStage); err != nil {
			return nil, err
		}
	}
	// A Program made alike from its kind's template is read through the
	// template's ops (planWork.view: lazy) where only its op fields but the
	// labels are read: the counts, fixed costs, working set and HBM floor.
	reps := work.stageReps(plan.PP) // speed.go: once per plan
	repPre, repDec, repLazy, repLike := reps.pre, reps.dec, reps.lazy, reps.like
	perStageOps := 0
	for st := 0; st < plan.PP; st++ {
		if !reps.kept {
			r := plan.RankOf(st, 0)
			var lp, ld bool
			repPre[st], repLike[st].pre, lp = work.view(plan, r, partition.Prefill)
			repDec[st], repLike[st].dec, ld = work.view(plan, r, partition.Decode)
			repPre[st], repDec[st], repLike[st], repLazy[st] = ownUnlessBoth(plan, work, repPre[st], repDec[st], repLike[st], lp, ld)
		}
		perStageOps += len(repPre[st].Ops) + opts.DecodeSteps*len(repDec[st].Ops)
		if err := checkOps(plan, opts, perStageOps, perStage); err != nil {
			return nil, err
		}
	}
	work.keepReps(reps)

	// Every rank kind's fixed costs, working set and HBM floor bytes, from
	// its first rank's Programs. With perStage a kind is a stage's TP ranks,
	// alike by construction (TestStageRanksAlikeByConstruction): the
	// stand-in's figures are every one of them's, and no other rank's
	// Programs are built. Else every rank is a kind of one, simulated.
	n := plan.Size()
	g := plan.System.GPU
	var kinds []RankKind
	if perStage {
		kinds = make([]RankKind, 0, plan.PP)
	} else {
		kinds = make([]RankKind, 0, n)
	}
	// Each kind's first rank's Programs, the simulated rank's, whether they
	// are lazy (planWork.view), both, and then their templates.
	pre, decode, lazy := make([]partition.Program, 0, cap(kinds)), make([]partition.Program, 0, cap(kinds)), make([]bool, 0, cap(kinds))
	var likeOf []likeRank
	var floor int64
	seen := map[tensorKey]bool{} // workingSetIn's, one for every kind
	for r := 0; r < n; {
		rk := plan.RankAt(r)
		k := RankKind{RankEstimate: RankEstimate{Rank: r, Stage: rk.Stage, TPIndex: rk.TPIndex, Memory: rk.Memory, Layers: rk.Layers}, Count: 1}
		p, d, lz, lk := repPre[rk.Stage], repDec[rk.Stage], repLazy[rk.Stage], repLike[rk.Stage]
		if perStage {
			k.Count = plan.TP
		} else if rk.TPIndex > 0 {
			var lp, ld bool
			p, lk.pre, lp = work.view(plan, r, partition.Prefill)
			d, lk.dec, ld = work.view(plan, r, partition.Decode)
			p, d, lk, lz = ownUnlessBoth(plan, work, p, d, lk, lp, ld)
		}
		if full {
			k.PrefillFixed, k.DecodeFixed = fixedCosts(g, p), fixedCosts(g, d)
		}
		ws := work.workingSet(r, d, seen) // speed.go: once per plan
		res := 1.0
		if ws > 0 {
			res = math.Min(1, float64(usable)/float64(ws))
		}
		k.L2WorkingSetBytes, k.L2Residency = ws, res
		e.L2.WorkingSetBytes = max(e.L2.WorkingSetBytes, ws)
		e.L2.WeightResidency = math.Min(e.L2.WeightResidency, res)
		if full {
			floor += int64(k.Count) * hbmFloorBytes(d, ws, usable)
		}
		pre, decode, lazy = append(pre, p), append(decode, d), append(lazy, lz)
		if lz {
			if likeOf == nil {
				likeOf = make([]likeRank, 0, cap(kinds))
			}
			likeOf = likeOf[:len(pre)]
			likeOf[len(pre)-1] = lk
		}
		kinds = append(kinds, k)
		r += k.Count
	}

	s := &simulator{plan: plan, opts: opts, table: planOpTable(plan), perStage: perStage, index: work.simIndex(n, kinds), groups: map[groupKey]*groupInfo{}, work: work,
		chanFree: map[chanKey]float64{}, inbox: map[chanKey][]message{}}
	// The simulated ranks' lists sized once, their states in one array.
	s.ids, s.residency, s.ranks = make([]int, 0, len(kinds)), make([]float64, 0, len(kinds)), make([]*rankState, 0, len(kinds))
	states := make([]rankState, len(kinds))
	for i := range kinds {
		r := kinds[i].Rank
		s.ids = append(s.ids, r)
		s.residency = append(s.residency, kinds[i].L2Residency)
		st := &states[i]
		*st = rankState{memoN: len(decode[i].Ops), pre: pre[i].Ops, dec: decode[i].Ops, steps: opts.DecodeSteps}
		if lazy[i] { // the template's ops: the rank's labels beside them (speed.go)
			st.like = &likeOf[i]
			st.like.LikeLabels = plan.LikeLabelsOf(r)
		}
		markFirstTouch(st, work, r) // speed.go
		s.ranks = append(s.ranks, st)
	}
	// Token times: a micro-batch's token is out when its sample op ends on
	// every TP rank of the last stage.
	ends := newSampleEnds(opts.DecodeSteps, plan.Microbatches)
	switch mode {
	case runHeadline:
		s.ends = ends // speed.go: no slices kept
	case runSummary:
		s.ends = ends
		presizeUses(s) // estimate_summary.go: each op's times and bound, no slice
	default:
		if !opts.unpacked || !opts.stepwise { // unpacked: the packing's reference, appended (emit)
			presizeSlices(s) // speed.go
		}
	}
	s.steady = newSteady(s, opts.DecodeSteps) // timeline_steady.go
	s.chunks = newChunkSteady(s)              // timeline_chunks.go
	tl, err := s.run()
	if err != nil {
		return nil, err
	}
	prefillEnd, first := 0.0, -1 // first: the first decode step simulated (countPricing's)
	if full {
		e.Timeline = tl
		prefillEnd, first = tl.endsPass(ends) // timeline_packed.go
	}
	ttft, tok := ends.ttft, ends.tok
	oneReplica := 0.0
	if f := replicaSpread(s.table, plan, ttft); f > 1 { // the later of the replicas (optable_replicas.go)
		oneReplica, ttft = ttft, ttft*f
	}
	s0, k1 := opts.DecodeSteps/2, opts.DecodeSteps-1
	var tpot float64
	w0, w1 := math.Inf(1), math.Inf(1)
	for mb := 0; mb < plan.Microbatches; mb++ {
		tpot += (tok[k1][mb] - tok[s0][mb]) / float64(k1-s0)
		w0, w1 = math.Min(w0, tok[s0][mb]), math.Min(w1, tok[k1][mb])
	}
	tpot /= float64(plan.Microbatches)

	e.Prefill = PhaseEstimate{TTFTS: ttft, ReplicaTTFTS: oneReplica, PromptTokensPerS: float64(w.Batch*w.PromptTokens()) / ttft,
		Chunks: plan.PrefillChunks, ChunkTokens: plan.PrefillChunk}
	for _, r := range s.ranks {
		e.Prefill.HostWaitS = max(e.Prefill.HostWaitS, r.prefillHostWaitS)
	}
	e.Decode = PhaseEstimate{TPOTS: tpot, TokensPerS: float64(w.Batch) / tpot, KVLength: plan.DecodePast() + 1}
	if mode == runSummary {
		if err := s.summaryUse(tl, e, w0, w1); err != nil { // estimate_summary.go
			return nil, err
		}
	}
	if !full {
		if err := checkFinite(e); err != nil {
			return nil, err
		}
		return e, nil
	}
	e.Ranks = RankRows{Kinds: kinds}
	uses := e.windowUses(prefillEnd, w0, w1, s0, first) // estimate_use.go
	uses.phase(e, &e.Prefill, &e.Decode)
	e.Decode.HBMFloorBytesPerStep = floor
	e.Decode.HBMLowerBoundTPOTS = float64(floor) / (float64(plan.Size()) * plan.System.GPU.HBMBytesPerS)
	weight := int64(1) // the ranks a simulated rank's slices stand for
	if tl.PerStage {
		weight = int64(plan.TP)
	}
	uses.stepBytes(e, &e.Decode, weight)

	e.Prefill.Comm = work.comm(plan, partition.Prefill)
	e.Decode.Comm = work.comm(plan, partition.Decode)
	e.Comm = CommEstimate{
		CollectiveCallsPerMicrobatch: e.Decode.Comm.CollectiveCallsPerMicrobatch,
		P2PSendsPerMicrobatch:        e.Decode.Comm.P2PSendsPerMicrobatch,
		TokenSendsPerMicrobatch:      e.Decode.Comm.TokenSendsPerMicrobatch,
		BytesByLink:                  map[topology.LinkClass]int64{},
	}
	for i := range kinds { // a stage's ranks make the same calls and messages (Plan.CommOf)
		r := kinds[i].Rank
		e.Comm.MaxCallsPerRankPerStep = max(e.Comm.MaxCallsPerRankPerStep, e.Decode.Comm.CallsPerRank.At(r))
		e.Comm.MaxMessagesPerRankPerStep = max(e.Comm.MaxMessagesPerRankPerStep, e.Decode.Comm.MessagesPerRank.At(r))
	}
	for _, c := range topology.LinkClasses {
		e.Comm.BytesByLink[c] = e.Prefill.Comm.BytesByLink[c] + int64(w.OutputTokens-1)*e.Decode.Comm.BytesByLink[c]
	}

	uses.ranks(e)
	uses.pricing(e)
	e.Collectives = collectiveUses(tl)
	e.Notes = notes(e, plan)
	if err := checkFinite(e); err != nil {
		return nil, err
	}
	return e, nil
}

// checkOps refuses a timeline of more than MaxTimelineOps simulated ops:
// perStageOps counts one rank per stage, times TP when every rank is
// simulated.
func checkOps(plan *partition.Plan, opts Options, perStageOps int, perStage bool) error {
	ops, ranks := perStageOps, plan.PP
	if !perStage {
		ops, ranks = partition.SatMul(perStageOps, plan.TP), plan.Size()
	}
	if ops > MaxTimelineOps {
		return &TooLargeError{Name: plan.Config.Name, Ops: ops, Ranks: ranks, AllRanks: plan.Size(), DecodeSteps: opts.DecodeSteps,
			Microbatches: plan.Microbatches, Layers: plan.Model.Layers, EveryRank: !perStage && plan.TP > 1}
	}
	return nil
}

// stageLinksAlike says whether every TP index sees the same links to the
// neighbouring stages (and between the last and the first) as TP index 0,
// so that per-stage simulation can be exact. Nodes holding whole TP groups
// make it so; a TP group cut by a node boundary does not.
//
// One path look-up stands for each run of TP indices over which neither
// stage's rank crosses a node boundary (partition.NodeRuns): a stage pair
// costs about 2·TP / GPUs per node + 1 look-ups each way, not TP
// (stageLinksAlikeEach, the rank-by-rank check, is its reference).
func stageLinksAlike(plan *partition.Plan) bool {
	topo := plan.System.Topology
	for st := 0; st < plan.PP; st++ {
		next := (st + 1) % plan.PP
		a, b := plan.RankOf(st, 0), plan.RankOf(next, 0)
		ab, ba := topo.Path(a, b), topo.Path(b, a)
		alike := true
		partition.NodeRuns(a, b, plan.TP, topo.GPUsPerNode, func(t0, _ int) {
			alike = alike && topo.Path(a+t0, b+t0) == ab && topo.Path(b+t0, a+t0) == ba
		})
		if !alike {
			return false
		}
	}
	return true
}

// sameWork says whether Program q of a rank does what p (its stage's TP
// index 0's) does: every op alike but for its vocabulary shard offset, the
// same collective group, and a peer of the same stage and TP index as q's
// rank over a link alike to p's.
func sameWork(plan *partition.Plan, p, q partition.Program) bool {
	if len(p.Ops) != len(q.Ops) {
		return false
	}
	topo := plan.System.Topology
	t := plan.RankAt(q.Rank).TPIndex
	for i := range p.Ops {
		a, b := p.Ops[i], q.Ops[i]
		if a.Kind == partition.Send || a.Kind == partition.Recv {
			if b.Peer != plan.RankOf(plan.RankAt(a.Peer).Stage, t) || topo.Path(q.Rank, b.Peer) != topo.Path(p.Rank, a.Peer) {
				return false
			}
		} else if a.Peer != b.Peer {
			return false
		}
		if len(a.Group) != len(b.Group) || len(a.Group) > 0 && &a.Group[0] != &b.Group[0] && !slices.Equal(a.Group, b.Group) {
			return false
		}
		b.Peer, b.Group, b.VocabOffset = a.Peer, a.Group, a.VocabOffset
		if !reflect.DeepEqual(a, b) {
			return false
		}
	}
	return true
}

// workingSet is the reusable weight bytes one decode step reads on a rank.
func workingSet(prog partition.Program) int64 { return workingSetIn(prog, map[tensorKey]bool{}) }

// workingSetIn is workingSet with the tensors-seen set given, cleared
// first: a caller that computes many ranks' working sets keeps one set
// (and its buckets) instead of building a map per rank.
func workingSetIn(prog partition.Program, seen map[tensorKey]bool) int64 {
	clear(seen)
	var b int64
	for i := range prog.Ops {
		op := &prog.Ops[i]
		key := tensorKey{op.Layer, op.Tensor}
		if reusable(op) && !seen[key] {
			seen[key] = true
			b += op.WeightBytes
		}
	}
	return b
}

// hbmFloorBytes is one rank's share of the HBM floor: per step every rank
// reads its KV cache and writes the new entries, and reads at least the
// weights (ws, its working set) that do not fit its usable L2; all GPUs
// together cannot move that faster than at their summed peak HBM bandwidth.
func hbmFloorBytes(decode partition.Program, ws, usable int64) int64 {
	var bytes int64
	for i := range decode.Ops { // in place: an Op is large to copy
		bytes += decode.Ops[i].KVReadBytes + decode.Ops[i].KVWriteBytes
	}
	return bytes + max(0, ws-usable)
}

// bubbleFloor is the idle share of a phase's window below which the
// critical rank's idle time is rounding in its busy sum (a sum of many
// slices' overlaps with the window, with times extrapolated over steady
// decode steps: timeline_steady.go), not a bubble: no bubble is reported.
const bubbleFloor = 1e-9

// overlap is the length of [a,b] ∩ [lo,hi].
//
// The built-in min and max compile inline; they are math.Min and math.Max
// (−0, ±Inf, NaN) but for a NaN beside an infinity (math.Max(NaN, +Inf) is
// +Inf, max gives NaN): a timeline with a NaN time has its estimate
// refused by checkFinite either way (TTFT and TPOT come from those times).
func overlap(a, b, lo, hi float64) float64 { return max(0, min(b, hi)-max(a, lo)) }

// busy is the part of a slice spent working (not waiting).
func busySpan(sl Slice) (float64, float64) { return sl.StartS + sl.WaitS, sl.EndS }

func (e *Estimate) phaseUse(pe *PhaseEstimate, phase partition.Phase, lo, hi float64) {
	tl := e.Timeline
	div := standInWidth(tl)
	busy := make([]float64, standIns(tl))
	byBound := make([]map[Bound]float64, len(busy))
	for i := range byBound {
		byBound[i] = map[Bound]float64{}
	}
	for _, sl := range tl.All() {
		if sl.Phase != phase && !(phase == partition.Decode && sl.Phase == partition.Prefill) {
			continue
		}
		a, b := busySpan(sl)
		d := overlap(a, b, lo, hi)
		if sl.Op.Kind == partition.Recv {
			d = 0 // a recv's time is waiting for data: idle
		}
		busy[sl.Rank/div] += d
		byBound[sl.Rank/div][sl.Bound] += d
	}
	finishPhase(pe, tl, busy, func(r int) map[Bound]float64 { return maps.Clone(byBound[r/div]) }, lo, hi)
}

// standInWidth is how many ranks a simulated rank of tl stands for: TP in
// a per-stage timeline, else 1. Stand-in i is rank i·width (Timeline.StandIn).
func standInWidth(tl *Timeline) int {
	if tl.PerStage {
		return tl.TP
	}
	return 1
}

// standIns is the number of simulated ranks of tl, one per rank kind.
func standIns(tl *Timeline) int {
	w := standInWidth(tl)
	return (tl.Ranks + w - 1) / w
}

// finishPhase fills pe from every simulated rank's busy time in the window
// [lo, hi] (busy[i] is stand-in i's, standing for standInWidth ranks:
// each rank's busy time summed, in rank order, as a row per rank would be)
// and the critical rank's stand-in's time by bound (a map pe may keep).
func finishPhase(pe *PhaseEstimate, tl *Timeline, busy []float64, byBound func(standIn int) map[Bound]float64, lo, hi float64) {
	n := tl.Ranks
	div := standInWidth(tl)
	window := hi - lo
	crit := 0
	var total float64
	for i, b := range busy {
		for range min(div, n-i*div) {
			total += b
		}
		if b > busy[crit] {
			crit = i
		}
	}
	if window > 0 {
		pe.BubbleFraction = math.Max(0, 1-total/(float64(n)*window))
	}
	pe.CriticalRank = crit * div
	pe.TimeByBound = byBound(crit * div)
	if idle := window - busy[crit]; idle > bubbleFloor*window {
		pe.TimeByBound[BoundBubble] = idle
	}
	pe.Bottleneck = BoundBubble
	best := -1.0
	for _, b := range []Bound{BoundCompute, BoundHBM, BoundL2, BoundMeasured, BoundTable, BoundNVLink, BoundPCIe, BoundNetwork, BoundLatency, BoundBubble} {
		if t := pe.TimeByBound[b]; t > best {
			best, pe.Bottleneck = t, b
		}
	}
}

func (e *Estimate) rankUse(phase partition.Phase, lo, hi float64) {
	div := standInWidth(e.Timeline)
	busy := make([]float64, standIns(e.Timeline))
	for _, sl := range e.Timeline.All() {
		if sl.Op.Kind == partition.Recv {
			continue
		}
		a, b := busySpan(sl)
		busy[sl.Rank/div] += overlap(a, b, lo, hi)
	}
	e.setRankUse(phase, busy, lo, hi)
}

// setRankUse sets each rank kind's busy and idle times in phase's window
// [lo, hi] from its stand-in's busy time (busy[i]: stand-in i's).
func (e *Estimate) setRankUse(phase partition.Phase, busy []float64, lo, hi float64) {
	div := standInWidth(e.Timeline)
	// Idle is the window less the busy time, never below 0: the busy sum
	// of a rank busy throughout can pass the window by rounding.
	for i := range e.Ranks.Kinds {
		k := &e.Ranks.Kinds[i]
		b := busy[k.Rank/div]
		if phase == partition.Prefill {
			k.PrefillBusyS, k.PrefillIdleS = b, max(0, hi-lo-b)
		} else {
			k.DecodeBusyS, k.DecodeIdleS = b, max(0, hi-lo-b)
		}
	}
}

func collectiveUses(tl *Timeline) []CollectiveUse {
	type key struct {
		phase partition.Phase
		name  string
		bytes int64
	}
	seen := map[key]*CollectiveUse{}
	var order []key
	first := -1
	tl.each(func(_ int, sl *Slice) bool {
		if first < 0 {
			first = sl.Rank
		}
		if sl.Rank != first {
			return false // the simulator's slices are in rank order (sortSlices): the first rank's are a prefix
		}
		if sl.Algo == "" || (sl.Phase == partition.Decode && sl.Step != 0) {
			return true
		}
		name := sl.Op.Name
		if i := strings.IndexByte(name, '.'); i >= 0 && sl.Op.Layer >= 0 {
			name = name[i+1:]
		}
		k := key{sl.Phase, name, sl.Op.Bytes}
		if u := seen[k]; u != nil {
			u.Count++
			return true
		}
		cop, _ := sl.Op.Kind.Comm()
		seen[k] = &CollectiveUse{Phase: sl.Phase, Name: name, Op: string(cop), Ranks: len(sl.Op.Group), Bytes: sl.Op.Bytes,
			Algo: sl.Algo, Proto: sl.Proto, Link: sl.Link, TimeS: sl.EndS - sl.StartS - sl.WaitS, Count: 1}
		order = append(order, k)
		return true
	})
	out := make([]CollectiveUse, 0, len(order))
	for _, k := range order {
		out = append(out, *seen[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Phase > out[j].Phase })
	return out
}

func notes(e *Estimate, plan *partition.Plan) []string {
	var out []string
	if plan.PrefillChunks > 1 {
		out = append(out, fmt.Sprintf("prefill is chunked into %d passes of %d tokens per sequence so activations fit in HBM", plan.PrefillChunks, plan.PrefillChunk))
	}
	if e.L2.WeightResidency < 1 {
		out = append(out, fmt.Sprintf("reused weights per rank (%.1f MB) exceed the usable L2 (%.1f MB): %.1f %% resident at best",
			float64(e.L2.WorkingSetBytes)/1e6, float64(e.L2.UsableL2Bytes)/1e6, 100*e.L2.WeightResidency))
	}
	if e.PP > 1 && e.Microbatches < e.PP {
		out = append(out, fmt.Sprintf("%d micro-batch(es) cannot fill %d pipeline stages: each GPU idles at least %.0f %% of every decode step",
			e.Microbatches, e.PP, 100*float64(e.PP-e.Microbatches)/float64(e.PP)))
	}
	if e.Decode.TPOTS < e.Decode.HBMLowerBoundTPOTS {
		out = append(out, "model error: TPOT below the HBM lower bound")
	}
	return out
}

// addReplicas turns one replica's estimate into the deployment's: full.DP
// replicas each serve the batch at the same TTFT and TPOT, so token rates,
// summed bytes and per-rank counts scale by DP and latencies do not. The
// HBM floor per step is DP times the bytes over DP times the GPUs: the same.
func (e *Estimate) addReplicas(full *partition.Plan) {
	e.Plan, e.GPUs, e.DP = full, full.Size(), full.DP
	d := full.DP
	if d <= 1 {
		return
	}
	f := float64(d)
	e.Prefill.PromptTokensPerS *= f
	e.Decode.TokensPerS *= f
	e.Range.TokensPerS.Min *= f
	e.Range.TokensPerS.Median *= f
	e.Range.TokensPerS.Max *= f
	e.Decode.HBMBytesPerStep *= int64(d)
	e.Decode.L2BytesPerStep *= int64(d)
	e.Decode.HBMFloorBytesPerStep *= int64(d)
	for _, pe := range []*PhaseEstimate{&e.Prefill, &e.Decode} {
		pe.Comm = replicateComm(pe.Comm, d)
	}
	for c, b := range e.Comm.BytesByLink {
		e.Comm.BytesByLink[c] = b * int64(d)
	}
	e.Notes = append(e.Notes, fmt.Sprintf("%d replicas of a TP=%d × PP=%d group: TTFT and TPOT are one replica's, token rates and bytes all %d replicas' (%d × batch %d sequences); per-rank rows are replica 0's",
		d, e.TP, e.PP, d, d, e.Batch))
}

// replicateComm is one replica's communication summary repeated over d
// replicas: the same calls and messages on each replica's ranks, d times the
// bytes on each link class (replicas lie alike on the nodes), and the same
// logical calls per micro-batch.
func replicateComm(c partition.CommSummary, d int) partition.CommSummary {
	out := c
	out.CallsPerRank, out.MessagesPerRank = c.CallsPerRank.Repeat(d), c.MessagesPerRank.Repeat(d)
	out.BytesByLink = map[topology.LinkClass]int64{}
	for k, v := range c.BytesByLink {
		out.BytesByLink[k] = v * int64(d)
	}
	return out
}
