package partition

import (
	"reflect"
	"slices"
	"testing"

	"github.com/partbench/partbench/configs"
)

// PassAround is a pass without its layers: on every rank of five plans —
// the seed's tp8pp2 (four chunks), Llama-2-13B (untied embedding and LM
// head, TP 4 × PP 4), GPT-2 XL decoding (tied head, learned positions,
// LayerNorm with biases), the tiny pipeline and a single GPU — for the first,
// a middle and the last prefill chunk of two micro-batches and each decode
// step, the pass PrefillPass or Program builds must be PassAround's ops
// with the stage's layer ops inserted at its index.
func TestPassAroundIsThePassWithoutItsLayers(t *testing.T) {
	edits := map[string]func(c *configs.Config){
		"tp8pp2": func(c *configs.Config) { c.Parallel.PrefillChunk = (c.Workload.PromptTokens() + 3) / 4 },
		"llama2-13b-2k": func(c *configs.Config) {
			dgx, err := configs.Load("tp8pp2") // two nodes of 8
			if err != nil {
				t.Fatal(err)
			}
			c.Topology, c.Workload.Batch = dgx.Topology, 4
			c.Parallel.TP, c.Parallel.PP, c.Parallel.Microbatches = 4, 4, 2
		},
		"gpt2-xl-decode":   nil,
		"test/pp4-tiny":    nil,
		"test/single-tiny": nil,
	}
	checked := 0
	for name, edit := range edits {
		cfg, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(cfg)
		}
		p, err := NewPlan(cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for rank := range p.Ranks {
			var passes [][]Op // built, with the phase, micro-batch and chunk each was built for
			type pass struct {
				phase Phase
				mb, c int
			}
			var args []pass
			if p.Config.Workload.HasPhase("prefill") {
				for _, c := range slices.Compact([]int{0, p.PrefillChunks / 2, p.PrefillChunks - 1}) {
					for mb := 0; mb < min(2, p.Microbatches); mb++ {
						passes = append(passes, p.PrefillPass(rank, mb, c))
						args = append(args, pass{Prefill, mb, c})
					}
				}
			}
			dec := p.Program(rank, Decode).Ops
			for mb := 0; mb < p.Microbatches; mb++ {
				var step []Op
				for _, op := range dec {
					if op.Microbatch == mb {
						step = append(step, op)
					}
				}
				passes = append(passes, step)
				args = append(args, pass{Decode, mb, 0})
			}
			for i, built := range passes {
				phase, mb, c := args[i].phase, args[i].mb, args[i].c
				around, at := p.PassAround(rank, phase, mb, c)
				var layers []Op
				for _, op := range built {
					if op.Layer >= 0 {
						layers = append(layers, op)
					}
				}
				if len(layers) == 0 {
					t.Fatalf("%s rank %d: a pass without layer ops", name, rank)
				}
				want := slices.Concat(around[:at], layers, around[at:])
				if !reflect.DeepEqual(want, built) {
					t.Fatalf("%s rank %d phase %v mb %d chunk %d: PassAround (%d ops, layers at %d) with the layers is not the pass built", name, rank, phase, mb, c, len(around), at)
				}
				checked++
			}
		}
	}
	t.Logf("%d passes", checked)
}

// AppendPrefillPass and AppendPassAround are PrefillPass and PassAround
// appended to a slice: on every rank of
// the seed's tp8pp2 (four chunks), the tiny pipeline and GPT-2 XL, every
// chunk of two micro-batches appended after a pass already in the slice
// must be the pass PrefillPass (PassAround, with the same index) builds,
// and leave the pass before it as it was.
func TestAppendPrefillPassIsPrefillPass(t *testing.T) {
	checked := 0
	for _, name := range []string{"tp8pp2", "test/pp4-tiny", "gpt2-xl-decode"} {
		cfg, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "tp8pp2" {
			cfg.Parallel.PrefillChunk = (cfg.Workload.PromptTokens() + 3) / 4
		}
		p, err := NewPlan(cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !p.Config.Workload.HasPhase("prefill") {
			continue
		}
		for rank := range p.Ranks {
			for c := 0; c < p.PrefillChunks; c++ {
				for mb := 0; mb < min(2, p.Microbatches); mb++ {
					before := p.PrefillPass(rank, 0, 0)
					buf := p.AppendPrefillPass(slices.Clone(before), rank, mb, c)
					if want := p.PrefillPass(rank, mb, c); !reflect.DeepEqual(buf[len(before):], want) {
						t.Fatalf("%s rank %d mb %d chunk %d: appended %d ops, PrefillPass %d, or they differ", name, rank, mb, c, len(buf)-len(before), len(want))
					}
					if !reflect.DeepEqual(buf[:len(before)], before) {
						t.Fatalf("%s rank %d mb %d chunk %d: the pass before was changed", name, rank, mb, c)
					}
					wantOps, wantAt := p.PassAround(rank, Prefill, mb, c)
					buf, at := p.AppendPassAround(slices.Clone(before), rank, Prefill, mb, c)
					if !reflect.DeepEqual(buf[len(before):], wantOps) || at != wantAt || !reflect.DeepEqual(buf[:len(before)], before) {
						t.Fatalf("%s rank %d mb %d chunk %d: AppendPassAround gave %d ops at %d, PassAround %d at %d, or they differ", name, rank, mb, c, len(buf)-len(before), at, len(wantOps), wantAt)
					}
					checked++
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("%d passes checked: too few", checked)
	}
	t.Logf("%d passes", checked)
}

// AppendDecodeStep appends one micro-batch's decode step: on every rank of
// tp8pp2, the tiny pipeline and GPT-2 XL (each with its micro-batches, and
// tp8pp2 also with one), the steps of micro-batches 0, 1, … appended one
// after another, after a step already in the slice, must be the rank's
// decode Program op for op, and leave the step before them as it was.
func TestAppendDecodeStepIsProgram(t *testing.T) {
	checked := 0
	for _, tc := range []struct {
		name string
		mbs  int // 0: the config's
	}{{"tp8pp2", 0}, {"tp8pp2", 1}, {"test/pp4-tiny", 0}, {"gpt2-xl-decode", 0}} {
		cfg, err := configs.Load(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if tc.mbs > 0 {
			cfg.Parallel.Microbatches = tc.mbs
		}
		p, err := NewPlan(cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for rank := range p.Ranks {
			want := p.Program(rank, Decode).Ops
			before := p.AppendDecodeStep(nil, rank, 0)
			buf := slices.Clone(before)
			for mb := range p.Microbatches {
				buf = p.AppendDecodeStep(buf, rank, mb)
			}
			if !reflect.DeepEqual(buf[len(before):], want) {
				t.Fatalf("%s (%d micro-batches) rank %d: appended %d ops, Program %d, or they differ", tc.name, p.Microbatches, rank, len(buf)-len(before), len(want))
			}
			if !reflect.DeepEqual(buf[:len(before)], before) {
				t.Fatalf("%s rank %d: the step before was changed", tc.name, rank)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("%d ranks checked: too few", checked)
	}
	t.Logf("%d ranks", checked)
}
