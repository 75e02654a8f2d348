package partition

import (
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
)

// deepPipeline is a tiny model on PP 6 × TP 2 × DP 2 (24 GPUs on 2 nodes of
// 12): 13 layers by an uneven map (1, 3, 3, 2, 2, 2), so the middle stages
// are two kinds (3 layers, 2 layers), with a chunked prefill (prompt 28,
// chunk 8: 4 chunks) and two micro-batches.
const deepPipeline = `version = 1
name = "deep-tiny"
[model]
name = "tiny-dense"
layers = 13
hidden = 64
heads = 8
kv_heads = 4
head_dim = 8
ffn = 128
gated_mlp = true
vocab = 96
embeddings = true
lm_head = true
dtype = "fp32"
[workload]
batch = 4
context = 32
output_tokens = 4
[parallel]
prefill_chunk = 8
tp = 2
pp = 6
dp = 2
microbatches = 2
layer_map = [0, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 5]
[hardware]
preset = "h100-sxm"
[topology]
name = "local-2x12"
nodes = 2
gpus_per_node = 12
[topology.intra_node]
class = "nvlink"
name = "NVLink 4 via NVSwitch"
bytes_per_s = 450e9
latency_s = 1.0e-6
nvswitch = true
[topology.inter_node]
class = "network"
name = "400 Gb/s network"
bytes_per_s = 50e9
latency_s = 5.0e-6
`

// ProgramLike gives the built Program, field for field, for every pair of
// ranks of one TP index whose stages are of one kind and in the middle,
// and declines every other pair: on every embedded config and a deep
// pipeline of two middle kinds with DP replicas, TP groups and a chunked
// prefill. Where it declines, the caller builds the Program, so a wrong
// "ok" is the only failure that matters; a pair that should be made and is
// declined is reported too (the saving would be lost silently).
func TestProgramLikeIsProgram(t *testing.T) {
	var plans []*Plan
	for _, n := range configs.Presets("") {
		plans = append(plans, plan(t, n))
	}
	for _, n := range configs.Presets("test") {
		plans = append(plans, plan(t, "test/"+n))
	}
	c, err := configs.Parse(strings.NewReader(deepPipeline), "deep-tiny")
	if err != nil {
		t.Fatal(err)
	}
	deep, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	if deep.PrefillChunks < 3 || deep.DP != 2 || deep.PP != 6 {
		t.Fatalf("deep-tiny: %d chunks, DP %d, PP %d: not the plan described", deep.PrefillChunks, deep.DP, deep.PP)
	}
	plans = append(plans, deep)
	made := 0
	for _, p := range plans {
		for _, ph := range []Phase{Prefill, Decode} {
			built := make([]Program, p.Size())
			for r := range built {
				built[r] = p.Program(r, ph)
			}
			for a := range built {
				for b := range built {
					ra, rb := p.RankAt(a), p.RankAt(b)
					want := ra.TPIndex == rb.TPIndex && p.StageKindOf(ra.Stage) == p.StageKindOf(rb.Stage) &&
						!p.FirstStage(ra.Stage) && !p.LastStage(ra.Stage)
					got, ok := p.ProgramLike(built[a], b)
					if p.ProgramLikeOK(built[a], b) != ok {
						t.Errorf("%s %v: ProgramLikeOK(rank %d's, %d) = %v, ProgramLike's ok %v", p.Config.Name, ph, a, b, !ok, ok)
					}
					if ok {
						checkLikeLabels(t, p, built[a], got)
					}
					switch {
					case ok != want:
						t.Errorf("%s %v: ProgramLike(rank %d's, %d) ok = %v, want %v", p.Config.Name, ph, a, b, ok, want)
					case ok && !reflect.DeepEqual(got, built[b]):
						t.Errorf("%s %v: ProgramLike(rank %d's, %d) is not Program(%d)", p.Config.Name, ph, a, b, b)
					case ok:
						made++
					}
				}
			}
		}
	}
	// deep-tiny alone: per phase, replica pairs × TP index of the 3-layer
	// kind (stages 1, 2: 2 stages × 2 replicas = 4 ranks a TP index, 16
	// ordered pairs) and the 2-layer kind (stages 3, 4: 16 more), × 2 TP
	// indices × 2 phases = 128.
	if made < 128 {
		t.Errorf("only %d Programs made alike, want at least deep-tiny's 128", made)
	}
	// A template of another phase layout is declined: a decode Program
	// given as the template of a prefill that has more passes is not a copy.
	pre, dec := deep.Program(deep.RankOf(1, 0), Prefill), deep.Program(deep.RankOf(2, 0), Decode)
	if got, ok := deep.ProgramLike(dec, deep.RankOf(1, 0)); ok && reflect.DeepEqual(got, pre) {
		t.Error("a decode template made a prefill Program")
	}
	// Comm reads each middle kind once (its sends moved a stage on): the
	// counts of every rank's Program, rank by rank, on two kinds in two
	// replicas.
	for _, ph := range []Phase{Prefill, Decode} {
		if got, want := deep.Comm(ph), commByRank(deep, ph); !reflect.DeepEqual(got, want) {
			t.Errorf("deep-tiny %s: Comm\n%+v\nrank by rank\n%+v", ph, got, want)
		}
	}
}

