package calib

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/exec/tcpcomm"
)

// LinkWorkerEnv, set in a process's environment, makes it one rank of a
// link measurement with process ranks (LinkWorker): its value is the
// measurement's spec, JSON. `partbench calibrate` checks it first.
const LinkWorkerEnv = "PARTBENCH_CALIBRATE_LINK_RANK"

// linkResultPrefix starts the line rank 0 writes its times on.
const linkResultPrefix = "partbench-link-times "

// linkSpec is what every rank of a process link measurement runs.
type linkSpec struct {
	Groups     []linkGroup `json:"groups"`
	Sizes      []int64     `json:"sizes"`
	Repeats    int         `json:"repeats"`
	MinSampleS float64     `json:"min_sample_s"`
	// OpTimes, when set, makes the ranks time the op-time table at once
	// instead (opprocs.go).
	OpTimes *opProcSpec `json:"op_times,omitempty"`
	// InPlace, when set, makes the ranks run a config through the
	// executor instead (inplace.go).
	InPlace *inPlaceSpec `json:"in_place,omitempty"`
}

type linkGroup struct {
	Op    string `json:"op"`
	Ranks []int  `json:"ranks"`
	// Burst is the compute burst's iterations before each call of
	// opAllReduceBurst (corewait.go).
	Burst int `json:"burst,omitempty"`
	// Sizes, when set, are this group's payloads instead of the spec's
	// (an all_gather's: whole elements per member, allgather.go).
	Sizes []int64 `json:"sizes,omitempty"`
}

// sizes are g's payloads: its own, else the spec's.
func (g linkGroup) sizesOr(common []int64) []int64 {
	if len(g.Sizes) > 0 {
		return g.Sizes
	}
	return common
}

// measureLinkProcs runs the link measurement with n ranks as processes,
// started by launch.Spawn as a run's local ranks are (argv re-runs this
// program as LinkWorker), so the samples see what a run's ranks see: the
// OS scheduling processes on the host's cores, not goroutines. It returns
// rank 0's per-call times, [group][size][repeat].
func measureLinkProcs(ctx context.Context, argv []string, n int, groups []commGroup, sizes []int64, repeats int, minDur time.Duration) ([][][]float64, error) {
	return measureLinkProcsBursts(ctx, argv, n, groups, nil, sizes, repeats, minDur)
}

// measureLinkProcsBursts is measureLinkProcs with bursts[i] the compute
// burst iterations of group i (opAllReduceBurst; nil: none). A burst
// group's times hold three numbers per repeat: the all_reduce's time per
// call, the burst's (rank 0's wall time, descheduling included), and the
// pair {0, 1}'s exit lag per call (exitlag.go); a ring's with a burst two
// (the hop's time, the burst's); an opSendCall group's the one-way time,
// then rank 0's Send call's; an opSendCallAsleep group's three: half the
// round trip with its burst, rank 0's Send call's time, its burst's (rank
// 1's wait in its receive before each Send).
func measureLinkProcsBursts(ctx context.Context, argv []string, n int, groups []commGroup, bursts []int, sizes []int64, repeats int, minDur time.Duration) ([][][]float64, error) {
	return measureLinkProcsSpec(ctx, argv, n, groups, bursts, sizes, nil, repeats, minDur)
}

// measureLinkProcsSized is measureLinkProcs with each group timed at its
// own sizes (groupSizes[i]: group i's), as linkGroups gives them; the
// times are [group][its size][repeat].
func measureLinkProcsSized(ctx context.Context, argv []string, n int, groups []commGroup, groupSizes [][]int64, repeats int, minDur time.Duration) ([][][]float64, error) {
	return measureLinkProcsSpec(ctx, argv, n, groups, nil, nil, groupSizes, repeats, minDur)
}

func measureLinkProcsSpec(ctx context.Context, argv []string, n int, groups []commGroup, bursts []int, sizes []int64, groupSizes [][]int64, repeats int, minDur time.Duration) ([][][]float64, error) {
	spec := linkSpec{Sizes: sizes, Repeats: repeats, MinSampleS: minDur.Seconds()}
	for i, g := range groups {
		lg := linkGroup{Op: g.op, Ranks: g.ranks}
		if i < len(bursts) {
			lg.Burst = bursts[i]
		}
		if i < len(groupSizes) {
			lg.Sizes = groupSizes[i]
		}
		if len(lg.sizesOr(sizes)) == 0 {
			return nil, fmt.Errorf("communication: %s over %v: no sizes to time", g.op, g.ranks)
		}
		spec.Groups = append(spec.Groups, lg)
	}
	out, errOut, err := spawnWorkers(ctx, argv, n, spec, "communication")
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "[rank 0] ")
		if rest, ok := strings.CutPrefix(line, linkResultPrefix); ok {
			var times [][][]float64
			if err := json.Unmarshal([]byte(rest), &times); err != nil {
				return nil, fmt.Errorf("communication: rank 0's times: %w", err)
			}
			if len(times) != len(groups) {
				return nil, fmt.Errorf("communication: rank 0 reported %d groups, want %d", len(times), len(groups))
			}
			return times, nil
		}
	}
	return nil, fmt.Errorf("communication: rank 0 reported no times:\n%s%s", out.String(), errOut.String())
}

// spawnWorkers runs spec on n process ranks (argv re-runs this program as
// LinkWorker, started as a run's local ranks are) and returns what they
// wrote, each line prefixed by its rank; a rank that fails fails it, what
// naming the measurement.
func spawnWorkers(ctx context.Context, argv []string, n int, spec linkSpec, what string) (out, errOut *bytes.Buffer, err error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, nil, err
	}
	out, errOut = &bytes.Buffer{}, &bytes.Buffer{}
	code, err := launch.Spawn(ctx, launch.SpawnOptions{NProc: n, Argv: argv, Env: append(os.Environ(), LinkWorkerEnv+"="+string(js)),
		Stdout: out, Stderr: errOut, Prefix: true, Grace: 5 * time.Second})
	if err != nil || code != 0 {
		return nil, nil, fmt.Errorf("%s: %d process ranks (%s): status %d: %v\n%s%s", what, n, strings.Join(argv, " "), code, err, out.String(), errOut.String())
	}
	return out, errOut, nil
}

