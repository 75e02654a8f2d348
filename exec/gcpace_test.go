package exec_test

import (
	"fmt"
	"os"
	"runtime/debug"
	"testing"

	pexec "github.com/partbench/partbench/exec"
)

// With PaceGC each rank paces its collector once set up and says so; a
// tiny rank's live heap is a few MiB (the config's weights about 1 MiB), so the pace
// is above the default 100 and at most 1600 (gcpace.Percent: 100 · 64 MiB
// / live, capped where the runtime's 4 MiB floor would pass 64 MiB), and
// it is the process's pace after the run; without it, no note.
func TestRunPacesGC(t *testing.T) {
	if v, ok := os.LookupEnv("GOGC"); ok {
		t.Skipf("GOGC=%s in the environment: the collector's pace is left as it is", v)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100)) // the process's pace, as before, after
	results, _ := runTiny(t, 2, 1, 1, func(o *pexec.RunOptions) { o.PaceGC = true })
	set := map[int]bool{}
	for _, res := range results {
		var pct int
		if _, err := fmt.Sscanf(res.GC, "Go collector: GOGC=%d ", &pct); err != nil || pct <= 100 || pct > 1600 {
			t.Errorf("rank %d: collector note %q, want GOGC in 101–1600", res.Rank, res.GC)
		}
		set[pct] = true
	}
	if p := debug.SetGCPercent(100); !set[p] { // the two ranks share this process: the later one's
		t.Errorf("the process's pace after the run: GOGC=%d, want a rank's (%v)", p, set)
	}
	results, _ = runTiny(t, 2, 1, 1, func(o *pexec.RunOptions) {})
	for _, res := range results {
		if res.GC != "" {
			t.Errorf("rank %d without PaceGC: note %q", res.Rank, res.GC)
		}
	}
}
