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
