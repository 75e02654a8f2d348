package cuda

import (
	"strings"
	"testing"
)

// gemvPlanFor on an H100/H200 (132 SMs) for the seed's decode GEMMs, by
// hand: want = gemvWaves·gemvBlocksPerSM·132 = 528 blocks; tiles = N/64;
// splits = ⌈528/tiles⌉, at most K/256, at least ⌈K/maxChunk⌉ with
// maxChunk = ⌊4096/(8·MM + 4)⌋·8 (MM 1: 341·8 = 2728; MM 8: 60·8 = 480);
// chunk = ⌈K/splits⌉ rounded up to 8; splits = ⌈K/chunk⌉.
func TestGemvPlanFor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		m, k, n int
		want    gemvPlan
	}{
		// 192 tiles: ⌈528/192⌉ = 3; ⌈4096/3⌉ = 1366 → 1368; ⌈4096/1368⌉ = 3.
		{"wqkv M 1", 1, 4096, 12288, gemvPlan{mm: 1, tiles: 192, splits: 3, chunk: 1368}},
		// 64 tiles: ⌈528/64⌉ = 9; ⌈4096/9⌉ = 456; ⌈4096/456⌉ = 9.
		{"wo M 1", 1, 4096, 4096, gemvPlan{mm: 1, tiles: 64, splits: 9, chunk: 456}},
		// 512 tiles: ⌈528/512⌉ = 2; chunk 2048.
		{"w_up M 1", 1, 4096, 32768, gemvPlan{mm: 1, tiles: 512, splits: 2, chunk: 2048}},
		// 64 tiles: 9 (≥ ⌈16384/2728⌉ = 7); ⌈16384/9⌉ = 1821 → 1824; ⌈16384/1824⌉ = 9.
		{"w_down M 1", 1, 16384, 4096, gemvPlan{mm: 1, tiles: 64, splits: 9, chunk: 1824}},
		// MM 8: at least ⌈16384/480⌉ = 35; ⌈16384/35⌉ = 469 → 472; ⌈16384/472⌉ = 35.
		{"w_down M 8", 8, 16384, 4096, gemvPlan{mm: 8, tiles: 64, splits: 35, chunk: 472}},
		// M 3 runs pb_gemv_m4 (maxChunk 113·8 = 904): wqkv ⌈4096/904⌉ = 5 > 3;
		// ⌈4096/5⌉ = 820 (a multiple of 4, → 824); ⌈4096/824⌉ = 5.
		{"wqkv M 3", 3, 4096, 12288, gemvPlan{mm: 4, tiles: 192, splits: 5, chunk: 824}},
		// K 256: one group per k-lane at most, so no split however few tiles.
		{"small", 2, 256, 64, gemvPlan{mm: 2, tiles: 1, splits: 1, chunk: 256}},
		// N 72: 2 tiles, the second of 8 columns.
		{"odd tile", 1, 512, 72, gemvPlan{mm: 1, tiles: 2, splits: 2, chunk: 256}},
	} {
		got, err := gemvPlanFor(132, tc.m, tc.k, tc.n)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: gemvPlanFor(132, %d, %d, %d) = %+v, want %+v", tc.name, tc.m, tc.k, tc.n, got, tc.want)
		}
		// What the kernel assumes: chunk a multiple of 8, x within the staging, no empty split.
		if got.chunk%8 != 0 || got.chunk/8*gemvGroupFloats(got.mm) > gemvXS || (got.splits-1)*got.chunk >= tc.k {
			t.Errorf("%s: plan %+v breaks the kernel's requirements", tc.name, got)
		}
	}
	for _, bad := range []struct {
		m, k, n int
		why     string
	}{
		{0, 64, 64, "M 0"}, {9, 64, 64, "M 9"}, {1, 60, 64, "K 60"}, {1, 64, 36, "N 36"}, {1, 0, 64, "K 0"},
	} {
		if _, err := gemvPlanFor(132, bad.m, bad.k, bad.n); err == nil || !strings.Contains(err.Error(), bad.why) {
			t.Errorf("gemvPlanFor(132, %d, %d, %d): err = %v, want one naming %q", bad.m, bad.k, bad.n, err, bad.why)
		}
	}
}

// Every K and N multiple of 8 up to 4096 and every M ≤ 8 on 1, 2, 16 and
// 132 SMs: a plan the kernel can run (the properties the kernel's comment
// requires), and every row of K in exactly one split.
func TestGemvPlanProperties(t *testing.T) {
	for _, sms := range []int{1, 2, 16, 132} {
		for m := 1; m <= gemvMaxM; m++ {
			for k := 8; k <= 4096; k += 8 * 13 {
				for _, n := range []int{8, 64, 72, 4096} {
					p, err := gemvPlanFor(sms, m, k, n)
					if err != nil {
						t.Fatalf("%d SMs M %d K %d N %d: %v", sms, m, k, n, err)
					}
					if p.mm < m || p.chunk%8 != 0 || p.chunk/8*gemvGroupFloats(p.mm) > gemvXS ||
						p.splits*p.chunk < k || (p.splits-1)*p.chunk >= k || p.tiles*gemvTileN < n || (p.tiles-1)*gemvTileN >= n {
						t.Fatalf("%d SMs M %d K %d N %d: plan %+v", sms, m, k, n, p)
					}
				}
			}
		}
	}
}

// $PARTBENCH_GEMV: the three modes, auto when unset, anything else
// refused with the variable, the value and the choices.
func TestGemvModeFromEnv(t *testing.T) {
	for _, tc := range []struct{ env, want string }{{"", "auto"}, {"on", "on"}, {" off ", "off"}, {"auto", "auto"}} {
		t.Setenv(gemvEnv, tc.env)
		set := map[string]bool{}
		if err := gemvModeFromEnv(set); err != nil {
			t.Fatalf("%q: %v", tc.env, err)
		}
		if got := gemvModeOf(set); got != tc.want {
			t.Errorf("%s=%q: mode %s, want %s", gemvEnv, tc.env, got, tc.want)
		}
	}
	t.Setenv(gemvEnv, "fast")
	_, err := parseWithout("")
	if err == nil || !strings.Contains(err.Error(), `PARTBENCH_GEMV="fast"`) || !strings.Contains(err.Error(), "auto, on, off") {
		t.Errorf("PARTBENCH_GEMV=fast: err = %v", err)
	}
}

// The setup keeps the GEMV only where it was timed faster: a tie keeps cuBLAS.
func TestGemvFaster(t *testing.T) {
	if !gemvFaster(10e-6, 11e-6) || gemvFaster(11e-6, 10e-6) || gemvFaster(10e-6, 10e-6) {
		t.Error("gemvFaster does not pick the strictly faster GEMV")
	}
}
