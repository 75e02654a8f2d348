package compare

import (
	"github.com/partbench/partbench/stats"
	"sort"

	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// OpCheckRow is one op kind in one phase of a run: the time the executor's
// per-op timers measured inside the kind's calls against the time the
// estimate's timeline spends in the same ops, so a miss in TTFT or TPOT
// points at an op kind.
type OpCheckRow struct {
	Phase string `json:"phase"`
	Kind  string `json:"kind"`
	// Ranks is how many measured ranks run the kind in the phase.
	Ranks int `json:"ranks"`
	// MeasuredS and ModeledS are per iteration's prefill, or per decode
	// step over the decode steps the run timed (the first step's waits
	// spread over as many steps on both sides), the mean over the ranks
	// that run the kind (measured: each rank's median over iterations): the
	// time inside the ops' calls, waits for a partner included (a
	// collective's or recv's wait is part of its call, on both sides).
	MeasuredS float64 `json:"measured_s"`
	ModeledS  float64 `json:"modeled_s"`
	// Ratio is ModeledS / MeasuredS (0 when nothing was measured).
	Ratio float64 `json:"modeled_over_measured"`
	// Clock says how the measured column was timed: "device" (the traced
	// iteration's marks on the device queue: its prefill, and its decode
	// steps op by op where they ran as graphs) or "host" (the executor's
	// timers around each call, the median over the measured iterations) or
	// "enqueue" (an asynchronous device whose ops were not timed on it: the
	// host timers measured the enqueue only, so MeasuredS is 0 and Ratio 0).
	Clock string `json:"clock,omitempty"`
	// TableOps and RooflineOps count the modeled ops of the kind per rank in
	// one prefill or one decode step priced from the hardware profile's
	// op-time table and by the roofline (or the collective and link model).
	TableOps    int `json:"table_ops"`
	RooflineOps int `json:"roofline_ops"`
}

// OpCheck holds m's per-kind busy times (exec.RankResult.PhaseBusyS: the
// median over measured iterations — a prefill recv's with the rank's late
// start added, exec.RankResult.StartLagS — as TTFT and TPOT are compared at their
// medians — a mean would be one preempted iteration's on a shared host)
// against est's timeline, per phase and kind. It returns nil when the ranks
// did not time each phase (results of an older partbench) or there is no
// estimate.
func OpCheck(m *exec.Measurement, est *sim.Estimate) []OpCheckRow {
	if m == nil || est == nil || est.Timeline == nil || len(m.Ranks) == 0 {
		return nil
	}
	type key struct{ phase, kind string }
	type acc struct {
		sum         float64
		ranks       int
		table, roof int
	}
	meas, model := map[key]*acc{}, map[key]*acc{}
	at := func(m map[key]*acc, k key) *acc {
		if m[k] == nil {
			m[k] = &acc{}
		}
		return m[k]
	}
	clock := map[key]string{}
	for _, r := range m.Ranks {
		if r.PhaseBusyS == nil {
			return nil
		}
		dev := deviceBusy(r)
		for phase, byKind := range dev {
			for kind, t := range byKind {
				a := at(meas, key{phase, kind})
				a.sum += t
				a.ranks++
				clock[key{phase, kind}] = exec.ClockDevice
			}
		}
		steps := 0 // decode steps per iteration
		if len(r.StepEndS) > 0 {
			steps = len(r.StepEndS[0])
		}
		for phase, byKind := range r.PhaseBusyS {
			if dev[phase] != nil {
				continue // timed on the device
			}
			if r.Async {
				// The host timers saw the enqueue alone: no measured time
				// (never a ratio of an enqueue to a device time).
				for kind := range byKind {
					if clock[key{phase, kind}] == "" {
						clock[key{phase, kind}] = exec.ClockEnqueue
					}
				}
				continue
			}
			per := 1.0 // an iteration's prefill
			if phase == string(partition.Decode) {
				if steps == 0 {
					continue
				}
				per = float64(steps)
			}
			for kind, its := range byKind {
				if len(its) == 0 {
					continue
				}
				if phase == string(partition.Prefill) && kind == string(partition.Recv) && len(r.StartLagS) == len(its) {
					// A later stage that started late waited for its
					// message from the iteration's start (exec.RankResult.StartLagS).
					lagged := make([]float64, len(its))
					for i, t := range its {
						lagged[i] = t + r.StartLagS[i]
					}
					its = lagged
				}
				a := at(meas, key{phase, kind})
				a.sum += stats.Median(its) / per
				a.ranks++
				if clock[key{phase, kind}] == "" {
					clock[key{phase, kind}] = exec.ClockHost
				}
			}
		}
	}
	// Modeled: each simulated rank's time per (phase, kind), decode over
	// the decode steps the run measured (modeledDecodeSteps).
	type rk struct {
		rank int
		key
	}
	steps := measuredDecodeSteps(m)
	simulated := map[int]bool{}
	for _, sl := range est.Timeline.All() {
		if sl.Phase == partition.Decode {
			simulated[sl.Step] = true
		}
	}
	upTo, repeatLast := modeledDecodeSteps(steps, len(simulated))
	perRank := map[rk]float64{}
	lastStep := map[rk]float64{} // each rank's time in its last step counted
	// The executor's op gap sim adds to each compute op it prices from
	// the table is no part of the op's timer: taken out again.
	// What a decode graph saves per op against the table's op-by-op
	// timing (sim.GraphOpSavedS) is added back: the measured ops are timed
	// one by one too.
	gap := sim.OpGapS(est.Plan)
	for _, sl := range est.Timeline.All() {
		if sl.Phase == partition.Decode && sl.Step >= upTo {
			continue
		}
		k := key{string(sl.Phase), string(sl.Op.Kind)}
		d := sl.EndS - sl.StartS
		if _, comm := sl.Op.Kind.Comm(); sl.Bound == sim.BoundTable && !comm {
			d = max(0, d-gap) + sim.GraphOpSavedS(est.Plan, sl.Phase)
		}
		if sl.Op.Kind == partition.Send {
			// A send's wait is its turn's time off the core before the
			// launch (sim/optable_turnoff.go), no part of the run's Send
			// call: taken out again.
			d -= sl.WaitS
		}
		perRank[rk{sl.Rank, k}] += d
		if sl.Phase == partition.Decode && sl.Step == upTo-1 {
			lastStep[rk{sl.Rank, k}] += d
		}
		a := at(model, k)
		if sl.Bound == sim.BoundTable {
			a.table++
		} else {
			a.roof++
		}
	}
	for k, t := range perRank {
		if k.phase == string(partition.Decode) && upTo > 0 {
			t = (t + float64(repeatLast)*lastStep[k]) / float64(upTo+repeatLast)
		}
		a := at(model, k.key)
		a.sum += t
		a.ranks++
	}
	var rows []OpCheckRow
	keys := map[key]bool{}
	for k := range meas {
		keys[k] = true
	}
	for k := range model {
		keys[k] = true
	}
	for k := range keys {
		row := OpCheckRow{Phase: k.phase, Kind: k.kind, Clock: clock[k]}
		if a := meas[k]; a != nil && a.ranks > 0 {
			row.Ranks, row.MeasuredS = a.ranks, a.sum/float64(a.ranks)
		}
		if a := model[k]; a != nil && a.ranks > 0 {
			row.ModeledS = a.sum / float64(a.ranks)
			// Per rank and pass: a prefill's ops, or one decode step's.
			per := a.ranks
			if k.phase == string(partition.Decode) {
				per *= max(1, upTo)
			}
			row.TableOps, row.RooflineOps = ceilDiv(a.table, per), ceilDiv(a.roof, per)
		}
		if row.MeasuredS > 0 {
			row.Ratio = row.ModeledS / row.MeasuredS
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Phase != rows[j].Phase {
			return rows[i].Phase > rows[j].Phase // prefill first
		}
		if rows[i].MeasuredS != rows[j].MeasuredS {
			return rows[i].MeasuredS > rows[j].MeasuredS
		}
		return rows[i].Kind < rows[j].Kind
	})
	return rows
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// measuredDecodeSteps is the decode steps per iteration the measured
// ranks timed (the most any rank recorded), 0 where none did.
func measuredDecodeSteps(m *exec.Measurement) int {
	n := 0
	for _, r := range m.Ranks {
		if len(r.StepEndS) > 0 {
			n = max(n, len(r.StepEndS[0]))
		}
	}
	return n
}

// modeledDecodeSteps says which simulated decode steps the op check's
// modeled decode rows average, so that they cover the steps the run timed:
// a rank's measured decode time per step is its iteration's decode time
// over the run's steps, and the first step holds what no later one does (a
// pipeline's first stage waits there for the prefill's last stage and its
// first token). The timeline's steps 0 … upTo−1 count, and the last of them
// repeatLast more times where the run timed more steps than were simulated
// (the timeline runs to its steady state, its last step stands for the
// rest). Without measured steps every simulated step counts.
func modeledDecodeSteps(measured, simulated int) (upTo, repeatLast int) {
	if measured <= 0 {
		return simulated, 0
	}
	if measured <= simulated {
		return measured, 0
	}
	return simulated, measured - simulated
}

// deviceBusy is rank r's time per phase and op kind on the device, from
// the spans of its traced iteration where they are device times: the
// prefill's, and one decode step's as the mean over the traced steps — the
// op-by-op replay's where the measured steps ran as graphs (a graph's time
// sits on the op that launched it), else the measured steps' own. A phase
// it cannot time on the device is absent (nil: none).
func deviceBusy(r exec.RankResult) map[string]map[string]float64 {
	var out map[string]map[string]float64
	add := func(phase, kind string, t float64) {
		if out == nil {
			out = map[string]map[string]float64{}
		}
		if out[phase] == nil {
			out[phase] = map[string]float64{}
		}
		out[phase][kind] += t
	}
	graphs := false
	var prefill []exec.Span
	spans := r.Spans
	if len(spans) == 0 {
		spans = r.CheckSpans // an asynchronous device's op-check iteration
	}
	for _, sp := range spans {
		if !sp.Device {
			return nil
		}
		if sp.Graph != 0 {
			graphs = true
		}
		if sp.Phase == string(partition.Prefill) {
			prefill = append(prefill, sp)
		}
	}
	for _, sp := range prefill {
		if sp.Graph != 0 {
			prefill = nil // a graph in prefill: per-op times unknown
			break
		}
	}
	for _, sp := range prefill {
		add(sp.Phase, sp.Kind, sp.DurS)
	}
	decode := spans
	if graphs {
		decode = r.OpSpans
	}
	steps := map[int]bool{}
	for _, sp := range decode {
		if sp.Phase != string(partition.Decode) || !sp.Device || sp.Graph != 0 {
			continue
		}
		steps[sp.Step] = true
	}
	if len(steps) == 0 {
		return out
	}
	for _, sp := range decode {
		if sp.Phase == string(partition.Decode) && sp.Device && sp.Graph == 0 {
			add(sp.Phase, sp.Kind, sp.DurS/float64(len(steps)))
		}
	}
	return out
}
