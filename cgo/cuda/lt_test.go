//go:build cgo

package cuda

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/cgo/dl"
)

func loadLt(t *testing.T, libs cudatest.Libs) *BLASLt {
	t.Helper()
	lib, err := dl.Open(libs.CUBLASLt, dl.Now|dl.Local)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadCUBLASLtFrom(lib)
	if err != nil {
		lib.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func ltTrace(b *BLASLt) string { return b.c.statusString(BLASStatus(cudatest.Trace)) }

// ltFixture is a driver, a stream, a cuBLASLt handle and the row-major
// operands of TestRowMajorGemm: A[2×3] = [1 2 3; 4 5 6], B[3×4] =
// [1 0 0 1; 0 1 0 1; 0 0 1 1], so A·B = [1 2 3 6; 4 5 6 15].
type ltFixture struct {
	d        *Driver
	st       Stream
	b        *BLASLt
	h        *LtHandle
	a, bm, c DevicePtr
	bias, ws DevicePtr
	wsBytes  int64
}

func newLtFixture(t *testing.T, defines ...string) *ltFixture {
	t.Helper()
	d, libs := loadFake(t, defines...)
	pinned(t, d)
	f := &ltFixture{d: d, b: loadLt(t, libs), wsBytes: 1 << 20}
	var err error
	if f.h, err = f.b.NewHandle(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.h.Destroy() })
	if f.st, err = d.NewStream(StreamNonBlocking); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.st.Destroy() })
	for _, p := range []struct {
		into  *DevicePtr
		bytes int64
	}{{&f.a, 4 * 6}, {&f.bm, 4 * 12}, {&f.c, 4 * 8}, {&f.bias, 4 * 4}, {&f.ws, f.wsBytes}} {
		if *p.into, err = d.MemAlloc(p.bytes); err != nil {
			t.Fatal(err)
		}
		ptr := *p.into
		t.Cleanup(func() { d.MemFree(ptr) })
	}
	d.CopyHtoD(f.a, Bytes([]float32{1, 2, 3, 4, 5, 6}))
	d.CopyHtoD(f.bm, Bytes([]float32{1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1}))
	return f
}

func (f *ltFixture) result(t *testing.T) []float32 {
	t.Helper()
	got := make([]float32, 8)
	if err := f.d.CopyDtoH(Bytes(got), f.c); err != nil {
		t.Fatal(err)
	}
	return got
}

