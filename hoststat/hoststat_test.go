package hoststat

import (
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

const stat0 = `cpu  1000 50 300 8000 100 10 20 30 0 0
cpu0 500 25 150 4000 50 5 10 15 0 0
cpu1 500 25 150 4000 50 5 10 15 0 0
intr 12345
ctxt 678
`

// 200 ticks later: user +120, system +30, idle +40, iowait +4, softirq
// +2, steal +4 (nice and irq unchanged).
const stat1 = `cpu  1120 50 330 8040 104 10 22 34 0 0
cpu0 560 25 165 4020 52 5 11 17 0 0
cpu1 560 25 165 4020 52 5 11 17 0 0
intr 12400
`

func TestBetween(t *testing.T) {
	a, err := parse("0.50 0.40 0.30 1/200 999\n", stat0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parse("3.20 1.00 0.50 3/210 1001\n", stat1)
	if err != nil {
		t.Fatal(err)
	}
	if a.CPUs != 2 || a.Jiffies != [8]uint64{1000, 50, 300, 8000, 100, 10, 20, 30} {
		t.Errorf("sample %+v", a)
	}
	w := Between(a, b)
	// Total 120+30+40+4+2+4 = 200 ticks; idle (idle + iowait) 44: busy
	// 156/200 = 0.78; steal 4/200 = 0.02.
	if w.LoadStart != 0.5 || w.LoadEnd != 3.2 || w.CPUs != 2 || math.Abs(w.BusyFraction-0.78) > 1e-12 || math.Abs(w.StealFraction-0.02) > 1e-12 {
		t.Errorf("window %+v", w)
	}
	if s := w.String(); s != "1-minute load 0.50 → 3.20 on 2 CPUs, busy 78 %, 2.0 % stolen by the hypervisor" {
		t.Errorf("%q", s)
	}
	// No ticks between: no fractions, not NaN.
	if w := Between(a, a); w.BusyFraction != 0 || w.StealFraction != 0 {
		t.Errorf("empty window %+v", w)
	}
}

// An older kernel's cpu line has fewer counters (no steal): the missing
// ones read zero.
func TestParseShortLine(t *testing.T) {
	s, err := parse("1.0", "cpu 1 2 3 4\ncpu0 1 2 3 4\n")
	if err != nil || s.Jiffies != [8]uint64{1, 2, 3, 4} || s.CPUs != 1 {
		t.Errorf("%+v, %v", s, err)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ la, st, want string }{
		{"", stat0, "/proc/loadavg: empty"},
		{"x", stat0, "/proc/loadavg"},
		{"1.0", "intr 1\n", "no aggregate cpu line"},
		{"1.0", "cpu 1 2\n", "want at least 4 counters"},
		{"1.0", "cpu 1 2 x 4\n", "/proc/stat: cpu line"},
	} {
		if _, err := parse(c.la, c.st); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parse(%q, %q): %v, want %q", c.la, c.st, err, c.want)
		}
	}
}

// On Linux the host's own files parse, and a busy loop between two
// samples reads as CPU time spent.
func TestReadThisHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	a, ok := Read()
	if !ok || a.CPUs < 1 {
		t.Fatalf("Read: %+v, %v", a, ok)
	}
	busy := func(s Sample) uint64 {
		return s.Jiffies[0] + s.Jiffies[1] + s.Jiffies[2] + s.Jiffies[5] + s.Jiffies[6] + s.Jiffies[7]
	}
	b := a
	for i := 0; i < 2000 && busy(b) == busy(a); i++ { // until a tick lands on a busy CPU (≤ 10 ms at 100 Hz)
		x := 0.0
		for j := 0; j < 1_000_000; j++ {
			x += math.Sqrt(float64(j))
		}
		_ = x
		if b, ok = Read(); !ok {
			t.Fatal("second Read failed")
		}
	}
	w := Between(a, b)
	if w.BusyFraction <= 0 || w.BusyFraction > 1 || w.StealFraction < 0 || w.StealFraction > w.BusyFraction {
		t.Errorf("window %+v over a busy loop", w)
	}
	// The loop was this process's own CPU time.
	if !w.OwnKnown || w.OwnFraction <= 0 || w.OwnFraction > 1 {
		t.Errorf("window %+v: want this process's share in (0, 1]", w)
	}
}

// A window's own share is this process's CPU time over its wall time ×
// CPUs; the others' share is busy less stolen less own, never below 0, and
// unknown without the own share.
func TestOthers(t *testing.T) {
	a, _ := parse("0.50", stat0)
	b, _ := parse("3.20", stat1)
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	a.At, a.OwnCPU, a.OwnKnown = t0, 5*time.Second, true
	b.At, b.OwnCPU, b.OwnKnown = t0.Add(2*time.Second), 6200*time.Millisecond, true
	w := Between(a, b)
	// Own 1.2 s over 2 s × 2 CPUs = 0.3; busy 0.78, stolen 0.02 (TestBetween):
	// others 0.78 − 0.02 − 0.3 = 0.46.
	others, ok := w.Others()
	if !ok || math.Abs(w.OwnFraction-0.3) > 1e-12 || math.Abs(others-0.46) > 1e-12 {
		t.Errorf("window %+v: others %g, %v; want own 0.3, others 0.46", w, others, ok)
	}
	// Own 3.6 s of 4 CPU-seconds (0.9) above busy less stolen (0.76): the
	// ticks and the process's accounting disagree by a little; others 0.
	b.OwnCPU = 8600 * time.Millisecond
	if others, ok := Between(a, b).Others(); !ok || others != 0 {
		t.Errorf("own above busy: others %g, %v; want 0", others, ok)
	}
	b.OwnKnown = false
	if w := Between(a, b); w.OwnKnown || w.OwnFraction != 0 {
		t.Errorf("unknown own share: %+v", w)
	}
	if _, ok := Between(a, b).Others(); ok {
		t.Error("Others without the own share: want false")
	}
}

// Stolen flags a window above 1 % stolen, not at it.
func TestStolen(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want bool
	}{{0, false}, {0.01, false}, {0.0101, true}, {0.2, true}} {
		if got := (Window{StealFraction: c.f}).Stolen(); got != c.want {
			t.Errorf("steal %g: Stolen %v, want %v", c.f, got, c.want)
		}
	}
}
