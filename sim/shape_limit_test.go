package sim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// shapeConfig is 1,000 layers of the seed model on 128 GPUs (tp 8 × pp 16)
// with mb micro-batches of one sequence each: the plan fits in memory (a
// 20-token context), and its timeline is far over MaxTimelineOps.
func shapeConfig(mb int) string {
	return fmt.Sprintf(`version = 1
name = "shape-%d"
[model]
preset = "seed-dense16"
layers = 1000
[workload]
batch = %d
context = 20
output_tokens = 4
[parallel]
tp = 8
pp = 16
microbatches = %d
[hardware]
preset = "h100-sxm"
[topology]
preset = "dgx-h100x2"
nodes = 16
[run]
warmup = 1
iterations = 1
seed = 1
`, mb, mb, mb)
}

// TestShapeRefusalChild is the child process of TestDryRunRefusedFromShape:
// it plans and estimates shapeConfig and exits 0 only on a TooLargeError.
func TestShapeRefusalChild(t *testing.T) {
	arg := os.Getenv("PARTBENCH_SHAPE_CHILD")
	if arg == "" {
		t.Skip("child process of TestDryRunRefusedFromShape")
	}
	mb, _ := strconv.Atoi(arg)
	c, err := configs.Parse(strings.NewReader(shapeConfig(mb)), "shape.toml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := partition.NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	_, err = EstimatePlan(p, Options{})
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Ops <= MaxTimelineOps || tl.Microbatches != mb || tl.Layers != 1000 {
		t.Fatalf("want a TooLargeError over %d ops for %d micro-batches, got %v", MaxTimelineOps, mb, err)
	}
	fmt.Printf("refused: %v\n", err)
	// VmHWM is this process's own peak RSS since its exec (the rusage a
	// parent gets also counts the parent's memory, which a vfork-style
	// start shares until the exec).
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Printf("peak_rss_kb=%s\n", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
}

// Issue 24 item 6: a dry run over the op bound is refused from the plan's
// shape, before any Program is built. Measured in a child process: before,
// the 64- and 256-micro-batch plans built one Program per stage first
// (0.46 s and 234 MB, 0.93 s and 476 MB for the CLI on the 2-core VM) and
// 4,096 micro-batches grew by gigabytes; now each is refused in
// milliseconds at the process's baseline memory. The bounds below are
// loose (a busy CI machine) but far under what building would take.
func TestDryRunRefusedFromShape(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	const maxRSSKB = 160 << 10 // 160 MiB; the test binary alone is ≈ 30–60 MiB
	for _, mb := range []int{64, 256, 4096} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestShapeRefusalChild$", "-test.v")
		cmd.Env = append(os.Environ(), "PARTBENCH_SHAPE_CHILD="+strconv.Itoa(mb))
		start := time.Now()
		out, err := cmd.CombinedOutput()
		wall := time.Since(start)
		if err != nil || !strings.Contains(string(out), "refused: estimate shape-") {
			t.Fatalf("%d micro-batches: child failed (%v):\n%s", mb, err, out)
		}
		if strings.Contains(string(out), "no /proc/self/status") {
			t.Skip("no /proc/self/status to read the child's peak memory from")
		}
		_, after, _ := strings.Cut(string(out), "peak_rss_kb=")
		rss, perr := strconv.Atoi(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0]))
		if perr != nil {
			t.Fatalf("%d micro-batches: no peak RSS in the child's output:\n%s", mb, out)
		}
		t.Logf("%d micro-batches: refused in %v (child process, including its start), peak RSS %d KB", mb, wall.Round(time.Millisecond), rss)
		if rss > maxRSSKB {
			t.Errorf("%d micro-batches: peak RSS %d KB, more than %d KB: Programs were built before the refusal", mb, rss, maxRSSKB)
		}
		if wall > 20*time.Second {
			t.Errorf("%d micro-batches: refusal took %v", mb, wall)
		}
	}
}
