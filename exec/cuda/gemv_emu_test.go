package cuda

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/partbench/partbench/exec/cuda/hostemu"
	kernelsrc "github.com/partbench/partbench/exec/cuda/kernels"
)

// gemv.cu on CPU threads (the host-emulation harness) against a float64
// product of the same rounded inputs, and bit for bit against gemvModel,
// the Go statement of its order of operations.
//
// The bound per output element: the fp32 sum of K products, in whatever
// order (each thread's rows in sequence, two shuffles, 8 warps, S
// splits: at most K + 13 additions on any path), is within
// (K + 13)·2⁻²⁴·Σ|x·w| of the exact sum (the standard γₙ bound of
// recursive summation, which covers every tree of depth ≤ n), and the one
// rounding to the element type adds u·|result|, u = 2⁻²⁴, 2⁻¹¹, 2⁻⁸
// (storageTypes): bound = a + u·(|want| + a), a = (K + 16)·2⁻²⁴·Σ|x·w|.
// A dropped partial sum (one split, one warp, two k-lanes) moves an
// element by the size of that partial, a whole group of products: far
// beyond it.

// gemvCase is a launch: M rows, K, N, the rows per split.
type gemvCase struct{ m, k, n, chunk int }

// gemvEmuCases cover every entry point (M 1, 2, 3 → m4, 5 → m8, 8), one
// split and several, a last split shorter than the rest (K 520 in
// chunks of 128: 8 rows), a last tile of 8 columns (N 136), k-lanes with
// several iterations (K 1024 unsplit: 4 groups per k-lane, two per
// iteration at MM 2), k-lanes without a group (K 48), and a plan from
// gemvPlanFor on a 2-SM device.
func gemvEmuCases(t *testing.T) []gemvCase {
	p, err := gemvPlanFor(2, 4, 2048, 128)
	if err != nil {
		t.Fatal(err)
	}
	// 2 SMs: 2·2·2 = 8 blocks wanted over 2 tiles → 4 splits of 512 rows.
	if p.splits != 4 || p.chunk != 512 || p.tiles != 2 || p.mm != 4 {
		t.Fatalf("gemvPlanFor(2, 4, 2048, 128) = %+v, want 4 splits of 512 over 2 tiles, MM 4", p)
	}
	return []gemvCase{
		{1, 64, 64, 64},
		{3, 520, 136, 128},
		{8, 256, 200, 64},
		{2, 1024, 64, 1024},
		{5, 48, 24, 16},
		{4, 2048, 128, p.chunk},
	}
}

// gemvEmuKernels are gemv.cu's entry points.
func gemvEmuKernels() []hostemu.Kernel {
	var ks []hostemu.Kernel
	for _, mm := range gemvVariants {
		ks = append(ks, hostemu.Kernel{Name: gemvKernelName(mm), Sig: gemvSig})
	}
	return ks
}

