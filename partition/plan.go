package partition

import (
	"fmt"
	"strings"

	"github.com/partbench/partbench/arch"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/topology"
)

// Plan says who holds what: the stages and their layers, every rank's stage,
// TP index, replica, groups and memory. Ranks are numbered replica-major,
// then stage-major (rank = replica·TP·PP + stage·TP + tp index), so a TP
// group is contiguous and stays inside a node whenever TP ≤ GPUs per node,
// and no group or pipeline peer spans two replicas.
type Plan struct {
	Config *configs.Config
	Model  configs.Model
	System topology.System
	TP, PP int
	// DP is the number of replicas of the TP×PP group; each runs the whole
	// workload on its own, so every replica's Programs are the same but for
	// rank numbers.
	DP             int
	Microbatches   int
	MicrobatchSize int // sequences per micro-batch
	// DType is the model's element type; DTypeBytes its size.
	DType       arch.DType
	DTypeBytes  int
	VocabPadded int // vocab rounded up to a multiple of TP (0 without embeddings and head)
	// PrefillChunk is the prompt tokens per sequence in one prefill pass;
	// PrefillChunks passes cover the prompt.
	PrefillChunk  int
	PrefillChunks int
	// StageLayers[s] lists the (0-based) layers stage s runs, in order.
	StageLayers [][]int
	// StageMemory[s] is the memory of each rank of stage s: the TP ranks of
	// a stage, and every replica's, hold the same.
	StageMemory []Memory
	// Ranks lists every rank (NewPlan); nil in a plan from NewPlanStages,
	// whose ranks RankAt describes one at a time.
	Ranks []Rank
	// Params is the whole model's parameter count (ParamsTotal) and
	// LayerParams one transformer layer's (Layer): the model's arithmetic
	// done once here, read by every interpreter.
	Params      int64
	LayerParams LayerParams
}

// Rank is one GPU's share of the plan.
type Rank struct {
	Rank    int   `json:"rank"`
	Stage   int   `json:"stage"`
	TPIndex int   `json:"tp_index"`
	Replica int   `json:"replica"`
	Layers  []int `json:"layers"`
	// TPGroup lists the global ranks of this rank's tensor-parallel group.
	TPGroup []int  `json:"tp_group"`
	Memory  Memory `json:"memory"`
}

// RankOf is the global rank of (stage, tp index) in replica 0.
func (p *Plan) RankOf(stage, tpIndex int) int { return stage*p.TP + tpIndex }

// StageFirst is the first rank (TP index 0) of rank's stage when a stage
// holds tp consecutive ranks (RankOf, RankIn): the rule for a timeline that
// keeps only the Plan's TP width.
func StageFirst(rank, tp int) int { return rank - rank%tp }

// RankIn is the global rank of (stage, tp index) in a replica.
func (p *Plan) RankIn(replica, stage, tpIndex int) int {
	return replica*p.GroupSize() + stage*p.TP + tpIndex
}

// Size is the number of ranks: every replica's.
func (p *Plan) Size() int { return p.TP * p.PP * p.DP }

// GroupSize is the ranks of one replica, TP × PP; ranks [0, GroupSize) are
// replica 0.
func (p *Plan) GroupSize() int { return p.TP * p.PP }

// FirstStage and LastStage report a stage's position in the pipeline.
func (p *Plan) FirstStage(s int) bool { return s == 0 }
func (p *Plan) LastStage(s int) bool  { return s == p.PP-1 }

// LoadPlan loads the config name (configs.Load: a file or an embedded
// preset) and partitions it (NewPlan).
func LoadPlan(name string) (*Plan, error) {
	cfg, err := configs.Load(name)
	if err != nil {
		return nil, err
	}
	return NewPlan(cfg)
}

// NewPlan partitions cfg's model over its GPUs. It fails when a rank's memory
// (weights, KV cache, activation peak) exceeds the usable HBM, naming the rank.
func NewPlan(cfg *configs.Config) (*Plan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := newPlan(cfg)
	if err := p.fitMemory(); err != nil {
		return nil, err
	}
	p.Ranks = p.buildRanks()
	return p, nil
}

