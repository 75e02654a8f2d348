package partition

import (
	"errors"
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/topology"
)

// commByRank is Comm's definition applied rank by rank: Counts of every
// rank's own Program, bytes by the class of the link to each peer. Comm
// builds one Program per stage and must give the same.
func commByRank(p *Plan, phase Phase) CommSummary {
	s := CommSummary{BytesByLink: map[topology.LinkClass]int64{}}
	var coll, act, tok int
	var calls, msgs []int64
	for r := 0; r < p.Size(); r++ {
		prog := p.Program(r, phase)
		snap := p.Counts(prog)
		calls = append(calls, snap.TotalCalls())
		msgs = append(msgs, snap.Messages())
		for peer, pc := range snap.Peers {
			s.BytesByLink[p.System.Topology.Path(r, peer).Class] += pc.WireBytes
		}
		for _, op := range prog.Ops {
			if op.Microbatch != 0 || op.Chunk != p.lastChunk(phase) {
				continue
			}
			switch {
			case op.Kind == AllReduce || op.Kind == AllGather:
				coll++
			case op.Kind == Send && op.Payload == PayloadActivation:
				act++
			case op.Kind == Send && op.Payload == PayloadTokens:
				tok++
			}
		}
	}
	s.CallsPerRank, s.MessagesPerRank = PerRankOf(calls), PerRankOf(msgs)
	n := p.TP * p.DP
	s.CollectiveCallsPerMicrobatch, s.P2PSendsPerMicrobatch, s.TokenSendsPerMicrobatch = coll/n, act/n, tok/n
	return s
}

// kindCases are layouts whose ranks differ in the ways Comm must see: TP
// groups inside a node, TP groups cut by node boundaries (tp 4 × pp 3 on
// nodes of 6: stage 1 is ranks 4–7 on two nodes), replicas, an LM head
// (all-gather of logits, uneven ring chunks), a chunked prefill.
func kindCases(t *testing.T) []*Plan {
	t.Helper()
	edit := func(name string, f func(*configs.Config)) *Plan {
		c, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		f(c)
		p, err := NewPlan(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return p
	}
	return []*Plan{
		plan(t, "tp8pp2"),
		plan(t, "layerwise16"),
		plan(t, "test/tp2-dp2-tiny"),
		plan(t, "test/gpt2-tiny"),
		withLayout(t, "test/tp2pp2-tiny", 2, 2, 2),
		edit("tp8pp2", func(c *configs.Config) {
			c.Parallel.TP, c.Parallel.PP, c.Parallel.Microbatches = 4, 3, 4
			c.Topology.Nodes, c.Topology.GPUsPerNode = 2, 6
		}),
		edit("tp8pp2", func(c *configs.Config) { // LM head over a vocabulary that does not split evenly, 2 replicas
			c.Model.Embeddings, c.Model.LMHead = true, true
			c.Parallel.TP, c.Parallel.PP, c.Parallel.DP = 3, 2, 2
			c.Model.Heads, c.Model.KVHeads, c.Model.FFN = 24, 24, 12288
			c.Topology.Nodes, c.Topology.GPUsPerNode = 2, 6
		}),
		edit("tp8pp2", func(c *configs.Config) { c.Parallel.PrefillChunk = 1000 }),
	}
}

func TestCommEqualsCountsOfEveryRank(t *testing.T) {
	for _, p := range kindCases(t) {
		for _, phase := range []Phase{Prefill, Decode} {
			got, want := p.Comm(phase), commByRank(p, phase)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: Comm\n%+v\nrank by rank\n%+v", p, phase, got, want)
			}
		}
	}
}

// A plan without its rank list describes every rank as NewPlan lists it,
// and builds the same Programs and memory.
func TestNewPlanStagesMatchesNewPlan(t *testing.T) {
	for _, p := range kindCases(t) {
		s, err := NewPlanStages(p.Config)
		if err != nil {
			t.Fatal(err)
		}
		if s.Ranks != nil {
			t.Fatalf("%s: NewPlanStages built %d ranks", p, len(s.Ranks))
		}
		if s.PrefillChunk != p.PrefillChunk || s.PrefillChunks != p.PrefillChunks || !reflect.DeepEqual(s.StageMemory, p.StageMemory) {
			t.Errorf("%s: chunk %d×%d memory %v, NewPlan %d×%d %v", p, s.PrefillChunk, s.PrefillChunks, s.StageMemory, p.PrefillChunk, p.PrefillChunks, p.StageMemory)
		}
		for r := 0; r < p.Size(); r++ {
			if got := s.RankAt(r); !reflect.DeepEqual(got, p.Ranks[r]) {
				t.Fatalf("%s rank %d: %+v, NewPlan %+v", p, r, got, p.Ranks[r])
			}
			if p.Ranks[r].Memory != p.StageMemory[p.Ranks[r].Stage] {
				t.Fatalf("%s rank %d: memory %+v, its stage's %+v", p, r, p.Ranks[r].Memory, p.StageMemory[p.Ranks[r].Stage])
			}
		}
		for _, phase := range []Phase{Prefill, Decode} {
			last := p.Size() - 1
			if !reflect.DeepEqual(s.Program(last, phase), p.Program(last, phase)) || !reflect.DeepEqual(s.Comm(phase), p.Comm(phase)) {
				t.Errorf("%s %s: Program or Comm differ without the rank list", p, phase)
			}
		}
	}
}

// Memory is computed per stage: a plan that does not fit names the stage's
// first rank (replica 0, TP index 0) of the hungriest stage, from both
// constructors. tp8pp2 with a 12 + 4 layer map and a batch too large: stage
// 0 (ranks 0–7) holds 12 layers' KV cache, stage 1 four.
func TestNoFitNamesHungriestStage(t *testing.T) {
	c, err := configs.Load("tp8pp2")
	if err != nil {
		t.Fatal(err)
	}
	c.Parallel.LayerMap = make([]int, 16)
	for i := 12; i < 16; i++ {
		c.Parallel.LayerMap[i] = 1
	}
	c.Workload.Batch = 1024
	c.Parallel.Microbatches = 8
	for _, f := range []func(*configs.Config) (*Plan, error){NewPlan, NewPlanStages} {
		_, err := f(c)
		var nf *NoFitError
		if !errors.As(err, &nf) {
			t.Fatalf("want a NoFitError, got %v", err)
		}
		if nf.Rank != 0 || nf.Stage != 0 || nf.TPIndex != 0 {
			t.Errorf("names rank %d stage %d tp %d, want rank 0 of stage 0", nf.Rank, nf.Stage, nf.TPIndex)
		}
	}
}
