package sim

import (
	"math"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// TestWindowPassIsSliceBySlice holds the figures windowUses' one pass
// gathers for estimateRun and countPricing (decode step s0's HBM and L2
// bytes, each kind's ops priced from the table or by the model) to the
// loops they replace, run slice by slice on the same timeline: every
// config of configs/test, per stage and with every rank simulated.
func TestWindowPassIsSliceBySlice(t *testing.T) {
	files, err := filepath.Glob("../configs/test/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs/test configs: %v", err)
	}
	perStage := 0
	for _, f := range files {
		cfg, err := configs.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, every := range []bool{false, true} {
			plan, err := partition.NewPlan(cfg)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{EveryRank: every}
			e, err := EstimatePlan(plan, opts)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			tl := e.Timeline
			if tl.PerStage {
				perStage++
			}
			if ref := collectiveUsesEach(tl); !reflect.DeepEqual(e.Collectives, ref) {
				t.Errorf("%s every=%v: collectives %+v, every slice scanned %+v", f, every, e.Collectives, ref)
			}
			// DecodeSteps left 0 is 16 (estimatePlan), s0 is half of it.
			var ref PhaseEstimate
			weight := int64(1)
			if tl.PerStage {
				weight = int64(plan.TP)
			}
			stepBytesEach(tl, &ref, 16/2, weight)
			ref.HBMBytesPerStep *= int64(max(1, e.DP)) // addReplicas: DP replicas' bytes
			ref.L2BytesPerStep *= int64(max(1, e.DP))
			if ref.HBMBytesPerStep == 0 || ref.HBMBytesPerStep != e.Decode.HBMBytesPerStep || ref.L2BytesPerStep != e.Decode.L2BytesPerStep {
				t.Errorf("%s every=%v: step bytes HBM %d L2 %d, slice by slice %d %d", f, every,
					e.Decode.HBMBytesPerStep, e.Decode.L2BytesPerStep, ref.HBMBytesPerStep, ref.L2BytesPerStep)
			}
			got := append([]RankKind(nil), e.Ranks.Kinds...)
			for i := range e.Ranks.Kinds {
				e.Ranks.Kinds[i].TableOps, e.Ranks.Kinds[i].ModelOps = -1, -1
			}
			e.countPricing()
			for i, k := range e.Ranks.Kinds {
				if got[i].TableOps != k.TableOps || got[i].ModelOps != k.ModelOps {
					t.Errorf("%s every=%v: kind of rank %d priced %d table %d model, slice by slice %d %d", f, every,
						k.Rank, got[i].TableOps, got[i].ModelOps, k.TableOps, k.ModelOps)
				}
				if k.TableOps+k.ModelOps <= 0 {
					t.Errorf("%s every=%v: kind of rank %d has no priced op", f, every, k.Rank)
				}
			}
		}
	}
	if perStage == 0 {
		t.Error("no config was simulated per stage: the pass's per-stage counts went untested")
	}
}

// TestWindowPassFallback: a slice with a bound useBounds does not list
// makes windowUses fall back, and the figures are then the loops' own.
func TestWindowPassFallback(t *testing.T) {
	// Two slices of rank 0: a prefill op of 2 s and decode step 1's op of
	// 3 s (400 HBM bytes, 40 L2), both priced by the model: one op of
	// prefill and one of the first decode step, so 2 model ops, 0 table;
	// step 1's bytes 400 and 40.
	tl := &Timeline{Ranks: 1, TP: 1, Slices: []Slice{
		{Rank: 0, Phase: partition.Prefill, Op: &partition.Op{Kind: partition.Gemm}, StartS: 0, EndS: 2, Bound: BoundCompute, HBMBytes: 100, L2Bytes: 10},
		{Rank: 0, Phase: partition.Decode, Step: 1, Op: &partition.Op{Kind: partition.Gemm}, StartS: 2, EndS: 5, Bound: Bound("other"), HBMBytes: 400, L2Bytes: 40},
	}}
	e := &Estimate{Timeline: tl, Ranks: RankRows{Kinds: []RankKind{{Count: 1}}}}
	u := e.windowUses(2, 2, 5, 1, 1)
	if !u.fallback {
		t.Fatal("a bound useBounds does not list must make windowUses fall back")
	}
	var pe PhaseEstimate
	u.stepBytes(e, &pe, 1)
	u.pricing(e)
	if pe.HBMBytesPerStep != 400 || pe.L2BytesPerStep != 40 || e.Ranks.Kinds[0].ModelOps != 2 || e.Ranks.Kinds[0].TableOps != 0 {
		t.Errorf("fallback: step bytes %d %d, ops %d table %d model; want 400 40, 0 2",
			pe.HBMBytesPerStep, pe.L2BytesPerStep, e.Ranks.Kinds[0].TableOps, e.Ranks.Kinds[0].ModelOps)
	}
	// Without the odd bound the pass counts the same by itself.
	tl.Slices[1].Bound = BoundHBM
	e.Ranks.Kinds[0] = RankKind{Count: 1}
	u = e.windowUses(2, 2, 5, 1, 1)
	pe = PhaseEstimate{}
	u.stepBytes(e, &pe, 1)
	u.pricing(e)
	if u.fallback || pe.HBMBytesPerStep != 400 || pe.L2BytesPerStep != 40 || e.Ranks.Kinds[0].ModelOps != 2 || e.Ranks.Kinds[0].TableOps != 0 {
		t.Errorf("pass: fallback %v, step bytes %d %d, ops %d table %d model; want false, 400 40, 0 2",
			u.fallback, pe.HBMBytesPerStep, pe.L2BytesPerStep, e.Ranks.Kinds[0].TableOps, e.Ranks.Kinds[0].ModelOps)
	}
}

