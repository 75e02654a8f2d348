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

// BindPlan binds only what its mode asks for: a block of CPUs each where
// the local ranks do not outnumber the mask's CPUs, two to a CPU where
// they are twice the CPUs, and nothing otherwise (oversubscribed more, or
// bound already by a launcher: mpirun --bind-to core leaves each rank one
// CPU).
func TestBindPlan(t *testing.T) {
	two := []int{0, 1}
	local := func(lr, n int) Env { return Env{Rank: lr, LocalRank: lr, LocalSize: n, Size: n} }
	for _, c := range []struct {
		name   string
		b      Bind
		env    Env
		cpu    bool
		cpus   []int
		tp     int
		want   []int
		inNote string
	}{
		{"auto cpu 2 on 2, rank 1", BindAuto, local(1, 2), true, two, 2, []int{1}, "the host's 2 local ranks bound to 1 CPU each of the affinity mask's 2 (0-1); local rank 1 to 1"},
		{"auto cpu 3 on 8", BindAuto, local(2, 3), true, []int{0, 1, 2, 3, 4, 5, 6, 7}, 1, []int{6, 7}, "bound to 2 or 3 CPUs each of the affinity mask's 8 (0-7); local rank 2 to 6-7"},
		{"auto gpu", BindAuto, local(1, 2), false, two, 2, nil, ""},
		{"core gpu", BindCore, local(1, 2), false, two, 2, []int{1}, "--bind-to core: the host's 2 local ranks"},
		{"none", BindNone, local(1, 2), true, two, 2, nil, ""},
		{"one rank", BindCore, local(0, 1), true, two, 1, nil, ""},
		// 4 ranks on 2 CPUs, TP pairs {0, 1}, {2, 3} (tp2-dp2, tp2pp2):
		// local rank r to CPU r/2, so rank 1 shares CPU 0 with rank 0
		// and rank 2 has CPU 1 with rank 3.
		{"auto 4 on 2, tp 2, rank 1", BindAuto, local(1, 4), true, two, 2, []int{0}, "--bind-to auto: the host's 4 local ranks bound two to a CPU of the affinity mask's 2 (0-1), consecutive local ranks together (each tensor-parallel pair sharing one CPU, its ranks taking turns); local rank 1 to 0"},
		{"auto 4 on 2, tp 2, rank 2", BindAuto, local(2, 4), true, two, 2, []int{1}, "local rank 2 to 1"},
		{"auto 4 on 2, mask 3,7, rank 3", BindAuto, local(3, 4), true, []int{3, 7}, 2, []int{7}, "(3,7), consecutive local ranks together"},
		// tp4: one group of 4 over both CPUs, ranks 0-1 on the first.
		{"auto 4 on 2, tp 4, rank 3", BindAuto, local(3, 4), true, two, 4, []int{1}, "each tensor-parallel group of 4 over 2 CPUs, two ranks to each); local rank 3 to 1"},
		// pp4: no groups, stages 0-1 on CPU 0, 2-3 on CPU 1.
		{"auto 4 on 2, tp 1, rank 1", BindAuto, local(1, 4), true, two, 1, []int{0}, "(no tensor-parallel groups); local rank 1 to 0"},
		{"core gpu 4 on 2", BindCore, local(2, 4), false, two, 2, []int{1}, "--bind-to core: the host's 4 local ranks bound two to a CPU"},
		{"auto gpu 4 on 2", BindAuto, local(2, 4), false, two, 2, nil, ""},
		{"none 4 on 2", BindNone, local(2, 4), true, two, 2, nil, ""},
		// 16 on 2 (layerwise16): 8 to a CPU, left to the scheduler.
		{"16 on 2", BindAuto, local(3, 16), true, two, 1, nil, "--bind-to auto: not bound: 16 local ranks and 2 CPUs in the affinity mask (0-1): binds two to a CPU only, where the local ranks are twice the CPUs (4); the scheduler places the ranks"},
		{"3 on 2", BindAuto, local(2, 3), true, two, 1, nil, "not bound: 3 local ranks and 2 CPUs in the affinity mask (0-1): binds two to a CPU only, where the local ranks are twice the CPUs (4)"},
		// 6 ranks on 3 CPUs in groups of 3: a pair per CPU would split
		// group {0, 1, 2} over CPUs 0 and 1 unevenly.
		{"tp 3, 6 on 3", BindAuto, local(1, 6), true, []int{0, 1, 2}, 3, nil, ": tensor-parallel groups of 3 would straddle a CPU"},
		// The host holds ranks 2-5 of groups of 4 ({0-3}, {4-7}): its
		// pairs {2, 3} and {4, 5} would each be half of two groups.
		{"host starts mid-group", BindAuto, Env{Rank: 3, LocalRank: 1, LocalSize: 4, Size: 8}, true, two, 4, nil, ": the host's first rank, 2, does not start a tensor-parallel group of 4 (a multiple of 4 does)"},
		{"bound by mpirun", BindCore, local(0, 2), true, []int{5}, 2, nil, "not bound: 2 local ranks and 1 CPUs in the affinity mask (5); the scheduler"},
		{"mask with gaps", BindCore, local(0, 2), true, []int{0, 2, 3, 4, 8}, 2, []int{0, 2, 3}, "(0,2-4,8); local rank 0 to 0,2-3"},
		{"4 on 8", BindCore, local(3, 4), true, []int{0, 1, 2, 3, 4, 5, 6, 7}, 2, []int{6, 7}, "bound to 2 CPUs each of the affinity mask's 8 (0-7); local rank 3 to 6-7"},
	} {
		got, note := BindPlan(c.b, c.env, c.cpu, c.cpus, c.tp)
		if !reflect.DeepEqual(got, c.want) || !strings.Contains(note, c.inNote) || (c.inNote == "") != (note == "") {
			t.Errorf("%s: %v, %q; want %v and a note with %q", c.name, got, note, c.want, c.inNote)
		}
	}
}

