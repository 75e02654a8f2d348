package backend

import (
	"fmt"

	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/partition"
)

// LaunchCounter counts, without a device, what a backend's Compute queues
// one by one for ops run eagerly (Exec) and row copies (CopyRows): the
// serving engine's launches per iteration (serving.EngineLaunches).
type LaunchCounter interface {
	Exec(op *partition.Op, past int)
	CopyRows()
	Launches() int
	// Reset starts again at 0, every micro-batch's position unknown.
	Reset()
}

var _ LaunchCounter = (*pcuda.LaunchCounter)(nil)

// cudaLaunchCounter is exec/cuda's count (exec/cuda/launch.go).
func cudaLaunchCounter(plan *partition.Plan, rank int) LaunchCounter {
	return pcuda.NewLaunchCounter(plan, rank)
}

// LaunchCounter returns the launch count of the backend named name for
// plan's rank. A backend without Backend.Launches is refused, naming those
// that have it.
func (r *Registry) LaunchCounter(name string, plan *partition.Plan, rank int) (LaunchCounter, error) {
	b, ok := r.lookup(name)
	if !ok {
		return nil, r.unknown(name)
	}
	if b.Launches == nil {
		return nil, fmt.Errorf("backend %s counts no launches (backends that do: %s)", name, r.with(func(b Backend) bool { return b.Launches != nil }))
	}
	return b.Launches(plan, rank), nil
}
