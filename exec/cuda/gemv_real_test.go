package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda"
)

// gemvRealReps is the calls timed per entry, after one warm-up.
const gemvRealReps = 20

// On a GPU: the seed's decode GEMMs (fp16) at M = 1, 2, 4, 8 and 16 on
// cuBLAS (cublasGemmEx NN, the backend's call) and on pb_gemv_mMM, on the
// same inputs: µs and TB/s of each (the weight bytes plus x and out), the
// GEMV's splits, and max |GEMV − cuBLAS|; M 16 is beyond the GEMV
// (gemvMaxM) and has cuBLAS's figures only. x is uniform in [−1, 1) and w
// in [−1/64, 1/64): outputs of magnitude ≲ 1. Both sum in fp32 (orders
// differing by ≲ √K·2⁻²⁴ relative) and round once, so they differ by at
// most one ulp of the output, 2u·|out|, u = 2⁻¹¹: the test fails beyond
// 4u·max(1, |cuBLAS|), and when two runs of the GEMV differ in any bit
// (its sums have a fixed order), never because it is slower. It also
// logs how many outputs of the first and last column tile equal
// gemvModel's bit for bit.
func TestRealGPUGemv(t *testing.T) {
	realGPU(t)
	t.Setenv(gemvEnv, "auto") // the kernels are looked up unless off
	c, err := New(seed4Config(t, 16), 0, Options{NoTiming: true, DType: "fp16"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	shapes := []gemmShape{{"wqkv", 4096, 12288}, {"wo", 4096, 4096}, {"w_up", 4096, 32768}, {"w_down", 16384, 4096}}
	ms := []int{1, 2, 4, 8, 16}
	const maxM, maxK, maxN = 16, 16384, 32768
	var ws int64
	var tiles int
	for _, s := range shapes {
		for _, m := range ms {
			if p, err := gemvPlanFor(c.info.SMs, m, s.k, s.n); err == nil {
				ws, tiles = max(ws, p.wsBytes(m, s.n)), max(tiles, p.tiles)
			}
		}
	}
	eb := int64(c.dt.bytes)
	var in, outB, outG, outG2, w cuda.DevicePtr
	rng := rand.New(rand.NewPCG(25, 1))
	uniform := func(n int, scale float32) []byte {
		v := make([]float32, n)
		for i := range v {
			v[i] = (2*rng.Float32() - 1) * scale
		}
		return c.dt.encode(v)
	}
	// x, and the weights as one random block of 2²⁴ elements repeated
	// (every shape's K·N ≤ 4096·32768 = 2²⁷ elements); their values as
	// stored, for gemvModel.
	xBytes, block := uniform(maxM*maxK, 1), uniform(1<<24, 1.0/64)
	xHost, wBlock := c.dt.decode(xBytes), c.dt.decode(block)
	err = c.Do(func() error {
		var err error
		for _, a := range []struct {
			p     *cuda.DevicePtr
			bytes int64
		}{{&in, maxM * maxK * eb}, {&outB, maxM * maxN * eb}, {&outG, maxM * maxN * eb}, {&outG2, maxM * maxN * eb}, {&w, 4096 * maxN * eb}} {
			if *a.p, err = c.alloc("workspace", a.bytes); err != nil {
				return err
			}
		}
		g := &c.gemv
		if g.ws, err = c.alloc("workspace", ws); err != nil {
			return err
		}
		if g.count, err = c.alloc("workspace", int64(4*tiles)); err != nil {
			return err
		}
		g.wsBytes, g.countN = ws, tiles
		if err := c.stream.MemsetD8Async(g.count, 0, int64(4*tiles)); err != nil {
			return err
		}
		if err := c.stream.CopyHtoDAsync(in, xBytes); err != nil {
			return err
		}
		for off := int64(0); off < 4096*maxN*eb; off += int64(len(block)) {
			if err := c.stream.CopyHtoDAsync(w+cuda.DevicePtr(off), block); err != nil {
				return err
			}
		}
		return c.stream.Synchronize()
	})
	if err != nil {
		t.Fatal(err)
	}
	timed := func(fn func() error) (float64, error) {
		if err := c.Do(fn); err != nil { // warm-up
			return 0, err
		}
		if err := c.Mark(); err != nil {
			return 0, err
		}
		err := c.Do(func() error {
			for range gemvRealReps {
				if err := fn(); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		if err := c.Mark(); err != nil {
			return 0, err
		}
		ts, err := c.Marks()
		if err != nil {
			return 0, err
		}
		if len(ts) != 2 || math.IsNaN(ts[1]) {
			return 0, fmt.Errorf("marks %v", ts)
		}
		return ts[1] / gemvRealReps, nil
	}
	read := func(p cuda.DevicePtr, n int) ([]float32, error) {
		b := make([]byte, n*int(eb))
		err := c.Do(func() error {
			if err := c.stream.Synchronize(); err != nil {
				return err
			}
			return c.drv.CopyDtoH(b, p)
		})
		return c.dt.decode(b), err
	}
	u := 0x1p-11
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %3s %3s %10s %8s %10s %8s %7s %10s %s\n", "gemm", "M", "S", "cuBLAS µs", "TB/s", "GEMV µs", "TB/s", "ratio", "max |Δ|", "bits = gemvModel")
	for _, m := range ms {
		for _, s := range shapes {
			bytes := float64(eb) * (float64(s.k)*float64(s.n) + float64(m)*float64(s.k+s.n))
			blas, err := timed(func() error {
				return c.handle.GemmEx(cuda.RowMajorGemm(m, s.n, s.k, in, w, outB, c.dt.blas))
			})
			if err != nil {
				t.Fatalf("%s M %d cuBLAS: %v", s.name, m, err)
			}
			p, err := gemvPlanFor(c.info.SMs, m, s.k, s.n)
			if err != nil {
				fmt.Fprintf(&b, "%-8s %3d %3s %10.1f %8.2f %10s %8s %7s %10s\n", s.name, m, "—", blas*1e6, bytes/blas/1e12, "—", "—", "—", "—")
				continue
			}
			gemv, err := timed(func() error { return c.gemvLaunch(p, m, s.k, s.n, in, w, outG, false) })
			if err != nil {
				t.Fatalf("%s M %d GEMV: %v", s.name, m, err)
			}
			if err := c.Do(func() error { return c.gemvLaunch(p, m, s.k, s.n, in, w, outG2, false) }); err != nil {
				t.Fatal(err)
			}
			ref, err := read(outB, m*s.n)
			if err != nil {
				t.Fatal(err)
			}
			got, err := read(outG, m*s.n)
			if err != nil {
				t.Fatal(err)
			}
			again, err := read(outG2, m*s.n)
			if err != nil {
				t.Fatal(err)
			}
			worst, bad, differ := 0.0, 0, 0
			for i := range ref {
				d := math.Abs(float64(got[i]) - float64(ref[i]))
				worst = max(worst, d)
				if !(d <= 4*u*max(1, math.Abs(float64(ref[i])))) {
					if bad < 3 {
						t.Errorf("%s M %d: out[%d][%d]: GEMV %g, cuBLAS %g", s.name, m, i/s.n, i%s.n, got[i], ref[i])
					}
					bad++
				}
				if math.Float32bits(got[i]) != math.Float32bits(again[i]) {
					differ++
				}
			}
			if bad > 0 {
				t.Errorf("%s M %d: %d of %d outputs beyond 4u·max(1, |cuBLAS|)", s.name, m, bad, len(ref))
			}
			if differ > 0 {
				t.Errorf("%s M %d: two GEMV runs differ in %d of %d outputs", s.name, m, differ, len(ref))
			}
			// The first and last tile's columns against gemvModel (the
			// kernel's order in Go), bit for bit: logged, a measurement
			// of the device's arithmetic, not a failure.
			var cols []int
			for j := 0; j < gemvTileN; j++ {
				cols = append(cols, j, s.n-gemvTileN+j)
			}
			wsub := make([]float32, s.k*len(cols))
			for r := 0; r < s.k; r++ {
				for j, col := range cols {
					wsub[r*len(cols)+j] = wBlock[(r*s.n+col)%(1<<24)]
				}
			}
			model, same := gemvModel(xHost[:m*s.k], wsub, m, s.k, len(cols), p.chunk, c.dt.round), 0
			for r := 0; r < m; r++ {
				for j, col := range cols {
					if math.Float32bits(model[r*len(cols)+j]) == math.Float32bits(got[r*s.n+col]) {
						same++
					}
				}
			}
			fmt.Fprintf(&b, "%-8s %3d %3d %10.1f %8.2f %10.1f %8.2f %7.2f %10.3g %5d/%d\n", s.name, m, p.splits,
				blas*1e6, bytes/blas/1e12, gemv*1e6, bytes/gemv/1e12, gemv/blas, worst, same, len(model))
		}
	}
	t.Logf("%s: the mean of %d calls after one warm-up (ratio: GEMV ÷ cuBLAS time)\n%s", c.Describe(), gemvRealReps, b.String())
}
