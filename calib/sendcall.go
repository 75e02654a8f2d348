package calib

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/shmcomm"
	"github.com/partbench/partbench/topology"
)

// The send's own time. A run's Send returns once its message is in the
// channel to its receiver, but that is not free: the copy, the receiver's
// wake-up, and — with more ranks than cores — the time off its core the
// wake-up costs the sender. The ping-pong of the send entry (the one-way
// time, opSendRecv) runs again with rank 0's Send calls timed apart
// (opSendCall) at every placement the link is measured at, and the calls'
// time per send is recorded as {kind send_call, shape ranks=2, size the
// message's bytes, ranks n}: sim's send slice (docs/costmodel.md,
// "Op times at the job's placement").
//
// The ping-pong's receiver has just sent its own message when the next
// one comes, so it is still spinning in its receive (with a core each) or
// has only just gone to sleep: the Send finds it awake. A pipeline
// stage's receiver has waited the stage's whole compute, long past the
// spin, and sleeps on its futex, so the Send must wake it — a system call,
// and on a VM the wake of a halted vCPU: several µs where the ping-pong's
// call takes a fraction of one. The same ping-pong runs once more with
// rank 0 computing a burst of SendCallAsleepBurst before each Send
// (opSendCallAsleep, in a launch of its own: the awake ping-pong's
// adaptive spin must not inherit the asleep one's missed spins), timing
// the Send alone, recorded as {kind send_call_asleep, shape ranks=2,
// size, ranks n}; sim takes it for a send whose receiver has waited longer
// than the spin (sim.ReceiverSpinS).

// SendCallAsleepBurst is the compute burst rank 0 runs before each Send of
// the asleep ping-pong (burst iterations: about 0.1 ms on the project's
// 2-core VM with a core to itself, five times the shared-memory wait's
// spin, shmcomm.SpinFor, and about a tiny config's decode stage: the wait
// of a pipeline's receiver).
var SendCallAsleepBurst = 64_000

// Where the ranks are bound two to a CPU (n twice the host's cores, as
// the link worker binds them like a run: topology.PairedCPU), ranks 0 and
// 1 share a CPU: the asleep ping-pong's Send wakes its receiver onto the
// sender's own CPU. A pipeline's hop between stages of two ranks crosses
// CPUs instead (tp2pp2 on 2 CPUs: 0 → 2), waking a receiver whose CPU
// runs nothing else while it sleeps. There the asleep ping-pong runs once
// more between ranks 0 and 2, recorded as {kind send_call_asleep_cross,
// …} alike; sim prices a send between ranks on different CPUs by it.

// measureSendCall times rank 0's Send calls of a ping-pong between ranks
// 0 and 1 among n process ranks (LinkArgv) at every size of o.CommSizes
// on a host of cores cores, and where they are bound two to a CPU also
// those to a sleeping rank 2 (crossPeer), and adds their entries to cal's
// op times, with a note each.
func measureSendCall(ctx context.Context, o Options, n, cores int, cal *configs.Calibration) error {
	all := everyRank(n)
	times, err := measureLinkProcs(ctx, o.LinkArgv, n, []commGroup{{opSendCall, all}}, o.CommSizes, o.Repeats, o.MinSample)
	if err != nil {
		return fmt.Errorf("send calls: %w", err)
	}
	es, err := sendCallEntries(times[0], o.CommSizes, n)
	if err != nil {
		return err
	}
	cal.OpTimes = append(cal.OpTimes, es...)
	note(cal, "send calls at %d process ranks (rank 0's Send of a ping-pong between ranks 0 and 1, median over %d repeats): %s", n, o.Repeats, sizeTimes(es))

	asleep, err := measureLinkProcsBursts(ctx, o.LinkArgv, n, []commGroup{{opSendCallAsleep, all}}, []int{SendCallAsleepBurst}, o.CommSizes, o.Repeats, o.MinSample)
	if err != nil {
		return fmt.Errorf("send calls to a sleeping receiver: %w", err)
	}
	es, waitS, err := sendCallAsleepEntries(asleep[0], o.CommSizes, n, shmcomm.SpinFor.Seconds())
	if err != nil {
		note(cal, "send calls to a sleeping receiver at %d process ranks: none recorded (%v); every send is priced by the ping-pong's call", n, err)
		return nil
	}
	cal.OpTimes = append(cal.OpTimes, es...)
	note(cal, "send calls to a sleeping receiver at %d process ranks (rank 0's Send of the ping-pong after a %.3g s compute burst, rank 1 waiting in its receive; median over %d repeats): %s", n, waitS, o.Repeats, sizeTimes(es))

	peer := crossPeer(n, cores)
	if peer < 0 {
		return nil
	}
	order := append([]int{0, peer}, slices.DeleteFunc(everyRank(n), func(r int) bool { return r == 0 || r == peer })...)
	cross, err := measureLinkProcsBursts(ctx, o.LinkArgv, n, []commGroup{{opSendCallAsleep, order}}, []int{SendCallAsleepBurst}, o.CommSizes, o.Repeats, o.MinSample)
	if err != nil {
		return fmt.Errorf("send calls to a sleeping receiver on another CPU: %w", err)
	}
	es, waitS, err = sendCallAsleepEntries(cross[0], o.CommSizes, n, shmcomm.SpinFor.Seconds())
	if err != nil {
		note(cal, "send calls to a sleeping receiver on another CPU at %d process ranks: none recorded (%v); a send across CPUs is priced by the same CPU's", n, err)
		return nil
	}
	for i := range es {
		es[i].Kind = configs.SendCallAsleepCrossKind
	}
	cal.OpTimes = append(cal.OpTimes, es...)
	note(cal, "send calls to a sleeping receiver on another CPU at %d process ranks bound two to a CPU (rank 0's Send of the ping-pong with rank %d after a %.3g s compute burst; median over %d repeats): %s", n, peer, waitS, o.Repeats, sizeTimes(es))
	return nil
}

