package report

import (
	"fmt"
	"strconv"

	"github.com/partbench/partbench/sim"
)

// EmulationGrid compares a timeline built from measured compute (one device
// playing every rank) with the pure model.
func EmulationGrid(backend string, emu, model *sim.Estimate, allocated []int64) Grid {
	g := Grid{Title: fmt.Sprintf("Rank emulation: %s, %d ranks played in turn on one %s device", emu.Name, emu.GPUs, backend),
		Header: []string{"metric", "emulated (measured compute, modeled communication)", "modeled", "emulated / modeled"},
		Notes: []string{
			"communication was not executed: every collective and send/recv time is replayed from the topology model",
			"compute times are medians per op over the measured iterations, each op timed to completion",
		}}
	add := func(name string, e, m float64, f func(float64) string) {
		r := "n/a"
		if m != 0 {
			r = strconv.FormatFloat(e/m, 'f', 3, 64)
		}
		g.Rows = append(g.Rows, []string{name, f(e), f(m), r})
	}
	add("TTFT (s)", emu.Prefill.TTFTS, model.Prefill.TTFTS, sec)
	add("TPOT (ms)", emu.Decode.TPOTS, model.Decode.TPOTS, ms)
	add("TPS (tok/s)", emu.Decode.TokensPerS, model.Decode.TokensPerS, num)
	add("prefill bubble (%)", emu.Prefill.BubbleFraction, model.Prefill.BubbleFraction, pct)
	add("decode bubble (%)", emu.Decode.BubbleFraction, model.Decode.BubbleFraction, pct)
	var maxAlloc int64
	for _, a := range allocated {
		maxAlloc = max(maxAlloc, a)
	}
	add("memory per GPU, largest rank (GB)", float64(maxAlloc), float64(maxRank(model).TotalBytes), func(v float64) string { return gbs(int64(v)) })
	return g
}