// NewPlanStages is NewPlan without the Ranks list: the stages, their layers
// and memory (StageMemory), the prefill chunk and every count, in time and
// memory that grow with the stages, not the GPUs. RankAt, Program, Counts,
// Comm, Tensors and the other per-rank methods work on it (RankAt describes
// a rank on demand); code that indexes Plan.Ranks needs NewPlan. The search
// prices thousands of candidates this way.
func NewPlanStages(cfg *configs.Config) (*Plan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := newPlan(cfg)
	if err := p.fitMemory(); err != nil {
		return nil, err
	}
	return p, nil
}

// buildRanks lists every rank, replica-major then stage-major, each TP
// group's member list shared by its ranks.
func (p *Plan) buildRanks() []Rank {
	ranks := make([]Rank, 0, p.Size())
	groups := make([]int, p.Size()) // every TP group's members, back to back
	for i := range groups {
		groups[i] = i
	}
	for d := 0; d < p.DP; d++ {
		for s := 0; s < p.PP; s++ {
			a := p.RankIn(d, s, 0)
			group := groups[a : a+p.TP : a+p.TP]
			for t := 0; t < p.TP; t++ {
				ranks = append(ranks, Rank{Rank: a + t, Stage: s, TPIndex: t, Replica: d, Layers: p.StageLayers[s], TPGroup: group, Memory: p.StageMemory[s]})
			}
		}
	}
	return ranks
}

// RankAt is rank i of the plan: Ranks[i] when the list is built (NewPlan),
// else the same Rank described from its number (NewPlanStages), its
// TPGroup a slice of a process-wide list of rank numbers (rankIDs) rather
// than a list made for the call. As with NewPlan's ranks, whose TP groups
// share one list, a caller reads TPGroup and never writes it.
func (p *Plan) RankAt(i int) Rank {
	if p.Ranks != nil {
		return p.Ranks[i]
	}
	g := p.GroupSize()
	d, s, t := i/g, (i%g)/p.TP, i%p.TP
	a := i - t
	group := rankIDs(a + p.TP)[a : a+p.TP : a+p.TP] // shared: read, never written
	return Rank{Rank: i, Stage: s, TPIndex: t, Replica: d, Layers: p.StageLayers[s], TPGroup: group, Memory: p.StageMemory[s]}
}

// newPlan fills everything but the memory fit and the rank list.
func newPlan(cfg *configs.Config) *Plan {
	return newPlanWith(cfg, stageLayers, arithOf(cfg.Model))
}

// modelArith is the model's arithmetic a Plan carries: ParamsTotal and Layer.
type modelArith struct {
	params int64
	layer  LayerParams
}

// arithOf is m's arithmetic, worked out.
func arithOf(m configs.Model) modelArith {
	return modelArith{params: ParamsTotal(m), layer: Layer(m)}
}

// newPlanWith is newPlan with the stages' layer lists from lists (stageLayers
// or a Planner's, which shares them between plans) and the model's
// arithmetic given (a Planner works it out once for all its plans, whose
// models are the same).
func newPlanWith(cfg *configs.Config, lists func(layers, pp int, layerMap []int) [][]int, arith modelArith) *Plan {
	return planInto(new(Plan), cfg, lists, arith)
}

// planInto is newPlanWith writing the plan into p, whatever p held.
func planInto(p *Plan, cfg *configs.Config, lists func(layers, pp int, layerMap []int) [][]int, arith modelArith) *Plan {
	m := cfg.Model
	par := cfg.Parallel
	*p = Plan{
		Config:         cfg,
		Model:          m,
		Params:         arith.params,
		LayerParams:    arith.layer,
		System:         topology.System{GPU: cfg.Hardware.GPU, Topology: cfg.Topology.Topology},
		TP:             par.TP,
		PP:             par.PP,
		DP:             max(par.DP, 1),
		Microbatches:   par.Microbatches,
		MicrobatchSize: cfg.Workload.Batch / par.Microbatches,
		DType:          m.ElemType(),
		DTypeBytes:     DTypeBytes(m.DType),
	}
	if m.Embeddings || m.LMHead {
		p.VocabPadded = PaddedVocab(m, p.TP)
	}
	p.StageLayers = lists(m.Layers, p.PP, par.LayerMap)
	return p
}

