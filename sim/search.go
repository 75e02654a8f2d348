package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// This file is candidate enumeration and ranking: every tp × pp ×
// micro-batch × layer-map candidate of a model on N GPUs (Enumerate), pruned
// by memory (partition's NoFitError), priced by the closed form in quick.go,
// ranked by the objective, and the top ones re-run on the full timeline
// (Refine). docs/search.md states the candidate rules.

// Objectives a search ranks by.
const (
	ObjectiveTPS  = "tps"  // highest output tokens per second
	ObjectiveTPOT = "tpot" // lowest time per output token
	ObjectiveTTFT = "ttft" // lowest time to first token
)

// Objectives lists the accepted objectives.
var Objectives = []string{ObjectiveTPS, ObjectiveTPOT, ObjectiveTTFT}

// Row statuses.
const (
	StatusFeasible   = "feasible"
	StatusViolates   = "violates"
	StatusDoesNotFit = "does_not_fit"
)

// DefaultMaxMicrobatches is the largest micro-batch count searched.
const DefaultMaxMicrobatches = 64

// SearchSpec says what to search: the model and workload of Config (its
// parallel section, hardware and topology are replaced) on System.
type SearchSpec struct {
	Config *configs.Config
	System topology.System
	// Objective is tps (default), tpot or ttft.
	Objective string
	// MaxTPOTS and MaxTTFTS are constraints in seconds; 0 means none.
	MaxTPOTS, MaxTTFTS float64
	// MaxMicrobatches bounds the micro-batch counts tried (default 64).
	MaxMicrobatches int
	Collectives     CollectiveOptions
	// Progress, when set, is called as candidates are evaluated.
	Progress func(done, total int)
	// NoFullRange leaves the GPU's parameter-range ends out of Refine's
	// re-runs: two timelines fewer per re-run, and each FullEstimate's Range
	// is its nominal value. What a search reports of a re-run (Full, the
	// TPOT difference, the decode steps) is the nominal timeline's, the
	// same either way, and the ranking is Quick's; RunSearch sets it.
	NoFullRange bool
	// SummaryOnly makes each of Refine's re-runs compute only what the
	// search reports of it (FromEstimate: TTFT, TPOT, the token rate, both
	// bubble fractions, the decode bottleneck; the same numbers to the bit,
	// estimate_summary.go), not the whole Estimate: each row's FullEstimate
	// is then nil. RunSearch sets it.
	SummaryOnly bool
}

// Candidate is one partitioning.
type Candidate struct {
	TP int `json:"tp"`
	PP int `json:"pp"`
	// DP is the replicas of the TP×PP group (tp × pp × dp = GPUs).
	DP           int `json:"dp"`
	Microbatches int `json:"microbatches"`
	// Variant names the layer map: even, first-1, last-1 or ends-1
	// (docs/search.md).
	Variant string `json:"layer_variant"`
	// StageLayers is the number of layers on each stage.
	StageLayers []int `json:"stage_layers"`
}

// Name is a config name for the candidate, e.g. tp8pp2-m8,
// tp4pp4-m16-first-1, or tp8pp1dp2-m8 with two replicas.
func (c Candidate) Name() string {
	b := make([]byte, 0, 32)
	b = strconv.AppendInt(append(b, "tp"...), int64(c.TP), 10)
	b = strconv.AppendInt(append(b, "pp"...), int64(c.PP), 10)
	if c.DP > 1 {
		b = strconv.AppendInt(append(b, "dp"...), int64(c.DP), 10)
	}
	b = strconv.AppendInt(append(b, "-m"...), int64(c.Microbatches), 10)
	if c.Variant != VariantEven {
		b = append(append(b, '-'), c.Variant...)
	}
	return string(b)
}

// LayerMap is the stage of every layer, or nil for the even split.
func (c Candidate) LayerMap() []int {
	if c.Variant == VariantEven {
		return nil
	}
	layers := 0
	for _, n := range c.StageLayers {
		layers += n
	}
	m := make([]int, 0, layers)
	for s, n := range c.StageLayers {
		for i := 0; i < n; i++ {
			m = append(m, s)
		}
	}
	return m
}

