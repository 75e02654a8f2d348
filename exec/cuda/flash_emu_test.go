// The tensor-core, split-KV, fused and generator kernels in the
// host-emulation harness (exec/cuda/hostemu) with the shared kernel headers
// (exec/cuda/kernels): make kernel-check runs these (kernelCheckOnly).

package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/exec/cuda/hostemu"
)

// The tensor-core, split-KV and fused kernels run in the host-emulation
// harness (threads as threads, mma.sync, ldmatrix and cp.async emulated
// with their documented fragment layouts) against their Go models. The
// models follow the kernels' tiles and rounding points, so the bound is
// one unit in the last place of the stored output where a rounding
// boundary falls between two fp32 sums taken in different orders.

// buildKernelEmu builds kernel source src (its headers included by the file) in
// the host-emulation harness for dt.
func buildKernelEmu(t *testing.T, name, src string, dt dtype, ks []hostemu.Kernel) *hostemu.Program {
	t.Helper()
	kernelCheckOnly(t)
	if _, err := hostemu.Compiler(); err != nil {
		t.Skipf("no C++ compiler for the host-emulation harness: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := hostemu.Build(ctx, t.TempDir(), hostemu.Options{Name: name, Source: src, Defines: []string{dt.define}, Kernels: ks})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runKflashEmu(t *testing.T, p hostemu.Runner, bufs [][]byte, ls ...hostemu.Launch) ([][]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return p.Run(ctx, bufs, ls)
}

// ulpBound is |got − want| ≤ 2u·|want| + 1e-6 for every element: at most
// one unit in the last place of the storage type (unit roundoff u), and
// for outputs near 0, where sums in another order leave an absolute error
// of a few fp32 ulps of the terms (|v| ≤ 1), 1e-6.
func ulpBound(got, want []float32, u float64) (bad int, worst float64) {
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(d) || d > 2*u*math.Abs(float64(want[i]))+1e-6 {
			bad++
		}
		worst = max(worst, d)
	}
	return bad, worst
}

func i32le(v int) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// emuAttn is one call: seq0 = 1 (the first cache sequence unused, so an
// index off by a sequence reads the wrong data), random q with amplitude
// 3, k and v in [−1, 1), rounded to dt.
type emuAttn struct {
	g            attnGeom
	qkv, kc, vc  []float32
	qkvB, kB, vB []byte
}

func newEmuAttn(c flashCase, dt dtype, seed uint64) emuAttn {
	g := attnGeom{seq0: 1, seqs: c.seqs, q: c.q, past: c.past, hl: c.hl, kvl: c.kvl, hd: c.hd, context: c.past + c.q + 2, bidir: c.bidir}
	rng := rand.New(rand.NewPCG(seed, 9))
	gen := func(n int, amp float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = dt.round(amp * (2*rng.Float32() - 1))
		}
		return v
	}
	row, kvw := (c.hl+2*c.kvl)*c.hd, c.kvl*c.hd
	a := emuAttn{g: g, qkv: gen(c.seqs*c.q*row, 3), kc: gen((1+c.seqs)*g.context*kvw, 1), vc: gen((1+c.seqs)*g.context*kvw, 1)}
	a.qkvB, a.kB, a.vB = dt.encode(a.qkv), dt.encode(a.kc), dt.encode(a.vc)
	return a
}

func (a emuAttn) bidir() int {
	if a.g.bidir {
		return 1
	}
	return 0
}

var flashEmuCases = []struct {
	flashCase
	br int
}{
	{flashCase{seqs: 1, hl: 2, kvl: 1, hd: 64, past: 0, q: 70}, 64},   // two query tiles, the second of 6 rows; GQA 2
	{flashCase{seqs: 1, hl: 1, kvl: 1, hd: 128, past: 37, q: 66}, 64}, // chunked: keys 0..102 in two tiles, a diagonal inside each
	{flashCase{seqs: 2, hl: 2, kvl: 2, hd: 64, past: 5, q: 64, bidir: true}, 64},
	{flashCase{seqs: 1, hl: 1, kvl: 1, hd: 128, past: 3, q: 150}, 128}, // 128-query tiles: 8 warps, the second tile of 22 rows
}