func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// The row-major product with a bias per output feature through cuBLASLt's
// BIAS epilogue: cuBLASLt sees Dᵀ[4×2] = Bᵀ·Aᵀ (RowMajorGemm's trick), so
// its rows are the 4 features and the bias [10 20 30 40] adds to each row
// of Dᵀ, i.e. to each column of the row-major D:
// [1 2 3 6; 4 5 6 15] + bias = [11 22 33 46; 14 25 36 55]. With
// GELU_BIAS and bias [−1 −2 −3 −6]: gelu of [0 0 0 0; 3 3 3 9].
func TestLtBiasEpilogue(t *testing.T) {
	f := newLtFixture(t)
	if v := f.b.Version(); v != 130100 {
		t.Errorf("Version = %d, want the fake's 130100", v)
	}
	for _, tc := range []struct {
		epi  LtEpilogue
		bias []float32
		want []float64
	}{
		{LtEpilogueBias, []float32{10, 20, 30, 40}, []float64{11, 22, 33, 46, 14, 25, 36, 55}},
		{LtEpilogueGELUBias, []float32{-1, -2, -3, -6}, []float64{0, 0, 0, 0, geluTanh(3), geluTanh(3), geluTanh(3), geluTanh(9)}},
		{LtEpilogueDefault, nil, []float64{1, 2, 3, 6, 4, 5, 6, 15}},
	} {
		var bias DevicePtr
		if tc.bias != nil {
			f.d.CopyHtoD(f.bias, Bytes(tc.bias))
			bias = f.bias
		}
		m := LtFromGemm(RowMajorGemm(2, 4, 3, f.a, f.bm, f.c, R32F), tc.epi, bias)
		p, err := f.h.Plan(m, f.wsBytes)
		if err != nil {
			t.Fatalf("%v: %v", tc.epi, err)
		}
		wantPlan := "cublasLtMatmulAlgoGetHeuristic(m=4, n=2, k=3, type=0, epilogue=" + strconv.Itoa(int(tc.epi)) + ", maxWs=1048576, align="
		if got := ltTrace(f.b); !strings.HasPrefix(got, wantPlan) {
			t.Errorf("fake saw %q\nwant a prefix %q", got, wantPlan)
		}
		if p.Workspace() != 1024 {
			t.Errorf("the fake's algorithm asks for 1024 bytes of workspace, plan says %d", p.Workspace())
		}
		if err := p.Run(f.ws, f.wsBytes, f.st); err != nil {
			t.Fatal(err)
		}
		if got := ltTrace(f.b); !strings.Contains(got, "ta=0, tb=0, m=4, n=2, k=3, alpha=1, beta=0, type=0, lda=4, ldb=3, ldd=4, epilogue="+strconv.Itoa(int(tc.epi))) {
			t.Errorf("%v: fake saw %q", tc.epi, got)
		}
		got := f.result(t)
		for i := range tc.want {
			if math.Abs(float64(got[i])-tc.want[i]) > 1e-5 {
				t.Errorf("%v: D = %v, want %v", tc.epi, got, tc.want)
				break
			}
		}
		if err := p.Destroy(); err != nil {
			t.Error(err)
		}
	}
}

// What cuBLASLt (or partbench before it) refuses, each with the error
// naming the call and the reason.
func TestLtRefusals(t *testing.T) {
	f := newLtFixture(t)
	good := LtFromGemm(RowMajorGemm(2, 4, 3, f.a, f.bm, f.c, R32F), LtEpilogueBias, f.bias)
	for _, tc := range []struct {
		name string
		edit func(m *LtMatmul)
		is   error
		want string
	}{
		{"empty product", func(m *LtMatmul) { m.K = 0 }, nil, "sizes m=4 n=2 k=0, want each > 0"},
		{"null bias", func(m *LtMatmul) { m.Bias = 0 }, nil, "CUBLASLT_EPILOGUE_BIAS with a null bias pointer"},
		{"ReLU", func(m *LtMatmul) { m.Epilogue = 2 }, nil, "epilogue cublasLtEpilogue_t(2) is not one partbench uses"},
		{"leading dimension below the rows", func(m *LtMatmul) { m.LDA = 1 }, BLASInvalidValue,
			"cublasLtMatrixLayoutCreate(CUDA_R_32F, 4×3, ld 1)"},
		{"fp32 compute, fp16 scale", func(m *LtMatmul) { m.Compute = 77 }, BLASNotSupported, "cublasLtMatmulDescCreate"},
		{"mixed element types", func(m *LtMatmul) { m.CType = R16F }, ErrLtNoAlgorithm, "no algorithm for this product"},
		{"null D", func(m *LtMatmul) { m.D = 0 }, nil, "a null operand"},
	} {
		m := good
		tc.edit(&m)
		_, err := f.h.Plan(m, f.wsBytes)
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: err = %v, want it to say %q (and wrap %v)", tc.name, err, tc.want, tc.is)
		}
	}
	p, err := f.h.Plan(good, f.wsBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Destroy()
	for _, tc := range []struct {
		name     string
		a, d, ws DevicePtr
		wsBytes  int64
		want     string
	}{
		{"null A", 0, f.c, f.ws, f.wsBytes, "null operand"},
		{"workspace below the algorithm's", f.bm, f.c, f.ws, 512, "workspace of 512 bytes, the algorithm needs 1024"},
		{"A less aligned than planned", f.bm + 4, f.c, f.ws, f.wsBytes, "operands aligned to 4,"},
	} {
		if err := p.RunOn(tc.a, f.a, tc.d, tc.ws, tc.wsBytes, f.st); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to say %q", tc.name, err, tc.want)
		}
	}
}

