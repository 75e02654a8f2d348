package exec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// DefaultTolerance bounds |partitioned − reference| / max(1, |reference|) for
// float32 outputs (docs/numerics.md derives it).
const DefaultTolerance = 1e-4

// DefaultCheckDecodeSteps is the decode steps Check runs after prefill.
const DefaultCheckDecodeSteps = 2

// Inspector is what Check reads from a Compute besides the Compute
// interface: the last stage's results of each micro-batch's last pass.
type Inspector interface {
	// Output is logits [seqs][vocab] with an LM head, else the final hidden
	// state of each sequence's last position [seqs][hidden]; nil on ranks
	// that are not on the last stage.
	Output(mb int) []float32
	// Sampled is the argmax token of each sequence (nil without an LM head).
	Sampled(mb int) []int
}

// CheckOptions configures Check. NewCompute and NewComms supply the backend,
// so exec stays backend-agnostic (exec/cpu.New and exec/localcomm.Comms);
// NewReference, when set, supplies the reference's backend (a GPU checked
// against exec/cpu).
type CheckOptions struct {
	// DecodeSteps after prefill (0: DefaultCheckDecodeSteps); at most the
	// workload's output tokens.
	DecodeSteps int
	// Tolerance (0: DefaultTolerance).
	Tolerance float64
	// NewCompute builds rank's Compute for a plan; it must implement Inspector.
	NewCompute func(plan *partition.Plan, rank int) (Compute, error)
	// NewReference builds the single-rank reference's Compute (nil:
	// NewCompute); it must implement Inspector.
	NewReference func(plan *partition.Plan, rank int) (Compute, error)
	// NewComms connects size in-process ranks.
	NewComms func(size int) []Comm
}

// ArgmaxMismatch is a sequence whose argmax token differs from the reference.
type ArgmaxMismatch struct {
	Step        int     `json:"step"`
	Sequence    int     `json:"sequence"`
	Reference   int     `json:"reference"`
	Partitioned int     `json:"partitioned"`
	Top2Gap     float64 `json:"top2_gap"` // the reference's top-1 minus top-2 logit
	Failure     bool    `json:"failure"`  // the gap exceeds what the tolerance allows
}

// RankCountDiff lists where a rank's counted communication differs from
// plan.Counts of the Programs it ran (commcount.Diff lines).
type RankCountDiff struct {
	Rank  int      `json:"rank"`
	Diffs []string `json:"diffs"`
}

// CheckResult compares a partitioning with the single-rank reference. Step 0
// is the output after prefill, step k the output after decode step k.
type CheckResult struct {
	Config      string  `json:"config"`
	Reference   string  `json:"reference"`
	Partitioned string  `json:"partitioned"`
	DecodeSteps int     `json:"decode_steps"`
	Sequences   int     `json:"sequences"`
	Tolerance   float64 `json:"tolerance"`
	// MaxAbsErr is max |p − r|; MaxRelErr is max |p − r| / max(1, |r|), the
	// quantity the tolerance bounds; the worst sequence and step are MaxRelErr's.
	MaxAbsErr        float64          `json:"max_abs_err"`
	MaxRelErr        float64          `json:"max_rel_err"`
	WorstSequence    int              `json:"worst_sequence"`
	WorstStep        int              `json:"worst_step"`
	ArgmaxCompared   int              `json:"argmax_compared"`
	ArgmaxMismatches []ArgmaxMismatch `json:"argmax_mismatches,omitempty"`
	CountDiffs       []RankCountDiff  `json:"count_diffs,omitempty"`
	Failures         []string         `json:"failures,omitempty"`
	Pass             bool             `json:"pass"`
}

// Err is nil when the check passed, else an error listing the failures.
func (r CheckResult) Err() error {
	if r.Pass {
		return nil
	}
	return fmt.Errorf("check %s failed: %s", r.Config, strings.Join(r.Failures, "; "))
}

// maxFailureLines caps the per-element failure lines a result keeps.
const maxFailureLines = 8