func flashEmuKernels() []hostemu.Kernel {
	var ks []hostemu.Kernel
	for _, fk := range flashAllKernels() {
		ks = append(ks, hostemu.Kernel{Name: fk.name(), Sig: flashKernelSig})
	}
	return ks
}

func runFlashEmu(t *testing.T, p hostemu.Runner, a emuAttn, dt dtype, br int) ([]float32, error) {
	return runFlashVariantEmu(t, p, a, dt, br, flashVariants[0])
}

// runFlashVariantEmu is runFlashEmu on variant v's kernel.
func runFlashVariantEmu(t *testing.T, p hostemu.Runner, a emuAttn, dt dtype, br int, v flashVariant) ([]float32, error) {
	g := a.g
	tiles := (g.q + br - 1) / br
	out, err := runKflashEmu(t, p, [][]byte{a.qkvB, make([]byte, g.seqs*g.q*g.hl*g.hd*dt.bytes), a.kB, a.vB, i32le(g.past)},
		hostemu.Launch{Kernel: flashVariantName(g.hd, br, v), Grid: hostemu.D2(g.seqs*tiles, g.hl), Block: hostemu.D1(flashKernel{flashKey{g.hd, br}, v}.threads()),
			DynSmem: flashSharedBytes(g.hd, br, dt.bytes),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0), hostemu.Ptr(4, 0),
				hostemu.I32(g.seq0), hostemu.I32(g.q), hostemu.I32(g.hl), hostemu.I32(g.kvl), hostemu.I32(g.context),
				hostemu.F32(g.scaleLog2()), hostemu.I32(a.bidir())}})
	if err != nil {
		return nil, err
	}
	return dt.decode(out[1]), nil
}

// TestFlashKernelEmulated: pb_flash_fwd_d64 and _d128 against
// flashPrefillModel, fp16 and bf16.
func TestFlashKernelEmulated(t *testing.T) {
	for _, st := range storageTypes[1:] {
		dt := dtypes[st.name]
		p := buildKernelEmu(t, "flash.cu", flashSource, dt, flashEmuKernels())
		for i, c := range flashEmuCases {
			if st.name == "bf16" && i > 0 {
				break // the fragment paths are the same; bf16 differs only in the mma type and rounding
			}
			a := newEmuAttn(c.flashCase, dt, uint64(i))
			got, err := runFlashEmu(t, p, a, dt, c.br)
			if err != nil {
				t.Fatalf("%s %v b%d: %v", st.name, c.flashCase, c.br, err)
			}
			want := make([]float32, len(got))
			flashPrefillModel(a.g, flashTiles{c.br, flashBc}, dt.round, a.qkv, a.kc, a.vc, want)
			if bad, worst := ulpBound(got, want, st.u); bad > 0 {
				t.Errorf("%s %v b%d: %d of %d outputs beyond one ulp of the model (max |Δ| %.3g)", st.name, c.flashCase, c.br, bad, len(got), worst)
			}
		}
	}
}

// TestFlashKernelEmulatedPlantedBugs: flash.cu with the rescale of the
// accumulator dropped, or the causal mask off by one, fails the comparison.
func TestFlashKernelEmulatedPlantedBugs(t *testing.T) {
	dt := dtypes["fp16"]
	c := flashCase{seqs: 1, hl: 1, kvl: 1, hd: 64, past: 0, q: 130}
	a := newEmuAttn(c, dt, 3)
	want := make([]float32, c.seqs*c.q*c.hl*c.hd)
	flashPrefillModel(a.g, flashTiles{flashBr, flashBc}, dt.round, a.qkv, a.kc, a.vc, want)
	for _, bug := range []struct{ name, old, new string }{
		{"rescale", "o[d][0] *= corr[0];", "o[d][0] *= 1.0f;"},
		{"mask", "(bidir || key <= qp)", "(bidir || key <= qp + 1)"},
	} {
		if !strings.Contains(flashSource, bug.old) {
			t.Fatalf("planted bug %s: flash.cu has no %q", bug.name, bug.old)
		}
		p := buildKernelEmu(t, "flash.cu", strings.Replace(flashSource, bug.old, bug.new, 1), dt, flashEmuKernels())
		got, err := runFlashEmu(t, p, a, dt, flashBr)
		if err != nil {
			t.Fatal(err)
		}
		if bad, worst := ulpBound(got, want, 0x1p-11); bad == 0 {
			t.Errorf("planted bug %s passes (max |Δ| %.3g)", bug.name, worst)
		}
	}
}