// crossPeer is the rank the cross-CPU ping-pong pairs with rank 0 among
// n ranks on cores cores: the first rank on another CPU where the link
// worker binds them two to a CPU (topology.PairedCPU, as a run's
// `--bind-to auto`), −1 where it does not (no CPU is shared so, or a
// single CPU).
func crossPeer(n, cores int) int {
	home := topology.PairedCPU(0, n, cores, 0, 0)
	if home < 0 {
		return -1
	}
	for r := 1; r < n; r++ {
		if c := topology.PairedCPU(r, n, cores, 0, 0); c >= 0 && c != home {
			return r
		}
	}
	return -1
}

// sendCallAsleepEntries turns rank 0's times of the opSendCallAsleep
// group, [size][3·repeat] (each repeat: half the round trip, the Send
// call's time per send, the burst's wall time per send), into one
// send_call_asleep entry per size: the median and extremes over repeats
// of the call's time, measured with n ranks on the host. waitS is the
// bursts' median wall time over every size and repeat: how long the
// receiver waited before each Send. It is an error, and no entry is
// made, where waitS is not above spinS (the receiver may have caught the
// message spinning).
func sendCallAsleepEntries(times [][]float64, sizes []int64, n int, spinS float64) (es []configs.OpTime, waitS float64, err error) {
	const what = "send calls to a sleeping receiver"
	calls, err := repeatsAt(times, sizes, 3, 1, what, "a round trip, a call time and a burst time")
	if err != nil {
		return nil, 0, err
	}
	bursts, err := repeatsAt(times, sizes, 3, 2, what, "a round trip, a call time and a burst time")
	if err != nil {
		return nil, 0, err
	}
	waitS = medianOf(slices.Concat(bursts...))
	if !(waitS > spinS) {
		return nil, waitS, fmt.Errorf("the receiver waited %.3g s before each Send, not longer than the shared-memory wait's spin (%.3g s)", waitS, spinS)
	}
	return callEntries(configs.SendCallAsleepKind, sizes, calls, n), waitS, nil
}

// sendCallEntries turns rank 0's times of the opSendCall group,
// [size][2·repeat] (each repeat: the one-way time, then the Send call's
// time per send), into one entry per size: the median and extremes over
// repeats of the call's time, measured with n ranks on the host.
func sendCallEntries(times [][]float64, sizes []int64, n int) ([]configs.OpTime, error) {
	calls, err := repeatsAt(times, sizes, 2, 1, "send calls", "one-way and call time")
	if err != nil {
		return nil, err
	}
	return callEntries(configs.SendCallKind, sizes, calls, n), nil
}

// repeatsAt checks that rank 0's times hold a row per size of per numbers
// a repeat (what: the measurement, each: what a repeat holds, for the
// errors) and returns each size's repeats' number at col.
func repeatsAt(times [][]float64, sizes []int64, per, col int, what, each string) ([][]float64, error) {
	if len(times) != len(sizes) {
		return nil, fmt.Errorf("%s: %d sizes measured, want %d", what, len(times), len(sizes))
	}
	out := make([][]float64, len(sizes))
	for si, size := range sizes {
		ts := times[si]
		if len(ts) == 0 || len(ts)%per != 0 {
			return nil, fmt.Errorf("%s: %d B: %d times, want %s per repeat", what, size, len(ts), each)
		}
		for r := col; r < len(ts); r += per {
			out[si] = append(out[si], ts[r])
		}
	}
	return out, nil
}

// callEntries is one entry of kind per size (shape "ranks=2", measured
// with n ranks on the host) from its repeats' Send call times calls[size]:
// their median and extremes, a zero kept as noWaitS.
func callEntries(kind string, sizes []int64, calls [][]float64, n int) []configs.OpTime {
	out := make([]configs.OpTime, 0, len(sizes))
	for si, size := range sizes {
		cs := make([]float64, len(calls[si]))
		for i, c := range calls[si] {
			cs[i] = max(c, noWaitS)
		}
		sp := spreadOf(cs)
		out = append(out, configs.OpTime{Kind: kind, Shape: "ranks=2", Size: size,
			TimeS: sp.Median, TimeMinS: sp.Min, TimeMaxS: sp.Max, Samples: len(cs), Ranks: n})
	}
	return out
}

// sizeTimes lists entries' sizes and times for a note: "256 B: 7e-06 s, …".
func sizeTimes(es []configs.OpTime) string {
	got := make([]string, len(es))
	for i, e := range es {
		got[i] = fmt.Sprintf("%d B: %.3g s", e.Size, e.TimeS)
	}
	return strings.Join(got, ", ")
}
