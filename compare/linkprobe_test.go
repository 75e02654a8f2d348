package compare

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/hoststat"
	"github.com/partbench/partbench/sim"
)

// A link probe's note, by hand: rank 0's decode all_reduce took 34, 36 and
// 40 µs an iteration (median 36) over 90 calls in 3 iterations (30 each):
// 1.2 µs a call; 3 decode steps, so 10 calls a step, and the op check's
// 6.9 µs a step is 0.69 µs a call; the probe's 2.3 µs is 3.3× that, beyond
// 1.5×: the link was in another state. Rank 1's probe of the same group is
// not repeated.
func TestLinkProbeNotes(t *testing.T) {
	res := func(rank, cpus int, median float64) exec.RankResult {
		return exec.RankResult{Rank: rank, Host: "h", HostState: &hoststat.Window{CPUs: cpus},
			LinkProbes:   []exec.LinkProbe{{Kind: "all_reduce", Ranks: []int{0, 1}, Bytes: 1024, Calls: 64, MedianS: median, MinS: 2e-6}},
			PhaseBusyS:   map[string]map[string][]float64{"decode": {"all_reduce": {34e-6, 40e-6, 36e-6}}},
			DecodeCounts: commcount.Snapshot{Calls: map[commcount.Op]int64{commcount.AllReduce: 90}},
			StepEndS:     [][]float64{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}}}
	}
	rows := []OpCheckRow{{Phase: "prefill", Kind: "all_reduce", ModeledS: 1e-3}, {Phase: "decode", Kind: "all_reduce", ModeledS: 6.9e-6}}
	two := []exec.RankResult{res(0, 2, 2.3e-6), res(1, 2, 2.3e-6)}
	notes := linkProbeNotes(two, rows, nil, true)
	want := "link probe after the measured iterations: all_reduce of 1024 B over ranks 0,1, 2.3 µs a call back to back (median of 64; least 2 µs); " +
		"the run's decode all_reduce calls 1.2 µs a call on rank 0, modeled 0.69 µs — the probe is 3.3× the modeled call: the link was in another state than the one the profile measured"
	if len(notes) != 1 || notes[0] != want {
		t.Fatalf("notes %q\nwant %q", notes, want)
	}
	// No verdict: an uncalibrated model; a probe within 1.5× (0.8 µs:
	// 1.16×); more ranks on the host than CPUs (the model adds core waits
	// a probe does not meet alike).
	four := append(two, exec.RankResult{Rank: 2, Host: "h"}, exec.RankResult{Rank: 3, Host: "h"})
	for name, n := range map[string][]string{
		"uncalibrated":    linkProbeNotes(two, rows, nil, false),
		"within 1.5×":     linkProbeNotes([]exec.RankResult{res(0, 2, 0.8e-6)}, rows, nil, true),
		"4 ranks, 2 CPUs": linkProbeNotes(four, rows, nil, true),
	} {
		if len(n) != 1 || strings.Contains(n[0], "another state") || !strings.Contains(n[0], "modeled") {
			t.Errorf("%s: notes %q; want the figures without a verdict", name, n)
		}
	}
	// A device's batched probe says how it was timed; its host timers saw
	// only the enqueue, so no time of the run's own calls is given, the
	// modeled call still is (0.69 µs, as above).
	batched := res(0, 16, 9e-6)
	batched.LinkProbes[0].Batched, batched.Async = true, true
	if n := linkProbeNotes([]exec.RankResult{batched}, rows, nil, true); len(n) != 1 || !strings.Contains(n[0], "9 µs a call back to back (the mean of 64 queued on the device, synced once), modeled 0.69 µs") ||
		strings.Contains(n[0], "the run's decode") {
		t.Errorf("batched: %q", n)
	}
	// Without an op-check row or counts: the probe alone.
	if n := linkProbeNotes(two[:1], nil, nil, true); len(n) != 1 || strings.Contains(n[0], "modeled") || !strings.HasSuffix(n[0], "1.2 µs a call on rank 0") {
		t.Errorf("no op check: %q", n)
	}
	// Where the profile holds the back-to-back call the probe is held
	// against it, not against the modeled call, which adds the wait in
	// place: modeled 12 µs a step over 10 calls is 1.2 µs a call, the
	// profile's 1 KiB all_reduce 0.69 µs; a probe of 0.75 µs is 0.63× the
	// modeled call (beyond 1.5×) but 1.09× the back-to-back one: no
	// verdict; one of 2.3 µs is 3.3× it.
	inPlace := []OpCheckRow{{Phase: "decode", Kind: "all_reduce", ModeledS: 12e-6}}
	tab := sim.NewOpTable([]configs.OpTime{{Kind: "all_reduce", Shape: "ranks=2", Size: 1024, TimeS: 0.69e-6, TimeMinS: 0.69e-6, TimeMaxS: 0.69e-6, Samples: 1, Ranks: 2}})
	if n := linkProbeNotes([]exec.RankResult{res(0, 2, 0.75e-6)}, inPlace, tab, true); len(n) != 1 || strings.Contains(n[0], "another state") ||
		!strings.HasSuffix(n[0], "modeled 1.2 µs, 0.69 µs back to back in the profile") {
		t.Errorf("in place, same state: %q", n)
	}
	if n := linkProbeNotes([]exec.RankResult{res(0, 2, 2.3e-6)}, inPlace, tab, true); len(n) != 1 ||
		!strings.HasSuffix(n[0], "— the probe is 3.3× the profile's back-to-back call: the link was in another state than the one the profile measured") {
		t.Errorf("in place, another state: %q", n)
	}
}
