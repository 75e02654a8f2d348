package partition

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
)

// memoryFromBefore is a rank's memory at a prefill chunk as the memory fit
// took it before memSource: every part again at every chunk it tried.
func memoryFromBefore(p *Plan, r Rank, chunk int, mp *memParts, activationBytes func(r Rank, tokens int) int64) Memory {
	var mem Memory
	mem.LayerWeightBytes = int64(len(r.Layers)) * mp.layerBytes
	mem.EmbeddingBytes = mp.embed[b2i(p.FirstStage(r.Stage))][b2i(p.LastStage(r.Stage))]
	mem.WeightBytes = mem.LayerWeightBytes + mem.EmbeddingBytes
	w := p.Config.Workload
	mem.KVCacheBytes = int64(len(r.Layers)) * int64(w.Batch) * int64(w.Context) * mp.kvTokenBytes
	mbs := p.MicrobatchSize
	act := activationBytes(r, mbs)
	if mp.prefill {
		if a := activationBytes(r, mbs*chunk); a > act {
			act = a
		}
	}
	mem.ActivationBytes = act
	mem.TotalBytes = mem.WeightBytes + mem.KVCacheBytes + mem.ActivationBytes
	mem.CapacityBytes = mp.capacity
	return mem
}

// fitLoopBefore is fitLoop as it was before memSource: each shape's whole
// memory (memOf) at every chunk tried.
func fitLoopBefore(p *Plan, reps []int, memOf func(p *Plan, s, chunk int) Memory) (chunk, worst int, mems []Memory) {
	chunk, fixed := p.fitStart()
	mems = make([]Memory, len(reps))
	for {
		worst = -1
		for i, s := range reps {
			mems[i] = memOf(p, s, chunk)
			if mems[i].TotalBytes > mems[i].CapacityBytes && (worst < 0 || mems[i].TotalBytes > mems[worst].TotalBytes) {
				worst = i
			}
		}
		if worst < 0 || fixed || chunk == 1 || memOf(p, reps[worst], 1).TotalBytes > mems[worst].CapacityBytes {
			return chunk, worst, mems
		}
		chunk = (chunk + 1) / 2
	}
}

// The memory fit takes each stage shape's chunk-free parts once
// (memSource.base) and its memory at each chunk from them (at); it must
// end at the same chunk with the same shape failing and every shape's
// memory equal, field for field, to the fit that took every part again at
// every chunk — with the plan's own activation bytes and with a Planner's
// remembered ones shared across layouts, and with the memories written
// into one list every fit reuses (memSource.mems, a Planner's). Over every tp × pp × dp layout
// with micro-batch counts 1 to 64 of: a 128-layer model with a 16,384-wide
// hidden size on 16,384 H100s (batch 4,096, context 4,096: what a search
// halves the prompt for, up to nine times, or refuses), the same at batch
// 16 and context 512 (nearly everything fits at once), tp8pp2's model at
// batch 1,024 (halved, or nothing fits), its seed with a fixed chunk of
// 512 and with per-micro-batch pass buffers, and GPT-2 XL decoding only.
func TestFitLoopIsMemoryAtEveryChunk(t *testing.T) {
	gpu, dgx, err := configs.LoadSystem("h100-sxm", "dgx-h100x2")
	if err != nil {
		t.Fatal(err)
	}
	dense := &configs.Config{
		Version: configs.SchemaVersion, Name: "dense128",
		Model: configs.Model{Name: "dense128", Layers: 128, Hidden: 16384, Heads: 128, KVHeads: 128, HeadDim: 128,
			FFN: 53248, GatedMLP: true, Vocab: 128256, Embeddings: true, LMHead: true, DType: "bf16"},
		Workload: configs.Workload{Batch: 4096, Context: 4096, OutputTokens: 256, Phases: []string{"prefill", "decode"}},
		Hardware: configs.Hardware{Preset: "h100-sxm", GPU: gpu},
		Topology: configs.Topology{Topology: dgx},
		Run:      configs.Run{Iterations: 1},
	}
	dense.Topology.Nodes, dense.Topology.GPUsPerNode = 2048, 8
	small := *dense
	small.Workload.Batch, small.Workload.Context = 16, 512
	load := func(name string, batch, chunk int, pb string) *configs.Config {
		c, err := configs.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if batch > 0 {
			c.Workload.Batch = batch
		}
		c.Parallel.PrefillChunk, c.Parallel.PassBuffers = chunk, pb
		return c
	}
	halved, nofit, fixed, compared := 0, 0, 0, 0
	var mems []Memory // one list for every fit (a Planner's: memSource.mems)
	for _, base := range []*configs.Config{dense, &small, load("tp8pp2", 1024, 0, ""), load("tp8pp2", 0, 512, ""),
		load("tp8pp2", 0, 0, configs.PassBuffersPerMicrobatch), load("gpt2-xl-decode", 0, 0, "")} {
		gpus := base.Topology.Size()
		acts := map[[2]int]*actRows{} // a Planner's, shared by the layouts
		for tp := 1; tp <= gpus; tp++ {
			for pp := 1; tp*pp <= gpus && pp <= base.Model.Layers; pp++ {
				if gpus%(tp*pp) != 0 {
					continue
				}
				for _, mb := range []int{1, 2, 4, 8, 16, 32, 64} {
					c := *base
					c.Parallel = configs.Parallel{TP: tp, PP: pp, DP: gpus / (tp * pp), Microbatches: mb, Schedule: "fill-drain",
						PrefillChunk: base.Parallel.PrefillChunk, PassBuffers: base.Parallel.PassBuffers}
					c.Name = fmt.Sprintf("%s-tp%dpp%d-m%d", base.Name, tp, pp, mb)
					if c.Validate() != nil {
						continue
					}
					p := newPlan(&c)
					reps, _ := p.stageShapes()
					mp := p.memParts()
					wc, ww, wm := fitLoopBefore(p, reps, func(p *Plan, s, chunk int) Memory {
						return memoryFromBefore(p, p.stageRank(s), chunk, &mp, p.activationBytes)
					})
					act := acts[[2]int{tp, p.MicrobatchSize}]
					if act == nil {
						act = &actRows{}
						acts[[2]int{tp, p.MicrobatchSize}] = act
					}
					for _, src := range []*memSource{{mp: &mp}, {mp: &mp, act: act}, {mp: &mp, act: act, mems: &mems}} {
						gc, gw, gm := p.fitLoop(reps, src)
						if gc != wc || gw != ww || !reflect.DeepEqual(gm, wm) {
							t.Fatalf("%s (remembered activations %v, reused list %v): chunk %d, worst %d, %+v; every part at every chunk: chunk %d, worst %d, %+v",
								c.Name, src.act != nil, src.mems != nil, gc, gw, gm, wc, ww, wm)
						}
						if src.mems != nil && (len(gm) == 0 || &gm[0] != &mems[0] || cap(gm) != len(gm)) {
							t.Fatalf("%s: the fit's memories are not the reused list's first %d entries", c.Name, len(reps))
						}
						compared++
					}
					start, isFixed := p.fitStart()
					switch {
					case isFixed:
						fixed++
					case ww >= 0:
						nofit++
					case wc < start:
						halved++
					}
				}
			}
		}
	}
	if halved < 50 || nofit < 50 || fixed == 0 {
		t.Fatalf("%d fits compared: %d halved the prompt, %d did not fit, %d with a fixed chunk: too few to test", compared, halved, nofit, fixed)
	}
}
