package exec

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// GatheredBuffer is the region an all-gather whose In and Out are the same
// buffer writes to: the Program's "logits.ag" gathers the LM head shards of
// "logits" into GatheredBuffer(model.Logits) = "logits.gathered", laid out
// [TP rank][rows][shard], so the send part is never overwritten. A Compute
// must accept it in Buffer.
func GatheredBuffer(b model.Buf) model.Buf { return b.Gathered() }

// GroupKey is the stable key of a group of global ranks: "0,1,2,3".
func GroupKey(ranks []int) string {
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = strconv.Itoa(r)
	}
	return strings.Join(s, ",")
}

// NewGroups creates every group the rank's Programs (prefill, then decode)
// use, in the order their first collective appears. Every member of a group
// runs the same ops in the same order, so all members create their groups
// in the same order, as Comm.NewGroup requires.
func NewGroups(ctx context.Context, comm Comm, plan *partition.Plan, rank int) (map[string]Group, error) {
	groups := map[string]Group{}
	for _, phase := range []partition.Phase{partition.Prefill, partition.Decode} {
		for _, op := range plan.Program(rank, phase).Ops {
			if op.Kind != partition.AllReduce && op.Kind != partition.AllGather {
				continue
			}
			key := GroupKey(op.Group)
			if _, ok := groups[key]; ok {
				continue
			}
			g, err := comm.NewGroup(ctx, op.Group)
			if err != nil {
				return nil, fmt.Errorf("rank %d: group %s: %w", rank, key, err)
			}
			groups[key] = g
		}
	}
	return groups, nil
}

// Past returns the cache position of each op of a phase's Program, for
// RunProgram: a prefill pass starts at chunk·PrefillChunk; decode step
// (0-based) sees the prompt and step generated tokens.
func Past(plan *partition.Plan, phase partition.Phase, step int) func(op *partition.Op) int {
	if phase == partition.Prefill {
		return func(op *partition.Op) int { return op.Chunk * plan.PrefillChunk }
	}
	past := plan.Config.Workload.PromptTokens() + step
	return func(*partition.Op) int { return past }
}

// RunProgram runs prog's ops in order: compute ops on c with the cache
// position past(op), collectives on groups[GroupKey(op.Group)], and
// send/recv on comm, each on micro-batch op.Microbatch's buffers. An
// all-gather sends the first Elems/len(Group) elements of op.In and receives
// Elems into op.Out, or into GatheredBuffer(op.Out) when In and Out are the
// same buffer. It does not flush: call comm.Flush before reusing a sent
// buffer from outside the Program.
func RunProgram(ctx context.Context, prog partition.Program, c Compute, comm Comm, groups map[string]Group, past func(op *partition.Op) int) error {
	return RunProgramObserved(ctx, prog, c, comm, groups, past, nil)
}

// RunProgramObserved is RunProgram calling observe (when not nil) with each
// op's start and end: the host's view, which is the op's time where calls
// return when their work is done (the CPU backend) and its issue time where
// they queue (a GPU stream).
func RunProgramObserved(ctx context.Context, prog partition.Program, c Compute, comm Comm, groups map[string]Group,
	past func(op *partition.Op) int, observe func(op *partition.Op, start, end time.Time)) error {
	return runProgramMarked(ctx, prog, c, comm, groups, past, observe, nil)
}

// runProgramMarked is RunProgramObserved calling mark (when set) before and
// after each op.
func runProgramMarked(ctx context.Context, prog partition.Program, c Compute, comm Comm, groups map[string]Group,
	past func(op *partition.Op) int, observe func(op *partition.Op, start, end time.Time), mark func() error) error {
	for i := range prog.Ops {
		op := &prog.Ops[i]
		if err := ctx.Err(); err != nil {
			return opErr(prog, op, err)
		}
		if mark != nil {
			if err := mark(); err != nil {
				return opErr(prog, op, fmt.Errorf("device mark: %w", err))
			}
		}
		start := time.Now()
		if err := runOp(ctx, op, c, comm, groups, past); err != nil {
			return opErr(prog, op, err)
		}
		if mark != nil {
			if err := mark(); err != nil {
				return opErr(prog, op, fmt.Errorf("device mark: %w", err))
			}
		}
		if observe != nil {
			observe(op, start, time.Now())
		}
	}
	return nil
}

func opErr(prog partition.Program, op *partition.Op, err error) error {
	return fmt.Errorf("rank %d %s op %s (micro-batch %d, chunk %d): %w", prog.Rank, prog.Phase, op.Name, op.Microbatch, op.Chunk, err)
}

func runOp(ctx context.Context, op *partition.Op, c Compute, comm Comm, groups map[string]Group, past func(op *partition.Op) int) error {
	mb := op.Microbatch
	switch op.Kind {
	case partition.AllReduce, partition.AllGather:
		g, ok := groups[GroupKey(op.Group)]
		if !ok {
			return fmt.Errorf("no group %s (create it with NewGroups)", GroupKey(op.Group))
		}
		if op.Kind == partition.AllReduce {
			buf, err := c.Buffer(op.In, mb, op.Elems)
			if err != nil {
				return err
			}
			return g.AllReduce(ctx, buf)
		}
		n := len(op.Group)
		if n == 0 || op.Elems%n != 0 {
			return fmt.Errorf("all-gather of %d elements does not split over %d ranks", op.Elems, n)
		}
		send, err := c.Buffer(op.In, mb, op.Elems/n)
		if err != nil {
			return err
		}
		out := op.Out
		if out == op.In {
			out = GatheredBuffer(out)
		}
		recv, err := c.Buffer(out, mb, op.Elems)
		if err != nil {
			return err
		}
		return g.AllGather(ctx, send, recv)
	case partition.Send:
		buf, err := c.Buffer(op.In, mb, op.Elems)
		if err != nil {
			return err
		}
		return comm.Send(ctx, buf, op.Peer)
	case partition.Recv:
		buf, err := c.Buffer(op.Out, mb, op.Elems)
		if err != nil {
			return err
		}
		return comm.Recv(ctx, buf, op.Peer)
	}
	return c.Exec(ctx, op, past(op))
}