// LayerSummary writes the layers per stage run-length coded: "6,5×2" is a
// stage of 6 layers then two stages of 5.
func (c Candidate) LayerSummary() string {
	var parts []string
	for i := 0; i < len(c.StageLayers); {
		j := i
		for j < len(c.StageLayers) && c.StageLayers[j] == c.StageLayers[i] {
			j++
		}
		p := strconv.Itoa(c.StageLayers[i])
		if j-i > 1 {
			p += "×" + strconv.Itoa(j-i)
		}
		parts = append(parts, p)
		i = j
	}
	return strings.Join(parts, ",")
}

// Layer map variants.
const (
	VariantEven  = "even"    // partition's even split, earlier stages take the remainder
	VariantFirst = "first-1" // the first stage one layer lighter, the rest split evenly
	VariantLast  = "last-1"  // the last stage one layer lighter, the rest split evenly
	VariantEnds  = "ends-1"  // both ends one layer lighter, the middle split evenly
)

// evenSplit divides n layers over k stages, earlier stages taking the remainder.
func evenSplit(n, k int) []int {
	out := make([]int, k)
	for s := range out {
		out[s] = n / k
		if s < n%k {
			out[s]++
		}
	}
	return out
}

// LayerVariants lists the layer maps searched for layers over pp stages:
// the even split and, when layers % pp ≠ 0 or ends (the model has an
// embedding or LM head), the maps with the first and/or last stage one
// layer lighter than in the even split; every stage keeps at least one
// layer and duplicates are dropped.
func LayerVariants(layers, pp int, ends bool) []Candidate {
	even := evenSplit(layers, pp)
	out := []Candidate{{Variant: VariantEven, StageLayers: even}}
	if pp < 2 || (layers%pp == 0 && !ends) {
		return out
	}
	add := func(v string, counts []int) {
		for _, o := range out {
			if slices.Equal(o.StageLayers, counts) {
				return
			}
		}
		out = append(out, Candidate{Variant: v, StageLayers: counts})
	}
	f, l := even[0]-1, even[pp-1]-1
	if f >= 1 {
		add(VariantFirst, append([]int{f}, evenSplit(layers-f, pp-1)...))
	}
	if l >= 1 {
		add(VariantLast, append(evenSplit(layers-l, pp-1), l))
	}
	if pp >= 3 && f >= 1 && l >= 1 {
		mid := evenSplit(layers-f-l, pp-2)
		ok := true
		for _, n := range mid {
			ok = ok && n >= 1
		}
		if ok {
			add(VariantEnds, append(append([]int{f}, mid...), l))
		}
	}
	return out
}

// Factorization is one tp × pp × dp = GPUs, with why it is not searched.
type Factorization struct {
	TP       int    `json:"tp"`
	PP       int    `json:"pp"`
	DP       int    `json:"dp"`
	Excluded string `json:"excluded,omitempty"`
}

// SearchRow is one candidate's verdict.
type SearchRow struct {
	Candidate
	// Rank is the position among feasible candidates by the objective
	// (1 = best); 0 for the others.
	Rank           int    `json:"rank"`
	Status         string `json:"status"`
	Reason         string `json:"reason,omitempty"`
	MicrobatchSize int    `json:"microbatch_size"`
	PrefillChunk   int    `json:"prefill_chunk,omitempty"`
	PrefillChunks  int    `json:"prefill_chunks,omitempty"`
	// MemoryBytes is the largest rank's need.
	MemoryBytes   int64          `json:"max_memory_bytes,omitempty"`
	CapacityBytes int64          `json:"capacity_bytes,omitempty"`
	Quick         *QuickEstimate `json:"quick,omitempty"`
	// Full is the discrete-event timeline's verdict (top candidates only).
	Full *QuickEstimate `json:"full,omitempty"`
	// TPOTRelDiff is (quick − full) / full TPOT.
	TPOTRelDiff *float64 `json:"tpot_rel_diff,omitempty"`
	// FullDecodeSteps is the decode steps the full timeline ran (see Refine).
	FullDecodeSteps int `json:"full_decode_steps,omitempty"`
	// FullEstimate is the whole estimate of the last re-run; nil where
	// SearchSpec.SummaryOnly kept only what Full holds.
	FullEstimate *Estimate `json:"-"`

	index int
}

