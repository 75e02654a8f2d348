package partition

// OpCount is len(p.Program(rank, phase).Ops), computed without building the
// Program: a Program is Microbatches × PrefillChunks passes (decode: one
// chunk) through the rank's stage, and every pass but the one that makes
// the next token (the last prefill chunk, every decode pass) has the same
// ops. So two passes are counted (one of them not kept), each costing the
// rank's layers, and the rest is arithmetic: a plan too large to simulate
// is refused in microseconds, before any Program is built.
//
// The count saturates at MaxOpCount rather than overflow.
func (p *Plan) OpCount(rank int, phase Phase) int {
	r := p.RankAt(rank) // NewPlan's Ranks[rank], or described (NewPlanStages)
	b := builder{p: p, r: r, s: p.Shard(r.TPIndex), dt: int64(p.DTypeBytes), countOnly: true}
	passOps := func(last bool) int {
		b.n = 0
		b.pass(phase, 0, 0, p.MicrobatchSize, 1, 0, last)
		return b.n
	}
	if phase == Prefill {
		if p.PrefillChunks < 1 {
			return 0 // no chunk, no pass: as Program builds it
		}
		return satAdd(satMul(satMul(p.PrefillChunks-1, p.Microbatches), passOps(false)),
			satMul(p.Microbatches, passOps(true)))
	}
	return satMul(p.Microbatches, passOps(true))
}

// MaxOpCount is where OpCount and the sums built on it saturate.
const MaxOpCount = 1 << 62

func satMul(a, b int) int {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > MaxOpCount/b {
		return MaxOpCount
	}
	return a * b
}

func satAdd(a, b int) int {
	if a > MaxOpCount-b {
		return MaxOpCount
	}
	return a + b
}

// SatMul and SatAdd are OpCount's saturating arithmetic, for sums of counts.
func SatMul(a, b int) int { return satMul(a, b) }

// SatAdd adds two counts, saturating at MaxOpCount.
func SatAdd(a, b int) int { return satAdd(a, b) }
