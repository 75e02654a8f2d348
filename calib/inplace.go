package calib

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/exec/tcpcomm"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// Collectives in place. The op-time table's collectives are timed back to
// back (the link samples); between a run's real ops the same call takes
// longer: the partner wakes up after its compute, and the partners arrive
// apart by the jitter of what each computed — on the project's 2-core VM
// tp2-tiny's 1 KiB all_reduce took 1.2–1.6 µs a call in runs whose link
// probe read 0.66–0.69 µs back to back, and more the more compute lay
// between two calls (docs/measurements/cpu-calibration.md, (thirtieth)
// 5). calibrate therefore runs each op config of n ranks, at each
// --op-ranks count n no larger than the host's cores, through the
// executor among n process ranks as a run does (the run's own loop,
// communicator and op timers, its last iteration traced), and writes
// what each collective call took beyond its back-to-back entry at n
// against the compute since the rank's last collective or receive
// (configs.InPlaceWaitKind, by bins of that burst). Above the cores the
// core waits price the partners (corewait.go).

// inPlaceResultPrefix starts the line rank 0 of an in-place run writes
// its calls on.
const inPlaceResultPrefix = "partbench-in-place "

// inPlaceSpec is what every process rank of an in-place run runs
// (linkSpec.InPlace): the config, with its run's warm-up and iterations.
type inPlaceSpec struct {
	Config     string `json:"config"`
	Warmup     int    `json:"warmup"`
	Iterations int    `json:"iterations"`
}

// inPlaceCall is one collective call of an in-place run's traced
// iteration: its op-time kind and shape (sim.OpKey), its payload, the
// compute its rank ran since its last collective or receive (wall time,
// from that call's return to this one's start) and the call's time as
// the run's op timer read it.
type inPlaceCall struct {
	// Op is the call's op in its rank's Programs: the phase and its name
	// ("decode:L3.mlp.ar"), the same in every step, rank and run.
	Op     string  `json:"op"`
	Kind   string  `json:"kind"`
	Shape  string  `json:"shape"`
	Bytes  int64   `json:"bytes"`
	BurstS float64 `json:"burst_s"`
	CallS  float64 `json:"call_s"`
	// ProbeBytes and ProbeS are the run's link probe of the call's kind
	// and group on its rank (pexec.LinkProbe: the payload, the median call
	// back to back after the measured iterations; 0: none): the link's
	// state in that run.
	ProbeBytes int64   `json:"probe_bytes,omitempty"`
	ProbeS     float64 `json:"probe_s,omitempty"`
}

// In-place runs: warm-up and measured iterations (the last traced), and
// runs per repeat. A fresh process's first iterations are slower (its
// heap and caches filling): after 2 warm-up iterations tp2-tiny's decode
// all_reduce read 1.1–4.3 µs a call (mean per run) on the project's 2-core
// VM, after 10 1.0–1.5 µs, as its 30-iteration runs read. The ranks pace
// their collector as a run's do (RunOptions.PaceGC): at the default pace
// a young rank collected every few MiB, about every 100 ms, at about the
// same iteration of every run, which the traced one met often (prefill
// all_reduces up to 100 µs where 2 is usual).
const (
	inPlaceWarmup        = 30
	inPlaceIterations    = 2
	inPlaceRunsPerRepeat = 2
)

// inPlaceRank is one process rank of an in-place run: the config through
// pexec.Run with the CPU backend and the communicator a run's local ranks
// use; rank 0 writes the traced iteration's collective calls of every
// rank on one line of stdout.
func inPlaceRank(ctx context.Context, env launch.Env, spec inPlaceSpec, stdout io.Writer) error {
	cfg, err := loadConfig(spec.Config)
	if err != nil {
		return err
	}
	cfg.Run.Warmup, cfg.Run.Iterations = spec.Warmup, spec.Iterations
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", spec.Config, err)
	}
	res, err := pexec.Run(ctx, pexec.RunOptions{Plan: plan, Env: env, Backend: configs.BackendCPU, NewCompute: CPUCompute,
		NewComm: func(ctx context.Context, sess *rendezvous.Session, p *partition.Plan, rank int, _ pexec.Compute) (pexec.Comm, error) {
			return tcpcomm.New(ctx, sess, rank, p.Size(), "")
		},
		JoinTimeout: 30 * time.Second, TraceDecodeSteps: max(1, cfg.Workload.OutputTokens), LinkProbeCalls: pexec.LinkProbeCalls,
		PaceGC: true})
	if err != nil || env.Rank != 0 {
		return err
	}
	calls, err := inPlaceCalls(plan, res)
	if err != nil {
		return fmt.Errorf("%s: %w", spec.Config, err)
	}
	js, err := json.Marshal(calls)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s%s\n", inPlaceResultPrefix, js)
	return err
}

