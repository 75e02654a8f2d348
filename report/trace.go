package report

import (
	"encoding/json"
	"io"
	"math"
	"sort"

	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/sim"
)

// Span is one op on one rank's track, in seconds from the start of a run.
// Simulated and measured timelines both become Spans, with the same names,
// so their traces can be opened side by side.
type Span struct {
	Process string // one process per strategy (or per run)
	Rank    int    // one track per rank
	Name    string
	Cat     string // op kind: gemm, attention, all_reduce, send, recv, …
	StartS  float64
	DurS    float64
	Args    map[string]any
	// Flow pairs a send with its recv (same non-zero id on both).
	Flow int
}

type traceEvent struct {
	Name string         `json:"name,omitempty"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   int            `json:"id,omitempty"`
	BP   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// ChromeTrace writes spans in the Chrome trace-event JSON format, which
// ui.perfetto.dev and chrome://tracing load: one process per Process, one
// thread per rank, complete events per span and flow arrows from each send
// to its recv.
func ChromeTrace(w io.Writer, spans []Span) error {
	pids := map[string]int{}
	var events []traceEvent
	named := map[[2]int]bool{}
	for _, s := range spans {
		pid, ok := pids[s.Process]
		if !ok {
			pid = len(pids) + 1
			pids[s.Process] = pid
			events = append(events, traceEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": s.Process}})
		}
		if !named[[2]int{pid, s.Rank}] {
			named[[2]int{pid, s.Rank}] = true
			events = append(events,
				traceEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: s.Rank, Args: map[string]any{"name": "rank " + itoa(s.Rank)}},
				traceEvent{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: s.Rank, Args: map[string]any{"sort_index": s.Rank}})
		}
		dur := s.DurS * 1e6
		ts := s.StartS * 1e6
		events = append(events, traceEvent{Name: s.Name, Cat: s.Cat, Ph: "X", Ts: ts, Dur: &dur, Pid: pid, Tid: s.Rank, Args: s.Args})
		if s.Flow != 0 {
			id := pid<<24 | s.Flow // flow ids are global to the trace
			// A flow starts inside the send and ends (binding to the enclosing
			// slice) at the end of the recv, when the data is there.
			if s.Cat == "send" {
				events = append(events, traceEvent{Name: "message", Cat: "flow", Ph: "s", Ts: ts, Pid: pid, Tid: s.Rank, ID: id})
			} else {
				events = append(events, traceEvent{Name: "message", Cat: "flow", Ph: "f", BP: "e", Ts: ts + dur, Pid: pid, Tid: s.Rank, ID: id})
			}
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].Ph == "M" && events[j].Ph != "M" })
	enc := json.NewEncoder(w)
	return enc.Encode(struct {
		TraceEvents     []traceEvent `json:"traceEvents"`
		DisplayTimeUnit string       `json:"displayTimeUnit"`
	}{events, "ms"})
}

// EstimateSpans turns a simulated timeline into spans named as a measured
// run names them: the Program's op names, with shapes and bytes in args.
func EstimateSpans(e *sim.Estimate) []Span { return EstimateSpansUpTo(e, -1) }

// TraceDecodeSteps is how many decode steps a dry-run trace holds by
// default: enough to see the pipeline's steady state, small enough to open.
const TraceDecodeSteps = 3

// EstimateSpansUpTo is EstimateSpans keeping prefill and the first
// decodeSteps decode steps (all when decodeSteps < 0).
func EstimateSpansUpTo(e *sim.Estimate, decodeSteps int) []Span {
	out := make([]Span, 0, e.Timeline.Len())
	for _, sl := range e.Timeline.All() {
		if decodeSteps >= 0 && sl.Step >= decodeSteps {
			continue
		}
		op := sl.Op
		args := map[string]any{"phase": string(sl.Phase), "microbatch": op.Microbatch, "bound": string(sl.Bound)}
		if sl.Step >= 0 {
			args["step"] = sl.Step
		}
		if op.Chunk > 0 {
			args["chunk"] = op.Chunk
		}
		if op.Kind == "gemm" {
			args["m"], args["n"], args["k"] = op.Rows, op.N, op.K
		}
		if op.FLOPs > 0 {
			args["flops"] = op.FLOPs
		}
		if sl.HBMBytes > 0 {
			args["hbm_bytes"] = sl.HBMBytes
		}
		if sl.L2Bytes > 0 {
			args["l2_bytes"] = sl.L2Bytes
		}
		if op.Bytes > 0 {
			args["bytes"] = op.Bytes
		}
		if sl.WaitS > 0 {
			args["wait_us"] = sl.WaitS * 1e6
		}
		if sl.Algo != "" {
			args["algo"], args["proto"] = string(sl.Algo), sl.Proto
		}
		if sl.Link != "" {
			args["link"] = string(sl.Link)
		}
		if len(op.Group) > 0 {
			args["group"] = op.Group
		}
		if op.Kind == "send" || op.Kind == "recv" {
			args["peer"] = op.Peer
		}
		out = append(out, Span{Process: e.Name + " (modeled)", Rank: sl.Rank, Name: op.Name, Cat: string(op.Kind),
			StartS: sl.StartS, DurS: sl.EndS - sl.StartS, Args: args, Flow: sl.Flow})
	}
	return pairedFlows(out)
}

// pairedFlows clears the flow of a send or recv whose partner lies outside
// the spans (a message crossing the trace's last decode step): an arrow
// needs both ends, and viewers draw a start without an end as a dangling
// arrow or not at all.
func pairedFlows(spans []Span) []Span {
	ends := map[int]int{} // flow → 1 send seen | 2 recv seen
	for _, s := range spans {
		if s.Flow == 0 {
			continue
		}
		if s.Cat == "send" {
			ends[s.Flow] |= 1
		} else {
			ends[s.Flow] |= 2
		}
	}
	for i := range spans {
		if f := spans[i].Flow; f != 0 && ends[f] != 3 {
			spans[i].Flow = 0
		}
	}
	return spans
}

// RunSpans turns the ops every rank recorded into spans named as the
// estimate names them. A send and the recv of its message are paired in
// order per ordered pair of ranks (messages between a pair arrive in order).
// Where every rank recorded its iterations' starts on rank 0's clock
// (RankResult.StartS), each rank's spans are placed from its own start of
// the traced iteration (the last measured) less the earliest rank's, so
// ranks that left the barrier late are drawn late; else each from its own.
func RunSpans(process string, ranks []exec.RankResult) []Span {
	out := runSpans(process, ranks, func(r exec.RankResult) []exec.Span { return r.Spans })
	shift := traceStarts(ranks)
	if shift == nil {
		return out
	}
	for i := range out {
		out[i].StartS += shift[out[i].Rank]
	}
	return out
}

// traceStarts is each rank's start of its last measured iteration after the
// earliest rank's, by rank; nil unless every rank recorded as many starts.
func traceStarts(ranks []exec.RankResult) map[int]float64 {
	if len(ranks) == 0 {
		return nil
	}
	n := len(ranks[0].StartS)
	first := math.Inf(1)
	for _, r := range ranks {
		if n == 0 || len(r.StartS) != n {
			return nil
		}
		first = math.Min(first, r.StartS[n-1])
	}
	shift := make(map[int]float64, len(ranks))
	for _, r := range ranks {
		shift[r.Rank] = r.StartS[n-1] - first
	}
	return shift
}

// RunOpSpans are RunSpans of the ranks' OpSpans: decode steps traced op by
// op in an iteration after the measured ones, where the measured one ran
// them as device graphs.
func RunOpSpans(process string, ranks []exec.RankResult) []Span {
	return runSpans(process, ranks, func(r exec.RankResult) []exec.Span { return r.OpSpans })
}

func runSpans(process string, ranks []exec.RankResult, of func(exec.RankResult) []exec.Span) []Span {
	type pair struct{ src, dst int }
	sends := map[pair][]int{} // span indices, in send order
	var out []Span
	for _, r := range ranks {
		for _, s := range of(r) {
			args := map[string]any{"phase": s.Phase, "microbatch": s.Microbatch}
			if s.Step >= 0 {
				args["step"] = s.Step
			}
			if s.Chunk > 0 {
				args["chunk"] = s.Chunk
			}
			if s.Bytes > 0 {
				args["bytes"] = s.Bytes
			}
			if s.Kind == "send" || s.Kind == "recv" {
				args["peer"] = s.Peer
			}
			switch {
			case s.Graph > 0:
				args["graph_ops"] = s.Graph // the span is the graph's: this op and the next
			case s.Graph < 0:
				args["in_graph"] = true // run by an earlier op's graph
			}
			if s.Device {
				args["clock"] = "device"
			}
			out = append(out, Span{Process: process, Rank: r.Rank, Name: s.Name, Cat: s.Kind, StartS: s.StartS, DurS: s.DurS, Args: args})
			if s.Kind == "send" {
				k := pair{r.Rank, s.Peer}
				sends[k] = append(sends[k], len(out)-1)
			}
		}
	}
	flow := 0
	recvSeen := map[pair]int{}
	for i := range out {
		if out[i].Cat != "recv" {
			continue
		}
		k := pair{out[i].Args["peer"].(int), out[i].Rank}
		n := recvSeen[k]
		recvSeen[k]++
		if n < len(sends[k]) {
			flow++
			out[sends[k][n]].Flow, out[i].Flow = flow, flow
		}
	}
	return out
}
