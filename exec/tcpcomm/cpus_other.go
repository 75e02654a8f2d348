//go:build !linux

package tcpcomm

import "runtime"

// usableCPUs are runtime.NumCPU CPUs from 0 (no affinity mask read here).
func usableCPUs() []int { return firstCPUs(runtime.NumCPU()) }