// TestExtraKernelsEmulated builds the second module (splitkv.cu, fused.cu)
// once per element type and runs the split-KV and fused kernels.
func TestExtraKernelsEmulated(t *testing.T) {
	for _, st := range storageTypes {
		dt := dtypes[st.name]
		partial := fmt.Sprintf("pb_splitkv_partial_v%d", attentionVec(64, dt.bytes))
		one := fmt.Sprintf("pb_splitkv_v%d", attentionVec(64, dt.bytes))
		p := buildKernelEmu(t, "partbench_extra.cu", extraSource(), dt, []hostemu.Kernel{
			{Name: partial, Sig: splitKVPartialSig}, {Name: "pb_splitkv_merge", Sig: splitKVMergeSig}, {Name: one, Sig: splitKVOneSig},
			{Name: "pb_rope_kv_table", Sig: ropeTableSig}, {Name: "pb_add_rmsnorm", Sig: addRMSNormSig}, {Name: "pb_add_layernorm", Sig: addLayerNormSig},
			{Name: "pb_gen", Sig: genSig}, {Name: "pb_causal_softmax", Sig: causalSoftmaxSig}})
		splitKVEmulated(t, p, st.name, st.u, partial, one)
		for _, d := range causalSoftmaxDiffs(t, p, dt, st.u) {
			t.Error(d)
		}
		fusedEmulated(t, p, st.name, st.u)
		genEmulated(t, p, st.name)
	}
}

// splitKVEmulated: pb_splitkv_partial_vV and pb_splitkv_merge against
// splitKVModel, with empty splits, and pb_splitkv_vV against them.
func splitKVEmulated(t *testing.T, p hostemu.Runner, dtName string, u float64, partial, one string) {
	for _, d := range splitKVDiffs(t, p, dtName, u, partial, one) {
		t.Error(d)
	}
}

