package partition

import (
	"fmt"
	"slices"

	"github.com/partbench/partbench/configs"
)

// Planner builds the plans of many layouts of one model, workload and
// system: a search's candidates, whose configs differ only in their name and
// parallel section. It validates the first config it is given fully
// (configs.Config.Validate) and the others' parallel sections only
// (configs.Config.ValidateLayout), and it remembers what the memory fit
// reads: per TP degree the memory parts that do not depend on a stage's
// layers or the prefill chunk (memParts: one layer's weights, the
// embedding and LM head shards, a token's KV bytes), and a pass's
// activation bytes per (tp, micro-batch size, rows, last stage or not),
// which is all they depend on once the model, workload and GPU are fixed.
// Its plans are those of NewPlanStages, field for field, and so are its
// errors. A Planner is not safe for concurrent use.
type Planner struct {
	// ReuseStageMemory writes every plan's StageMemory into one list the
	// Planner keeps, instead of a list of the plan's own: a plan's
	// StageMemory then holds its values only until the Planner's next plan.
	// For a caller that reads each plan before it asks for the next and
	// keeps none (Search, which prices thousands of candidates and drops
	// each).
	ReuseStageMemory bool
	stageMem         []Memory
	// mems is the memory fit's list of its stage shapes' memories
	// (memSource.mems), reused by every plan: the fit copies what it keeps
	// of it before it returns.
	mems []Memory
	// ReusePlan writes every plan into one Plan the Planner keeps, instead
	// of a Plan of its own: the Plan a call returns holds its values only
	// until the Planner's next plan (872 bytes a candidate that Search,
	// which reads each plan before the next and keeps none, need not
	// allocate). For the same callers as ReuseStageMemory.
	ReusePlan bool
	plan      *Plan

	validated bool
	// arith is the model's arithmetic, worked out with the first valid
	// config: every config of a Planner has the same model.
	arith modelArith
	parts map[int]*memParts
	// act holds activation bytes per (tp, micro-batch size) for the
	// parallel sections whose pass_buffers is actPB, actBy for each
	// pass_buffers seen.
	act   map[[2]int]*actRows
	actPB string
	actBy map[string]map[[2]int]*actRows
	// ids is 0, 1, 2, …: every plan's stage layer lists are slices of it;
	// evens holds the even split's lists per (layers, pp), maps those of
	// the explicit layer maps seen (sharedStageLayers), each with its
	// stages' memory shapes.
	ids   []int
	evens map[[2]int]*plannedLayers
	maps  map[mapKey]*plannedLayers
	// cur is the lists sharedStageLayers last gave, nil when it built
	// them for one plan alone.
	cur *plannedLayers
}

// plannedLayers is the stage layer lists of a layer map shared by the
// Planner's plans, the map itself (a copy, nil for the even split) and the
// stages grouped by memory shape (Plan.stageShapes), which depend on the
// lists alone.
type plannedLayers struct {
	lists         [][]int
	layerMap      []int
	reps, shapeOf []int
}

// mapKey names a caller's layer map slice by where it starts: a search
// gives its candidates of one depth and variant the same slice. The
// Planner compares the map with its copy before using what it remembers,
// so a slice changed in place is planned anew.
type mapKey struct {
	first      *int
	layers, pp int
}

// actRows is the activation bytes a Planner remembers for one
// pass_buffers, TP degree and micro-batch size, which with the pass's rows
// and whether the stage is the last are all they depend on within a
// Planner (activationBytes: the pass's rows, the micro-batch's logits on
// the last stage, the shard widths, and which buffers each micro-batch
// keeps: the micro-batch count is the batch over mbs, one workload per
// Planner). [1] holds the last stage's, [0] the others', each size of
// pass (rows) once, in the order first asked for. A plan's fit asks for a
// handful of sizes — one token per sequence, and each prefill chunk it
// tries, the prompt halved at most log2(prompt) times —, so a scan finds
// them sooner than a hash of the whole key did.
type actRows [2][]actEntry

type actEntry struct {
	rows  int
	bytes int64
}

// NewPlanner is a Planner with nothing remembered.
func NewPlanner() *Planner {
	return &Planner{parts: map[int]*memParts{}, actBy: map[string]map[[2]int]*actRows{},
		evens: map[[2]int]*plannedLayers{}, maps: map[mapKey]*plannedLayers{}}
}