// SearchResult is every candidate of a search, best first.
type SearchResult struct {
	Model          string          `json:"model"`
	Hardware       string          `json:"hardware"`
	Topology       string          `json:"topology"`
	GPUs           int             `json:"gpus"`
	Objective      string          `json:"objective"`
	MaxTPOTS       float64         `json:"max_tpot_s,omitempty"`
	MaxTTFTS       float64         `json:"max_ttft_s,omitempty"`
	Factorizations []Factorization `json:"factorizations"`
	// Enumerated counts candidates; each is feasible, violates a
	// constraint, or does not fit in memory.
	Enumerated     int            `json:"enumerated"`
	Feasible       int            `json:"feasible"`
	PrunedMemory   int            `json:"pruned_memory"`
	PrunedByReason map[string]int `json:"pruned_by_reason"`
	Violating      int            `json:"violating"`
	// ViolatingBy counts violations per constraint (a candidate may break both).
	ViolatingBy    map[string]int `json:"violating_by"`
	ElapsedS       float64        `json:"elapsed_s"`
	CandidatesPerS float64        `json:"candidates_per_s"`
	FullTop        int            `json:"full_top"`
	// FullElapsedS is the time of the full-timeline re-run of the top
	// candidates (Refine), which ElapsedS leaves out; FullRuns counts the
	// timelines it simulated (a row whose TPOT disagrees runs again with
	// more decode steps).
	FullElapsedS float64 `json:"full_elapsed_s"`
	FullRuns     int     `json:"full_runs"`
	// FullSkipped names the top candidates not re-run because their timeline
	// would exceed MaxTimelineOps; their rows keep the closed form alone.
	FullSkipped []string    `json:"full_skipped,omitempty"`
	Rows        []SearchRow `json:"rows"`
}

// Check validates a spec, naming the field at fault.
func (sp *SearchSpec) Check() error {
	if sp.Config == nil {
		return fmt.Errorf("search: no model config")
	}
	if sp.Objective == "" {
		sp.Objective = ObjectiveTPS
	}
	switch sp.Objective {
	case ObjectiveTPS, ObjectiveTPOT, ObjectiveTTFT:
	default:
		return fmt.Errorf("objective: must be one of %s (got %q)", strings.Join(Objectives, ", "), sp.Objective)
	}
	if sp.MaxTPOTS < 0 || sp.MaxTTFTS < 0 {
		return fmt.Errorf("constraints: limits must be ≥ 0 (got tpot %g s, ttft %g s)", sp.MaxTPOTS, sp.MaxTTFTS)
	}
	if sp.MaxMicrobatches == 0 {
		sp.MaxMicrobatches = DefaultMaxMicrobatches
	}
	if sp.MaxMicrobatches < 1 {
		return fmt.Errorf("max micro-batches: must be ≥ 1 (got %d)", sp.MaxMicrobatches)
	}
	if err := sp.System.Topology.Validate("topology"); err != nil {
		return err
	}
	return sp.System.GPU.Validate("hardware")
}

