package partition

// Pass is rank's ops for one micro-batch's pass of any shape: seqs
// sequences of q new tokens after past cached ones, producing the next
// token when sample is set — the same ops Program builds for its passes,
// for an engine that schedules shapes Program does not (a serving engine's
// chunks and decodes at each sequence's own position). It works on a plan
// with or without its rank list (NewPlan, NewPlanStages), as Program does.
func (p *Plan) Pass(rank int, phase Phase, mb, seqs, q, past int, sample bool) []Op {
	r := p.RankAt(rank)
	b := builder{p: p, r: r, s: p.Shard(r.TPIndex), dt: int64(p.DTypeBytes)}
	b.pass(phase, mb, 0, seqs, q, past, sample)
	return b.ops
}
