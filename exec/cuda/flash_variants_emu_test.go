package cuda

import (
	"math"
	"strings"
	"testing"
)

// flashVariantCases are the harness cases every variant runs: of
// flashEmuCases the bidirectional one (every key tile inside the cache is
// whole) and the 128-query tiles at head dim 128, and last one whose warps'
// first rows sit 10 positions into a 16-row group (past 10), so that a key
// tile ends between a warp's first and ninth row (warp 3 of the first
// query tile: rows at positions 58..73, keys 0..63), on two sequences of
// two heads (the heavy-first order maps both), two query tiles of 64 (the
// second of 6 rows); the same on one sequence at 128-query tiles (one of 70 rows: the
// 32-row warps 0 and 1 hold rows at positions 10..73, the diagonal of
// key tile 0 inside each, and warps 2 and 3 only padding rows).
var flashVariantCases = []struct {
	flashCase
	br int
}{flashEmuCases[2], flashEmuCases[3], {flashCase{seqs: 1, hl: 2, kvl: 1, hd: 64, past: 10, q: 70}, 128},
	{flashCase{seqs: 2, hl: 2, kvl: 1, hd: 64, past: 10, q: 70}, 64}}

// TestFlashVariantsEmulated: every variant of flash.cu against
// flashPrefillModel within the default kernel's bound (one ulp of the
// storage type), and bit for bit equal to the default kernel (the
// variants change the launch order and skip compares that are true, not
// the arithmetic), in fp16: bf16 differs only in the mma type and the
// rounding, which the variants do not touch (TestFlashKernelEmulated holds
// the default kernel to the model in bf16).
func TestFlashVariantsEmulated(t *testing.T) {
	for _, st := range storageTypes[1:2] {
		dt := dtypes[st.name]
		p := buildKernelEmu(t, "flash.cu", flashSource, dt, flashEmuKernels())
		for i, c := range flashVariantCases {
			a := newEmuAttn(c.flashCase, dt, uint64(i))
			want := make([]float32, c.seqs*c.q*c.hl*c.hd)
			flashPrefillModel(a.g, flashTiles{c.br, flashBc}, dt.round, a.qkv, a.kc, a.vc, want)
			base, err := runFlashVariantEmu(t, p, a, dt, c.br, flashVariants[0])
			if err != nil {
				t.Fatalf("%s %v b%d: %v", st.name, c.flashCase, c.br, err)
			}
			for _, v := range flashVariants[1:] {
				if !v.builtFor(c.br) {
					continue
				}
				got, err := runFlashVariantEmu(t, p, a, dt, c.br, v)
				if err != nil {
					t.Fatalf("%s %v b%d %s: %v", st.name, c.flashCase, c.br, v.name, err)
				}
				if bad, worst := ulpBound(got, want, st.u); bad > 0 {
					t.Errorf("%s %v b%d %s: %d of %d outputs beyond one ulp of the model (max |Δ| %.3g)", st.name, c.flashCase, c.br, v.name, bad, len(got), worst)
				}
				for k := range got {
					if math.Float32bits(got[k]) != math.Float32bits(base[k]) {
						t.Errorf("%s %v b%d %s: output %d is %g, the default kernel's %g", st.name, c.flashCase, c.br, v.name, k, got[k], base[k])
						break
					}
				}
			}
		}
	}
}

// TestFlashVariantsEmulatedPlantedBugs: a heavy-first order that maps two
// blocks to one (sequence, head), a diagonal test that calls a tile whole
// up to 8 positions past a warp's first row, and 32-row warps whose second
// m16 tile multiplies the first one's queries each fail the comparison
// with the model on the case whose warps start mid-tile.
func TestFlashVariantsEmulatedPlantedBugs(t *testing.T) {
	dt := dtypes["fp16"]
	c := flashVariantCases[len(flashVariantCases)-1]
	a := newEmuAttn(c.flashCase, dt, 5)
	want := make([]float32, c.seqs*c.q*c.hl*c.hd)
	flashPrefillModel(a.g, flashTiles{c.br, flashBc}, dt.round, a.qkv, a.kc, a.vc, want)
	for _, bug := range []struct {
		name, old, new string
		v              flashVariant
		br             int
	}{
		{"heavy-first order", "i = (b % per) / gridDim.y;", "i = (b % per) % (gridDim.x / tiles);", flashVariants[1], 64},
		{"diagonal test", "(past + j0 + warp * 16 + 1) / FLASH_BC", "(past + j0 + warp * 16 + 9) / FLASH_BC", flashVariants[2], 64},
		{"32-row warp's second tile", "sq + (wrow + mt * 16 + (lane & 15)) * LD", "sq + (wrow + (lane & 15)) * LD", flashVariants[4], 128},
	} {
		if !strings.Contains(flashSource, bug.old) {
			t.Fatalf("planted bug %s: flash.cu has no %q", bug.name, bug.old)
		}
		p := buildKernelEmu(t, "flash.cu", strings.Replace(flashSource, bug.old, bug.new, 1), dt, flashEmuKernels())
		if bug.v.warpRows == 32 {
			// The model's tiles: 128 queries (the sums per row do not depend on br).
			flashPrefillModel(a.g, flashTiles{bug.br, flashBc}, dt.round, a.qkv, a.kc, a.vc, want)
		}
		got, err := runFlashVariantEmu(t, p, a, dt, bug.br, bug.v)
		if err != nil {
			t.Fatal(err)
		}
		if bad, worst := ulpBound(got, want, 0x1p-11); bad == 0 {
			t.Errorf("planted bug %s passes (max |Δ| %.3g)", bug.name, worst)
		}
	}
}