// Enumerate lists every candidate of a spec, and every factorization
// tp × pp × dp of the GPU count with why it is excluded: every dp that
// divides the GPUs, its replicas lying alike on the nodes
// (configs.ReplicasAlign). workload.batch is per replica.
func (sp *SearchSpec) Enumerate() ([]Candidate, []Factorization) {
	m := sp.Config.Model
	gpus := sp.System.Topology.Size()
	maxM := sp.MaxMicrobatches
	if maxM == 0 {
		maxM = DefaultMaxMicrobatches
	}
	// The micro-batch counts tried: the divisors of the batch up to maxM.
	var mbs []int
	for mb := 1; mb <= maxM; mb++ {
		if sp.Config.Workload.Batch%mb == 0 {
			mbs = append(mbs, mb)
		}
	}
	// The factorizations in order (tp, then pp, ascending), each searched
	// one's layer variants kept, so the candidates are counted before they
	// are listed: one allocation for all of them. tp and pp run over the
	// divisors of the GPU count (divisors), not every integer below it.
	var facts []Factorization
	var variants [][]Candidate // per factorization; nil when excluded
	// byPP holds LayerVariants per pipeline depth: the same maps whatever
	// the TP degree (the synthetic 16,384-GPU search has 64 searched
	// factorizations of 8 depths). Candidates share their stage layer
	// lists, which nothing writes to.
	byPP := map[int][]Candidate{}
	var why []byte
	total := 0
	div := divisors(gpus)
	for _, tp := range div {
		for _, pp := range div {
			if pp > gpus/tp {
				break
			}
			if (gpus/tp)%pp != 0 {
				continue
			}
			f := Factorization{TP: tp, PP: pp, DP: gpus / (tp * pp)}
			// Why it is excluded, the reasons joined by "; ", written into
			// one buffer (why) rather than formatted one by one and joined.
			why = why[:0]
			for _, d := range m.TPIndivisible(tp) {
				why = strconv.AppendInt(append(semi(why), "tp "...), int64(tp), 10)
				why = strconv.AppendInt(append(append(append(why, " does not divide "...), d.Key...), ' '), int64(d.Size), 10)
			}
			if f.PP > m.Layers {
				why = strconv.AppendInt(append(semi(why), "pp "...), int64(f.PP), 10)
				why = strconv.AppendInt(append(why, " exceeds layers "...), int64(m.Layers), 10)
			}
			if per := sp.System.Topology.GPUsPerNode; !configs.ReplicasAlign(tp*pp, f.DP, per) {
				why = strconv.AppendInt(append(semi(why), "replicas of tp × pp = "...), int64(tp*pp), 10)
				why = strconv.AppendInt(append(why, " GPUs straddle nodes of "...), int64(per), 10)
			}
			f.Excluded = string(why)
			facts = append(facts, f)
			var vs []Candidate
			if f.Excluded == "" {
				var ok bool
				if vs, ok = byPP[f.PP]; !ok {
					vs = LayerVariants(m.Layers, f.PP, m.Embeddings || m.LMHead)
					byPP[f.PP] = vs
				}
				total += len(mbs) * len(vs)
			}
			variants = append(variants, vs)
		}
	}
	var cands []Candidate
	if total > 0 {
		cands = make([]Candidate, 0, total)
	}
	for i, f := range facts {
		for _, mb := range mbs {
			for _, v := range variants[i] {
				v.TP, v.PP, v.DP, v.Microbatches = f.TP, f.PP, f.DP, mb
				cands = append(cands, v)
			}
		}
	}
	return cands, facts
}

// semi is b with the "; " that separates a reason from the one before,
// when there is one.
func semi(b []byte) []byte {
	if len(b) > 0 {
		return append(b, "; "...)
	}
	return b
}

// divisors lists the positive divisors of n in ascending order (none for
// n < 1).
func divisors(n int) []int {
	var lo, hi []int
	for d := 1; d*d <= n; d++ {
		if n%d == 0 {
			lo = append(lo, d)
			if d*d != n {
				hi = append(hi, n/d)
			}
		}
	}
	for i := len(hi) - 1; i >= 0; i-- {
		lo = append(lo, hi[i])
	}
	return lo
}

// CandidateConfig is the config of one candidate: the spec's model and
// workload with the candidate's layout on the spec's system.
func (sp *SearchSpec) CandidateConfig(c Candidate) *configs.Config {
	n := sp.layoutConfig(c)
	n.Description = fmt.Sprintf("search candidate: TP=%d × PP=%d × DP=%d, %d micro-batches, layers %s", c.TP, c.PP, max(c.DP, 1), c.Microbatches, c.LayerSummary())
	return n
}

// layoutConfig is CandidateConfig without the description, which neither
// the plan's layout nor Quick reads: what Search prices each candidate from.
func (sp *SearchSpec) layoutConfig(c Candidate) *configs.Config {
	n := sp.baseConfig()
	sp.setLayout(n, c, c.LayerMap())
	return n
}

