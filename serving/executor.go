package serving

import (
	"context"
	"fmt"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// Executor runs one scheduled iteration for real.
type Executor interface {
	Run(ctx context.Context, batch []Scheduled) error
	// Released frees what a sequence held (its KV slot).
	Released(seq *Seq)
}

// TokenSource is an Executor that says which token each sampling sequence
// of the last iteration produced (−1 when the model has no LM head).
type TokenSource interface {
	Token(seq *Seq) int
}

// RowCopier is a backend that copies rows between two micro-batches'
// buffers on its device: elems elements of buffer b from micro-batch srcMB
// at element srcOff to micro-batch dstMB at dstOff. The batched engine
// needs it on backends whose buffers the host cannot address (exec/cpu's
// are host memory and need none).
type RowCopier interface {
	CopyRows(b model.Buf, srcMB, srcOff, dstMB, dstOff, elems int) error
}

// PassExecutor runs the scheduler's iterations on a backend of the
// registry (exec/cpu in CI). The engine's plan (EngineConfig) has one
// micro-batch of one sequence per slot, each with its own KV cache of the
// whole context, and one more micro-batch, the batch, whose buffers hold
// an iteration's rows. A sequence takes a slot when first scheduled and
// frees it when it finishes or is preempted by recompute.
//
// Batched (the default where the backend allows it), an iteration is one
// forward pass over all its sequences' new tokens (an iteration of more
// tokens than a slot's context, which sizes the batch's buffers too, is
// split between sequences into consecutive passes of at most that many
// rows): every op that treats
// rows alone (norms, the GEMMs of every layer, the activation, the
// residuals) runs once over the T = Σ q rows of the batch; what depends on
// a sequence's position runs per sequence on its slot at its own position
// — the embedding and position lookup, attention over its own KV cache,
// and, for sequences that sample, the final norm, LM head and sampling of
// their last row (the backend's logits buffer holds one micro-batch's
// sequences) — with their rows copied between the batch and the slot.
// Per sequence (Batched false), each sequence's pass is
// partition.Plan.Pass at its own position on its slot, one after another.
// Both run the Program's own ops (Plan.Pass), and make the same tokens.
type PassExecutor struct {
	passPlan
	c       pexec.Compute
	batched bool
	why     string // why an executor is not batched
	free    []int
	slotOf  map[*Seq]int
	tokens  map[*Seq]int
}

// passPlan is an engine plan's passes and the order the engine runs their
// ops in (runRows, runSeq), whoever carries them out: the backend
// (PassExecutor) or a count of its launches (EngineLaunches).
type passPlan struct {
	plan    *partition.Plan
	batchMB int
	passes  passCache
}

// passSink carries out a pass's ops and row copies: b is the sequence an
// op runs for (nil: the batch's op over all the pass's rows).
type passSink interface {
	execOp(ctx context.Context, b *Scheduled, op *partition.Op, past int) error
	copyRows(buf model.Buf, width, src, srcRow, dst, dstRow, rows int) error
}

// EngineConfig is the config an engine of slots sequences runs: the
// model, hardware and run seed of cfg on one rank, with a KV cache of
// context tokens per slot and buffers for a pass over a whole sequence (a
// recompute after preemption prefills prompt and output at once), in every
// slot and in the batch. Every position below the context counts as
// prompt, so the seeded token schedule feeds each pass (the token values do
// not change the work; a slot's tokens are model.PromptToken of the slot
// and the position).
func EngineConfig(cfg *configs.Config, slots, context int) (*configs.Config, error) {
	if cfg.Parallel.Ranks() != 1 {
		return nil, fmt.Errorf("the engine runs one rank: config %s has tp × pp × dp = %d (use a single-rank config such as test/single-tiny)", cfg.Name, cfg.Parallel.Ranks())
	}
	if slots < 1 || context < 1 {
		return nil, fmt.Errorf("the engine needs ≥ 1 slot of ≥ 1 token (got %d of %d)", slots, context)
	}
	n := *cfg
	n.Name = cfg.Name + "-engine"
	// The smallest output the workload takes (2) leaves a prompt of context
	// positions: every position a request reaches.
	n.Workload = configs.Workload{Batch: slots + 1, Context: context + 2, OutputTokens: 2, Phases: []string{"prefill", "decode"}}
	// The engine copies rows between the batch's buffers and a slot's, so
	// every micro-batch keeps buffers of its own.
	n.Parallel = configs.Parallel{TP: 1, PP: 1, DP: 1, Microbatches: slots + 1, Schedule: "fill-drain", PrefillChunk: context,
		PassBuffers: configs.PassBuffersPerMicrobatch}
	return &n, nil
}

// NewPassExecutor allocates the engine's model on the named backend
// (cpu, cuda), reached through the backend registry. It runs batched
// iterations when the backend's buffers are host memory or it copies rows
// itself (RowCopier), else per sequence; Mode says which and why.
func NewPassExecutor(plan *partition.Plan, backendName string, perSequence bool) (*PassExecutor, error) {
	if plan.Microbatches < 2 || plan.MicrobatchSize != 1 || len(plan.Ranks) != 1 {
		return nil, fmt.Errorf("serving engine: the plan must be EngineConfig's (one rank, micro-batches of one sequence, one for the batch; got %d ranks, %d micro-batches of %d)",
			len(plan.Ranks), plan.Microbatches, plan.MicrobatchSize)
	}
	env := launch.Env{Size: 1, LocalSize: 1}
	b, newCompute, err := backend.Default().DeviceCompute(backendName, env)
	if err != nil {
		return nil, err
	}
	if b.Untimed != nil {
		// The engine reads no op's time: on a device that times its ops
		// with marks around each (the GPU's two events per op), the
		// untimed Compute leaves that host work out of every iteration.
		if newCompute, err = backend.Default().UntimedCompute(backendName, env); err != nil {
			return nil, err
		}
	}
	if b.Admit != nil {
		if err := b.Admit(plan); err != nil {
			return nil, err
		}
	}
	c, err := newCompute(plan, 0)
	if err != nil {
		return nil, err
	}
	return newPassExecutor(plan, c, b.Name, perSequence)
}

// newPassExecutor is NewPassExecutor on a backend's compute c.
func newPassExecutor(plan *partition.Plan, c pexec.Compute, backendName string, perSequence bool) (*PassExecutor, error) {
	e := &PassExecutor{passPlan: passPlan{plan: plan, batchMB: plan.Microbatches - 1}, c: c, slotOf: map[*Seq]int{}, tokens: map[*Seq]int{}}
	for i := e.batchMB - 1; i >= 0; i-- {
		e.free = append(e.free, i)
	}
	switch {
	case perSequence:
		e.why = "per-sequence passes asked for"
	default:
		buf, err := c.Buffer(model.X, e.batchMB, 1)
		if err != nil {
			c.Close()
			return nil, err
		}
		_, host := buf.(pexec.F32)
		_, copier := c.(RowCopier)
		e.batched = host || copier
		if !e.batched {
			e.why = fmt.Sprintf("backend %s keeps device buffers and copies no rows between micro-batches (serving.RowCopier)", backendName)
		}
	}
	return e, nil
}

// Mode is "batched", or "per-sequence: " and the reason.
func (e *PassExecutor) Mode() string {
	if e.batched {
		return "batched"
	}
	return "per-sequence: " + e.why
}

// Batched reports whether an iteration is one pass over all its sequences.
func (e *PassExecutor) Batched() bool { return e.batched }

// Slots is the sequences the engine holds at once; FreeSlots those free.
func (e *PassExecutor) Slots() int     { return e.batchMB }
func (e *PassExecutor) FreeSlots() int { return len(e.free) }

// Close frees the backend's memory.
func (e *PassExecutor) Close() error { return e.c.Close() }

// Released returns a sequence's slot.
func (e *PassExecutor) Released(seq *Seq) {
	if s, ok := e.slotOf[seq]; ok {
		delete(e.slotOf, seq)
		e.free = append(e.free, s)
	}
	delete(e.tokens, seq)
}

// Token is the token seq sampled in the last iteration (argmax over the
// vocabulary), −1 without an LM head or if it did not sample.
func (e *PassExecutor) Token(seq *Seq) int {
	if t, ok := e.tokens[seq]; ok {
		return t
	}
	return -1
}

// slot is the slot b runs on, taken from the free ones if it has none.
func (e *PassExecutor) slot(b Scheduled) (int, error) {
	slot, ok := e.slotOf[b.Seq]
	if !ok {
		if len(e.free) == 0 {
			return 0, fmt.Errorf("serving engine: no KV slot free for request %d (%d slots)", b.Seq.Req.ID, e.batchMB)
		}
		slot = e.free[len(e.free)-1]
		e.free = e.free[:len(e.free)-1]
		e.slotOf[b.Seq] = slot
	}
	if limit := e.plan.Config.Workload.PromptTokens(); b.Past+b.Q > limit || b.Q > e.plan.PrefillChunk || b.Q < 1 {
		return 0, fmt.Errorf("serving engine: request %d: %d tokens after %d do not fit a slot of %d tokens and passes of %d",
			b.Seq.Req.ID, b.Q, b.Past, limit, e.plan.PrefillChunk)
	}
	return slot, nil
}

// passKey is a pass of the engine's plan but for its position: only its
// attention ops depend on that (partition's Op.AtPast).
type passKey struct {
	mb, q  int
	sample bool
}

// passCache holds the engine's passes at position 0 by passKey, so an
// iteration builds no Program: a decode step's passes recur at every
// step, at another position. It holds at most maxCachedOps ops in all and
// starts again when a pass would pass that (prefills of many lengths).
type passCache struct {
	m   map[passKey][]partition.Op
	ops int
}

const maxCachedOps = 1 << 16

// pass is plan.Pass(0, phaseOf(q), mb, 1, q, past, sample) with its
// attention ops at position 0: the caller runs each attention op at
// its sequence's position through atPast.
func (e *passPlan) pass(mb, q int, sample bool) []partition.Op {
	k := passKey{mb, q, sample}
	if ops, ok := e.passes.m[k]; ok {
		return ops
	}
	ops := e.plan.Pass(0, phaseOf(q), mb, 1, q, 0, sample)
	if e.passes.m == nil || e.passes.ops+len(ops) > maxCachedOps {
		e.passes = passCache{m: map[passKey][]partition.Op{}}
	}
	e.passes.m[k] = ops
	e.passes.ops += len(ops)
	return ops
}

// atPast is op of a cached pass (PassExecutor.pass) at position past:
// op itself unless it is attention.
func atPast(op *partition.Op, past int) *partition.Op {
	if op.Kind != partition.Attention || past == 0 {
		return op
	}
	at := op.AtPast(past)
	return &at
}

func phaseOf(q int) partition.Phase {
	if q > 1 {
		return partition.Prefill
	}
	return partition.Decode
}

// Run executes one iteration.
func (e *PassExecutor) Run(ctx context.Context, batch []Scheduled) error {
	clear(e.tokens)
	var err error
	if e.batched {
		err = e.runBatched(ctx, batch)
	} else {
		err = e.runPerSequence(ctx, batch)
	}
	if err != nil {
		return err
	}
	if err := e.c.Sync(ctx); err != nil {
		return err
	}
	insp, _ := e.c.(interface{ Sampled(mb int) []int })
	for _, b := range batch {
		if !b.Sample {
			continue
		}
		e.tokens[b.Seq] = -1
		if insp != nil {
			if s := insp.Sampled(e.slotOf[b.Seq]); len(s) == 1 {
				e.tokens[b.Seq] = s[0]
			}
		}
	}
	return nil
}

// execOp runs one op on the backend.
func (e *PassExecutor) execOp(ctx context.Context, b *Scheduled, op *partition.Op, past int) error {
	if err := e.c.Exec(ctx, op, past); err != nil {
		if b == nil {
			return fmt.Errorf("serving engine: batch of %d tokens, %s: %w", op.Rows, op.Name, err)
		}
		return fmt.Errorf("serving engine: request %d, %s: %w", b.Seq.Req.ID, op.Name, err)
	}
	return nil
}

// runPerSequence runs each sequence's pass in turn on its slot.
func (e *PassExecutor) runPerSequence(ctx context.Context, batch []Scheduled) error {
	for i := range batch {
		slot, err := e.slot(batch[i])
		if err != nil {
			return err
		}
		if err := e.runSeq(ctx, e, &batch[i], slot); err != nil {
			return err
		}
	}
	return nil
}

// runSeq runs b's whole pass on its slot.
func (e *passPlan) runSeq(ctx context.Context, s passSink, b *Scheduled, slot int) error {
	ops := e.pass(slot, b.Q, b.Sample)
	for i := range ops {
		if err := s.execOp(ctx, b, atPast(&ops[i], b.Past), b.Past); err != nil {
			return err
		}
	}
	return nil
}

// runBatched runs the iteration as passes of at most the batch's rows,
// each over whole sequences.
func (e *PassExecutor) runBatched(ctx context.Context, batch []Scheduled) error {
	return e.passesOf(batch, func(part []Scheduled, T int) error {
		slots := make([]int, len(part))
		for i, b := range part {
			slot, err := e.slot(b)
			if err != nil {
				return err
			}
			slots[i] = slot
		}
		return e.runRows(ctx, e, part, slots, T)
	})
}

// passesOf splits batch into passes of at most the batch's rows (the
// plan's PrefillChunk), each over whole sequences, and calls run on each
// with its rows.
func (e *passPlan) passesOf(batch []Scheduled, run func(part []Scheduled, T int) error) error {
	first, T := 0, 0
	for i, b := range batch {
		if T+b.Q > e.plan.PrefillChunk {
			if err := run(batch[first:i], T); err != nil {
				return err
			}
			first, T = i, 0
		}
		T += b.Q
	}
	if first == len(batch) {
		return nil
	}
	return run(batch[first:], T)
}

// runRows runs one pass of T = Σ q rows on the batch micro-batch, batch[i]
// on slots[i]; see PassExecutor.
func (e *passPlan) runRows(ctx context.Context, s passSink, batch []Scheduled, slots []int, T int) error {
	if len(batch) == 0 {
		return nil
	}
	all := e.pass(e.batchMB, T, false)
	per := make([][]partition.Op, len(batch))
	for i, b := range batch {
		per[i] = e.pass(slots[i], b.Q, b.Sample)
		if len(per[i]) < len(all) {
			return fmt.Errorf("serving engine: request %d's pass has %d ops, the batch's %d", b.Seq.Req.ID, len(per[i]), len(all))
		}
		for j := range all {
			if per[i][j].Name != all[j].Name || per[i][j].Kind != all[j].Kind {
				return fmt.Errorf("serving engine: request %d's op %d is %s, the batch's %s", b.Seq.Req.ID, j, per[i][j].Name, all[j].Name)
			}
		}
	}
	first := len(all)
	for j := range all {
		if all[j].Layer >= 0 {
			first = j
			break
		}
	}
	hidden := e.plan.Model.Hidden
	// Before the layers (embedding, positions): per sequence on its slot,
	// then its rows of x into the batch.
	off := 0
	for i := range batch {
		b := &batch[i]
		for j := 0; j < first; j++ {
			if err := s.execOp(ctx, b, &per[i][j], b.Past); err != nil {
				return err
			}
		}
		if err := s.copyRows(model.X, hidden, slots[i], 0, e.batchMB, off, b.Q); err != nil {
			return err
		}
		off += b.Q
	}
	// The layers: attention per sequence, everything else once over T rows.
	last := first
	for j := first; j < len(all); j++ {
		op := &all[j]
		if op.Layer < 0 {
			break
		}
		last = j + 1
		if op.Kind != partition.Attention {
			if err := s.execOp(ctx, nil, op, 0); err != nil {
				return err
			}
			continue
		}
		off := 0
		for i := range batch {
			b := &batch[i]
			a := atPast(&per[i][j], b.Past)
			if err := s.copyRows(a.In, a.InWidth, e.batchMB, off, slots[i], 0, b.Q); err != nil {
				return err
			}
			if err := s.execOp(ctx, b, a, b.Past); err != nil {
				return err
			}
			if err := s.copyRows(a.Out, a.OutWidth, slots[i], 0, e.batchMB, off, b.Q); err != nil {
				return err
			}
			off += b.Q
		}
	}
	// After the layers, for each sequence that samples: its last row back
	// to the slot's last row, then the final norm, LM head and sampling.
	off = 0
	for i := range batch {
		b := &batch[i]
		if b.Sample {
			if err := s.copyRows(model.X, hidden, e.batchMB, off+b.Q-1, slots[i], b.Q-1, 1); err != nil {
				return err
			}
			for j := last; j < len(per[i]); j++ {
				if err := s.execOp(ctx, b, &per[i][j], b.Past); err != nil {
					return err
				}
			}
		}
		off += b.Q
	}
	return nil
}

// copyRows copies rows rows of width elements of buffer buf from
// micro-batch src at row srcRow to micro-batch dst at row dstRow.
func (e *PassExecutor) copyRows(buf model.Buf, width, src, srcRow, dst, dstRow, rows int) error {
	if rc, ok := e.c.(RowCopier); ok {
		return rc.CopyRows(buf, src, srcRow*width, dst, dstRow*width, rows*width)
	}
	s, err := e.c.Buffer(buf, src, (srcRow+rows)*width)
	if err != nil {
		return fmt.Errorf("serving engine: %w", err)
	}
	d, err := e.c.Buffer(buf, dst, (dstRow+rows)*width)
	if err != nil {
		return fmt.Errorf("serving engine: %w", err)
	}
	sf, ok1 := s.(pexec.F32)
	df, ok2 := d.(pexec.F32)
	if !ok1 || !ok2 {
		return fmt.Errorf("serving engine: buffer %q is %T, not host memory", buf, s)
	}
	copy(df[dstRow*width:(dstRow+rows)*width], sf[srcRow*width:(srcRow+rows)*width])
	return nil
}

// AllocatedBytes is the memory the backend holds for the engine.
func (e *PassExecutor) AllocatedBytes() int64 { return e.c.AllocatedBytes() }

// Launches is what the backend has queued one by one so far (kernels,
// cuBLAS calls, copies, memsets: exec/cuda's LaunchStats.Launches), and
// false on a backend that does not count them.
func (e *PassExecutor) Launches() (int64, bool) {
	c, ok := e.c.(interface{ Launched() int64 })
	if !ok {
		return 0, false
	}
	return c.Launched(), true
}
