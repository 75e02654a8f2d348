package launch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/partbench/partbench/topology"
)

// Bind is how a rank's threads are bound to the host's CPUs (`--bind-to`,
// as mpirun's option of that name).
type Bind int

const (
	// BindAuto binds a CPU-backend rank to its block of CPUs when its
	// host's local ranks do not outnumber the CPUs, and leaves every other
	// rank to the scheduler. Ranks that exchange small messages many times
	// a step (tensor parallelism) otherwise end up sharing one CPU for
	// whole runs: each wake-up on a futex brings the woken rank to the
	// waker's CPU, and the two then take turns on it while the other CPU
	// idles (docs/measurements/speed.md, "The shared-memory wait's two
	// modes"). Where a host's local ranks are twice its CPUs it binds
	// them two to a CPU so that each tensor-parallel pair shares one
	// (OversubscribedCPU).
	BindAuto Bind = iota
	// BindNone leaves every rank to the scheduler.
	BindNone
	// BindCore binds every rank, whatever its backend, to its block of
	// CPUs when the local ranks do not outnumber them.
	BindCore
)

// BindModes are the values --bind-to takes.
var BindModes = []string{"auto", "none", "core"}

func (b Bind) String() string { return BindModes[b] }

// ParseBind reads --bind-to.
func ParseBind(s string) (Bind, error) {
	for i, m := range BindModes {
		if s == m {
			return Bind(i), nil
		}
	}
	return BindAuto, fmt.Errorf("--bind-to %q: allowed %s", s, strings.Join(BindModes, ", "))
}

// CPUBlock is local rank lr's share of cpus among n local ranks: cpus
// split in n consecutive blocks, the first len(cpus) mod n one CPU
// larger (as mpirun maps ranks by slot). Nil when n ranks outnumber the
// CPUs, or lr is not one of them.
func CPUBlock(cpus []int, lr, n int) []int {
	if n < 1 || lr < 0 || lr >= n || n > len(cpus) {
		return nil
	}
	size, extra := len(cpus)/n, len(cpus)%n
	start := lr*size + min(lr, extra)
	if lr < extra {
		size++
	}
	return cpus[start : start+size]
}

// OversubscribedCPU is where local rank lr of n goes when the n ranks
// outnumber the len(cpus) CPUs, for a job whose tensor-parallel groups are
// tp consecutive ranks (tp ≤ 1: none) starting at global rank first (the
// host's first rank): two to a CPU where n = 2·len(cpus), local ranks 2c
// and 2c+1 on cpus[c] (topology.PairedCPU, which sim's shared-core stretch
// reads too). -1 where that does not apply: another count of ranks per CPU,
// groups of an odd size, or groups that do not start at the host's first
// rank.
//
// Four ranks left to the scheduler on two CPUs (tp2-dp2, tp2pp2) meet
// their all-reduces in one of two regimes a run, about twice apart, as
// other processes on the host come and go; each TP pair on a CPU of its
// own takes turns on it in every run, at the faster regime's speed
// (docs/measurements/cpu-calibration.md, "(twenty-first)"). No
// measurement supports binding more ranks to a CPU (16 on 2 are left to
// the scheduler).
func OversubscribedCPU(cpus []int, lr, n, tp, first int) int {
	i := topology.PairedCPU(lr, n, len(cpus), tp, first)
	if i < 0 {
		return -1
	}
	return cpus[i]
}

// BindPlan is what b does for the rank env describes, of a job whose
// tensor-parallel groups are tp consecutive ranks, on a host whose CPUs
// this process may use are cpus (its affinity mask): the CPUs to bind its
// threads to (nil: leave them) and a note saying why, for the run's
// report.
func BindPlan(b Bind, env Env, cpuBackend bool, cpus []int, tp int) ([]int, string) {
	n := max(env.LocalSize, 1)
	switch {
	case b == BindNone:
		return nil, ""
	case b == BindAuto && !cpuBackend:
		return nil, ""
	case n == 1:
		return nil, "" // one rank: its mask is its block
	case n > len(cpus):
		c := OversubscribedCPU(cpus, env.LocalRank, n, tp, env.Rank-env.LocalRank)
		if c < 0 {
			// Oversubscribed otherwise, or a launcher bound the rank
			// already (mpirun --bind-to core leaves a rank a mask of one
			// CPU).
			return nil, fmt.Sprintf("--bind-to %s: not bound: %d local ranks and %d CPUs in the affinity mask (%s)%s; the scheduler places the ranks", b, n, len(cpus), topology.CPUList(cpus), whyNotPaired(len(cpus), n, tp, env.Rank-env.LocalRank))
		}
		groups := "no tensor-parallel groups"
		switch {
		case tp == 2:
			groups = "each tensor-parallel pair sharing one CPU, its ranks taking turns"
		case tp > 2:
			groups = fmt.Sprintf("each tensor-parallel group of %d over %d CPUs, two ranks to each", tp, tp/2)
		}
		return []int{c}, fmt.Sprintf("--bind-to %s: the host's %d local ranks bound two to a CPU of the affinity mask's %d (%s), consecutive local ranks together (%s); local rank %d to %d", b, n, len(cpus), topology.CPUList(cpus), groups, env.LocalRank, c)
	}
	each := strconv.Itoa(len(cpus)/n) + " CPUs"
	if len(cpus)%n != 0 {
		each = strconv.Itoa(len(cpus)/n) + " or " + strconv.Itoa(len(cpus)/n+1) + " CPUs"
	} else if len(cpus) == n {
		each = "1 CPU"
	}
	block := CPUBlock(cpus, env.LocalRank, n)
	return block, fmt.Sprintf("--bind-to %s: the host's %d local ranks bound to %s each of the affinity mask's %d (%s); local rank %d to %s", b, n, each, len(cpus), topology.CPUList(cpus), env.LocalRank, topology.CPUList(block))
}

// whyNotPaired says why the n ranks of a host of cpus CPUs, the first
// global rank first, of tensor-parallel groups of tp, are not bound two to
// a CPU (OversubscribedCPU refused them), naming the count, group size or
// rank that the rule does not take.
func whyNotPaired(cpus, n, tp, first int) string {
	switch {
	case cpus < 2:
		return ""
	case n != 2*cpus:
		return fmt.Sprintf(": binds two to a CPU only, where the local ranks are twice the CPUs (%d)", 2*cpus)
	case tp > 1 && tp%2 != 0:
		return fmt.Sprintf(": tensor-parallel groups of %d would straddle a CPU", tp)
	}
	return fmt.Sprintf(": the host's first rank, %d, does not start a tensor-parallel group of %d (a multiple of %d does)", first, tp, tp)
}

// BindRank applies b to this process, a rank env describes of a job whose
// tensor-parallel groups are tp consecutive ranks: it binds
// every thread of the process (and so every thread it starts later) to
// the rank's block of the CPUs of its affinity mask, as BindPlan says.
// It returns the note for the run's report.
func BindRank(b Bind, env Env, cpuBackend bool, tp int) (string, error) {
	cpus, err := UsableCPUs()
	if err != nil {
		if b == BindNone || (b == BindAuto && !cpuBackend) {
			return "", nil
		}
		return "", fmt.Errorf("--bind-to %s: %w", b, err)
	}
	block, note := BindPlan(b, env, cpuBackend, cpus, tp)
	if block == nil {
		return note, nil
	}
	if err := pinThreads(block); err != nil {
		return "", fmt.Errorf("--bind-to %s: binding rank %d to CPUs %s: %w", b, env.Rank, topology.CPUList(block), err)
	}
	return note, nil
}