// baseConfig is every candidate's config but for its name and parallel
// section (setLayout).
func (sp *SearchSpec) baseConfig() *configs.Config {
	n := *sp.Config
	n.Workload.Phases = append([]string(nil), sp.Config.Workload.Phases...)
	n.Hardware = configs.Hardware{Preset: sp.Config.Hardware.Preset, GPU: sp.System.GPU}
	n.Topology = configs.Topology{Topology: sp.System.Topology}
	return &n
}

// setLayout gives n, a baseConfig, candidate c's name and parallel section
// with layer map lm (c.LayerMap()).
func (sp *SearchSpec) setLayout(n *configs.Config, c Candidate, lm []int) {
	n.Name = c.Name()
	n.Parallel = configs.Parallel{TP: c.TP, PP: c.PP, DP: max(c.DP, 1), Microbatches: c.Microbatches, LayerMap: lm,
		Schedule: "fill-drain", PrefillChunk: sp.Config.Parallel.PrefillChunk}
}

// layerMaps remembers Candidate.LayerMap per (pipeline depth, variant)
// within one search: LayerVariants gives the same stage layers for them
// whatever the TP degree and micro-batches (the model is the search's).
// Nothing writes to a config's layer map, so the candidates share them.
type layerMaps map[layerMapKey][]int

type layerMapKey struct {
	pp      int
	variant string
}

func (m layerMaps) of(c Candidate) []int {
	if c.Variant == VariantEven {
		return nil
	}
	k := layerMapKey{c.PP, c.Variant}
	lm, ok := m[k]
	if !ok {
		lm = c.LayerMap()
		m[k] = lm
	}
	return lm
}

// Search evaluates every candidate with Quick, prunes those that do not fit
// in memory (partition.NewPlan) and ranks the rest by the objective under
// the constraints.
func Search(spec SearchSpec) (*SearchResult, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	start := time.Now()
	cands, facts := spec.Enumerate()
	res := &SearchResult{Model: spec.Config.Model.Name, Hardware: spec.System.GPU.Name, Topology: spec.System.Topology.Name,
		GPUs: spec.System.Topology.Size(), Objective: spec.Objective, MaxTPOTS: spec.MaxTPOTS, MaxTTFTS: spec.MaxTTFTS,
		Factorizations: facts, Enumerated: len(cands), PrunedByReason: map[string]int{}, ViolatingBy: map[string]int{}}
	cache := NewQuickCache(spec.Collectives)
	planner := partition.NewPlanner() // the candidates differ in layout only
	// Each plan is read (Quick, the memory column) before the next is
	// planned, and none is kept (Quick keeps nothing of a plan): the plans
	// can be one Plan, their stage memory lists one list.
	planner.ReuseStageMemory, planner.ReusePlan = true, true
	// One config, its layout set per candidate: neither the plan (dropped
	// once priced), the Planner nor the cache keeps it.
	cfg, maps := spec.baseConfig(), layerMaps{}
	if len(cands) > 0 { // none: Rows stays nil, as the JSON has always said
		res.Rows = make([]SearchRow, 0, len(cands))
	}
	for i, c := range cands {
		row := SearchRow{Candidate: c, index: i, MicrobatchSize: spec.Config.Workload.Batch / c.Microbatches}
		spec.setLayout(cfg, c, maps.of(c))
		plan, err := planner.Stages(cfg) // Quick reads stages, not ranks
		if err != nil {
			var nofit *partition.NoFitError
			if !errors.As(err, &nofit) {
				return nil, fmt.Errorf("search: candidate %s: %w", c.Name(), err)
			}
			reason := nofit.Reason()
			row.Status, row.Reason = StatusDoesNotFit, reason
			res.PrunedMemory++
			res.PrunedByReason[reason]++
		} else {
			q, err := cache.Quick(plan)
			if err != nil {
				return nil, fmt.Errorf("search: candidate %s: %w", c.Name(), err)
			}
			row.Quick = &q
			row.PrefillChunk, row.PrefillChunks = plan.PrefillChunk, plan.PrefillChunks
			for s := range plan.StageMemory { // every rank holds its stage's
				if m := &plan.StageMemory[s]; m.TotalBytes > row.MemoryBytes {
					row.MemoryBytes, row.CapacityBytes = m.TotalBytes, m.CapacityBytes
				}
			}
			var why []string
			if spec.MaxTPOTS > 0 && q.TPOTS > spec.MaxTPOTS {
				why = append(why, fmt.Sprintf("TPOT %.3g ms above %.3g ms", q.TPOTS*1e3, spec.MaxTPOTS*1e3))
				res.ViolatingBy["max_tpot"]++
			}
			if spec.MaxTTFTS > 0 && q.TTFTS > spec.MaxTTFTS {
				why = append(why, fmt.Sprintf("TTFT %.3g s above %.3g s", q.TTFTS, spec.MaxTTFTS))
				res.ViolatingBy["max_ttft"]++
			}
			row.Status = StatusFeasible
			if len(why) > 0 {
				row.Status, row.Reason = StatusViolates, strings.Join(why, "; ")
				res.Violating++
			} else {
				res.Feasible++
			}
		}
		res.Rows = append(res.Rows, row)
		if spec.Progress != nil && (i%8 == 7 || i == len(cands)-1) {
			spec.Progress(i+1, len(cands))
		}
	}
	sortRows(res.Rows, spec.Objective)
	for i := range res.Rows {
		if res.Rows[i].Status != StatusFeasible {
			break
		}
		res.Rows[i].Rank = i + 1
	}
	res.ElapsedS = time.Since(start).Seconds()
	if res.ElapsedS > 0 {
		res.CandidatesPerS = float64(res.Enumerated) / res.ElapsedS
	}
	return res, nil
}