// splitKVDiffs describes each case where the split-KV kernels leave the
// model's bound, or the one-launch kernel one ("": not run) differs from
// them.
func splitKVDiffs(t *testing.T, p hostemu.Runner, dtName string, u float64, partial, one string) []string {
	dt := dtypes[dtName]
	var diffs []string
	{
		for i, tc := range []struct {
			c flashCase
			s int
		}{
			{flashCase{seqs: 2, hl: 4, kvl: 2, hd: 64, past: 300, q: 1}, 5},
			{flashCase{seqs: 1, hl: 2, kvl: 1, hd: 64, past: 2, q: 1}, 8}, // 3 keys, 5 empty splits
		} {
			a := newEmuAttn(tc.c, dt, uint64(10+i))
			g := a.g
			rows := g.seqs * g.q
			ws := make([]byte, rows*g.hl*tc.s*(2+g.hd)*4)
			out, err := runKflashEmu(t, p, [][]byte{a.qkvB, a.kB, a.vB, i32le(g.past), ws, make([]byte, rows*g.hl*g.hd*dt.bytes)},
				hostemu.Launch{Kernel: partial, Grid: hostemu.Dim{X: rows, Y: g.hl, Z: tc.s}, Block: hostemu.D1(splitKVThreads),
					Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0), hostemu.Ptr(4, 0),
						hostemu.I32(g.seq0), hostemu.I32(g.q), hostemu.I32(g.hl), hostemu.I32(g.kvl), hostemu.I32(g.hd), hostemu.I32(g.context),
						hostemu.F32(g.scaleLog2()), hostemu.I32(a.bidir())}},
				hostemu.Launch{Kernel: "pb_splitkv_merge", Grid: hostemu.D2(rows, g.hl), Block: hostemu.D1(splitKVThreads),
					Args: []hostemu.Arg{hostemu.Ptr(4, 0), hostemu.Ptr(5, 0), hostemu.I32(g.hl), hostemu.I32(g.hd), hostemu.I32(tc.s)}})
			if err != nil {
				t.Fatalf("%s %v: %v", dtName, tc.c, err)
			}
			got := dt.decode(out[5])
			want := make([]float32, len(got))
			splitKVModel(g, tc.s, dt.round, a.qkv, a.kc, a.vc, want)
			// fp32: no storage rounding to hide the order of the sums, so a
			// few fp32 ulps (1e-6 of outputs below 1).
			if bad, worst := ulpBound(got, want, max(u, 0x1p-20)); bad > 0 {
				diffs = append(diffs, fmt.Sprintf("%s %v, %d splits: %d of %d outputs beyond the bound (max |Δ| %.3g)", dtName, tc.c, tc.s, bad, len(got), worst))
			}
			if one == "" {
				continue
			}
			// pb_splitkv_vV, twice on one workspace and count (a decode
			// step and the next, replayed), each time into a zeroed output:
			// the same outputs as the two launches, bit for bit (the same
			// partials, merged by the same function), and the counts back
			// at 0 after each.
			bufs := [][]byte{a.qkvB, a.kB, a.vB, i32le(g.past), make([]byte, len(ws)), nil, make([]byte, 4*rows*g.hl)}
			for launch := 1; launch <= 2; launch++ {
				bufs[5] = make([]byte, rows*g.hl*g.hd*dt.bytes)
				res, err := runKflashEmu(t, p, bufs,
					hostemu.Launch{Kernel: one, Grid: hostemu.Dim{X: rows, Y: g.hl, Z: tc.s}, Block: hostemu.D1(splitKVThreads),
						Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0), hostemu.Ptr(4, 0), hostemu.Ptr(5, 0), hostemu.Ptr(6, 0),
							hostemu.I32(g.seq0), hostemu.I32(g.q), hostemu.I32(g.hl), hostemu.I32(g.kvl), hostemu.I32(g.hd), hostemu.I32(g.context),
							hostemu.F32(g.scaleLog2()), hostemu.I32(a.bidir())}})
				if err != nil {
					t.Fatalf("%s %v: %s: %v", dtName, tc.c, one, err)
				}
				bufs = res
				if d := maxAbsDiff(dt.decode(res[5]), got); d != 0 || slices.ContainsFunc(dt.decode(res[5]), func(v float32) bool { return math.IsNaN(float64(v)) }) {
					diffs = append(diffs, fmt.Sprintf("%s %v, %d splits, launch %d: %s differs from partial + merge by up to %.3g", dtName, tc.c, tc.s, launch, one, d))
				}
				if c := i32s(res[6]); slices.ContainsFunc(c, func(v int) bool { return v != 0 }) {
					diffs = append(diffs, fmt.Sprintf("%s %v, %d splits, launch %d: counts %v after %s, want 0", dtName, tc.c, tc.s, launch, c, one))
				}
			}
		}
	}
	return diffs
}

// Planted bugs in split-KV must fail the comparison with the model or
// with the two launches: the prefetched key never replacing the current
// one, the value fetched one position behind its key, the one-launch
// kernel's count never set back to 0 (its second launch merges nothing),
// its last block counted one too far (nothing merges).
func TestSplitKVEmulatedPlantedBugs(t *testing.T) {
	dt := dtypes["fp16"]
	partial := fmt.Sprintf("pb_splitkv_partial_v%d", attentionVec(64, dt.bytes))
	one := fmt.Sprintf("pb_splitkv_v%d", attentionVec(64, dt.bytes))
	for _, bug := range []struct{ name, old, new string }{
		{"the prefetched key never replaces the current one", "\t\tkr = kn;\n", "\n"},
		{"the value one position behind", "pb_fetch<V>(vc + base + (size_t)(t + NG) * kvw, vn);", "pb_fetch<V>(vc + base + (size_t)(t + NG - 1) * kvw, vn);"},
		{"the count is never reset", "if (threadIdx.x == 0) count[r * hl + h] = 0;", ""},
		{"the last block counted one too far", "atomicAdd(count + r * hl + h, 1) == S - 1;", "atomicAdd(count + r * hl + h, 1) == S;"},
	} {
		src := expandModule("partbench_extra.cu", plantBug(t, splitKVSource, bug.old, bug.new))
		p := buildKernelEmu(t, "partbench_extra.cu", src, dt, []hostemu.Kernel{
			{Name: partial, Sig: splitKVPartialSig}, {Name: "pb_splitkv_merge", Sig: splitKVMergeSig}, {Name: one, Sig: splitKVOneSig}})
		if diffs := splitKVDiffs(t, p, dt.name, 0x1p-11, partial, one); len(diffs) == 0 {
			t.Errorf("planted bug %q passes", bug.name)
		}
	}
}