// Check runs cfg's partitioning and the single-rank reference (tp = pp = 1,
// one micro-batch, the prompt in one pass, on a 1×1 topology) in-process: prefill, then DecodeSteps
// teacher-forced decode steps at the real positions (an encoder,
// model.encoder, runs the prefill alone: its one forward pass). It compares the last
// stage's outputs per sequence after every step and the argmax tokens, and
// every rank's counted communication with plan.Counts of its Programs.
// Both plans use dtype fp32, the arithmetic of the CPU backend, so counted
// bytes match the Program's. A numerical mismatch is a failed result, not
// an error; errors are failures to run.
func Check(ctx context.Context, cfg *configs.Config, opts CheckOptions) (CheckResult, error) {
	if opts.NewCompute == nil || opts.NewComms == nil {
		return CheckResult{}, errors.New("check: NewCompute and NewComms are required")
	}
	steps := opts.DecodeSteps
	if steps == 0 {
		steps = DefaultCheckDecodeSteps
	}
	if cfg.Model.Encoder {
		// An encoder runs one forward pass: the prefill is the whole check.
		if opts.DecodeSteps > 0 {
			return CheckResult{}, fmt.Errorf("check: %s is an encoder (model.encoder = true): one forward pass, no decode steps (got %d)", cfg.Name, opts.DecodeSteps)
		}
		steps = 0
	} else if steps < 0 || steps > cfg.Workload.OutputTokens {
		return CheckResult{}, fmt.Errorf("check: decode steps must be in [1, workload.output_tokens = %d] (got %d)", cfg.Workload.OutputTokens, steps)
	}
	tol := opts.Tolerance
	if tol == 0 {
		tol = DefaultTolerance
	}
	refCfg, partCfg := checkConfigs(cfg)
	refPlan, err := partition.NewPlan(refCfg)
	if err != nil {
		return CheckResult{}, fmt.Errorf("check: reference plan: %w", err)
	}
	partPlan, err := partition.NewPlan(partCfg)
	if err != nil {
		return CheckResult{}, fmt.Errorf("check: plan: %w", err)
	}
	newRef := opts.NewReference
	if newRef == nil {
		newRef = opts.NewCompute
	}
	ref, err := runCheckPlan(ctx, refPlan, steps, newRef, opts.NewComms)
	if err != nil {
		return CheckResult{}, fmt.Errorf("check: reference: %w", err)
	}
	part, err := runCheckPlan(ctx, partPlan, steps, opts.NewCompute, opts.NewComms)
	if err != nil {
		return CheckResult{}, fmt.Errorf("check: %s: %w", partPlan, err)
	}
	res := CheckResult{
		Config: cfg.Name, Reference: refPlan.String(), Partitioned: partPlan.String(),
		DecodeSteps: steps, Sequences: cfg.Workload.Batch, Tolerance: tol,
		CountDiffs: append(ref.countDiffs, part.countDiffs...),
		Failures:   append(ref.failures, part.failures...),
	}
	for _, d := range res.CountDiffs {
		res.Failures = append(res.Failures, fmt.Sprintf("rank %d counted communication differs from the Program: %s", d.Rank, strings.Join(d.Diffs, ", ")))
	}
	res.compare(ref, part)
	res.Pass = len(res.Failures) == 0
	return res, nil
}

// checkConfigs copies cfg as the partitioned config and the reference
// config, both in fp32.
func checkConfigs(cfg *configs.Config) (ref, part *configs.Config) {
	p := *cfg
	p.Workload.Phases = []string{"prefill", "decode"}
	if cfg.Model.Encoder {
		p.Workload.Phases = []string{"prefill"}
	}
	p.Parallel.LayerMap = slices.Clone(cfg.Parallel.LayerMap)
	p.Model.DType = "fp32"
	r := p
	r.Name = cfg.Name + "-reference"
	r.Parallel.TP, r.Parallel.PP, r.Parallel.DP, r.Parallel.Microbatches = 1, 1, 1, 1
	r.Parallel.LayerMap = nil
	r.Parallel.PrefillChunk = 0 // the whole prompt in one pass, unless it does not fit
	r.Topology = configs.Topology{Topology: topology.Topology{Name: "reference-1x1", Nodes: 1, GPUsPerNode: 1, Intra: cfg.Topology.Intra}}
	return &r, &p
}

// checkRun is one plan's outputs: out[step][seq] and tokens[step][seq]
// (nil without an LM head).
type checkRun struct {
	out        [][][]float32
	tokens     [][]int
	failures   []string
	countDiffs []RankCountDiff
}