// checkLikeLabels holds the labels a reader of the template's ops takes
// (LikeLabelsOf) to the made Program's own peers and groups, op by op.
func checkLikeLabels(t *testing.T, p *Plan, tmpl, got Program) {
	t.Helper()
	l := p.LikeLabelsOf(got.Rank)
	for i := range tmpl.Ops {
		op, want := &tmpl.Ops[i], &got.Ops[i]
		if g := l.Peer(op); g != want.Peer {
			t.Errorf("%s: rank %d op %d (%s): peer by labels %d, made %d", p.Config.Name, got.Rank, i, want.Name, g, want.Peer)
		}
		if g := l.GroupOf(op); !reflect.DeepEqual(g, want.Group) {
			t.Errorf("%s: rank %d op %d (%s): group by labels %v, made %v", p.Config.Name, got.Rank, i, want.Name, g, want.Group)
		}
	}
}

// LikeForm declines a template whose sends, recvs, groups, layers or names
// are not of the form ProgramLike copies, as ProgramLike does: each case
// changes one op of deep-tiny's stage 1 Program (a middle stage of 3
// layers) and ProgramLike, made for stage 2's rank, declines it too.
func TestLikeFormDeclines(t *testing.T) {
	c, err := configs.Parse(strings.NewReader(deepPipeline), "deep-tiny")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	tmplRank, rank := p.RankOf(1, 0), p.RankOf(2, 0)
	base := p.Program(tmplRank, Decode)
	if !p.LikeForm(base) || !p.ProgramLikeOK(base, rank) {
		t.Fatal("stage 1's decode Program is not a template for stage 2's")
	}
	find := func(f func(*Op) bool) int {
		for i := range base.Ops {
			if f(&base.Ops[i]) {
				return i
			}
		}
		t.Fatal("no such op")
		return -1
	}
	for _, c := range []struct {
		name string
		at   func(*Op) bool
		edit func(*Op)
	}{
		{"send peer", func(o *Op) bool { return o.Kind == Send }, func(o *Op) { o.Peer++ }},
		{"recv peer", func(o *Op) bool { return o.Kind == Recv }, func(o *Op) { o.Peer-- }},
		{"group", func(o *Op) bool { return o.Group != nil }, func(o *Op) { o.Group = []int{0, 1} }},
		{"layer", func(o *Op) bool { return o.Layer >= 0 }, func(o *Op) { o.Layer = 12 }},
		{"name", func(o *Op) bool { return o.Layer >= 0 }, func(o *Op) { o.Name = "L01.other" }},
	} {
		tmpl := base
		tmpl.Ops = append([]Op(nil), base.Ops...)
		c.edit(&tmpl.Ops[find(c.at)])
		_, ok := p.ProgramLike(tmpl, rank)
		if p.LikeForm(tmpl) || p.ProgramLikeOK(tmpl, rank) || ok {
			t.Errorf("%s changed: LikeForm %v, ProgramLikeOK %v, ProgramLike ok %v; want all false", c.name, p.LikeForm(tmpl), p.ProgramLikeOK(tmpl, rank), ok)
		}
	}
}