// inPlaceCalls are the collective calls of every rank's traced iteration
// (res: pexec.Run's results on rank 0; rankCalls).
func inPlaceCalls(plan *partition.Plan, res []pexec.RankResult) ([]inPlaceCall, error) {
	var out []inPlaceCall
	for _, r := range res {
		if r.Rank < 0 || r.Rank >= plan.Size() {
			return nil, fmt.Errorf("in place: rank %d of %d", r.Rank, plan.Size())
		}
		calls, err := rankCalls(plan.Program(r.Rank, partition.Prefill).Ops, plan.Program(r.Rank, partition.Decode).Ops, r)
		if err != nil {
			return nil, err
		}
		out = append(out, calls...)
	}
	return out, nil
}

// rankCalls are the collective calls of rank r's traced iteration, whose
// spans are its prefill Program's ops (pre) and then each traced decode
// step's (dec), in order: each collective after the rank's first
// collective or receive of the iteration gives a call (the first has no
// compute since one to read), with the rank's link probe of its kind and
// group.
func rankCalls(pre, dec []partition.Op, r pexec.RankResult) ([]inPlaceCall, error) {
	var out []inPlaceCall
	lastEnd, have := 0.0, false
	for i, sp := range r.Spans {
		var op *partition.Op
		phase := partition.Prefill
		switch {
		case i < len(pre):
			op = &pre[i]
		case len(dec) > 0:
			op, phase = &dec[(i-len(pre))%len(dec)], partition.Decode
		default:
			return nil, fmt.Errorf("in place: rank %d traced %d ops, its prefill has %d and its decode none", r.Rank, len(r.Spans), len(pre))
		}
		if string(op.Kind) != sp.Kind {
			return nil, fmt.Errorf("in place: rank %d's traced op %d is a %s, its Program's is a %s (%s)", r.Rank, i, sp.Kind, op.Kind, op.Name)
		}
		switch op.Kind {
		case partition.AllReduce, partition.AllGather:
			if have {
				kind, shape, size, _ := sim.OpKey(op)
				c := inPlaceCall{Op: string(phase) + ":" + op.Name, Kind: kind, Shape: shape, Bytes: size, BurstS: max(0, sp.StartS-lastEnd), CallS: sp.DurS}
				if i := slices.IndexFunc(r.LinkProbes, func(p pexec.LinkProbe) bool {
					return p.Kind == kind && slices.Equal(p.Ranks, op.Group)
				}); i >= 0 {
					c.ProbeBytes, c.ProbeS = r.LinkProbes[i].Bytes, r.LinkProbes[i].MedianS
				}
				out = append(out, c)
			}
		case partition.Recv:
		default:
			continue
		}
		lastEnd, have = sp.StartS+sp.DurS, true
	}
	return out, nil
}

// inPlaceConfigs are the names whose plans have n ranks and a collective.
func inPlaceConfigs(names []string, plans []*partition.Plan, n int) []string {
	var out []string
	for i, p := range plans {
		if p.Size() != n {
			continue
		}
		for rank := range p.Size() {
			if slices.ContainsFunc(p.Program(rank, partition.Decode).Ops, func(op partition.Op) bool {
				return op.Kind == partition.AllReduce || op.Kind == partition.AllGather
			}) {
				out = append(out, names[i])
				break
			}
		}
	}
	return out
}

// measureInPlace runs each of names (configs of n ranks)
// inPlaceRunsPerRepeat times a repeat among n process ranks (argv re-runs this program as LinkWorker) and
// returns the calls of each repeat, every config's together.
func measureInPlace(ctx context.Context, argv []string, n int, names []string, repeats int) ([][]inPlaceCall, error) {
	out := make([][]inPlaceCall, repeats)
	for r := range repeats * inPlaceRunsPerRepeat {
		for _, name := range names {
			stdout, stderr, err := spawnWorkers(ctx, argv, n, linkSpec{InPlace: &inPlaceSpec{Config: name, Warmup: inPlaceWarmup, Iterations: inPlaceIterations}},
				"collectives in place: "+name)
			if err != nil {
				return nil, err
			}
			calls, err := parseInPlaceLine(stdout)
			if err != nil {
				return nil, fmt.Errorf("collectives in place: %s: %w\n%s%s", name, err, stdout.String(), stderr.String())
			}
			out[r/inPlaceRunsPerRepeat] = append(out[r/inPlaceRunsPerRepeat], calls...)
		}
	}
	return out, nil
}

// parseInPlaceLine reads rank 0's line of calls from r.
func parseInPlaceLine(r io.Reader) ([]inPlaceCall, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), inPlaceResultPrefix); ok {
			var calls []inPlaceCall
			if err := json.Unmarshal([]byte(rest), &calls); err != nil {
				return nil, fmt.Errorf("rank 0's calls: %w", err)
			}
			return calls, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("rank 0 wrote no line of calls")
}

