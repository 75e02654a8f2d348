package wire

import (
	"runtime"
	"syscall"
	"time"
)

// Utilization is a device's busy fraction over a window, in [0, 1], and how
// it was measured.
type Utilization struct {
	Fraction float64
	Source   string // "cpu-busy", "nvml-gpm-sm-activity", "nvml-utilization"
}

// UtilSampler measures a device's utilization over a window: Start opens
// one, the function it returns closes it. Windows may overlap (concurrent
// requests); each sees the whole device.
type UtilSampler interface {
	Start() (stop func() Utilization)
}

// CPUBusy is the CPU backend's utilization: the server process's CPU time
// (user + system, getrusage) over the window's wall time × GOMAXPROCS, so 1
// is every core the process may use busy for the whole window. Concurrent
// requests' work counts in each other's windows.
type CPUBusy struct{}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Start opens a window.
func (CPUBusy) Start() func() Utilization {
	c0, t0 := cpuTime(), time.Now()
	return func() Utilization {
		wall := time.Since(t0)
		if wall <= 0 {
			return Utilization{Source: "cpu-busy"}
		}
		f := float64(cpuTime()-c0) / (float64(wall) * float64(runtime.GOMAXPROCS(0)))
		return Utilization{Fraction: min(max(f, 0), 1), Source: "cpu-busy"}
	}
}

// TimeoutSlack is how much later than a timeout t a call or a receive may
// be cut, on both sides of the wire: t/16, at most a second. A deadline is
// then moved only when it would cut early rather than set around every
// call (a timer operation that wakes a thread), and a receive is watched
// every TimeoutSlack instead of by a timer of its own.
func TimeoutSlack(t time.Duration) time.Duration { return min(t/16, time.Second) }
