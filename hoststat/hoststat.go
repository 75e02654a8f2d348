// Package hoststat states the load a host was under while something was
// measured on it: the 1-minute load average at the start and the end, and
// how the host's CPU time in between was spent (busy, stolen by the
// hypervisor), from /proc/loadavg and /proc/stat's aggregate cpu line.
//
// A benchmark's figures describe the machine in the state it was in. On
// the project's 2-core VM a 16-rank CPU run's TPOT read 0.92 ms in one
// round and 1.2–1.9 ms in the rounds on either side
// (docs/measurements/cpu-calibration.md, (twenty-ninth)); a result that
// carries its host's load and stolen time says which state it met.
package hoststat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Sample is one reading of the host's counters.
type Sample struct {
	// Load1 is the 1-minute load average.
	Load1 float64
	// CPUs is how many per-CPU lines /proc/stat lists.
	CPUs int
	// Jiffies is the aggregate cpu line: user, nice, system, idle,
	// iowait, irq, softirq, steal (guest time is inside user and nice).
	Jiffies [8]uint64
	// At is when the sample was read, OwnCPU the CPU time (user and
	// system) this process and its children that have exited and been
	// waited for had run by then, where OwnKnown (getrusage).
	At       time.Time
	OwnCPU   time.Duration
	OwnKnown bool
}

// Window is the host's state over an interval between two samples.
type Window struct {
	LoadStart float64 `json:"load_start"`
	LoadEnd   float64 `json:"load_end"`
	CPUs      int     `json:"cpus"`
	// BusyFraction is the share of the CPUs' time not idle (iowait counts
	// as idle) and StealFraction the share the hypervisor gave to other
	// guests, both of the interval's CPU time as /proc/stat counts it
	// (USER_HZ ticks: an interval of under a few ticks reads 0).
	BusyFraction  float64 `json:"busy_fraction"`
	StealFraction float64 `json:"steal_fraction"`
	// OwnFraction is the share of the CPUs' time (the window's wall time
	// × CPUs) this process and its waited-for children ran, where
	// OwnKnown: what the rest of the busy share is not.
	OwnFraction float64 `json:"-"`
	OwnKnown    bool    `json:"-"`
}

// Others is the share of the window's CPU time that neither this process
// (with its waited-for children) nor the hypervisor's other guests took:
// the host's other processes, busy less stolen less own (never below 0);
// false where the window does not know its own share. A benchmark that
// starts its own ranks raises the load average itself — 16 process ranks
// of a calibration take a 2-core host's 1-minute load from 0.4 to 4.6 —
// so the load cannot say whether anything else ran; this can.
func (w Window) Others() (float64, bool) {
	if !w.OwnKnown {
		return 0, false
	}
	return max(0, w.BusyFraction-w.StealFraction-w.OwnFraction), true
}

const (
	idle, iowait, steal = 3, 4, 7
)

// StolenFlagFraction is the share of a window's CPU time stolen by the
// hypervisor above which partbench flags it: a run's notes say so apart,
// a calibration warns.
const StolenFlagFraction = 0.01

// Stolen reports whether more than StolenFlagFraction of the window's CPU
// time was stolen.
func (w Window) Stolen() bool { return w.StealFraction > StolenFlagFraction }

// Read samples the host; false where it has no /proc (not Linux) or the
// files do not parse.
func Read() (Sample, bool) {
	la, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return Sample{}, false
	}
	st, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Sample{}, false
	}
	s, err := parse(string(la), string(st))
	s.At = time.Now()
	s.OwnCPU, s.OwnKnown = ownCPU()
	return s, err == nil
}

// parse reads a Sample from /proc/loadavg's and /proc/stat's text.
func parse(loadavg, stat string) (Sample, error) {
	var s Sample
	f := strings.Fields(loadavg)
	if len(f) == 0 {
		return s, fmt.Errorf("/proc/loadavg: empty")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return s, fmt.Errorf("/proc/loadavg: %w", err)
	}
	s.Load1 = v
	found := false
	for _, line := range strings.Split(stat, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "cpu":
			if len(f) < 5 {
				return s, fmt.Errorf("/proc/stat: cpu line %q: want at least 4 counters", line)
			}
			for i := 0; i < len(s.Jiffies) && i+1 < len(f); i++ {
				n, err := strconv.ParseUint(f[i+1], 10, 64)
				if err != nil {
					return s, fmt.Errorf("/proc/stat: cpu line %q: %w", line, err)
				}
				s.Jiffies[i] = n
			}
			found = true
		case strings.HasPrefix(f[0], "cpu"):
			s.CPUs++
		}
	}
	if !found {
		return s, fmt.Errorf("/proc/stat: no aggregate cpu line")
	}
	return s, nil
}

// Between is the window from a to b (b sampled later).
func Between(a, b Sample) Window {
	w := Window{LoadStart: a.Load1, LoadEnd: b.Load1, CPUs: b.CPUs}
	var total, idleT, stealT float64
	for i := range a.Jiffies {
		d := float64(b.Jiffies[i]) - float64(a.Jiffies[i])
		if d < 0 { // a counter went back (should not): count none of it
			d = 0
		}
		total += d
		switch i {
		case idle, iowait:
			idleT += d
		case steal:
			stealT += d
		}
	}
	if total > 0 {
		w.BusyFraction, w.StealFraction = (total-idleT)/total, stealT/total
	}
	if wall := b.At.Sub(a.At); a.OwnKnown && b.OwnKnown && wall > 0 && w.CPUs > 0 {
		w.OwnFraction = min(1, max(0, (b.OwnCPU-a.OwnCPU).Seconds()/(wall.Seconds()*float64(w.CPUs))))
		w.OwnKnown = true
	}
	return w
}

// String is the window in words: "1-minute load 0.50 → 3.20 on 2 CPUs,
// busy 93 %, 0.4 % stolen by the hypervisor".
func (w Window) String() string {
	return fmt.Sprintf("1-minute load %.2f → %.2f on %d CPUs, busy %.0f %%, %.1f %% stolen by the hypervisor",
		w.LoadStart, w.LoadEnd, w.CPUs, 100*w.BusyFraction, 100*w.StealFraction)
}
