package tcpcomm

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// usableCPUs are the CPUs this process may run on: its affinity mask.
func usableCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return firstCPUs(runtime.NumCPU())
	}
	var cpus []int
	for c := 0; c < len(set)*8*int(unsafe.Sizeof(set[0])); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}
