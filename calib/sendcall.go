package calib

import (
	"context"
	"fmt"
	"strings"

	"github.com/partbench/partbench/configs"
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

// measureSendCall times rank 0's Send calls of a ping-pong between ranks
// 0 and 1 among n process ranks (LinkArgv) at every size of o.CommSizes
// and adds their entries to cal's op times, with a note.
func measureSendCall(ctx context.Context, o Options, n int, cal *configs.Calibration) error {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	times, err := measureLinkProcs(ctx, o.LinkArgv, n, []commGroup{{opSendCall, all}}, o.CommSizes, o.Repeats, o.MinSample)
	if err != nil {
		return fmt.Errorf("send calls: %w", err)
	}
	es, err := sendCallEntries(times[0], o.CommSizes, n)
	if err != nil {
		return err
	}
	cal.OpTimes = append(cal.OpTimes, es...)
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%d B: %.3g s", e.Size, e.TimeS))
	}
	note(cal, "send calls at %d process ranks (rank 0's Send of a ping-pong between ranks 0 and 1, median over %d repeats): %s", n, o.Repeats, strings.Join(got, ", "))
	return nil
}

// sendCallEntries turns rank 0's times of the opSendCall group,
// [size][2·repeat] (each repeat: the one-way time, then the Send call's
// time per send), into one entry per size: the median and extremes over
// repeats of the call's time, measured with n ranks on the host.
func sendCallEntries(times [][]float64, sizes []int64, n int) ([]configs.OpTime, error) {
	if len(times) != len(sizes) {
		return nil, fmt.Errorf("send calls: %d sizes measured, want %d", len(times), len(sizes))
	}
	var out []configs.OpTime
	for si, size := range sizes {
		ts := times[si]
		if len(ts) == 0 || len(ts)%2 != 0 {
			return nil, fmt.Errorf("send calls: %d B: %d times, want one-way and call time per repeat", size, len(ts))
		}
		var calls []float64
		for r := 1; r < len(ts); r += 2 {
			calls = append(calls, max(ts[r], noWaitS))
		}
		sp := spreadOf(calls)
		out = append(out, configs.OpTime{Kind: configs.SendCallKind, Shape: "ranks=2", Size: size,
			TimeS: sp.Median, TimeMinS: sp.Min, TimeMaxS: sp.Max, Samples: len(calls), Ranks: n})
	}
	return out, nil
}
