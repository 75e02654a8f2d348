package compare

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/hoststat"
)

// One state per host, from its lowest rank that recorded one; a note
// states each, and a second one where more than 1 % of the host's CPU time
// was stolen.
func TestHostStates(t *testing.T) {
	quiet := &hoststat.Window{LoadStart: 0.5, LoadEnd: 3.2, CPUs: 2, BusyFraction: 0.78, StealFraction: 0.002}
	stolen := &hoststat.Window{LoadStart: 8, LoadEnd: 9, CPUs: 8, BusyFraction: 0.9, StealFraction: 0.035}
	results := []exec.RankResult{
		{Rank: 0, Host: "a"}, // recorded none: a's next rank states it
		{Rank: 1, Host: "a", HostState: quiet},
		{Rank: 2, Host: "a", HostState: stolen}, // a's second: not used
		{Rank: 3, Host: "b", HostState: stolen},
	}
	got, notes := hostStates(results)
	if len(got) != 2 || got[0].Host != "a" || got[0].Window != *quiet || got[1].Host != "b" || got[1].Window != *stolen {
		t.Fatalf("states %+v", got)
	}
	want := []string{
		"host a over the measured iterations: 1-minute load 0.50 → 3.20 on 2 CPUs, busy 78 %, 0.2 % stolen by the hypervisor",
		"host b over the measured iterations: 1-minute load 8.00 → 9.00 on 8 CPUs, busy 90 %, 3.5 % stolen by the hypervisor",
		"host b: the hypervisor gave 3.5 % of its CPUs' time to other guests",
	}
	if len(notes) != len(want) {
		t.Fatalf("notes %q", notes)
	}
	for i, w := range want {
		if !strings.HasPrefix(notes[i], w) {
			t.Errorf("note %d %q, want %q…", i, notes[i], w)
		}
	}
	// In results.json the window's keys sit beside the host's name.
	b, err := json.Marshal(got[0])
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); s != `{"host":"a","load_start":0.5,"load_end":3.2,"cpus":2,"busy_fraction":0.78,"steal_fraction":0.002}` {
		t.Errorf("JSON %s", s)
	}
}

// The collector note: rank 0's with the count of ranks that paced theirs;
// none where no rank did; one rank's alone.
func TestGCNotes(t *testing.T) {
	gc := func(rank int, note string) exec.RankResult { return exec.RankResult{Rank: rank, GC: note} }
	two := []exec.RankResult{gc(0, "Go collector: GOGC=3000 (a)"), gc(1, "Go collector: GOGC=2900 (b)")}
	if n := gcNotes(two); len(n) != 1 || n[0] != "rank 0: Go collector: GOGC=3000 (a) (2 ranks paced their collector, each by its own live heap)" {
		t.Errorf("two ranks: %q", n)
	}
	if n := gcNotes([]exec.RankResult{gc(0, ""), gc(1, "Go collector: x")}); len(n) != 1 || n[0] != "rank 1: Go collector: x" {
		t.Errorf("one rank: %q", n)
	}
	if n := gcNotes([]exec.RankResult{gc(0, ""), gc(1, "")}); n != nil {
		t.Errorf("none: %q", n)
	}
}