// objectiveValue is smaller-is-better.
func objectiveValue(q *QuickEstimate, objective string) float64 {
	switch objective {
	case ObjectiveTPOT:
		return q.TPOTS
	case ObjectiveTTFT:
		return q.TTFTS
	}
	return -q.TokensPerS
}

// sortRows orders feasible rows by the objective, then violating ones the
// same way, then rows that do not fit in enumeration order. Ties go to the
// lower TPOT, then TTFT, then memory, then enumeration order (rowLess).
//
// It sorts positions, not rows: a row is hundreds of bytes with pointers.
// Where rowLess is a strict total order over the rows — every feasible or
// violating row has its estimate, none of whose three values rowLess reads
// is NaN, and each row's index is its position, as Search makes them —
// the order is the one any sort gives: the rows that do not fit keep
// their enumeration order, and only the feasible and violating ones are
// sorted (a 16,384-GPU search has 154 of 1,400; a 16-GPU one none).
// Else every position is sorted by sort.SliceStable, the same algorithm
// on a slice of the same length, which asks rowLess the same questions of
// the same positions as sorting the rows themselves
// (TestSortRowsByPositionIsSortingRows). Either way the rows are then
// moved into place cycle by cycle, without a copy of them all.
func sortRows(rows []SearchRow, objective string) {
	pos := make([]int32, len(rows))
	if n := sortedHead(rows, objective, pos); n >= 0 {
		slices.SortFunc(pos[:n], func(i, j int32) int {
			switch {
			case rowLess(&rows[i], &rows[j], objective):
				return -1
			case rowLess(&rows[j], &rows[i], objective):
				return 1
			}
			return 0
		})
	} else {
		for i := range pos {
			pos[i] = int32(i)
		}
		sort.SliceStable(pos, func(i, j int) bool { return rowLess(&rows[pos[i]], &rows[pos[j]], objective) })
	}
	permuteInPlace(rows, pos)
}

// sortedHead fills pos with the positions of the feasible rows, then the
// violating ones, then the others, each in position order, and returns how
// many come before the others — when rowLess is a strict total order over
// rows (sortRows); else it returns −1.
func sortedHead(rows []SearchRow, objective string, pos []int32) int {
	var n [3]int
	for i := range rows {
		r := &rows[i]
		c := rowClass(r)
		if r.index != i || c < 2 && (r.Quick == nil || math.IsNaN(objectiveValue(r.Quick, objective)) ||
			math.IsNaN(r.Quick.TPOTS) || math.IsNaN(r.Quick.TTFTS)) {
			return -1
		}
		n[c]++
	}
	at := [3]int{0, n[0], n[0] + n[1]}
	for i := range rows {
		c := rowClass(&rows[i])
		pos[at[c]] = int32(i)
		at[c]++
	}
	return n[0] + n[1]
}