// TestOverlapIsMathMinMax holds overlap's built-in min and max to
// math.Min and math.Max on finite, infinite and signed-zero ends.
func TestOverlapIsMathMinMax(t *testing.T) {
	ref := func(a, b, lo, hi float64) float64 { return math.Max(0, math.Min(b, hi)-math.Max(a, lo)) }
	inf, negZero := math.Inf(1), math.Copysign(0, -1)
	vals := []float64{negZero, 0, 1e-9, 0.5, 1, 2.5, 3, 1e300, inf, -inf, -1}
	n := 0
	for _, a := range vals {
		for _, b := range vals {
			for _, lo := range vals {
				for _, hi := range vals {
					g, w := overlap(a, b, lo, hi), ref(a, b, lo, hi)
					if math.Float64bits(g) != math.Float64bits(w) && !(math.IsNaN(g) && math.IsNaN(w)) {
						t.Fatalf("overlap(%g, %g, %g, %g) = %g, math.Min/Max give %g", a, b, lo, hi, g, w)
					}
					n++
				}
			}
		}
	}
	// [1, 3] ∩ [0.5, 2.5] is [1, 2.5]: 1.5 by hand.
	if got := overlap(1, 3, 0.5, 2.5); got != 1.5 {
		t.Errorf("overlap(1, 3, 0.5, 2.5) = %g, want 1.5", got)
	}
}

// collectiveUsesEach is collectiveUses scanning every slice for the first
// rank's, its reference.
func collectiveUsesEach(tl *Timeline) []CollectiveUse {
	type key struct {
		phase partition.Phase
		name  string
		bytes int64
	}
	seen := map[key]*CollectiveUse{}
	var order []key
	for _, sl := range tl.All() {
		if sl.Rank != tl.At(0).Rank || sl.Algo == "" || (sl.Phase == partition.Decode && sl.Step != 0) {
			continue
		}
		name := sl.Op.Name
		if i := strings.IndexByte(name, '.'); i >= 0 && sl.Op.Layer >= 0 {
			name = name[i+1:]
		}
		k := key{sl.Phase, name, sl.Op.Bytes}
		if u := seen[k]; u != nil {
			u.Count++
			continue
		}
		cop, _ := sl.Op.Kind.Comm()
		seen[k] = &CollectiveUse{Phase: sl.Phase, Name: name, Op: string(cop), Ranks: len(sl.Op.Group), Bytes: sl.Op.Bytes,
			Algo: sl.Algo, Proto: sl.Proto, Link: sl.Link, TimeS: sl.EndS - sl.StartS - sl.WaitS, Count: 1}
		order = append(order, k)
	}
	out := make([]CollectiveUse, 0, len(order))
	for _, k := range order {
		out = append(out, *seen[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Phase > out[j].Phase })
	return out
}

// TestUseBoundIndex: the switch gives each bound its place in useBounds,
// and -1 to a bound not listed.
func TestUseBoundIndex(t *testing.T) {
	for i, b := range useBounds {
		if got := useBoundIndex(b); got != i {
			t.Errorf("useBoundIndex(%q) = %d, its place in useBounds is %d", b, got, i)
		}
	}
	if got := useBoundIndex(Bound("other")); got != -1 {
		t.Errorf("useBoundIndex(\"other\") = %d, want -1", got)
	}
}

// TestHBMFloorBytesByHand: KV reads and writes 10+2 and 5+1 bytes, and a
// working set of 100 bytes of which 40 fit in L2: 18 + 60 = 78 bytes; a
// working set that fits adds nothing (18).
func TestHBMFloorBytesByHand(t *testing.T) {
	p := partition.Program{Ops: []partition.Op{{KVReadBytes: 10, KVWriteBytes: 2}, {KVReadBytes: 5, KVWriteBytes: 1}}}
	if got := hbmFloorBytes(p, 100, 40); got != 78 {
		t.Errorf("hbmFloorBytes = %d, want 78", got)
	}
	if got := hbmFloorBytes(p, 30, 40); got != 18 {
		t.Errorf("hbmFloorBytes with the working set in L2 = %d, want 18", got)
	}
}

// TestWorkingSetInReusesSet: a set left with another program's tensors is
// cleared first. Two GEMMs of layer 0 over tensor "w" (100 bytes each: one
// tensor, counted once) and a norm of layer 1 (8 bytes): 108 bytes, after
// a program whose same tensors were seen.
func TestWorkingSetInReusesSet(t *testing.T) {
	p := partition.Program{Ops: []partition.Op{
		{Kind: partition.Gemm, Layer: 0, Tensor: "w", WeightBytes: 100},
		{Kind: partition.Gemm, Layer: 0, Tensor: "w", WeightBytes: 100},
		{Kind: partition.Norm, Layer: 1, Tensor: "n", WeightBytes: 8},
	}}
	seen := map[tensorKey]bool{}
	if got := workingSetIn(p, seen); got != 108 {
		t.Fatalf("workingSetIn = %d, want 108", got)
	}
	if got, ref := workingSetIn(p, seen), workingSet(p); got != 108 || ref != 108 {
		t.Errorf("again with the same set: %d, workingSet %d; want 108 both", got, ref)
	}
}
