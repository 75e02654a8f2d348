package hostemu

import (
	"context"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"
)

//go:embed testdata/*.cu
var testdata embed.FS

// testdataSource is testdata/name (embedded: a test binary carried to a GPU
// machine has no source tree beside it).
func testdataSource(t *testing.T, name string) string {
	t.Helper()
	b, err := testdata.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// device compiles testdata/name for the GPU, skipping without one.
func device(t *testing.T, name string, ks []Kernel, defines ...string) *Device {
	t.Helper()
	d, err := NewDevice(Options{Name: name, Source: testdataSource(t, name), Defines: defines, Kernels: ks})
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	t.Logf("device image: %s", d.What)
	return d
}

// build compiles testdata/name (or src when not empty) with defines, skipping
// without a C++ compiler.
func build(t *testing.T, name, src string, ks []Kernel, defines ...string) *Program {
	t.Helper()
	if _, err := Compiler(); err != nil {
		t.Skipf("no C++ compiler for the host-emulation harness: %v", err)
	}
	if src == "" {
		src = testdataSource(t, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := Build(ctx, t.TempDir(), Options{Name: name, Source: src, Defines: defines, Kernels: ks})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, p Runner, bufs [][]byte, ls ...Launch) ([][]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return p.Run(ctx, bufs, ls)
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// half16 rounds to binary16 and back through Go's own conversion (an
// independent implementation from the prelude's _Float16): values are
// chosen exact in fp16 and bf16 alike (multiples of 1/64 in [−2, 2)).
func exactSmall(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.Intn(256)-128) / 64
	}
	return v
}

// u16bytes stores small exact values as fp16 (bf16) bits: for a value
// k/64 with |k| < 128 both are exact, so the product below is known.
func u16bytes(v []float32, bf16 bool) []byte {
	b := make([]byte, 2*len(v))
	for i, f := range v {
		var h uint16
		if bf16 {
			h = uint16(math.Float32bits(f) >> 16) // exact: f has ≤ 8 significant bits
		} else {
			h = f16bits(f)
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	}
	return b
}

// f16bits encodes a normal float32 with at most 11 significant bits and
// exponent within binary16's normal range, or zero (no rounding needed).
func f16bits(f float32) uint16 {
	if f == 0 {
		return 0
	}
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	e := int(u>>23&0xff) - 127 + 15
	return sign | uint16(e)<<10 | uint16(u>>13&0x3ff)
}

// One warp through cp.async, ldmatrix (plain and .trans) and mma.sync
// gives D = A·B + C for a 16×16 by 16×8 tile; with inputs exact in the
// 16-bit type and products summed exactly (|sums| ≤ 16·4 + 2 in steps of
// 1/4096), D equals the float64 product exactly. A wrong fragment layout
// puts elements in the wrong place and fails.
func TestTensorCoreHelpersEmulated(t *testing.T) {
	kernelCheckOnly(t)
	for _, dt := range tcTypes {
		t.Run(dt.define, func(t *testing.T) {
			t.Parallel()
			checkTensorCore(t, build(t, "tc_selftest.cu", "", tcKernels, dt.define), dt.bf16)
		})
	}
}

// The same launches and expectations on a GPU: the emulation's layouts
// are the hardware's.
func TestRealGPUTensorCoreHelpers(t *testing.T) {
	for _, dt := range tcTypes {
		t.Run(dt.define, func(t *testing.T) {
			checkTensorCore(t, device(t, "tc_selftest.cu", tcKernels, dt.define), dt.bf16)
		})
	}
}

var tcTypes = []struct {
	define string
	bf16   bool
}{{"-DPB_F16", false}, {"-DPB_BF16", true}}

var tcKernels = []Kernel{{"pb_tc_selftest", "pppp"}, {"pb_ldmatrix_selftest", "pp"}, {"pb_cp_async_zfill_selftest", "pp"}}

func checkTensorCore(t *testing.T, p Runner, bf16 bool) {
	t.Helper()
	r := rand.New(rand.NewSource(1))
	a, b, c := exactSmall(r, 16*16), exactSmall(r, 16*8), exactSmall(r, 16*8)
	bufs := [][]byte{u16bytes(a, bf16), u16bytes(b, bf16), f32bytes(c), make([]byte, 4*16*8)}
	out, err := run(t, p, bufs, Launch{Kernel: "pb_tc_selftest", Grid: D1(1), Block: D1(32),
		Args: []Arg{Ptr(0, 0), Ptr(1, 0), Ptr(2, 0), Ptr(3, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	d := f32s(out[3])
	for i := 0; i < 16; i++ {
		for j := 0; j < 8; j++ {
			want := float64(c[i*8+j])
			for k := 0; k < 16; k++ {
				want += float64(a[i*16+k]) * float64(b[k*8+j])
			}
			if float64(d[i*8+j]) != want {
				t.Errorf("D[%d][%d] = %g, want %g", i, j, d[i*8+j], want)
			}
		}
	}
}

// Every ldmatrix form against the PTX ISA's layout, restated here: for
// matrix j, lane l receives elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1)
// in its low and high halves, of the transpose with .trans; x1 reads
// matrix 0, x2 matrices 0–1, x4 all four, from the rows lanes 8j..8j+7
// name. Elements are distinct (their index), so any misplacement shows.
func TestLdmatrixEmulated(t *testing.T) {
	kernelCheckOnly(t)
	checkLdmatrix(t, build(t, "tc_selftest.cu", "", tcKernels, "-DPB_F16"))
}

// The same on a GPU.
func TestRealGPULdmatrix(t *testing.T) {
	checkLdmatrix(t, device(t, "tc_selftest.cu", tcKernels, "-DPB_F16"))
}

func checkLdmatrix(t *testing.T, p Runner) {
	t.Helper()
	m := make([]byte, 2*256)
	for i := 0; i < 256; i++ {
		binary.LittleEndian.PutUint16(m[2*i:], uint16(i)) // the raw bits: ldmatrix moves, never converts
	}
	out, err := run(t, p, [][]byte{m, make([]byte, 4*32*16)}, Launch{Kernel: "pb_ldmatrix_selftest", Grid: D1(1), Block: D1(32), Args: []Arg{Ptr(0, 0), Ptr(1, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	el := func(j, r, c int) uint32 { return uint32(64*j + 8*r + c) }
	reg := func(j, l int, trans bool) uint32 {
		r, c := l/4, 2*(l%4)
		if trans {
			return el(j, c, r) | el(j, c+1, r)<<16
		}
		return el(j, r, c) | el(j, r, c+1)<<16
	}
	got := make([]uint32, 32*16)
	for i := range got {
		got[i] = binary.LittleEndian.Uint32(out[1][4*i:])
	}
	for l := 0; l < 32; l++ {
		want := map[int]uint32{0: reg(0, l, false), 1: reg(0, l, false), 2: reg(1, l, false), 7: reg(0, l, true), 8: reg(0, l, true), 9: reg(1, l, true)}
		for j := 0; j < 4; j++ {
			want[3+j], want[10+j] = reg(j, l, false), reg(j, l, true)
		}
		for k, w := range want {
			if got[l*16+k] != w {
				t.Errorf("lane %d register slot %d = %#x, want %#x", l, k, got[l*16+k], w)
			}
		}
	}

	g := make([]byte, 32*16)
	for i := range g {
		g[i] = byte(i%251 + 1) // never 0 or 0xee
	}
	out, err = run(t, p, [][]byte{g, make([]byte, 32*16)}, Launch{Kernel: "pb_cp_async_zfill_selftest", Grid: D1(1), Block: D1(32), Args: []Arg{Ptr(0, 0), Ptr(1, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	for l := 0; l < 32; l++ {
		for i := 0; i < 16; i++ {
			want := byte(0)
			if i < l%17 {
				want = g[16*l+i]
			}
			if out[1][16*l+i] != want {
				t.Fatalf("cp.async zfill lane %d byte %d = %#x, want %#x", l, i, out[1][16*l+i], want)
			}
		}
	}
}

func TestRewriteExternShared(t *testing.T) {
	got := RewriteExternShared("extern __shared__ __align__(16) unsigned char smem[];\n\textern __shared__ float s [ ];")
	want := "unsigned char* smem = (unsigned char*)pb_emu_dynamic_smem();\n\tfloat* s = (float*)pb_emu_dynamic_smem();"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if s := "extern \"C\" { __shared__ float x[4]; }"; RewriteExternShared(s) != s {
		t.Errorf("rewrote %q", s)
	}
}

func i32s(b []byte) []int {
	out := make([]int, len(b)/4)
	for i := range out {
		out[i] = int(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out
}

var probeKernels = []Kernel{
	{"emu_shuffles", "p"}, {"emu_barrier", "p"}, {"emu_extern_shared", "pi"}, {"emu_cp_async", "pp"},
	{"emu_deadlock", "p"}, {"emu_missing_lane", "p"}, {"emu_out_of_bounds", "pi"}, {"emu_minmax", "p"},
	{"emu_static_shared", "p"},
}

// With Options.ASan a kernel's write one element past its buffer stops the
// run with AddressSanitizer's report (buffers are allocated exactly).
func TestASanCatchesOutOfBounds(t *testing.T) {
	kernelCheckOnly(t)
	if _, err := Compiler(); err != nil {
		t.Skipf("no C++ compiler: %v", err)
	}
	b := testdataSource(t, "prelude_selftest.cu")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := Build(ctx, t.TempDir(), Options{Name: "prelude_selftest.cu", Source: b, Kernels: probeKernels, ASan: true})
	if err != nil {
		if strings.Contains(err.Error(), "asan") {
			t.Skipf("the compiler has no AddressSanitizer runtime: %v", err)
		}
		t.Fatal(err)
	}
	_, err = run(t, p, [][]byte{make([]byte, 4*5)}, Launch{Kernel: "emu_out_of_bounds", Grid: D1(1), Block: D1(1), Args: []Arg{Ptr(0, 0), I32(5)}})
	if err == nil || !strings.Contains(err.Error(), "AddressSanitizer: heap-buffer-overflow") {
		t.Errorf("err = %v, want AddressSanitizer's heap-buffer-overflow", err)
	}
	if _, err := run(t, p, [][]byte{make([]byte, 4*5)}, Launch{Kernel: "emu_out_of_bounds", Grid: D1(1), Block: D1(1), Args: []Arg{Ptr(0, 0), I32(4)}}); err != nil {
		t.Errorf("the last element in bounds: %v", err)
	}
}

// The prelude's shuffles, barriers, dynamic shared memory and cp.async
// against CUDA's documented semantics, with the expected values derived
// by hand in the comments.
func TestPreludeSemantics(t *testing.T) {
	kernelCheckOnly(t)
	p := build(t, "prelude_selftest.cu", "", probeKernels)
	out, err := run(t, p, [][]byte{make([]byte, 4*4*64)}, Launch{Kernel: "emu_shuffles", Grid: D1(1), Block: D1(64), Args: []Arg{Ptr(0, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	got := i32s(out[0])
	for tid := 0; tid < 64; tid++ {
		lane, warp := tid%32, tid/32*32
		want := [4]int{
			warp + lane ^ 1,    // xor 1 swaps neighbours
			tid + 3,            // down 3 within the warp; lanes 29–31 keep their own
			tid - 2,            // up 2 within segments of 16; lanes 0, 1, 16, 17 keep their own
			warp + lane&^7 + 5, // lane 5 of each 8-lane segment
		}
		if lane+3 >= 32 {
			want[1] = tid
		}
		if lane%16 < 2 {
			want[2] = tid
		}
		for k := 0; k < 4; k++ {
			if got[4*tid+k] != want[k] {
				t.Errorf("thread %d shuffle %d = %d, want %d", tid, k, got[4*tid+k], want[k])
			}
		}
	}

	out, err = run(t, p, [][]byte{make([]byte, 4*64*2)}, Launch{Kernel: "emu_barrier", Grid: D1(2), Block: D1(64), Args: []Arg{Ptr(0, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	got = i32s(out[0])
	for b := 0; b < 2; b++ {
		for tid := 0; tid < 48; tid++ {
			if want := (tid+1)%48*10 + b; got[b*64+tid] != want {
				t.Errorf("barrier block %d thread %d read %d, want %d", b, tid, got[b*64+tid], want)
			}
		}
	}

	const n = 40
	out, err = run(t, p, [][]byte{make([]byte, 4*(n+1))}, Launch{Kernel: "emu_extern_shared", Grid: D1(1), Block: D1(n), DynSmem: 4 * (n + 1), Args: []Arg{Ptr(0, 0), I32(n)}})
	if err != nil {
		t.Fatal(err)
	}
	fs := f32s(out[0])
	for tid := 0; tid < n; tid++ {
		if fs[tid] != float32(n-1-tid) {
			t.Errorf("dynamic shared memory: thread %d read %g, want %d", tid, fs[tid], n-1-tid)
		}
	}
	if !math.IsNaN(float64(fs[n])) {
		t.Errorf("unwritten dynamic shared memory reads %g, want the 0xff fill (NaN)", fs[n])
	}

	out, err = run(t, p, [][]byte{make([]byte, 4*4)}, Launch{Kernel: "emu_static_shared", Grid: D1(2), Block: D1(1), Args: []Arg{Ptr(0, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	if fs := f32s(out[0]); !math.IsNaN(float64(fs[0])) || fs[1] != 1 || !math.IsNaN(float64(fs[2])) || fs[3] != 1 {
		t.Errorf("static shared memory read before a write gave %v, want [NaN 1 NaN 1] (filled before each block)", fs)
	}

	out, err = run(t, p, [][]byte{make([]byte, 4*5)}, Launch{Kernel: "emu_minmax", Grid: D1(1), Block: D1(1), Args: []Arg{Ptr(0, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := i32s(out[0]), []int{-3, 5, 2, -1, int(int32(math.Float32bits(-2)))}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("min/max = %v, want %v", got, want)
	}

	out, err = run(t, p, [][]byte{f32bytes([]float32{1, 2, 3, 4}), make([]byte, 8)},
		Launch{Kernel: "emu_cp_async", Grid: D1(1), Block: D1(1), DynSmem: 16, Args: []Arg{Ptr(0, 0), Ptr(1, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	if fs := f32s(out[1]); !math.IsNaN(float64(fs[0])) || fs[1] != 4 {
		t.Errorf("cp.async: before the wait %g (want NaN, the copy not yet done), after %g (want 4)", fs[0], fs[1])
	}
}

// A divergent barrier stops as a deadlock, and a shuffle from a lane that
// skipped it stops the run: both with exit status 3 and a message.
func TestPreludeStopsOnFaults(t *testing.T) {
	kernelCheckOnly(t)
	t.Setenv("PB_EMU_WATCHDOG_S", "1")
	p := build(t, "prelude_selftest.cu", "", probeKernels)
	for _, c := range []struct{ kernel, want string }{
		{"emu_deadlock", "hostemu: deadlock: no barrier moved for 1 s"},
		{"emu_missing_lane", "warp exchange reads lane 31, which did not take part"},
	} {
		_, err := run(t, p, [][]byte{make([]byte, 4*32)}, Launch{Kernel: c.kernel, Grid: D1(1), Block: D1(32), Args: []Arg{Ptr(0, 0)}})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "exit status 3") {
			t.Errorf("%s: err = %v, want %q and exit status 3", c.kernel, err, c.want)
		}
	}
	// A launch the program does not know, and arguments of the wrong kinds,
	// are refused before anything runs.
	if _, err := run(t, p, nil, Launch{Kernel: "nope", Grid: D1(1), Block: D1(1)}); err == nil || !strings.Contains(err.Error(), "was not built with") {
		t.Errorf("unknown kernel: %v", err)
	}
	if _, err := run(t, p, [][]byte{make([]byte, 4)}, Launch{Kernel: "emu_extern_shared", Grid: D1(1), Block: D1(1), Args: []Arg{Ptr(0, 0), F32(1)}}); err == nil || !strings.Contains(err.Error(), `arguments "pf", the kernel takes "pi"`) {
		t.Errorf("wrong argument kinds: %v", err)
	}
}

// kernelCheckOnly skips a test that compiles kernels with g++ or NVRTC
// (tens of seconds on two cores) unless PARTBENCH_KERNEL_CHECK=1, which
// make kernel-check sets: make test runs them there once, not again in
// go test ./... .
func kernelCheckOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("PARTBENCH_KERNEL_CHECK") != "1" {
		t.Skip("a kernel-check test: run make kernel-check (or set PARTBENCH_KERNEL_CHECK=1)")
	}
}
