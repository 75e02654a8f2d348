package shmcomm

import (
	"fmt"
	"strings"
	"time"
)

// SpinChoice is a spin policy as a user writes it ("auto", "off",
// "adaptive[:LENGTH]", "always[:LENGTH]"): Auto leaves the mode to the
// caller's placement rule; otherwise Mode, with Length (0: the caller's
// default). The shared-memory waits (PARTBENCH_SHM_SPIN) and the remote
// raw-TCP reads (PARTBENCH_TCP_POLL) read it the same way.
type SpinChoice struct {
	Auto   bool
	Mode   SpinMode
	Length time.Duration
}

// ParseSpin reads a spin policy; what names the value in errors.
func ParseSpin(what, s string) (SpinChoice, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	name, length, hasLength := strings.Cut(v, ":")
	var c SpinChoice
	switch name {
	case "", "auto":
		c.Auto = true
	case "off":
		c.Mode = SpinOff
	case "adaptive":
		c.Mode = SpinAdaptive
	case "always":
		c.Mode = SpinAlways
	default:
		return c, fmt.Errorf("%s: unknown spin policy %q (want auto, off, adaptive or always, the last two optionally with a length, e.g. adaptive:20us)", what, s)
	}
	if hasLength {
		d, err := time.ParseDuration(length)
		if err != nil || d <= 0 || d > time.Second || c.Auto || c.Mode == SpinOff {
			return c, fmt.Errorf("%s: %q: a spin's length goes with adaptive or always, as a duration from 1ns to 1s (e.g. always:50us)", what, s)
		}
		c.Length = d
	}
	return c, nil
}

// Budget is how long the next wait may spin under s's policy (0: sleep at
// once), for a waiter other than Waiter (remote's raw-TCP reads); it
// counts the wait for the adaptive probe. Record its outcome when it
// spun.
func (s *Spin) Budget() time.Duration { return s.budget() }

// Record tells the adaptive policy whether a wait that spun was met within
// its budget.
func (s *Spin) Record(met bool) { s.record(met) }

// SetProbeEvery sets how often an adaptive wait still spins while its recent
// spins failed: one wait in n (n < 1: ProbeEvery). Call it before the
// waits begin.
func (s *Spin) SetProbeEvery(n int) {
	s.probe = 0
	if n >= 1 {
		s.probe = uint64(n)
	}
}