// fusedEmulated: pb_rope_kv_table bit for bit against the table model
// (rotation, then the k and v rows appended to the cache), and the fused
// residual add + RMSNorm/LayerNorm against addNormModel.
func fusedEmulated(t *testing.T, p hostemu.Runner, dtName string, u float64) {
	dt := dtypes[dtName]
	st := struct {
		name string
		u    float64
	}{dtName, u}
	{
		c := flashCase{seqs: 2, hl: 2, kvl: 1, hd: 64, past: 7, q: 3}
		a := newEmuAttn(c, dt, 20)
		g := a.g
		table := ropeTable(g.context, g.hd, 10000)
		out, err := runKflashEmu(t, p, [][]byte{a.qkvB, make([]byte, len(a.kB)), make([]byte, len(a.vB)), dtypes["fp32"].encode(table), i32le(g.past)},
			// 32 threads and 2 blocks per row: a row's 160 items
			// ((2 + 1)·32 pairs, 64 v elements) stride over both blocks.
			hostemu.Launch{Kernel: "pb_rope_kv_table", Grid: hostemu.D2(g.seqs*g.q, 2), Block: hostemu.D1(32),
				Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0), hostemu.Ptr(4, 0),
					hostemu.I32(g.seq0), hostemu.I32(g.q), hostemu.I32(g.hl), hostemu.I32(g.kvl), hostemu.I32(g.hd), hostemu.I32(g.context)}})
		if err != nil {
			t.Fatal(err)
		}
		row, kvw := (g.hl+2*g.kvl)*g.hd, g.kvl*g.hd
		want := append([]float32(nil), a.qkv...)
		for r := 0; r < g.seqs*g.q; r++ {
			for h := 0; h < g.hl+g.kvl; h++ {
				v := want[r*row+h*g.hd:][:g.hd]
				ropeTableModel(v, g.past+r%g.q, table)
				for e := range v {
					v[e] = dt.round(v[e])
				}
			}
		}
		gotQKV, gotK, gotV := dt.decode(out[0]), dt.decode(out[1]), dt.decode(out[2])
		for i := range want {
			if math.Float32bits(gotQKV[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s rope: qkv[%d] = %v, model %v", st.name, i, gotQKV[i], want[i])
			}
		}
		for r := 0; r < g.seqs*g.q; r++ {
			at := ((g.seq0+r/g.q)*g.context + g.past + r%g.q) * kvw
			for e := 0; e < kvw; e++ {
				if gotK[at+e] != want[r*row+g.hl*g.hd+e] {
					t.Fatalf("%s rope: cache key of row %d element %d = %v, want the rotated %v", st.name, r, e, gotK[at+e], want[r*row+g.hl*g.hd+e])
				}
				if gotV[at+e] != want[r*row+(g.hl+g.kvl)*g.hd+e] {
					t.Fatalf("%s rope: cache value of row %d element %d = %v, want %v", st.name, r, e, gotV[at+e], want[r*row+(g.hl+g.kvl)*g.hd+e])
				}
				gotK[at+e], gotV[at+e] = 0, 0
			}
		}
		// Nothing else of the (zeroed) caches was written.
		for e := range gotK {
			if gotK[e] != 0 || gotV[e] != 0 {
				t.Fatalf("%s rope: cache element %d written (key %v, value %v) outside the pass's positions", st.name, e, gotK[e], gotV[e])
			}
		}

		const rows, H = 3, 96
		rng := rand.New(rand.NewPCG(4, 4))
		vals := func(n int, lo, hi float32) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = dt.round(lo + (hi-lo)*rng.Float32())
			}
			return v
		}
		x, y, w, b := vals(rows*H, -2, 2), vals(rows*H, -2, 2), vals(H, 0.5, 1.5), vals(H, -0.5, 0.5)
		for _, layer := range []bool{false, true} {
			name, args, bufs := "pb_add_rmsnorm", []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0)},
				[][]byte{dt.encode(x), dt.encode(y), make([]byte, rows*H*dt.bytes), dt.encode(w)}
			var bias []float32
			if layer {
				name, bias = "pb_add_layernorm", b
				args = append(args, hostemu.Ptr(4, 0))
				bufs = append(bufs, dt.encode(b))
			}
			args = append(args, hostemu.I32(H), hostemu.F32(1e-5))
			out, err := runKflashEmu(t, p, bufs, hostemu.Launch{Kernel: name, Grid: hostemu.D1(rows), Block: hostemu.D1(rowThreads), Args: args})
			if err != nil {
				t.Fatal(err)
			}
			wx, wo := append([]float32(nil), x...), make([]float32, rows*H)
			addNormModel(wx, y, wo, w, bias, rows, 1e-5, dt.round)
			if d := maxAbsDiff(dt.decode(out[0]), wx); d != 0 {
				t.Errorf("%s %s: the stored residual sum differs from the model's by up to %.3g", st.name, name, d)
			}
			// The kernel sums in fp32 over the block, the model in float64:
			// a few fp32 ulps of 1/σ, within one storage ulp (fp32: 2^−20).
			if bad, worst := ulpBound(dt.decode(out[2]), wo, max(st.u, 0x1p-20)); bad > 0 {
				t.Errorf("%s %s: %d of %d outputs beyond one ulp of the model (max |Δ| %.3g)", st.name, name, bad, rows*H, worst)
			}
		}
	}
}