// In-place wait bins: the calls of one collective kind and group, each
// op of the Programs at the median burst of its calls, split where those
// medians, sorted, more than double (inPlaceBinGap: a run's collectives
// after a decode step's attention, after its MLP, after a prefill's —
// clusters apart; an op's median, not each call's burst, so that a call
// held up now and then bridges no gap), a bin of fewer than
// inPlaceBinCalls calls joined to its neighbour.
const (
	inPlaceBinGap   = 2.0
	inPlaceBinCalls = 20
)

// inPlaceHeldUp is how many times its bin's median call a call takes to
// be left out of the bin's mean, as held up by something else than the
// link: on the project's 2-core VM a few calls in a thousand read
// 100–280 µs where the median read 1–6 µs, each enough to move a mean
// over a few hundred calls by half a µs either way. Not less: a run's own
// decode all_reduces over 5× their median (2–7 of 102 in a traced
// iteration, 4–14 µs) make 11–29 % of its mean, which the op check and
// TPOT hold.
const inPlaceHeldUp = 20

// inPlaceExcess is one call's time beyond back to back, the compute before
// it, the call's own time, and the repeat it was measured in.
type inPlaceExcess struct {
	op     string // inPlaceCall.Op
	repeat int
	burstS float64
	waitS  float64
	callS  float64
}

// inPlaceBins sorts xs by their op's median burst (then their own) and
// splits them into bins (inPlaceBinGap, inPlaceBinCalls); every call is in
// one, every op's calls in one bin.
func inPlaceBins(xs []inPlaceExcess) [][]inPlaceExcess {
	bursts := map[string][]float64{}
	for _, x := range xs {
		bursts[x.op] = append(bursts[x.op], x.burstS)
	}
	opBurst := make(map[string]float64, len(bursts))
	for op, b := range bursts {
		opBurst[op] = medianOf(b)
	}
	sort.SliceStable(xs, func(i, j int) bool {
		a, b := opBurst[xs[i].op], opBurst[xs[j].op]
		if a != b {
			return a < b
		}
		if xs[i].op != xs[j].op {
			return xs[i].op < xs[j].op
		}
		return xs[i].burstS < xs[j].burstS
	})
	var bins [][]inPlaceExcess
	start := 0
	for i := 1; i <= len(xs); i++ {
		if i == len(xs) || opBurst[xs[i].op] > inPlaceBinGap*opBurst[xs[i-1].op] {
			bins = append(bins, xs[start:i])
			start = i
		}
	}
	// Join each short bin to the bin after it (the last to the one before).
	for i := 0; i < len(bins) && len(bins) > 1; {
		if len(bins[i]) >= inPlaceBinCalls {
			i++
			continue
		}
		j := i + 1
		if j == len(bins) {
			j, i = i, i-1 // the last: into the one before
		}
		bins[i] = xs[offset(xs, bins[i]) : offset(xs, bins[j])+len(bins[j])]
		bins = append(bins[:j], bins[j+1:]...)
	}
	return bins
}

// offset is where sub, a slice of xs, starts in it.
func offset(xs, sub []inPlaceExcess) int { return cap(xs) - cap(sub) }

// linkState is the link's state in the run of call c against the one tab
// was measured in: its probe's back-to-back call over tab's at the probe's
// payload (1 without a probe or an entry there). The link of the project's
// 2-core VM takes one of two states for minutes — a 1 KiB all_reduce
// 0.6–0.75 µs or 2.0–2.4 µs back to back, a 20 KiB one about 2 or 6.5 µs
// (docs/measurements/cpu-calibration.md, (thirtieth)) — and a run in the
// slower one would otherwise read as a wait in place.
func linkState(tab *sim.OpTable, c inPlaceCall) float64 {
	if c.ProbeS <= 0 {
		return 1
	}
	b2b, ok := tab.Lookup(c.Kind, c.Shape, c.ProbeBytes, 0)
	if !ok || b2b <= 0 {
		return 1
	}
	return c.ProbeS / b2b
}

