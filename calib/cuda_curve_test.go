package calib

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The GPU curve's working sets: 1 MiB × 2^(k/2) up to 1 GiB is 21 sizes
// (k = 0…20; the second ⌊1,048,576 · √2⌋ = 1,482,910 cut to whole
// 128-byte lines, 1,482,880), the quick curve 1 MiB × 2^k is 11.
func TestCUDACurveSizes(t *testing.T) {
	full, quick := cudaCurveSizes(1<<30, false), cudaCurveSizes(1<<30, true)
	if len(full) != 21 || full[0] != 1<<20 || full[20] != 1<<30 || full[1] != 1482880 {
		t.Errorf("full curve %v", full)
	}
	if len(quick) != 11 || quick[0] != 1<<20 || quick[10] != 1<<30 {
		t.Errorf("quick curve %v", quick)
	}
	for i := 1; i < len(full); i++ {
		if full[i] <= full[i-1] || full[i]%128 != 0 {
			t.Errorf("size %d = %d after %d", i, full[i], full[i-1])
		}
	}
}

// An H100-shaped curve: 10 TB/s up to a 32 MiB working set, 3.3 TB/s
// beyond. The stream is the median of the three largest (256 MiB…1 GiB:
// 3.3 TB/s); the L2 the largest working set ≥ 1.25 × that (32 MiB); its
// bandwidth the median of the sizes in (8, 32] MiB (16 and 32 MiB: 10 TB/s).
func TestCUDACacheFigures(t *testing.T) {
	sizes := cudaCurveSizes(1<<30, true)
	bw := make(curveRepeat, len(sizes))
	for i, s := range sizes {
		bw[i] = 3.3e12
		if s <= 32<<20 {
			bw[i] = 10e12
		}
	}
	stream, l2, l2bw, err := cacheFigures(sizes, bw)
	if err != nil || stream != 3.3e12 || l2 != 32<<20 || l2bw != 10e12 {
		t.Errorf("stream %g, l2 %d, l2 bw %g, err %v", stream, l2, l2bw, err)
	}
}

// Without a driver the GPU calibration names it, as the GPU backend does:
// the file searched for with cgo, the missing cgo without.
func TestCUDAWithoutDriver(t *testing.T) {
	t.Setenv("PARTBENCH_CUDA_LIB", filepath.Join(t.TempDir(), "libcuda.so.1"))
	_, err := Run(context.Background(), Options{Backend: "cuda", Configs: []string{"test/single-tiny"}, OpConfigs: []string{"test/single-tiny"}})
	if err == nil || !strings.HasPrefix(err.Error(), "cuda: no CUDA driver: ") ||
		!(strings.Contains(err.Error(), "libcuda.so.1") || strings.Contains(err.Error(), "cgo")) {
		t.Errorf("err = %v, want it to name the missing driver", err)
	}
}

// The default GPU shapes: seed4-1gpu's are the seed layer's (hidden 4096,
// 32 heads of 128, gated FFN 16384) at 16 × (2048 − 16) = 32,512 prefill
// rows and 16 decode rows; a shape over 2^40 FLOPs is cut in M to
// ⌊2^40 / (2·N·K)⌋ rows: layerwise16's prefill w_up (N 32,768, K 4096) to
// 2^40 / 2^28 = 4096, its w_down (N 4096, K 16,384) to 2^13 = 8192, and
// seed4-1gpu's prefill wqkv (N 12,288) to ⌊2^40 / 100,663,296⌋ = 10,922.
func TestCUDADefaultShapes(t *testing.T) {
	o := Options{Backend: "cuda"}
	if err := o.cudaDefaults(); err != nil {
		t.Fatal(err)
	}
	shapes, err := programShapes(o.Configs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][5]int{ // source: m, n, k, measured m, measured n
		"seed4-1gpu prefill wqkv":    {32512, 12288, 4096, 10922, 12288},
		"seed4-1gpu prefill w_up":    {32512, 32768, 4096, 4096, 32768},
		"seed4-1gpu decode w_down":   {16, 4096, 16384, 16, 4096},
		"layerwise16 prefill w_up":   {315904, 32768, 4096, 4096, 32768},
		"layerwise16 prefill w_down": {315904, 4096, 16384, 8192, 4096},
	}
	found := 0
	for _, s := range shapes {
		s.clip(o.GEMMFLOPBudget, o.GEMMWeightCapBytes)
		if w, ok := want[s.source]; ok {
			found++
			if got := [5]int{s.m, s.n, s.k, s.mm, s.mn}; got != w {
				t.Errorf("%s: %v, want %v", s.source, got, w)
			}
		}
	}
	if found != len(want) {
		t.Errorf("found %d of the %d shapes in %d", found, len(want), len(shapes))
	}
	// seed4-1gpu, tp8pp2 and layerwise16 in fp16: 7 distinct (N, K), 9 rows each.
	m, err := smallMShapes(o.Configs)
	if err != nil || len(m) != 7*len(SmallMs) {
		t.Errorf("%d small-M shapes (%v), want 63", len(m), err)
	}
	for _, bad := range []Options{{Backend: "cuda", Ranks: 2}, {Backend: "cuda", OpRanks: []int{2}}, {Backend: "cuda", Device: -1}, {Backend: "cuda", MaxWorkingSetBytes: 2 << 20}} {
		if err := bad.cudaDefaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
