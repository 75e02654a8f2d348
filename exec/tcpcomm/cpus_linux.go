package tcpcomm

import (
	"runtime"

	"github.com/partbench/partbench/exec/launch"
)

// usableCPUs are the CPUs this process may run on: its affinity mask
// (launch.UsableCPUs), else runtime.NumCPU CPUs from 0.
func usableCPUs() []int {
	cpus, err := launch.UsableCPUs()
	if err != nil || len(cpus) == 0 {
		return firstCPUs(runtime.NumCPU())
	}
	return cpus
}
