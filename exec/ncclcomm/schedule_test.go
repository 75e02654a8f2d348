package ncclcomm

import (
	"fmt"
	"testing"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// The stream order of NCCL calls that a run makes, and whether it can
// finish under NCCL's documented semantics, where a send completes only
// together with its receive (no buffering) and a stream runs one call at a
// time. Compute ops never wait on another rank, so they are left out.

// item is one NCCL call (or fused group) on a rank's stream.
type item struct {
	sends, recvs []msg // point-to-point messages, by pair and sequence
	coll         string
	inst         int // the collective's instance number on its group
}

type msg struct{ from, to, seq int }

// streamOf lays out rank's calls for iterations of a run with steps decode
// steps, as exec.Run makes them through this package's Comm: a Barrier
// before each iteration, the Programs, optionally the first stage's
// receipt of the last step's tokens (drain), a Flush. fuse says whether
// Sends are fused as Send does.
func streamOf(plan *partition.Plan, rank, steps, iterations int, drain, fuse bool, sent, recvd map[[2]int]int) []item {
	fused := map[sendKey]bool{}
	if fuse {
		fused = fusedSends(plan, rank)
	}
	var out []item
	var held []msg
	insts := map[string]int{}
	release := func() {
		if len(held) > 0 {
			out = append(out, item{sends: held})
			held = nil
		}
	}
	do := func(op *partition.Op) {
		switch op.Kind {
		case partition.Send:
			m := msg{rank, op.Peer, sent[[2]int{rank, op.Peer}]}
			sent[[2]int{rank, op.Peer}]++
			if fused[sendKey{op.In, op.Microbatch, op.Peer, op.Elems}] {
				release() // a held send followed by a send: the second is a new call
				held = []msg{m}
				return
			}
			release()
			out = append(out, item{sends: []msg{m}})
		case partition.Recv:
			m := msg{op.Peer, rank, recvd[[2]int{op.Peer, rank}]}
			recvd[[2]int{op.Peer, rank}]++
			out = append(out, item{sends: held, recvs: []msg{m}})
			held = nil
		case partition.AllReduce, partition.AllGather:
			release()
			k := pexec.GroupKey(op.Group)
			out = append(out, item{coll: k, inst: insts[k]})
			insts[k]++
		}
	}
	prefill, decode := plan.Program(rank, partition.Prefill), plan.Program(rank, partition.Decode)
	for range iterations {
		release()
		out = append(out, item{coll: "barrier", inst: insts["barrier"]})
		insts["barrier"]++
		for i := range prefill.Ops {
			do(&prefill.Ops[i])
		}
		for range steps {
			for i := range decode.Ops {
				do(&decode.Ops[i])
			}
		}
		if drain {
			for i := range decode.Ops {
				if op := &decode.Ops[i]; op.Kind == partition.Recv && op.Payload == partition.PayloadTokens {
					do(op)
				}
			}
		}
		release() // Flush
	}
	out = append(out, item{coll: "barrier", inst: insts["barrier"]})
	return out
}

// finishes plays every rank's stream: the head item of a stream completes
// when each of its sends is in its receiver's head item and each receive
// in its sender's, or, for a collective, when every member's head item is
// the same instance. It returns "" or a description of the stuck heads.
func finishes(plan *partition.Plan, steps, iterations int, drain, fuse bool) string {
	n := plan.Size()
	sent, recvd := map[[2]int]int{}, map[[2]int]int{}
	streams := make([][]item, n)
	for r := range n {
		streams[r] = streamOf(plan, r, steps, iterations, drain, fuse, sent, recvd)
	}
	members := PlanGroups(plan)
	all := make([]int, n)
	for r := range all {
		all[r] = r
	}
	members["barrier"] = all
	head := make([]int, n)
	at := func(r int) *item {
		if head[r] < len(streams[r]) {
			return &streams[r][head[r]]
		}
		return nil
	}
	posted := func(r int, m msg, recv bool) bool {
		it := at(r)
		if it == nil {
			return false
		}
		list := it.sends
		if recv {
			list = it.recvs
		}
		for _, x := range list {
			if x == m {
				return true
			}
		}
		return false
	}
	done := map[msg]bool{} // messages whose send and receive met
	for {
		moved := false
		for r := range n {
			if it := at(r); it != nil {
				for _, m := range it.sends {
					if posted(m.to, m, true) {
						done[m] = true
					}
				}
			}
		}
		for r := range n {
			it := at(r)
			if it == nil {
				continue
			}
			if it.coll != "" {
				ready := true
				for _, m := range members[it.coll] {
					if o := at(m); o == nil || o.coll != it.coll || o.inst != it.inst {
						ready = false
					}
				}
				if ready { // the collective completes on every member
					for _, m := range members[it.coll] {
						head[m]++
					}
					moved = true
				}
				continue
			}
			ok := true
			for _, m := range append(append([]msg{}, it.sends...), it.recvs...) {
				ok = ok && done[m]
			}
			if ok {
				head[r]++
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	stuck := ""
	for r := range n {
		if it := at(r); it != nil {
			stuck += fmt.Sprintf(" rank %d at %+v;", r, *it)
		}
	}
	return stuck
}

// Every test partitioning finishes under strict send/receive semantics
// when Sends are fused as this package does and the first stage receives
// the last decode step's tokens at the end of each iteration. Without that
// receipt every pipeline waits forever (the last step's token sends have
// no receive), so exec.Run must add it (docs/gpu.md, "The NCCL data
// plane"); without the fusion, so does every pipeline of more than one
// micro-batch.
func TestSchedulesFinish(t *testing.T) {
	for _, name := range testConfigs {
		plan := loadPlan(t, name, "fp16")
		steps := plan.Config.Workload.OutputTokens - 1
		if stuck := finishes(plan, steps, 2, true, true); stuck != "" {
			t.Errorf("%s: fused sends, drained tokens: stuck:%s", name, stuck)
		}
		pipeline := plan.PP > 1
		if stuck := finishes(plan, steps, 2, false, true); pipeline == (stuck == "") {
			t.Errorf("%s: without the drain, stuck %q (a pipeline must be stuck, a single stage not)", name, stuck)
		}
		// Without fusion, a stage's token send waits for the first stage,
		// which first sends the next micro-batch: stuck with 2 or more.
		if stuck := finishes(plan, steps, 2, true, false); (pipeline && plan.Microbatches > 1) == (stuck == "") {
			t.Errorf("%s: without fusion, stuck %q", name, stuck)
		}
	}
}
