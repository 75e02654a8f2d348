package main

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/topology"
)

// run --nproc 4 on two CPUs (taskset) binds the ranks two to a CPU by
// default, tp2-dp2-tiny's pairs {0, 1} and {2, 3} each on one, and says so
// in rank 0's note (local rank 0 on the first CPU); --bind-to none leaves
// them with no note of a binding.
func TestRunBindsPairsOnTwoCPUs(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cpus, err := launch.UsableCPUs()
	if err != nil {
		t.Skip(err)
	}
	if len(cpus) < 2 {
		t.Skipf("one CPU in the affinity mask (%v): no pair of CPUs", cpus)
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skipf("no taskset to give the run two CPUs: %v", err)
	}
	bin := partbenchBinary(t)
	two := cpus[:2]
	want := fmt.Sprintf("--bind-to auto: the host's 4 local ranks bound two to a CPU of the affinity mask's 2 (%s), consecutive local ranks together (each tensor-parallel pair sharing one CPU, its ranks taking turns); local rank 0 to %d",
		topology.CPUList(two), two[0])
	checkBindNotes(t, want, taskset, "-c", topology.CPUList(two), bin, "run", "--nproc", "4", "--config", "test/tp2-dp2-tiny", "--backend", "cpu")
}