// rankOut is what one last-stage rank produced at each step, per micro-batch.
type rankOut struct {
	out     [][][]float32 // [step][mb]
	sampled [][][]int
}

func runCheckPlan(ctx context.Context, plan *partition.Plan, steps int,
	newCompute func(*partition.Plan, int) (Compute, error), newComms func(int) []Comm) (*checkRun, error) {
	size := plan.Size()
	outs := make([]rankOut, size)
	rankDiffs := make([]*RankCountDiff, size)
	err := runRanksInProcess(ctx, plan, newCompute, newComms, func(ctx context.Context, r int, c Compute, comm Comm) (err error) {
		if outs[r], err = runCheckRank(ctx, plan, r, steps, c, comm, nil); err != nil {
			return err
		}
		// Only this rank's goroutine counts on comm, and it has flushed.
		rankDiffs[r] = countDiff(plan, r, steps, comm)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var diffs []RankCountDiff
	for _, d := range rankDiffs {
		if d != nil {
			diffs = append(diffs, *d)
		}
	}
	return assembleCheckRun(plan, steps, outs, diffs)
}

// countDiff compares rank's counted communication with plan.Counts of the
// prefill and steps decode Programs it ran (nil when they agree).
func countDiff(plan *partition.Plan, rank, steps int, comm Comm) *RankCountDiff {
	want := plan.Counts(plan.Program(rank, partition.Prefill))
	dec := plan.Counts(plan.Program(rank, partition.Decode))
	want = want.Add(dec.Times(steps))
	if d := commcount.Diff(want, comm.Counter().Snapshot()); len(d) > 0 {
		return &RankCountDiff{Rank: rank, Diffs: d}
	}
	return nil
}

// assembleCheckRun gathers the last stage's outputs per step and sequence
// from every rank's (outs[rank]), checking that its TP ranks agree.
func assembleCheckRun(plan *partition.Plan, steps int, outs []rankOut, diffs []RankCountDiff) (*checkRun, error) {
	run := &checkRun{countDiffs: diffs}
	last := plan.RankOf(plan.PP-1, 0)
	mbs := plan.MicrobatchSize
	for step := 0; step <= steps; step++ {
		var out [][]float32
		var tokens []int
		for mb := 0; mb < plan.Microbatches; mb++ {
			o, s := outs[last].out[step][mb], outs[last].sampled[step][mb]
			if len(o) == 0 || len(o)%mbs != 0 {
				return nil, fmt.Errorf("rank %d step %d micro-batch %d: output of %d elements for %d sequences", last, step, mb, len(o), mbs)
			}
			w := len(o) / mbs
			for i := 0; i < mbs; i++ {
				out = append(out, o[i*w:(i+1)*w])
				if s != nil {
					tokens = append(tokens, s[i])
				}
			}
			// Every TP rank of the last stage holds the same result, and so
			// does every replica's: each runs the same batch on its own.
			for d := 0; d < plan.DP; d++ {
				for t := 0; t < plan.TP; t++ {
					r := plan.RankIn(d, plan.PP-1, t)
					if r == last {
						continue
					}
					if !slices.Equal(outs[r].out[step][mb], o) || !slices.Equal(outs[r].sampled[step][mb], s) {
						run.failures = append(run.failures, fmt.Sprintf("%s: step %d micro-batch %d: rank %d's output (replica %d) differs from rank %d's", plan.Config.Name, step, mb, r, d, last))
					}
				}
			}
		}
		run.out = append(run.out, out)
		run.tokens = append(run.tokens, tokens)
	}
	return run, nil
}

// runCheckRank runs prefill and steps decode steps on one rank, keeping the
// last stage's outputs after each. With a clock, the rank passes a barrier
// before the prefill and clock records the times and counted communication
// of every step (RunInProcess).
func runCheckRank(ctx context.Context, plan *partition.Plan, rank, steps int, c Compute, comm Comm, clock *stepClock) (rankOut, error) {
	var out rankOut
	groups, err := NewGroups(ctx, comm, plan, rank)
	if err != nil {
		return out, err
	}
	progs := map[partition.Phase]partition.Program{
		partition.Prefill: plan.Program(rank, partition.Prefill),
		partition.Decode:  plan.Program(rank, partition.Decode),
	}
	insp := c.(Inspector)
	lastStage := plan.LastStage(plan.Ranks[rank].Stage)
	if clock != nil {
		if err := comm.Barrier(ctx); err != nil {
			return out, err
		}
		clock.base = comm.Counter().Snapshot()
		clock.ready = time.Now()
	}
	for step := 0; step <= steps; step++ {
		phase, past := partition.Prefill, Past(plan, partition.Prefill, 0)
		if step > 0 {
			phase, past = partition.Decode, Past(plan, partition.Decode, step-1)
		}
		if err := RunProgram(ctx, progs[phase], c, comm, groups, past); err != nil {
			return out, err
		}
		if err := comm.Flush(ctx); err != nil {
			return out, fmt.Errorf("rank %d: flush: %w", rank, err)
		}
		if clock != nil {
			clock.ends = append(clock.ends, time.Now())
			snap := comm.Counter().Snapshot()
			clock.counted = append(clock.counted, snap.Sub(clock.base))
			clock.base = snap
		}
		if !lastStage {
			continue
		}
		o, s := make([][]float32, plan.Microbatches), make([][]int, plan.Microbatches)
		for mb := range o {
			o[mb], s[mb] = insp.Output(mb), insp.Sampled(mb)
		}
		out.out, out.sampled = append(out.out, o), append(out.sampled, s)
	}
	return out, nil
}

// firstCause is the first error that is not a cancellation caused by
// another rank's failure, else the first error.
func firstCause(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, context.Canceled) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// compare fills the error statistics and failures of part against ref.
func (res *CheckResult) compare(ref, part *checkRun) {
	tol := res.Tolerance
	bad := 0
	for step := range ref.out {
		if len(part.out[step]) != len(ref.out[step]) {
			res.Failures = append(res.Failures, fmt.Sprintf("step %d: %d sequences, reference has %d", step, len(part.out[step]), len(ref.out[step])))
			continue
		}
		for seq, r := range ref.out[step] {
			p := part.out[step][seq]
			if len(p) != len(r) {
				res.Failures = append(res.Failures, fmt.Sprintf("step %d sequence %d: output of %d elements, reference has %d", step, seq, len(p), len(r)))
				continue
			}
			for i := range r {
				rv, pv := float64(r[i]), float64(p[i])
				abs := math.Abs(pv - rv)
				rel := abs / math.Max(1, math.Abs(rv))
				if math.IsNaN(abs) {
					rel = math.Inf(1)
				}
				res.MaxAbsErr = math.Max(res.MaxAbsErr, abs)
				if rel > res.MaxRelErr {
					res.MaxRelErr, res.WorstSequence, res.WorstStep = rel, seq, step
				}
				if rel > tol {
					if bad < maxFailureLines {
						res.Failures = append(res.Failures, fmt.Sprintf("step %d sequence %d element %d: %g, reference %g (error %.3g > tolerance %g)", step, seq, i, pv, rv, rel, tol))
					}
					bad++
				}
			}
			if ref.tokens[step] == nil || part.tokens[step] == nil {
				continue
			}
			res.ArgmaxCompared++
			rt, pt := ref.tokens[step][seq], part.tokens[step][seq]
			if rt == pt {
				continue
			}
			top1, gap := top2Gap(r)
			// Logits within tol·max(1, |logit|) of the reference can swap
			// the top two only when their gap is at most twice that.
			m := ArgmaxMismatch{Step: step, Sequence: seq, Reference: rt, Partitioned: pt, Top2Gap: gap,
				Failure: gap > 2*tol*math.Max(1, math.Abs(top1))}
			res.ArgmaxMismatches = append(res.ArgmaxMismatches, m)
			if m.Failure {
				res.Failures = append(res.Failures, fmt.Sprintf("step %d sequence %d: argmax %d, reference %d with a top-2 gap of %.3g", step, seq, pt, rt, gap))
			}
		}
	}
	if bad > maxFailureLines {
		res.Failures = append(res.Failures, fmt.Sprintf("%d more elements beyond tolerance", bad-maxFailureLines))
	}
}

// top2Gap is the largest value and its lead over the second largest.
func top2Gap(v []float32) (top, gap float64) {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, x := range v {
		f := float64(x)
		switch {
		case f > a:
			a, b = f, a
		case f > b:
			b = f
		}
	}
	return a, a - b
}
