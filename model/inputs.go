package model

// Inputs are the token ids a run feeds in place of the seeded schedule
// (PromptToken): each global sequence's prompt ids and, after them, either
// the argmax of the previous position's logits (greedy decoding) or the
// seeded schedule.
type Inputs struct {
	Prompts [][]int // [global sequence][position]
	Greedy  bool
}

// Token is the id global sequence seq feeds at position pos, given the
// argmax of the position before (−1 when there is none): the prompt's id,
// the argmax when greedy, else PromptToken. A nil Inputs is the seeded
// schedule.
func (in *Inputs) Token(seed int64, seq, pos, vocab, argmax int) int {
	if in != nil {
		if seq >= 0 && seq < len(in.Prompts) && pos >= 0 && pos < len(in.Prompts[seq]) {
			return in.Prompts[seq][pos]
		}
		if in.Greedy && argmax >= 0 {
			return argmax
		}
	}
	return PromptToken(seed, seq, pos, vocab)
}