// The fake refuses descriptors that make no product (A 4×3 against B
// 2×2), as cuBLASLt does, through the raw calls the plan makes.
func TestLtFakeRefusesShapes(t *testing.T) {
	f := newLtFixture(t)
	c := f.b.c
	d, s := c.descCreate(Compute32F, R32F)
	if s != BLASSuccess {
		t.Fatal(s)
	}
	defer c.descDestroy(d)
	la, _ := c.layoutCreate(R32F, 4, 3, 4)
	lb, _ := c.layoutCreate(R32F, 2, 2, 2)
	lc, _ := c.layoutCreate(R32F, 4, 2, 4)
	pref, _ := c.prefCreate()
	for _, l := range []uintptr{la, lb, lc} {
		defer c.layoutDestroy(l)
	}
	defer c.prefDestroy(pref)
	if _, _, n, s := c.heuristic(f.h.h, d, la, lb, lc, pref); s != BLASInvalidValue || n != 0 {
		t.Errorf("heuristic on 4×3 · 2×2: %v, %d algorithms; want CUBLAS_STATUS_INVALID_VALUE and none", s, n)
	}
	if s := c.descSet(d, ltDescEpilogue, uint64(LtEpilogueBias), 8); s != BLASInvalidValue {
		t.Errorf("EPILOGUE set with 8 bytes (it is a uint32): %v, want CUBLAS_STATUS_INVALID_VALUE", s)
	}
}

// A heuristic that finds nothing is ErrLtNoAlgorithm, so the caller falls
// back to cublasGemmEx.
func TestLtNoAlgorithm(t *testing.T) {
	f := newLtFixture(t, "FAKE_LT_NO_ALGO")
	_, err := f.h.Plan(LtFromGemm(RowMajorGemm(2, 4, 3, f.a, f.bm, f.c, R16F), LtEpilogueBias, f.bias), f.wsBytes)
	if !errors.Is(err, ErrLtNoAlgorithm) {
		t.Errorf("err = %v, want ErrLtNoAlgorithm", err)
	}
}

// The driver is not cuBLASLt: binding it names what is missing.
func TestLtMissingSymbols(t *testing.T) {
	libs := cudatest.Build(t)
	lib, err := dl.Open(libs.Driver, dl.Now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LoadCUBLASLtFrom(lib)
	lib.Close()
	if err == nil || !strings.Contains(err.Error(), "cublasLtMatmul") || !strings.Contains(err.Error(), "cuBLASLt 11.3 or newer") {
		t.Errorf("err = %v, want it to name cublasLtMatmul", err)
	}
}

// LoadCUBLASLt searches PARTBENCH_CUBLASLT_LIB first.
func TestLoadCUBLASLtFromEnv(t *testing.T) {
	libs := cudatest.Build(t)
	libs.Setenv(t)
	b, err := LoadCUBLASLt()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Path() != libs.CUBLASLt {
		t.Errorf("cuBLASLt loaded from %s, want %s", b.Path(), libs.CUBLASLt)
	}
}

// cublasLtMatmulHeuristicResult_t as C lays it out: 96 bytes, the
// algorithm's 8 uint64 first, then workspaceSize (offset 64), state (72),
// wavesCount (76), int reserved[4] (80..95).
func TestLtHeuristicLayout(t *testing.T) {
	for _, c := range []struct {
		what int
		want uintptr
	}{{0, ltHeuristicBytes}, {1, 64}, {2, 72}, {3, 76}} {
		if got := ltLayout(c.what); got != c.want {
			t.Errorf("pblt_layout(%d) = %d, want %d", c.what, got, c.want)
		}
	}
}