// inPlaceEntries turns the calls of each repeat into in-place wait
// entries at n ranks against the back-to-back times of tab. Per
// collective kind and group the pooled calls are split by their ops'
// bursts (inPlaceBins); a bin's entry is at the median burst of its calls
// (ns) and holds, per repeat, the mean over its calls of (call − back to
// back at the call's payload × the link's state in the call's run,
// linkState) — the mean, as a run's op timers add their calls up — and
// the median of those over the repeats with calls in the bin and their
// extremes, each clamped at noWaitS (a table time is positive: no wait): a
// repeat whose runs met the host busy moves it no more than any other. A
// call over inPlaceHeldUp times the bin's median call is left out (heldUp
// counts them), as is a call whose payload tab has no back-to-back time
// for (skipped).
func inPlaceEntries(repeats [][]inPlaceCall, tab *sim.OpTable, n int) (es []configs.OpTime, skipped, heldUp int) {
	type key struct{ kind, shape string }
	by := map[key][]inPlaceExcess{}
	for r, calls := range repeats {
		for _, c := range calls {
			b2b, ok := tab.Lookup(c.Kind, c.Shape, c.Bytes, 0)
			if !ok {
				skipped++
				continue
			}
			k := key{c.Kind, c.Shape}
			by[k] = append(by[k], inPlaceExcess{c.Op, r, c.BurstS, c.CallS - linkState(tab, c)*b2b, c.CallS})
		}
	}
	keys := make([]key, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].kind < keys[j].kind || (keys[i].kind == keys[j].kind && keys[i].shape < keys[j].shape)
	})
	for _, k := range keys {
		lastSize := int64(0)
		for _, bin := range inPlaceBins(by[k]) {
			bursts, calls := make([]float64, len(bin)), make([]float64, len(bin))
			for i, x := range bin {
				bursts[i], calls[i] = x.burstS, x.callS
			}
			limit := inPlaceHeldUp * medianOf(calls)
			sum, cnt := make([]float64, len(repeats)), make([]int, len(repeats))
			kept := 0
			for _, x := range bin {
				if x.callS > limit {
					heldUp++
					continue
				}
				sum[x.repeat] += x.waitS
				cnt[x.repeat]++
				kept++
			}
			var means []float64 // a bin keeps its calls up to its median at least: one repeat or more
			for r := range repeats {
				if cnt[r] > 0 {
					means = append(means, sum[r]/float64(cnt[r]))
				}
			}
			size := max(1, int64(math.Round(medianOf(bursts)*1e9)))
			if size <= lastSize { // bins of one burst: the earlier bin's entry stands
				continue
			}
			lastSize = size
			sp := spreadOf(means)
			es = append(es, configs.OpTime{Kind: configs.InPlaceWaitKind, Shape: configs.InPlaceWaitShape(k.kind, k.shape), Size: size,
				TimeS: max(sp.Median, noWaitS), TimeMinS: max(sp.Min, noWaitS), TimeMaxS: max(sp.Max, noWaitS), Samples: kept, Ranks: n})
		}
	}
	return es, skipped, heldUp
}

// describeInPlace is the note of an in-place measurement: its configs and,
// per entry, the burst and the wait (µs).
func describeInPlace(n int, names []string, es []configs.OpTime, skipped, heldUp int) string {
	var per []string
	for _, e := range es {
		per = append(per, fmt.Sprintf("%s after %.1f µs: %.2f µs (%.2f–%.2f, %d)", e.Shape, float64(e.Size)/1e3, e.TimeS*1e6, e.TimeMinS*1e6, e.TimeMaxS*1e6, e.Samples))
	}
	s := fmt.Sprintf("collectives in place at %d process ranks (%s through the executor; per bin of the compute before a call, the median over repeats of the mean per call beyond the back-to-back entry, the repeats' means from–to, calls): %s",
		n, strings.Join(names, ", "), strings.Join(per, "; "))
	if heldUp > 0 {
		s += fmt.Sprintf("; %d calls over %d× their bin's median left out as held up", heldUp, inPlaceHeldUp)
	}
	if skipped > 0 {
		s += fmt.Sprintf("; %d calls at payloads with no back-to-back entry left out", skipped)
	}
	return s
}

// addInPlace measures the collectives in place at each --op-ranks count
// n, 1 < n ≤ cores, of whose ranks an op config is, against the
// back-to-back entries cal holds at n, and adds their entries and a note.
func addInPlace(ctx context.Context, o Options, plans []*partition.Plan, cores int, cal *configs.Calibration) error {
	for _, n := range o.OpRanks { // each given once (Run refuses a count twice)
		if n < 2 || n > cores {
			continue
		}
		names := inPlaceConfigs(o.OpConfigs, plans, n)
		if len(names) == 0 {
			continue
		}
		var b2b []configs.OpTime
		for _, t := range cal.OpTimes {
			if t.Ranks == n && (t.Kind == string(partition.AllReduce) || t.Kind == string(partition.AllGather)) {
				b2b = append(b2b, t)
			}
		}
		calls, err := measureInPlace(ctx, o.LinkArgv, n, names, o.Repeats)
		if err != nil {
			return err
		}
		es, skipped, heldUp := inPlaceEntries(calls, sim.NewOpTable(b2b), n)
		cal.OpTimes = append(cal.OpTimes, es...)
		note(cal, "%s", describeInPlace(n, names, es, skipped, heldUp))
	}
	return nil
}