// OversubscribedCPU pairs consecutive local ranks on a CPU where they are
// twice the CPUs, and refuses every other shape (-1).
func TestOversubscribedCPU(t *testing.T) {
	for _, c := range []struct {
		cpus             []int
		lr, n, tp, first int
		want             int
	}{
		{[]int{0, 1}, 0, 4, 2, 0, 0},
		{[]int{0, 1}, 1, 4, 2, 0, 0},
		{[]int{0, 1}, 2, 4, 2, 0, 1},
		{[]int{0, 1}, 3, 4, 2, 0, 1},
		{[]int{4, 6, 9}, 5, 6, 2, 0, 9},    // 6 on 3: rank 5 to the third CPU
		{[]int{0, 1}, 3, 4, 0, 0, 1},       // tp 0 read as 1
		{[]int{0, 1, 2, 3}, 5, 8, 4, 8, 2}, // host's first rank 8 starts a group of 4
		{[]int{0, 1}, 3, 4, 2, 2, 1},       // first rank 2 starts a pair
		{[]int{0, 1}, 3, 4, 4, 2, -1},      // first rank 2 is mid-group of 4
		{[]int{0, 1}, 0, 5, 1, 0, -1},      // 5 on 2
		{[]int{0, 1}, 0, 2, 1, 0, -1},      // not oversubscribed
		{[]int{0}, 0, 2, 2, 0, -1},         // one CPU
		{[]int{0, 1}, 4, 4, 2, 0, -1},      // not a local rank
		{[]int{0, 1, 2}, 0, 6, 3, 0, -1},   // odd groups
	} {
		if got := OversubscribedCPU(c.cpus, c.lr, c.n, c.tp, c.first); got != c.want {
			t.Errorf("OversubscribedCPU(%v, lr %d, n %d, tp %d, first %d) = %d, want %d", c.cpus, c.lr, c.n, c.tp, c.first, got, c.want)
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
	note, err := BindRank(BindAuto, env, true, 2)
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
