package tracestats

import (
	"fmt"
	"sort"
	"strings"

	"github.com/partbench/partbench/stats"
)

// By is what a summary groups ops by.
type By string

const (
	ByName By = "name" // the op's name: layer3.attn.qkv, …
	ByKind By = "kind" // the op's category: gemm, attention, all_reduce, …
)

// Options choose the grouping of a summary.
type Options struct {
	By       By
	PerRank  bool // one row per rank instead of all ranks together
	PerPhase bool // one row per phase (prefill, decode, …)
}

// Check refuses an unknown grouping, naming the flag.
func (o Options) Check() error {
	if o.By != ByName && o.By != ByKind {
		return fmt.Errorf("--by: must be one of name, kind (got %q)", string(o.By))
	}
	return nil
}

// AllRanks and AllPhases mark a row that sums every rank or phase.
const (
	AllRanks  = -1
	AllPhases = ""
)

// Row is one op's statistics within one process (and rank and phase when
// asked for): nsys stats' columns.
type Row struct {
	Process string  `json:"process"`
	Rank    int     `json:"rank"`            // AllRanks when summed over ranks
	Phase   string  `json:"phase,omitempty"` // AllPhases when summed over phases
	Op      string  `json:"op"`
	Count   int     `json:"count"`
	TotalS  float64 `json:"total_s"`
	Percent float64 `json:"percent"` // of the op time of its process (and rank and phase)
	MeanS   float64 `json:"mean_s"`
	MedianS float64 `json:"median_s"`
	MinS    float64 `json:"min_s"`
	MaxS    float64 `json:"max_s"`
	StdDevS float64 `json:"stddev_s"` // sample standard deviation; 0 for one instance
}

type groupKey struct {
	process string
	rank    int
	phase   string
	op      string
}

type scopeKey struct {
	process string
	rank    int
	phase   string
}

// Summarize groups t's events as o asks and returns one Row per group,
// ordered by process (as they first appear), rank, phase, then total time,
// largest first (ties by op name).
func Summarize(t *Trace, o Options) []Row {
	durs := map[groupKey][]float64{}
	scope := map[scopeKey]float64{}
	for _, e := range t.Events {
		k := groupKey{process: e.Process, rank: AllRanks, phase: AllPhases, op: e.Name}
		if o.By == ByKind {
			k.op = e.Cat
			if k.op == "" {
				k.op = "(none)"
			}
		}
		if o.PerRank {
			k.rank = e.Rank
		}
		if o.PerPhase {
			k.phase = e.Phase
		}
		durs[k] = append(durs[k], e.DurS)
		scope[scopeKey{k.process, k.rank, k.phase}] += e.DurS
	}
	procOrder := map[string]int{}
	for i, p := range t.Processes {
		procOrder[p] = i
	}
	rows := make([]Row, 0, len(durs))
	for k, d := range durs {
		sort.Float64s(d)
		total := 0.0
		for _, v := range d {
			total += v
		}
		sum := stats.Summarize(d, stats.Linear)
		r := Row{Process: k.process, Rank: k.rank, Phase: k.phase, Op: k.op, Count: len(d), TotalS: total,
			MeanS: total / float64(len(d)), MedianS: sum.P50, MinS: sum.Min, MaxS: sum.Max, StdDevS: sum.Std}
		if s := scope[scopeKey{k.process, k.rank, k.phase}]; s > 0 {
			r.Percent = 100 * total / s
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Process != b.Process {
			return procOrder[a.Process] < procOrder[b.Process]
		}
		if a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		if a.Phase != b.Phase {
			return a.Phase < b.Phase
		}
		if a.TotalS != b.TotalS {
			return a.TotalS > b.TotalS
		}
		return a.Op < b.Op
	})
	return rows
}

// Measured and modeled suffixes of the process names partbench writes:
// `run --trace` puts "NAME (measured)" beside "NAME (modeled)".
const (
	MeasuredSuffix = " (measured)"
	ModeledSuffix  = " (modeled)"
)

// Pair is one op of a run with its measured and modeled statistics. The
// error compares means per instance, since a measured trace and the model's
// may hold different numbers of decode steps: error = (modeled −
// measured) / measured, the sign used wherever partbench prints an error.
type Pair struct {
	Run      string   `json:"run"`
	Rank     int      `json:"rank"`
	Phase    string   `json:"phase,omitempty"`
	Op       string   `json:"op"`
	Measured *Row     `json:"measured,omitempty"` // nil when only the model has the op
	Modeled  *Row     `json:"modeled,omitempty"`  // nil when only the run has it
	Error    *float64 `json:"error,omitempty"`    // nil when either side is missing or measured is 0
}

// Pairs matches rows of "NAME (measured)" with rows of "NAME (modeled)"
// by rank, phase and op. It returns nothing when the trace holds no such
// pair of processes. Order: run, rank, phase, then measured total time,
// largest first (ops only the model has come last).
func Pairs(rows []Row) []Pair {
	type key struct {
		run   string
		rank  int
		phase string
		op    string
	}
	meas := map[key]*Row{}
	mod := map[key]*Row{}
	runs := map[string][2]bool{}
	for i := range rows {
		r := &rows[i]
		if run, ok := strings.CutSuffix(r.Process, MeasuredSuffix); ok {
			meas[key{run, r.Rank, r.Phase, r.Op}] = r
			s := runs[run]
			s[0] = true
			runs[run] = s
		} else if run, ok := strings.CutSuffix(r.Process, ModeledSuffix); ok {
			mod[key{run, r.Rank, r.Phase, r.Op}] = r
			s := runs[run]
			s[1] = true
			runs[run] = s
		}
	}
	var out []Pair
	add := func(k key) {
		if s := runs[k.run]; !s[0] || !s[1] {
			return
		}
		p := Pair{Run: k.run, Rank: k.rank, Phase: k.phase, Op: k.op, Measured: meas[k], Modeled: mod[k]}
		if p.Measured != nil && p.Modeled != nil {
			if e, ok := stats.ModelError(p.Modeled.MeanS, p.Measured.MeanS); ok {
				p.Error = &e
			}
		}
		out = append(out, p)
	}
	for k := range meas {
		add(k)
	}
	for k := range mod {
		if meas[k] == nil {
			add(k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		if a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		if a.Phase != b.Phase {
			return a.Phase < b.Phase
		}
		ta, tb := -1.0, -1.0
		if a.Measured != nil {
			ta = a.Measured.TotalS
		}
		if b.Measured != nil {
			tb = b.Measured.TotalS
		}
		if ta != tb {
			return ta > tb
		}
		return a.Op < b.Op
	})
	return out
}
