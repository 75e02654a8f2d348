package partition

import "slices"

// ProgramLikeOK says whether ProgramLike(tmpl, rank) makes a Program
// (ok true) without making it: LikeForm(tmpl) and LikeRanks(tmpl.Rank,
// rank). A caller that reads a rank's ops through its template and its
// labels (the rank's peers and TP group, LikeLabelsOf) checks the
// template once and each rank by its position alone.
func (p *Plan) ProgramLikeOK(tmpl Program, rank int) bool {
	return p.LikeRanks(tmpl.Rank, rank) && p.LikeForm(tmpl)
}

// LikeRanks is ProgramLike's condition on the two ranks alone: one TP
// index, stages of as many layers and TP groups of one size, neither the
// first nor the last stage.
func (p *Plan) LikeRanks(tmplRank, rank int) bool {
	t, r := p.RankAt(tmplRank), p.RankAt(rank)
	return t.TPIndex == r.TPIndex && len(t.Layers) == len(r.Layers) && !p.FirstStage(t.Stage) && !p.LastStage(t.Stage) &&
		!p.FirstStage(r.Stage) && !p.LastStage(r.Stage) && len(t.TPGroup) == len(r.TPGroup)
}

// LikeForm is ProgramLike's condition on the template's ops, which no
// other rank changes: every send goes to the rank of its TP index one
// stage after tmpl's, every recv comes from the one a stage before, every
// op with a group has tmpl's TP group, and every layer op is of a layer of
// tmpl's stage and named as that layer's op.
func (p *Plan) LikeForm(tmpl Program) bool {
	t := p.RankAt(tmpl.Rank)
	if p.FirstStage(t.Stage) || p.LastStage(t.Stage) {
		return false
	}
	from, to := p.RankIn(t.Replica, t.Stage-1, t.TPIndex), p.RankIn(t.Replica, t.Stage+1, t.TPIndex)
	var tn *layerOpNames
	tl := -1
	for i := range tmpl.Ops {
		op := &tmpl.Ops[i]
		switch {
		case op.Kind == Send && op.Peer != to, op.Kind == Recv && op.Peer != from:
			return false
		case op.Group != nil && !slices.Equal(op.Group, t.TPGroup):
			return false
		}
		if op.Layer < 0 {
			continue
		}
		if op.Layer != tl {
			if !slices.Contains(t.Layers, op.Layer) {
				return false
			}
			tl, tn = op.Layer, layerOpNamesOf(op.Layer)
		}
		if _, ok := nameLike(op.Name, tn, tn); !ok {
			return false
		}
	}
	return true
}

// LikeLabels are the labels ProgramLike gives a rank's ops that a reader
// of its template's ops needs: every send's peer, every recv's and every
// group's (ProgramLike's Program has Send ops to Send, Recv ops from Recv
// and Group on every op whose template op has one).
type LikeLabels struct {
	Send, Recv int
	Group      []int
}

// LikeLabelsOf is rank's LikeLabels: the rank of its TP index one stage
// after it, one before, and its TP group.
func (p *Plan) LikeLabelsOf(rank int) LikeLabels {
	r := p.RankAt(rank)
	return LikeLabels{Send: p.RankIn(r.Replica, r.Stage+1, r.TPIndex), Recv: p.RankIn(r.Replica, r.Stage-1, r.TPIndex), Group: r.TPGroup}
}

// Peer is op's peer in the Program made alike with these labels from the
// template op op.
func (l *LikeLabels) Peer(op *Op) int {
	switch op.Kind {
	case Send:
		return l.Send
	case Recv:
		return l.Recv
	}
	return op.Peer
}

// GroupOf is op's group in the Program made alike with these labels from
// the template op op.
func (l *LikeLabels) GroupOf(op *Op) []int {
	if op.Group != nil {
		return l.Group
	}
	return nil
}