// stageLayers maps layers to stages: by the explicit map when given, else as
// evenly as possible with earlier stages taking the remainder.
func stageLayers(layers, pp int, layerMap []int) [][]int {
	out := make([][]int, pp)
	if len(layerMap) == layers {
		n := make([]int, pp)
		for _, s := range layerMap {
			n[s]++
		}
		all := make([]int, 0, layers) // one backing array, each stage a full-capacity slice of it
		for s := range out {
			out[s] = all[len(all) : len(all) : len(all)+n[s]]
			all = all[:len(all)+n[s]]
		}
		for l, s := range layerMap {
			out[s] = append(out[s], l)
		}
		return out
	}
	all := make([]int, layers)
	for l := range all {
		all[l] = l
	}
	l := 0
	for s := 0; s < pp; s++ {
		n := layers / pp
		if s < layers%pp {
			n++
		}
		out[s] = all[l : l+n : l+n]
		l += n
	}
	return out
}

// Rechunk makes a planned plan that of its config with the fixed prefill
// chunk chunk (parallel.prefill_chunk), but for its memory: it sets
// Config.Parallel.PrefillChunk (the config is written, as every plan of it
// sees), PrefillChunk and PrefillChunks as the memory fit sets them for a
// fixed chunk, and fits nothing again, so StageMemory (and RankAt's
// Memory) stays that of the chunk the plan was fitted at. Everything its
// passes are built from (Program, PrefillPass, PassAround) is then the
// plan's at chunk. For a caller that builds the passes of one layout at
// several chunks, each known to fit, and reads no memory (the quick
// estimator's proxies). A chunk outside [1, prompt tokens] is refused,
// and the plan is left as it was.
func (p *Plan) Rechunk(chunk int) error {
	prompt := p.Config.Workload.PromptTokens()
	if chunk < 1 || (prompt > 0 && chunk > prompt) {
		return fmt.Errorf("partition: rechunk %s: parallel.prefill_chunk must be in [1, prompt tokens = %d] (got %d)", p.Config.Name, prompt, chunk)
	}
	p.Config.Parallel.PrefillChunk = chunk
	p.PrefillChunk = chunk
	p.PrefillChunks = (prompt + chunk - 1) / chunk // setFit's
	return nil
}

// String is a one-line summary.
func (p *Plan) String() string {
	dp := ""
	if p.DP > 1 {
		dp = fmt.Sprintf(" × DP=%d", p.DP)
	}
	return fmt.Sprintf("%s: TP=%d × PP=%d%s on %s, %s of %d, prefill chunk %d × %d",
		p.Config.Name, p.TP, p.PP, dp, plural(p.Size(), "GPU"), plural(p.Microbatches, "micro-batch"), p.MicrobatchSize, p.PrefillChunk, p.PrefillChunks)
}

// plural is "1 GPU", "2 GPUs", "1 micro-batch", "4 micro-batches".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "ch") || strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// OneReplica is the plan cut to replica 0 (ranks [0, GroupSize)): what one
// replica runs, on the same GPUs and links. Config still names every
// replica. A plan with DP = 1 is returned as is.
func (p *Plan) OneReplica() *Plan {
	if p.DP <= 1 {
		return p
	}
	one := *p
	one.DP = 1
	if p.Ranks != nil {
		one.Ranks = p.Ranks[:p.GroupSize():p.GroupSize()]
	}
	return &one
}

// Factors names the layout's factors for messages: "tp × pp", or
// "tp × pp × dp" with replicas.
func (p *Plan) Factors() string {
	if p.DP > 1 {
		return "tp × pp × dp"
	}
	return "tp × pp"
}
