//go:build cgo

package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/cgo/dl"
)

func loadBLAS(t *testing.T, libs cudatest.Libs) *BLAS {
	t.Helper()
	lib, err := dl.Open(libs.CUBLAS, dl.Now|dl.Local)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadCUBLASFrom(lib)
	if err != nil {
		lib.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func blasTrace(b *BLAS) string { return b.c.statusString(BLASStatus(cudatest.Trace)) }

// RowMajorGemm on row-major A[2×3] and B[3×4]: the fake computes the
// column-major product cuBLAS would, on host memory, and the result must
// be the row-major A·B.
func TestRowMajorGemm(t *testing.T) {
	d, libs := loadFake(t)
	pinned(t, d)
	b := loadBLAS(t, libs)
	h, err := b.NewHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Destroy()
	if v, err := h.Version(); v != 130100 || err != nil {
		t.Errorf("Version = %d, %v", v, err)
	}
	s, _ := d.NewStream(StreamNonBlocking)
	defer s.Destroy()
	if err := h.SetStream(s); err != nil {
		t.Fatal(err)
	}
	ws, _ := d.MemAlloc(1 << 20)
	defer d.MemFree(ws)
	if !h.HasWorkspace() {
		t.Fatal("fake has cublasSetWorkspace_v2")
	}
	if err := h.SetWorkspace(ws, 1<<20); err != nil || blasTrace(b) != "cublasSetWorkspace_v2(bytes=1048576)" {
		t.Errorf("SetWorkspace: %v, fake saw %q", err, blasTrace(b))
	}

	// A = [1 2 3; 4 5 6], B = [1 0 0 1; 0 1 0 1; 0 0 1 1]:
	// A·B = [1 2 3 6; 4 5 6 15] (each row of A, then the row sum).
	a := []float32{1, 2, 3, 4, 5, 6}
	bm := []float32{1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1}
	want := []float32{1, 2, 3, 6, 4, 5, 6, 15}
	pa, _ := d.MemAlloc(4 * 6)
	pb, _ := d.MemAlloc(4 * 12)
	pc, _ := d.MemAlloc(4 * 8)
	for _, p := range []DevicePtr{pa, pb, pc} {
		defer d.MemFree(p)
	}
	d.CopyHtoD(pa, Bytes(a))
	d.CopyHtoD(pb, Bytes(bm))
	if err := h.GemmEx(RowMajorGemm(2, 4, 3, pa, pb, pc, R32F)); err != nil {
		t.Fatal(err)
	}
	// cuBLAS sees Cᵀ[4×2] = Bᵀ[4×3]·Aᵀ[3×2]: m = 4, n = 2, k = 3, B first with ld 4, A with ld 3.
	wantCall := "cublasGemmEx(ta=0, tb=0, m=4, n=2, k=3, alpha=1, atype=0, lda=4, btype=0, ldb=3, " +
		"beta=0, ctype=0, ldc=4, compute=68, algo=-1)"
	if got := blasTrace(b); got != wantCall {
		t.Errorf("fake saw %q\nwant      %q", got, wantCall)
	}
	got := make([]float32, 8)
	if err := d.CopyDtoH(Bytes(got), pc); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("C = %v, want %v", got, want)
		}
	}

	// fp16 operands cross with CUDA_R_16F = 2 (the fake only records them).
	if err := h.GemmEx(RowMajorGemm(2, 4, 3, pa, pb, pc, R16F)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(blasTrace(b), "atype=2, lda=4, btype=2, ldb=3, beta=0, ctype=2") {
		t.Errorf("fp16 call: fake saw %q", blasTrace(b))
	}

	bad := RowMajorGemm(2, 4, 3, pa, pb, pc, R32F)
	bad.LDA = 1
	err = h.GemmEx(bad)
	if !errors.Is(err, BLASInvalidValue) ||
		!strings.HasSuffix(err.Error(), "(cublasGetStatusString: fake: an invalid numeric value was used as an argument)") {
		t.Errorf("bad leading dimension: err = %v", err)
	}
}

// cuBLAS before 11.4: no status strings (errors carry partbench's text
// alone) and no workspace call.
func TestOldCUBLAS(t *testing.T) {
	d, libs := loadFake(t, "FAKE_OLD")
	pinned(t, d)
	b := loadBLAS(t, libs)
	h, err := b.NewHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Destroy()
	if h.HasWorkspace() {
		t.Error("HasWorkspace without cublasSetWorkspace_v2")
	}
	if err := h.SetWorkspace(0, 0); err == nil || !strings.Contains(err.Error(), "cublasSetWorkspace_v2") {
		t.Errorf("SetWorkspace: err = %v", err)
	}
	err = h.GemmEx(GemmEx{M: 1, N: 1, K: 1, LDA: 0, LDB: 1, LDC: 1})
	if err == nil || err.Error() != "cublas: cublasGemmEx: "+BLASInvalidValue.Error() {
		t.Errorf("err = %v", err)
	}
	if err := h.GemmEx(GemmEx{M: -1}); err == nil {
		t.Error("negative m accepted")
	}
	if h.HasStridedBatched() {
		t.Error("HasStridedBatched without cublasGemmStridedBatchedEx")
	}
	if err := h.GemmStridedBatchedEx(StridedBatched{GemmEx: GemmEx{M: 1, N: 1, K: 1, LDA: 1, LDB: 1, LDC: 1}, Batch: 1}); err == nil ||
		!strings.Contains(err.Error(), "has no cublasGemmStridedBatchedEx") {
		t.Errorf("GemmStridedBatchedEx without the symbol: err = %v", err)
	}
}

// Two row-major products in one cublasGemmStridedBatchedEx: batch i takes
// A at pa + 6i, B at pb + 12i and writes C at pc + 8i (elements). Batch 0
// is TestRowMajorGemm's product, [1 2 3 6; 4 5 6 15]; batch 1 has A twice
// as large, so C doubles: [2 4 6 12; 8 10 12 30].
func TestStridedBatchedGemm(t *testing.T) {
	d, libs := loadFake(t)
	pinned(t, d)
	b := loadBLAS(t, libs)
	h, err := b.NewHandle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Destroy()
	if !h.HasStridedBatched() {
		t.Fatal("the fake has cublasGemmStridedBatchedEx")
	}
	a := []float32{1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12}
	bm := []float32{1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1}
	bm = append(bm, bm...)
	want := []float32{1, 2, 3, 6, 4, 5, 6, 15, 2, 4, 6, 12, 8, 10, 12, 30}
	pa, _ := d.MemAlloc(4 * 12)
	pb, _ := d.MemAlloc(4 * 24)
	pc, _ := d.MemAlloc(4 * 16)
	for _, p := range []DevicePtr{pa, pb, pc} {
		defer d.MemFree(p)
	}
	d.CopyHtoD(pa, Bytes(a))
	d.CopyHtoD(pb, Bytes(bm))
	// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ (RowMajorGemm): cuBLAS's
	// A operand is B, so its stride is B's 12 and its B operand's A's 6.
	g := StridedBatched{GemmEx: RowMajorGemm(2, 4, 3, pa, pb, pc, R32F), StrideA: 12, StrideB: 6, StrideC: 8, Batch: 2}
	if err := h.GemmStridedBatchedEx(g); err != nil {
		t.Fatal(err)
	}
	wantCall := "cublasGemmStridedBatchedEx(ta=0, tb=0, m=4, n=2, k=3, alpha=1, atype=0, lda=4, strideA=12, btype=0, ldb=3, " +
		"strideB=6, beta=0, ctype=0, ldc=4, strideC=8, batch=2, compute=68, algo=-1)"
	if got := blasTrace(b); got != wantCall {
		t.Errorf("fake saw %q\nwant      %q", got, wantCall)
	}
	got := make([]float32, 16)
	if err := d.CopyDtoH(Bytes(got), pc); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("C = %v, want %v", got, want)
		}
	}
	if err := h.GemmStridedBatchedEx(StridedBatched{Batch: -1}); err == nil {
		t.Error("negative batch accepted")
	}
}

func TestDataTypesFromLibraryTypesH(t *testing.T) {
	// library_types.h: CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14;
	// cublas_api.h: CUBLAS_COMPUTE_32F = 68, CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_GEMM_DEFAULT = -1.
	if R32F != 0 || R16F != 2 || R16BF != 14 || Compute32F != 68 || OpN != 0 || OpT != 1 || GemmDefault != -1 {
		t.Error("cuBLAS enum values differ from the headers")
	}
	if R16BF.Size() != 2 || R32F.Size() != 4 || DataType(7).Size() != 0 {
		t.Error("sizes")
	}
}
