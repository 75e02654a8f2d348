package launch

import (
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/partbench/partbench/topology"
)

// CPUBlock splits the CPUs in consecutive blocks, the first len mod n one
// larger: 8 CPUs among 3 ranks are 3, 3, 2; 2 among 2 one each; an
// affinity mask with gaps is split by position, not by number.
func TestCPUBlock(t *testing.T) {
	eight := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, c := range []struct {
		cpus  []int
		lr, n int
		want  []int
	}{
		{eight, 0, 3, []int{0, 1, 2}},
		{eight, 1, 3, []int{3, 4, 5}},
		{eight, 2, 3, []int{6, 7}},
		{eight, 7, 8, []int{7}},
		{[]int{0, 1}, 0, 2, []int{0}},
		{[]int{0, 1}, 1, 2, []int{1}},
		{[]int{2, 5, 7, 9}, 1, 2, []int{7, 9}},
		{[]int{0, 1}, 0, 1, []int{0, 1}},
		{[]int{0, 1}, 0, 3, nil}, // outnumbered
		{[]int{0, 1}, 2, 2, nil}, // not a local rank
		{[]int{0, 1}, -1, 2, nil},
	} {
		if got := CPUBlock(c.cpus, c.lr, c.n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("CPUBlock(%v, %d, %d) = %v, want %v", c.cpus, c.lr, c.n, got, c.want)
		}
	}
}

func TestParseBind(t *testing.T) {
	for i, s := range BindModes {
		if b, err := ParseBind(s); err != nil || int(b) != i || b.String() != s {
			t.Errorf("ParseBind(%q) = %v, %v", s, b, err)
		}
	}
	if _, err := ParseBind("socket"); err == nil || err.Error() != `--bind-to "socket": allowed auto, none, core` {
		t.Errorf("ParseBind(socket): %v", err)
	}
}

// BindPlan binds only what its mode asks for, and never where the local
// ranks outnumber the mask's CPUs (oversubscribed, or bound already by a
// launcher: mpirun --bind-to core leaves each rank one CPU).
func TestBindPlan(t *testing.T) {
	two := []int{0, 1}
	local := func(lr, n int) Env { return Env{Rank: lr, LocalRank: lr, LocalSize: n, Size: n} }
	for _, c := range []struct {
		name   string
		b      Bind
		env    Env
		cpu    bool
		cpus   []int
		want   []int
		inNote string
	}{
		{"auto cpu 2 on 2, rank 1", BindAuto, local(1, 2), true, two, []int{1}, "the host's 2 local ranks bound to 1 CPU each of the affinity mask's 2 (0-1); local rank 1 to 1"},
		{"auto cpu 3 on 8", BindAuto, local(2, 3), true, []int{0, 1, 2, 3, 4, 5, 6, 7}, []int{6, 7}, "bound to 2 or 3 CPUs each of the affinity mask's 8 (0-7); local rank 2 to 6-7"},
		{"auto gpu", BindAuto, local(1, 2), false, two, nil, ""},
		{"core gpu", BindCore, local(1, 2), false, two, []int{1}, "--bind-to core: the host's 2 local ranks"},
		{"none", BindNone, local(1, 2), true, two, nil, ""},
		{"one rank", BindCore, local(0, 1), true, two, nil, ""},
		{"outnumbered", BindAuto, local(3, 4), true, two, nil, "--bind-to auto: not bound: 4 local ranks and 2 CPUs in the affinity mask (0-1)"},
		{"bound by mpirun", BindCore, local(0, 2), true, []int{5}, nil, "not bound: 2 local ranks and 1 CPUs in the affinity mask (5)"},
		{"mask with gaps", BindCore, local(0, 2), true, []int{0, 2, 3, 4, 8}, []int{0, 2, 3}, "(0,2-4,8); local rank 0 to 0,2-3"},
		{"4 on 8", BindCore, local(3, 4), true, []int{0, 1, 2, 3, 4, 5, 6, 7}, []int{6, 7}, "bound to 2 CPUs each of the affinity mask's 8 (0-7); local rank 3 to 6-7"},
	} {
		got, note := BindPlan(c.b, c.env, c.cpu, c.cpus)
		if !reflect.DeepEqual(got, c.want) || !strings.Contains(note, c.inNote) || (c.inNote == "") != (note == "") {
			t.Errorf("%s: %v, %q; want %v and a note with %q", c.name, got, note, c.want, c.inNote)
		}
	}
}

// BindRank binds every thread of the process, those started before and
// after it, to the rank's block. Run in a child process (the test binary
// again), whose threads the binding cannot leak from.
func TestBindRankPinsEveryThread(t *testing.T) {
	if os.Getenv("PARTBENCH_BIND_CHILD") == "1" {
		bindChild(t)
		return
	}
	cpus, err := UsableCPUs()
	if err != nil {
		t.Skip(err)
	}
	if len(cpus) < 2 {
		t.Skipf("one CPU in the affinity mask (%v): nothing to split", cpus)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestBindRankPinsEveryThread$", "-test.v")
	cmd.Env = append(os.Environ(), "PARTBENCH_BIND_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "threads bound to") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func bindChild(t *testing.T) {
	cpus, err := UsableCPUs()
	if err != nil {
		t.Fatal(err)
	}
	// Threads busy before the binding: goroutines locked to threads of
	// their own.
	var wg sync.WaitGroup
	release := make(chan struct{})
	start := func(n int) {
		for range n {
			ready := make(chan struct{})
			wg.Go(func() {
				runtime.LockOSThread()
				close(ready)
				<-release
			})
			<-ready
		}
	}
	start(4)
	env := Env{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2}
	note, err := BindRank(BindAuto, env, true)
	if err != nil {
		t.Fatal(err)
	}
	want := CPUBlock(cpus, 1, 2)
	if !strings.Contains(note, "local rank 1 to "+topology.CPUList(want)) {
		t.Errorf("note %q does not name the block %s", note, topology.CPUList(want))
	}
	start(4) // and threads started after it
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/status")
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != topology.CPUList(want) {
				t.Errorf("thread %s may run on %s, want %s", e.Name(), strings.TrimSpace(v), topology.CPUList(want))
			}
		}
	}
	close(release)
	wg.Wait()
	t.Logf("%d threads bound to %s", len(ents), topology.CPUList(want))
}