// gemvEmuSource is src (gemv.cu's text or a planted bug's) with the shared
// header expanded.
func gemvEmuSource(t *testing.T, src string) string {
	t.Helper()
	s, err := kernelsrc.Expand("gemv.cu", src)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gemvAgainstFloat64 runs every case twice on one workspace and count
// buffer (new x, another output: the second launch sees what the first
// left), and describes each element beyond the bound, a count not back at
// 0, and the largest error relative to max(1, |want|).
func gemvAgainstFloat64(p hostemu.Runner, dt dtype, u float64, cases []gemvCase) (problems []string, worst float64, err error) {
	rng := rand.New(rand.NewPCG(25, uint64(dt.bytes)))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = dt.round(2*rng.Float32() - 1)
		}
		return v
	}
	for _, tc := range cases {
		mm := 0
		for _, v := range gemvVariants {
			if v >= tc.m {
				mm = v
				break
			}
		}
		tiles := (tc.n + gemvTileN - 1) / gemvTileN
		s := (tc.k + tc.chunk - 1) / tc.chunk
		x1, x2, w := vals(tc.m*tc.k), vals(tc.m*tc.k), vals(tc.k*tc.n)
		bufs := [][]byte{dt.encode(x1), dt.encode(x2), dt.encode(w), make([]byte, max(4, s*tc.m*tc.n*4)),
			make([]byte, 4*tiles), make([]byte, tc.m*tc.n*dt.bytes), make([]byte, tc.m*tc.n*dt.bytes)}
		launch := func(x, out int) hostemu.Launch {
			return hostemu.Launch{Kernel: gemvKernelName(mm), Grid: hostemu.D2(tiles, s), Block: hostemu.D1(gemvThreads),
				Args: []hostemu.Arg{hostemu.Ptr(x, 0), hostemu.Ptr(2, 0), hostemu.Ptr(3, 0), hostemu.Ptr(out, 0), hostemu.Ptr(4, 0),
					hostemu.I32(tc.m), hostemu.I32(tc.k), hostemu.I32(tc.n), hostemu.I32(tc.chunk)}}
		}
		// Seconds on an idle machine; the bound is for a loaded CI runner,
		// where the harness's threads (256 per block) wait for cores.
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		got, err := p.Run(ctx, bufs, []hostemu.Launch{launch(0, 5), launch(1, 6)})
		cancel()
		if err != nil {
			return nil, 0, fmt.Errorf("M %d K %d N %d chunk %d: %w", tc.m, tc.k, tc.n, tc.chunk, err)
		}
		for i := 0; i < tiles; i++ {
			if c := binary.LittleEndian.Uint32(got[4][4*i:]); c != 0 {
				problems = append(problems, fmt.Sprintf("%s M %d K %d N %d: count of tile %d is %d after the launches, want 0", dt.name, tc.m, tc.k, tc.n, i, c))
			}
		}
		for launch, xo := range [][2]int{{0, 5}, {1, 6}} {
			x := [][]float32{x1, x2}[xo[0]]
			out := dt.decode(got[xo[1]])
			bad := 0
			for m := 0; m < tc.m; m++ {
				for n := 0; n < tc.n; n++ {
					var want, mag float64
					for k := 0; k < tc.k; k++ {
						p := float64(x[m*tc.k+k]) * float64(w[k*tc.n+n])
						want += p
						mag += math.Abs(p)
					}
					a := float64(tc.k+16) * 0x1p-24 * mag
					bound := a + u*(math.Abs(want)+a)
					e := math.Abs(float64(out[m*tc.n+n]) - want)
					worst = max(worst, e/max(1, math.Abs(want)))
					if !(e <= bound) {
						if bad < 3 {
							problems = append(problems, fmt.Sprintf("%s M %d K %d N %d chunk %d launch %d: out[%d][%d] = %g, want %g (|Δ| %.3g > bound %.3g)",
								dt.name, tc.m, tc.k, tc.n, tc.chunk, launch+1, m, n, out[m*tc.n+n], want, e, bound))
						}
						bad++
					}
				}
			}
			if bad > 3 {
				problems = append(problems, fmt.Sprintf("%s M %d K %d N %d launch %d: %d elements beyond the bound in all", dt.name, tc.m, tc.k, tc.n, launch+1, bad))
			}
			model, differ, far := gemvModel(x, w, tc.m, tc.k, tc.n, tc.chunk, dt.round), 0, 0.0
			for i := range model {
				if math.Float32bits(model[i]) != math.Float32bits(out[i]) {
					differ++
					far = max(far, math.Abs(float64(model[i])-float64(out[i])))
				}
			}
			if differ > 0 {
				problems = append(problems, fmt.Sprintf("%s M %d K %d N %d chunk %d launch %d: %d of %d elements differ from gemvModel's bits (max |Δ| %.3g)",
					dt.name, tc.m, tc.k, tc.n, tc.chunk, launch+1, differ, len(model), far))
			}
		}
	}
	return problems, worst, nil
}

func TestGemvEmulated(t *testing.T) {
	kernelCheckOnly(t)
	src := gemvEmuSource(t, gemvSource)
	cases := gemvEmuCases(t)
	for _, st := range storageTypes {
		t.Run(st.name, func(t *testing.T) {
			dt := dtypes[st.name]
			p := buildKernelEmu(t, "gemv.cu", src, dt, gemvEmuKernels())
			problems, worst, err := gemvAgainstFloat64(p, dt, st.u, cases)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range problems {
				t.Error(s)
			}
			t.Logf("%s: largest error %.3g relative to max(1, |want|) over %d cases", st.name, worst, len(cases))
		})
	}
}

// Planted bugs a split GEMV invites, each of which the comparison must
// catch (fp16): the first split's partial dropped in the last block's
// sum, the second shuffle (two of a warp's four k-lanes) dropped, and the
// count never set back to 0 (the second launch finds no last block).
func TestGemvEmulatedPlantedBugs(t *testing.T) {
	kernelCheckOnly(t)
	dt := dtypes["fp16"]
	// M 3, K 520 in 5 splits of 128 rows (16 groups: k-lanes 0–15 have
	// one), N 136 in 3 tiles: every bug below shows there.
	cases := []gemvCase{{3, 520, 136, 128}}
	for _, bug := range []struct{ name, old, new string }{
		{"first split dropped", "for (int k = 0; k < S; k++) v += vw[", "for (int k = 1; k < S; k++) v += vw["},
		{"second shuffle dropped", "\t\t\tv += __shfl_xor_sync(0xffffffffu, v, 16);\n", ""},
		{"count never reset", "if (threadIdx.x == 0) count[tile] = 0;", ""},
	} {
		t.Run(bug.name, func(t *testing.T) {
			p := buildKernelEmu(t, "gemv.cu", gemvEmuSource(t, plantBug(t, gemvSource, bug.old, bug.new)), dt, gemvEmuKernels())
			problems, _, err := gemvAgainstFloat64(p, dt, 0x1p-11, cases)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) == 0 {
				t.Errorf("planted bug %q passes", bug.name)
			}
		})
	}
}