// rowClass is a row's block in the order: feasible, violating, does not fit.
func rowClass(r *SearchRow) int {
	switch r.Status {
	case StatusFeasible:
		return 0
	case StatusViolates:
		return 1
	case StatusDoesNotFit:
		return 2
	}
	return 0 // as the map lookup of an unknown status gave
}

// rowLess is sortRows' order.
func rowLess(a, b *SearchRow, objective string) bool {
	if ca, cb := rowClass(a), rowClass(b); ca != cb {
		return ca < cb
	}
	if a.Quick == nil || b.Quick == nil {
		return a.index < b.index
	}
	if x, y := objectiveValue(a.Quick, objective), objectiveValue(b.Quick, objective); x != y {
		return x < y
	}
	if a.Quick.TPOTS != b.Quick.TPOTS {
		return a.Quick.TPOTS < b.Quick.TPOTS
	}
	if a.Quick.TTFTS != b.Quick.TTFTS {
		return a.Quick.TTFTS < b.Quick.TTFTS
	}
	if x, y := float64(a.MemoryBytes), float64(b.MemoryBytes); x != y {
		return x < y
	}
	return a.index < b.index
}

// Refine re-runs the full discrete-event estimate on the first top rows
// that fit (feasible first, then violating), so Quick's error is visible
// where it matters. opts.DecodeSteps (default SearchDecodeSteps) is where
// each re-run starts; when its TPOT differs from Quick's by more than
// QuickTolerance it is repeated with twice the steps, up to four times the
// start, since an unbalanced pipeline's timeline can take that long to
// reach steady state. progress, when set, is called after each row.
func (r *SearchResult) Refine(spec SearchSpec, top int, opts Options, progress func(done, total int)) error {
	start := time.Now()
	defer func() { r.FullElapsedS += time.Since(start).Seconds() }()
	if opts.Collectives == (CollectiveOptions{}) {
		opts.Collectives = spec.Collectives
	}
	if opts.DecodeSteps == 0 {
		opts.DecodeSteps = SearchDecodeSteps
	}
	opts.summary = spec.SummaryOnly
	var idx []int
	for i := range r.Rows {
		if len(idx) < top && r.Rows[i].Quick != nil {
			idx = append(idx, i)
		}
	}
	for n, i := range idx {
		row := &r.Rows[i]
		plan, err := partition.NewPlan(spec.CandidateConfig(row.Candidate))
		if err != nil {
			return fmt.Errorf("search: candidate %s: %w", row.Name(), err)
		}
		if spec.NoFullRange { // the estimate runs the range ends only for a GPU with ranges
			plan.System.GPU.Ranges = topology.ParamRanges{}
		}
		o := opts
		work := &planWork{} // the reruns differ in decode steps only
		for {
			e, err := estimateShared(plan, o, work)
			r.FullRuns++
			var tooLarge *TooLargeError
			if errors.As(err, &tooLarge) && row.Full != nil {
				break // keep the last re-run that fitted the bound
			}
			if errors.As(err, &tooLarge) {
				r.FullSkipped = append(r.FullSkipped, fmt.Sprintf("%s: %d timeline ops, more than the %d allowed", row.Name(), tooLarge.Ops, MaxTimelineOps))
				break
			}
			if err != nil {
				return fmt.Errorf("search: candidate %s: %w", row.Name(), err)
			}
			f := FromEstimate(e)
			row.Full, row.FullEstimate, row.FullDecodeSteps = &f, e, o.DecodeSteps
			if spec.SummaryOnly {
				row.FullEstimate = nil
			}
			d := (row.Quick.TPOTS - f.TPOTS) / f.TPOTS
			row.TPOTRelDiff = &d
			if math.Abs(d) <= QuickTolerance || o.DecodeSteps >= 4*opts.DecodeSteps {
				break
			}
			o.DecodeSteps *= 2
		}
		if progress != nil {
			progress(n+1, len(idx))
		}
	}
	r.FullTop = len(idx)
	return nil
}