// genEmulated: pb_gen writes, bit for bit, the host generator's elements
// rounded to the element type: single-tiny's wqkv (three segments, the
// fan-in scale), a norm vector (1 + 0.1·u) and a transposed rectangle (a
// tied head's layout), each into a tensor with a margin that must stay 0.
func genEmulated(t *testing.T, p hostemu.Runner, dtName string) {
	dt := dtypes[dtName]
	gen := tinyPlan(t, "test/single-tiny").Generator(0)
	wqkv, err := genSegments(gen, 2, "wqkv")
	if err != nil {
		t.Fatal(err)
	}
	norm, err := genSegments(gen, 2, "mlp_norm")
	if err != nil {
		t.Fatal(err)
	}
	tied := []genSegment{{dstRow0: 1, dstCol0: 2, rows: 8, cols: 5, base: 0x0123456789abcdef, keyRow0: 3, keyCol0: 1, transposed: true, scale: 1}}
	for _, tc := range []struct {
		name string
		k, n int
		segs []genSegment
	}{{"wqkv", 64, 128, wqkv}, {"mlp_norm", 1, 64, norm}, {"transposed", 10, 9, tied}} {
		var ls []hostemu.Launch
		for _, s := range tc.segs {
			tr := 0
			if s.transposed {
				tr = 1
			}
			ls = append(ls, hostemu.Launch{Kernel: "pb_gen", Grid: hostemu.D1(2), Block: hostemu.D1(flatThreads),
				Args: []hostemu.Arg{hostemu.Ptr(0, (s.dstRow0*tc.n+s.dstCol0)*dt.bytes), hostemu.I32(tc.n), hostemu.I32(s.rows), hostemu.I32(s.cols),
					hostemu.U64(s.base), hostemu.I32(s.keyRow0), hostemu.I32(s.keyCol0), hostemu.I32(tr), hostemu.F32(s.scale), hostemu.F32(s.add)}})
		}
		out, err := runKflashEmu(t, p, [][]byte{make([]byte, tc.k*tc.n*dt.bytes)}, ls...)
		if err != nil {
			t.Fatalf("%s %s: %v", dtName, tc.name, err)
		}
		want := make([]float32, tc.k*tc.n)
		genApply(tc.segs, want, tc.n)
		got := dt.decode(out[0])
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(dt.round(want[i])) {
				t.Fatalf("%s %s: element %d (row %d, column %d) = %v, the host's %v", dtName, tc.name, i, i/tc.n, i%tc.n, got[i], dt.round(want[i]))
			}
		}
	}
}

