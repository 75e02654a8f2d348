package partition

import "github.com/partbench/partbench/configs"

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
	validated bool
	parts     map[int]*memParts
	act       map[actKey]int64
}

// actKey is what a pass's activation bytes depend on within one Planner
// (activationBytes: the pass's rows, the micro-batch's logits on the last
// stage, the shard widths).
type actKey struct {
	tp, mbs, rows int
	last          bool
}

// NewPlanner is a Planner with nothing remembered.
func NewPlanner() *Planner {
	return &Planner{parts: map[int]*memParts{}, act: map[actKey]int64{}}
}

// Stages is NewPlanStages(cfg) for a config that equals every other config
// given to this Planner but for its name and parallel section.
func (pl *Planner) Stages(cfg *configs.Config) (*Plan, error) {
	if pl.validated {
		if err := cfg.ValidateLayout(); err != nil {
			return nil, err
		}
	} else {
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		pl.validated = true
	}
	p := newPlan(cfg)
	if err := p.fitMemoryWith(pl.stageMemory); err != nil {
		return nil, err
	}
	return p, nil
}

// stageMemory is p.memory of stage s's first rank at chunk, from the
// plan's memParts, remembered per TP degree, and activation bytes
// remembered per actKey.
func (pl *Planner) stageMemory(p *Plan, s, chunk int) Memory {
	mp, ok := pl.parts[p.TP]
	if !ok {
		v := p.memParts()
		mp = &v
		pl.parts[p.TP] = mp
	}
	return p.memoryFrom(p.stageRank(s), chunk, mp, func(r Rank, rows int) int64 {
		k := actKey{tp: p.TP, mbs: p.MicrobatchSize, rows: rows, last: p.LastStage(r.Stage)}
		b, ok := pl.act[k]
		if !ok {
			b = p.activationBytes(r, rows)
			pl.act[k] = b
		}
		return b
	})
}
