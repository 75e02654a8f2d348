package ncclcomm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/nccl"
	"github.com/partbench/partbench/partition"
)

// Broadcaster is the control plane New needs: rank 0's payload delivered
// to every rank, every rank calling in the same order (the rendezvous
// session's Broadcast).
type Broadcaster interface {
	Broadcast(ctx context.Context, payload []byte) ([]byte, error)
}

// idSet is what rank 0 broadcasts: one unique id per communicator of the
// run, and its NCCL version, which every rank's library must match.
type idSet struct {
	Version string            `json:"nccl_version"`
	World   []byte            `json:"world"`
	Barrier []byte            `json:"barrier"`
	Groups  map[string][]byte `json:"groups"` // by exec.GroupKey
}

// PlanGroups lists every group the plan's Programs use (the tensor-parallel
// groups), by exec.GroupKey, with their ranks: over all ranks and both
// phases, exactly the groups exec.NewGroups asks a Comm to create.
func PlanGroups(plan *partition.Plan) map[string][]int {
	out := map[string][]int{}
	for r := range plan.Ranks {
		for _, phase := range []partition.Phase{partition.Prefill, partition.Decode} {
			for _, op := range plan.Program(r, phase).Ops {
				if op.Kind != partition.AllReduce && op.Kind != partition.AllGather {
					continue
				}
				if k := pexec.GroupKey(op.Group); out[k] == nil {
					out[k] = slices.Clone(op.Group)
				}
			}
		}
	}
	return out
}

// makeIDs is rank 0's part: a unique id for the world, the barrier and
// every group of the plan (in key order, so a trace of the ids is stable).
func makeIDs(lib *nccl.Lib, version string, groups map[string][]int) (*idSet, error) {
	one := func() ([]byte, error) {
		id, err := lib.GetUniqueID()
		if err != nil {
			return nil, err
		}
		return id[:], nil
	}
	s := &idSet{Version: version, Groups: map[string][]byte{}}
	var err error
	if s.World, err = one(); err != nil {
		return nil, err
	}
	if s.Barrier, err = one(); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if s.Groups[k], err = one(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// shareIDs runs the broadcast: rank 0 sends its ids, every rank returns
// them, checked against its own library and the plan's groups.
func shareIDs(ctx context.Context, b Broadcaster, rank int, mine *idSet, version string, groups map[string][]int) (*idSet, error) {
	var payload []byte
	if rank == 0 {
		var err error
		if payload, err = json.Marshal(mine); err != nil {
			return nil, err
		}
	}
	got, err := b.Broadcast(ctx, payload)
	if err != nil {
		return nil, fmt.Errorf("unique ids from rank 0: %w", err)
	}
	var s idSet
	if err := json.Unmarshal(got, &s); err != nil {
		return nil, fmt.Errorf("unique ids from rank 0: %w", err)
	}
	if s.Version != version {
		return nil, fmt.Errorf("rank 0 runs NCCL %s, this rank %s: every rank must load the same NCCL", s.Version, version)
	}
	for _, id := range append([][]byte{s.World, s.Barrier}, mapValues(s.Groups)...) {
		if len(id) != len(nccl.UniqueID{}) {
			return nil, fmt.Errorf("unique ids from rank 0: an id of %d bytes, want %d", len(id), len(nccl.UniqueID{}))
		}
	}
	for k := range groups {
		if s.Groups[k] == nil {
			return nil, fmt.Errorf("unique ids from rank 0: no id for group %s of this rank's plan", k)
		}
	}
	return &s, nil
}

func mapValues(m map[string][]byte) [][]byte {
	out := make([][]byte, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func uniqueID(b []byte) nccl.UniqueID {
	var id nccl.UniqueID
	copy(id[:], b)
	return id
}