// TestSplitKVKernelEmulatedPlantedBugs: pb_splitkv_merge adding the
// partial sums without rescaling them to the common max fails.
func TestSplitKVKernelEmulatedPlantedBugs(t *testing.T) {
	const old = "if (l > 0.0f) L += l * exp2f(p[k * (2 + hd)] - M);"
	if !strings.Contains(splitKVSource, old) {
		t.Fatalf("splitkv.cu has no %q", old)
	}
	dt := dtypes["fp32"]
	src := strings.Replace(extraSource(), old, "if (l > 0.0f) L += l;", 1)
	partial := fmt.Sprintf("pb_splitkv_partial_v%d", attentionVec(64, dt.bytes))
	p := buildKernelEmu(t, "partbench_extra.cu", src, dt, []hostemu.Kernel{{Name: partial, Sig: splitKVPartialSig}, {Name: "pb_splitkv_merge", Sig: splitKVMergeSig}})
	c := flashCase{seqs: 1, hl: 2, kvl: 1, hd: 64, past: 300, q: 1}
	a := newEmuAttn(c, dt, 30)
	g := a.g
	const s = 4
	out, err := runKflashEmu(t, p, [][]byte{a.qkvB, a.kB, a.vB, i32le(g.past), make([]byte, g.hl*s*(2+g.hd)*4), make([]byte, g.hl*g.hd*dt.bytes)},
		hostemu.Launch{Kernel: partial, Grid: hostemu.Dim{X: 1, Y: g.hl, Z: s}, Block: hostemu.D1(splitKVThreads),
			Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0), hostemu.Ptr(4, 0),
				hostemu.I32(g.seq0), hostemu.I32(g.q), hostemu.I32(g.hl), hostemu.I32(g.kvl), hostemu.I32(g.hd), hostemu.I32(g.context),
				hostemu.F32(g.scaleLog2()), hostemu.I32(0)}},
		hostemu.Launch{Kernel: "pb_splitkv_merge", Grid: hostemu.D2(1, g.hl), Block: hostemu.D1(splitKVThreads),
			Args: []hostemu.Arg{hostemu.Ptr(4, 0), hostemu.Ptr(5, 0), hostemu.I32(g.hl), hostemu.I32(g.hd), hostemu.I32(s)}})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, g.hl*g.hd)
	splitKVModel(g, s, dt.round, a.qkv, a.kc, a.vc, want)
	if bad, worst := ulpBound(dt.decode(out[5]), want, 0x1p-20); bad == 0 {
		t.Errorf("a merge without rescaling passes (max |Δ| %.3g)", worst)
	}
}