// SyntheticSearchSpec is the benchmark's search: a large dense model
// (128 layers, hidden 16384, 128 heads and KV heads, gated ffn 53248,
// vocab 128256 with embedding and LM head, bf16), batch 4096 at context
// 4096, on gpus H100s in DGX nodes of 8 (the h100-sxm and dgx-h100x2
// presets' GPU and links). gpus must be a multiple of 8.
func SyntheticSearchSpec(gpus int) (SearchSpec, error) {
	if gpus < 8 || gpus%8 != 0 || gpus/8 > 4096 {
		return SearchSpec{}, fmt.Errorf("gpus: must be a multiple of 8 in [8, 32768] (got %d)", gpus)
	}
	gpu, dgx, err := configs.LoadSystem("h100-sxm", "dgx-h100x2")
	if err != nil {
		return SearchSpec{}, err
	}
	topo := topology.Topology{Name: fmt.Sprintf("dgx-h100x%d", gpus/8), Nodes: gpus / 8, GPUsPerNode: 8, Intra: dgx.Intra, Inter: dgx.Inter}
	cfg := &configs.Config{
		Version: configs.SchemaVersion, Name: "synthetic-dense128",
		Model: configs.Model{Name: "synthetic-dense128", Layers: 128, Hidden: 16384, Heads: 128, KVHeads: 128, HeadDim: 128,
			FFN: 53248, GatedMLP: true, Vocab: 128256, Embeddings: true, LMHead: true, DType: "bf16"},
		Workload: configs.Workload{Batch: 4096, Context: 4096, OutputTokens: 256, Phases: []string{"prefill", "decode"}},
		Parallel: configs.Parallel{Microbatches: 1, Schedule: "fill-drain"}, // the search fills in each candidate's
		Hardware: configs.Hardware{Preset: "h100-sxm", GPU: gpu},
		Topology: configs.Topology{Topology: topo},
		Run:      configs.Run{Iterations: 1},
	}
	return SearchSpec{Config: cfg, System: topology.System{GPU: gpu, Topology: topo}}, nil
}

// SearchDecodeSteps is the decode steps the full re-run of top candidates
// starts with: an unbalanced pipeline needs more than EstimatePlan's default
// 6 to reach steady state (docs/search.md).
const SearchDecodeSteps = 12

// QuickTolerance is the stated agreement of Quick with the full timeline in
// steady state, on TTFT and TPOT (docs/search.md).
const QuickTolerance = 0.005

// Empty says why a search has no candidate to recommend, or nil: none was
// enumerated (each factorization's exclusion is named), none fits in memory
// (the reasons counted), or every one that fits breaks a constraint. A
// caller exits non-zero on it, so a script never takes an empty search for
// an answer.
func (r *SearchResult) Empty() error {
	switch {
	case r.Enumerated == 0:
		var why []string
		for _, f := range r.Factorizations {
			why = append(why, fmt.Sprintf("tp %d × pp %d × dp %d: %s", f.TP, f.PP, f.DP, f.Excluded))
		}
		return fmt.Errorf("search: no candidate for %s on %d GPUs: every factorization tp × pp × dp = %d is excluded (%s)",
			r.Model, r.GPUs, r.GPUs, strings.Join(why, "; "))
	case r.Feasible == 0 && r.Violating == 0:
		reasons := make([]string, 0, len(r.PrunedByReason))
		for k, n := range r.PrunedByReason {
			reasons = append(reasons, fmt.Sprintf("%d: %s", n, k))
		}
		sort.Strings(reasons)
		return fmt.Errorf("search: none of the %d candidates for %s on %d GPUs fits in memory (%s); try more GPUs, a smaller workload.batch or context",
			r.Enumerated, r.Model, r.GPUs, strings.Join(reasons, "; "))
	case r.Feasible == 0:
		return fmt.Errorf("search: all %d candidates for %s on %d GPUs that fit break a constraint (%v); relax --max-tpot-ms or --max-ttft-s",
			r.Violating, r.Model, r.GPUs, r.ViolatingBy)
	}
	return nil
}