// Stages is NewPlanStages(cfg) for a config that equals every other config
// given to this Planner but for its name and parallel section.
func (pl *Planner) Stages(cfg *configs.Config) (*Plan, error) {
	p, err := pl.planned(cfg)
	if err != nil {
		return nil, err
	}
	src := pl.memSource(p)
	if c := pl.cur; c != nil {
		err = p.fitMemoryShapes(c.reps, c.shapeOf, &src)
	} else {
		err = p.fitMemoryWith(&src)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// planned is cfg validated (in full the first time, its layout after) and
// planned but for the memory fit.
func (pl *Planner) planned(cfg *configs.Config) (*Plan, error) {
	if pl.validated {
		if err := cfg.ValidateLayout(); err != nil {
			return nil, err
		}
	} else {
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		pl.validated = true
		pl.arith = arithOf(cfg.Model)
	}
	if pl.ReusePlan {
		if pl.plan == nil {
			pl.plan = new(Plan)
		}
		return planInto(pl.plan, cfg, pl.sharedStageLayers, pl.arith), nil
	}
	return newPlanWith(cfg, pl.sharedStageLayers, pl.arith), nil
}

// Layout is Stages(cfg) without the memory fit, for a config whose prefill
// chunk is fixed (parallel.prefill_chunk > 0, which the fit never
// changes): validated as Stages validates it, with every field Stages sets
// — PrefillChunk and PrefillChunks as the fit sets a fixed chunk — but for
// StageMemory, whose every stage is the zero Memory (nothing is worked out,
// nothing is refused for memory). For a caller that builds a layout's
// passes, reads no memory and knows the layout fits (the quick
// estimator's proxies: one layer a stage, one micro-batch of a plan's
// size and its chunk, standing for plans that fit). A config without a
// fixed chunk is refused, naming the field.
func (pl *Planner) Layout(cfg *configs.Config) (*Plan, error) {
	if c := cfg.Parallel.PrefillChunk; c <= 0 {
		return nil, fmt.Errorf("partition: layout %s: parallel.prefill_chunk must be fixed (> 0) to plan without the memory fit (got %d)", cfg.Name, c)
	}
	p, err := pl.planned(cfg)
	if err != nil {
		return nil, err
	}
	if pl.ReuseStageMemory {
		if cap(pl.stageMem) < p.PP {
			pl.stageMem = make([]Memory, p.PP)
		}
		p.StageMemory = pl.stageMem[:p.PP:p.PP]
		clear(p.StageMemory)
	} else {
		p.StageMemory = make([]Memory, p.PP)
	}
	prompt := cfg.Workload.PromptTokens()
	p.PrefillChunk = cfg.Parallel.PrefillChunk
	p.PrefillChunks = (prompt + p.PrefillChunk - 1) / p.PrefillChunk // setFit's
	return p, nil
}

// activations is the activation bytes remembered for pass_buffers pb, TP
// degree tp and micro-batch size mbs.
func (pl *Planner) activations(pb string, tp, mbs int) *actRows {
	if pl.act == nil || pb != pl.actPB {
		m, ok := pl.actBy[pb]
		if !ok {
			m = map[[2]int]*actRows{}
			pl.actBy[pb] = m
		}
		pl.act, pl.actPB = m, pb
	}
	a, ok := pl.act[[2]int{tp, mbs}]
	if !ok {
		a = &actRows{}
		pl.act[[2]int{tp, mbs}] = a
	}
	return a
}

// memSource is the memory fit's source for p: its TP degree's memParts,
// remembered per TP degree, and activation bytes remembered per
// pass_buffers, TP degree and micro-batch size (actRows).
func (pl *Planner) memSource(p *Plan) memSource {
	mp, ok := pl.parts[p.TP]
	if !ok {
		v := p.memParts()
		mp = &v
		pl.parts[p.TP] = mp
	}
	src := memSource{mp: mp, act: pl.activations(p.Config.Parallel.PassBuffers, p.TP, p.MicrobatchSize), mems: &pl.mems}
	if pl.ReuseStageMemory {
		src.stageMem = &pl.stageMem
	}
	return src
}

// sharedStageLayers is stageLayers with every list a full-capacity slice of
// one identity array shared by the Planner's plans (a valid layer map gives
// each stage a run of consecutive layers), and the lists of the even split
// and of each layer map seen shared whole between plans of the same depth
// (plannedLayers, which it leaves in pl.cur). Nothing writes to a plan's
// layer lists; their capacity ends with them, so an append copies.
func (pl *Planner) sharedStageLayers(layers, pp int, layerMap []int) [][]int {
	pl.cur = nil
	if len(pl.ids) < layers {
		pl.ids = make([]int, layers)
		for l := range pl.ids {
			pl.ids[l] = l
		}
	}
	if len(layerMap) != layers {
		k := [2]int{layers, pp}
		if c, ok := pl.evens[k]; ok {
			pl.cur = c
			return c.lists
		}
		out := make([][]int, pp)
		l := 0
		for s := range out {
			n := layers / pp
			if s < layers%pp {
				n++
			}
			out[s] = pl.ids[l : l+n : l+n]
			l += n
		}
		pl.cur = newPlannedLayers(out, nil, pp)
		pl.evens[k] = pl.cur
		return out
	}
	mk := mapKey{first: &layerMap[0], layers: layers, pp: pp}
	if c, ok := pl.maps[mk]; ok && slices.Equal(c.layerMap, layerMap) {
		pl.cur = c
		return c.lists
	}
	out := make([][]int, pp)
	start := 0
	for l := 1; l <= layers; l++ {
		if l < layers && layerMap[l] == layerMap[l-1] {
			continue
		}
		s := layerMap[l-1]
		if s < 0 || s >= pp || out[s] != nil {
			return stageLayers(layers, pp, layerMap) // not runs of consecutive layers: as NewPlanStages does
		}
		out[s] = pl.ids[start:l:l]
		start = l
	}
	for s := range out {
		if out[s] == nil {
			return stageLayers(layers, pp, layerMap)
		}
	}
	pl.cur = newPlannedLayers(out, slices.Clone(layerMap), pp)
	pl.maps[mk] = pl.cur
	return out
}

func newPlannedLayers(lists [][]int, layerMap []int, pp int) *plannedLayers {
	reps, shapeOf := (&Plan{PP: pp, StageLayers: lists}).stageShapes()
	return &plannedLayers{lists: lists, layerMap: layerMap, reps: reps, shapeOf: shapeOf}
}