// causalSoftmaxDiffs runs pb_causal_softmax on fp32 scores of 2 batches ×
// 5 queries at positions 70..74 (n = 75 keys), causal and bidirectional,
// with 32 and 256 threads, against a float64 softmax over the keys each
// query sees (0 beyond), and describes each case beyond one ulp of the
// element type (+ 1e-6 for the fp32 exp and sum).
func causalSoftmaxDiffs(t *testing.T, p hostemu.Runner, dt dtype, u float64) []string {
	const B, q, past = 2, 5, 70
	const n = past + q
	rng := rand.New(rand.NewPCG(12, 13))
	S := make([]float32, B*q*n)
	for i := range S {
		S[i] = 8*rng.Float32() - 4
	}
	var diffs []string
	for _, bidir := range []int{0, 1} {
		for _, threads := range []int{32, rowThreads} {
			out, err := runKflashEmu(t, p, [][]byte{f32enc(S), make([]byte, B*q*n*dt.bytes), i32le(past)},
				hostemu.Launch{Kernel: "pb_causal_softmax", Grid: hostemu.D2(q, B), Block: hostemu.D1(threads),
					Args: []hostemu.Arg{hostemu.Ptr(0, 0), hostemu.Ptr(1, 0), hostemu.Ptr(2, 0), hostemu.I32(n), hostemu.I32(bidir)}})
			if err != nil {
				t.Fatal(err)
			}
			got := dt.decode(out[1])
			want := make([]float32, len(got))
			for r := 0; r < B*q; r++ {
				seen := n
				if bidir == 0 {
					seen = past + r%q + 1
				}
				row := S[r*n : (r+1)*n]
				m := math.Inf(-1)
				for _, v := range row[:seen] {
					m = math.Max(m, float64(v))
				}
				var l float64
				for _, v := range row[:seen] {
					l += math.Exp(float64(v) - m)
				}
				for j := 0; j < seen; j++ {
					want[r*n+j] = float32(math.Exp(float64(row[j])-m) / l)
				}
			}
			if bad, worst := ulpBound(got, want, max(u, 0x1p-20)); bad > 0 {
				diffs = append(diffs, fmt.Sprintf("%s pb_causal_softmax bidir %d, %d threads: %d of %d beyond one ulp (max |Δ| %.3g)", dt.name, bidir, threads, bad, len(got), worst))
			}
		}
	}
	return diffs
}

// A causal mask one key too far (each query sees the next position) must
// fail the float64 comparison.
func TestCausalSoftmaxEmulatedPlantedBugs(t *testing.T) {
	dt := dtypes["fp16"]
	src := expandModule("partbench_extra.cu", plantBug(t, attnBlasSource, "min(n, *pos + i + 1)", "min(n, *pos + i + 2)"))
	p := buildKernelEmu(t, "partbench_extra.cu", src, dt, []hostemu.Kernel{{Name: "pb_causal_softmax", Sig: causalSoftmaxSig}})
	if diffs := causalSoftmaxDiffs(t, p, dt, 0x1p-11); len(diffs) == 0 {
		t.Error("a causal mask one key too far passes")
	}
}

// The second module's harness checks on a GPU (device 0, the same source
// compiled by NVRTC): split-KV in two launches and in one (whose last
// block merges what other blocks wrote: the fence and the count meet a
// real memory model only here), the table rotation and cache append, the
// fused residual + norms, the weight generator and the causal softmax.
func TestRealGPUExtraKernels(t *testing.T) {
	for _, st := range storageTypes {
		dt := dtypes[st.name]
		partial := fmt.Sprintf("pb_splitkv_partial_v%d", attentionVec(64, dt.bytes))
		one := fmt.Sprintf("pb_splitkv_v%d", attentionVec(64, dt.bytes))
		d, err := hostemu.NewDevice(hostemu.Options{Name: "partbench_extra.cu", Source: extraSource(), Defines: []string{dt.define}, Kernels: []hostemu.Kernel{
			{Name: partial, Sig: splitKVPartialSig}, {Name: "pb_splitkv_merge", Sig: splitKVMergeSig}, {Name: one, Sig: splitKVOneSig},
			{Name: "pb_rope_kv_table", Sig: ropeTableSig}, {Name: "pb_add_rmsnorm", Sig: addRMSNormSig}, {Name: "pb_add_layernorm", Sig: addLayerNormSig},
			{Name: "pb_gen", Sig: genSig}, {Name: "pb_causal_softmax", Sig: causalSoftmaxSig}}})
		if errors.Is(err, hostemu.ErrUnavailable) {
			t.Skipf("%v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: device image %s", st.name, d.What)
		splitKVEmulated(t, d, st.name, st.u, partial, one)
		fusedEmulated(t, d, st.name, st.u)
		genEmulated(t, d, st.name)
		for _, diff := range causalSoftmaxDiffs(t, d, dt, st.u) {
			t.Error(diff)
		}
		d.Close()
	}
}