// LinkWorker is one rank of a process link measurement (spec: the value of
// LinkWorkerEnv): it joins the launcher's rendezvous, connects a
// tcpcomm.Comm as a run's rank does, and runs every group at every size in
// the order of the spec — members only; the first member (rank 0) sizes
// each sample from a pilot and tells the others. Rank 0 writes its times
// to stdout as one line.
func LinkWorker(ctx context.Context, specJSON string, stdout io.Writer) error {
	var spec linkSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fmt.Errorf("%s: %w", LinkWorkerEnv, err)
	}
	env, err := launch.Detect(os.LookupEnv)
	if err != nil {
		return err
	}
	// Bound as a run's CPU-backend ranks are by default (run --bind-to
	// auto): a CPU block each where the ranks do not outnumber the CPUs,
	// two to a CPU where they are twice the CPUs. The measurement's
	// collectives run in pairs {0, 1}, {2, 3}, …, so its tensor-parallel
	// groups are 2; launch.OversubscribedCPU places a rank by its count
	// alone for every even group size, so the ranks sit where a run's of
	// the same count do (tp2-dp2, tp2pp2, tp4 and pp4 at 4 ranks on 2
	// CPUs alike).
	if _, err := launch.BindRank(launch.BindAuto, env, true, 2); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if spec.InPlace != nil { // the run joins its own rendezvous
		return inPlaceRank(ctx, env, *spec.InPlace, stdout)
	}
	sess, err := rendezvous.Join(ctx, rendezvous.Options{Addr: env.RendezvousAddr, Rank: env.Rank, Size: env.Size, LaunchedSize: env.Size,
		JoinTimeout: 30 * time.Second})
	if err != nil {
		return err
	}
	defer sess.Close()
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	c, err := tcpcomm.New(cctx, sess, env.Rank, env.Size, "127.0.0.1")
	ccancel()
	if err != nil {
		return err
	}
	defer c.Close()
	me := env.Rank
	if spec.OpTimes != nil {
		return opTimesRank(ctx, c, *spec.OpTimes, stdout)
	}
	minDur := time.Duration(spec.MinSampleS * float64(time.Second))
	// Every group and size is sized by a pilot first; then the repeats
	// are interleaved — repeat r of every group and size before repeat
	// r+1 of any — so that each entry's repeats spread over the whole
	// measurement and a burst of the host's other load falls on one
	// repeat of many entries rather than on every repeat of one (the
	// entries keep their medians over repeats).
	type run struct {
		b     *commBench
		grp   pexec.Group
		sizes []int64
		iters []int // per size
	}
	times := make([][][]float64, len(spec.Groups))
	runs := make([]*run, len(spec.Groups))
	for gi, g := range spec.Groups {
		b := &commBench{op: g.Op, ranks: g.Ranks, burst: g.Burst}
		members := b.members()
		sizes := g.sizesOr(spec.Sizes)
		times[gi] = make([][]float64, len(sizes))
		if !slices.Contains(members, me) {
			continue
		}
		rn := &run{b: b, sizes: sizes, iters: make([]int, len(sizes))}
		if usesGroup(b.op) {
			if rn.grp, err = c.NewGroup(ctx, b.groupOf(me)); err != nil {
				return err
			}
		}
		first := members[0]
		for si, size := range sizes {
			e, err := b.rankRun(ctx, me, c, rn.grp, size, 2)
			if err != nil {
				return fmt.Errorf("%s over %v, %d B: %w", b.op, g.Ranks, size, err)
			}
			n := pexec.F32(make([]float32, 1))
			if me == first {
				n[0] = float32(itersFor(b.perCall(e, 2), minDur))
				for _, p := range members[1:] {
					if err := c.Send(ctx, n, p); err != nil {
						return err
					}
				}
			} else if err := c.Recv(ctx, n, first); err != nil {
				return err
			}
			rn.iters[si] = int(n[0])
		}
		runs[gi] = rn
	}
	for r := 0; r < spec.Repeats; r++ {
		for gi, rn := range runs {
			if rn == nil {
				continue // not a member
			}
			b := rn.b
			for si, size := range rn.sizes {
				iters := rn.iters[si]
				e, err := b.rankRun(ctx, me, c, rn.grp, size, iters)
				if err != nil {
					return fmt.Errorf("%s over %v, %d B: %w", b.op, spec.Groups[gi].Ranks, size, err)
				}
				if b.op == opAllReduceBlocks { // the block's wall time: its bursts and calls
					times[gi][si] = append(times[gi][si], e)
					continue
				}
				times[gi][si] = append(times[gi][si], b.perCall(e, iters))
				if b.op == opAllReduceBurst || b.op == opAllReduceBurstIdle || (b.op == opRing && b.burst > 0) || b.op == opSendCall || b.op == opSendCallAsleep {
					times[gi][si] = append(times[gi][si], b.burstS/float64(iters))
				}
				if b.op == opAllReduceBurst || b.op == opAllReduceBurstIdle || b.op == opSendCallAsleep {
					times[gi][si] = append(times[gi][si], b.lagS/float64(iters))
				}
			}
		}
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if err := c.Flush(ctx); err != nil {
		return err
	}
	if me != 0 {
		return nil
	}
	js, err := json.Marshal(times)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s%s\n", linkResultPrefix, js)
	return err
}
