package report

import (
	"fmt"
	"strconv"

	"github.com/partbench/partbench/compare"
)

// MemoryGrid lays out each rank's memory itemized against the model's
// (compare.ItemizeMemory), in MB.
func MemoryGrid(ranks []compare.RankMemory) Grid {
	g := Grid{Title: "Memory per rank: executor against the model (MB)",
		Header: []string{"rank", "item", "executor", "model", "executor − model", "source"},
		Notes:  []string{"the model counts weights, KV cache and the peak of live activations (docs/costmodel.md); the other items are what it leaves out"}}
	for _, r := range ranks {
		if r.DeviceBytes != 0 {
			g.Notes = append(g.Notes, "allocated items are the backend's own allocations; measured items are differences of the device's memory in use (cuMemGetInfo) before and after the setup, the communicator and the measured iterations, beyond the allocations")
			break
		}
	}
	mb := func(b int64) string { return strconv.FormatFloat(float64(b)/1e6, 'f', 3, 64) }
	for _, r := range ranks {
		for _, it := range r.Items {
			src := "allocated"
			if it.Measured {
				src = "measured"
			}
			if it.Total {
				src = "total"
			}
			diff := mb(it.ExecBytes - it.ModelBytes)
			if it.Name == compare.MemAllocated && r.ModelBytes > 0 {
				diff += fmt.Sprintf(" (%+.1f %%)", 100*r.RelDiff)
			}
			g.Rows = append(g.Rows, []string{itoa(r.Rank), it.Name, mb(it.ExecBytes), mb(it.ModelBytes), diff, src})
		}
	}
	return g
}
