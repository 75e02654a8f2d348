package cuda

import (
	"fmt"
	"sync"

	"github.com/partbench/partbench/cgo/dl"
)

// DataType is a cudaDataType (library_types.h).
type DataType int32

// cudaDataType values from the public library_types.h.
const (
	R32F  DataType = 0  // CUDA_R_32F
	R16F  DataType = 2  // CUDA_R_16F
	R16BF DataType = 14 // CUDA_R_16BF
)

// Size is the element size in bytes (0 for a type partbench does not use).
func (t DataType) Size() int {
	switch t {
	case R32F:
		return 4
	case R16F, R16BF:
		return 2
	}
	return 0
}

func (t DataType) String() string {
	switch t {
	case R32F:
		return "CUDA_R_32F"
	case R16F:
		return "CUDA_R_16F"
	case R16BF:
		return "CUDA_R_16BF"
	}
	return fmt.Sprintf("cudaDataType(%d)", int32(t))
}

// Operation is a cublasOperation_t.
type Operation int32

const (
	OpN Operation = 0 // CUBLAS_OP_N
	OpT Operation = 1 // CUBLAS_OP_T
)

// ComputeType is a cublasComputeType_t (cuBLAS 11+).
type ComputeType int32

const (
	Compute32F         ComputeType = 68 // CUBLAS_COMPUTE_32F: fp32 accumulation, no TF32 down-conversion
	Compute32FPedantic ComputeType = 69 // CUBLAS_COMPUTE_32F_PEDANTIC
)

// GemmAlgo is a cublasGemmAlgo_t.
type GemmAlgo int32

// GemmDefault lets cuBLAS choose (CUBLAS_GEMM_DEFAULT = -1; tensor cores
// are used for 16-bit inputs whenever the math mode allows).
const GemmDefault GemmAlgo = -1

// MathMode is a cublasMath_t.
type MathMode int32

const (
	DefaultMath  MathMode = 0 // CUBLAS_DEFAULT_MATH
	PedanticMath MathMode = 2 // CUBLAS_PEDANTIC_MATH
)

// GemmEx is one cublasGemmEx call, column-major as cuBLAS sees it:
// C[m×n] = alpha·op(A)[m×k]·op(B)[k×n] + beta·C, with A, B, C device
// matrices of leading dimensions LDA, LDB, LDC (in elements). Alpha and
// Beta are float scalars in host memory, as Compute32F takes them.
type GemmEx struct {
	TransA, TransB Operation
	M, N, K        int
	Alpha          float32
	A              DevicePtr
	AType          DataType
	LDA            int
	B              DevicePtr
	BType          DataType
	LDB            int
	Beta           float32
	C              DevicePtr
	CType          DataType
	LDC            int
	Compute        ComputeType
	Algo           GemmAlgo
}

// BLAS is the loaded cuBLAS library.
type BLAS struct {
	dl     *dl.Library
	c      blasAPI
	closed sync.Once
}

// LoadCUBLAS finds cuBLAS (dl.CUBLAS: libcublas.so.13, .12, .11 in
// $PARTBENCH_CUBLAS_LIB, LD_LIBRARY_PATH, $CUDA_HOME, the system loader,
// the nvidia-cublas wheels) and binds it.
func LoadCUBLAS() (*BLAS, error) {
	lib, err := dl.Find(dl.CUBLAS())
	if err != nil {
		return nil, fmt.Errorf("cublas: %w", err)
	}
	b, err := LoadCUBLASFrom(lib)
	if err != nil {
		lib.Close()
		return nil, err
	}
	return b, nil
}

// LoadCUBLASFrom binds an already opened cuBLAS (the test seam). On
// success the BLAS owns lib.
func LoadCUBLASFrom(lib *dl.Library) (*BLAS, error) {
	c, err := bindBLAS(lib)
	if err != nil {
		return nil, err
	}
	return &BLAS{dl: lib, c: c}, nil
}

// Path is the file the library was loaded from.
func (b *BLAS) Path() string { return b.dl.File() }

// Close releases the symbol table and closes the library; every Handle
// must be destroyed first. Closing twice does nothing.
func (b *BLAS) Close() error {
	var err error
	b.closed.Do(func() {
		b.c.free()
		err = b.dl.Close()
	})
	return err
}

func (b *BLAS) fail(call string, s BLASStatus) error {
	return callError("cublas", call, s, "cublasGetStatusString", b.c.statusString(s))
}

// Handle is a cublasHandle_t, bound to the context current when it was
// created. Calls on one Handle come from one goroutine at a time, with
// that context current.
type Handle struct {
	b *BLAS
	h uintptr
}

// NewHandle creates a handle in the current context (cublasCreate_v2).
func (b *BLAS) NewHandle() (*Handle, error) {
	h, s := b.c.create()
	if s != BLASSuccess {
		return nil, b.fail("cublasCreate_v2", s)
	}
	return &Handle{b: b, h: h}, nil
}

// Version is cuBLAS's version (cublasGetVersion_v2: major·10000 + minor·100 + patch).
func (h *Handle) Version() (int, error) {
	v, s := h.b.c.getVersion(h.h)
	if s != BLASSuccess {
		return 0, h.b.fail("cublasGetVersion_v2", s)
	}
	return v, nil
}

// SetStream makes the handle queue its kernels on st (cublasSetStream_v2).
func (h *Handle) SetStream(st Stream) error {
	if s := h.b.c.setStream(h.h, st.h); s != BLASSuccess {
		return h.b.fail("cublasSetStream_v2", s)
	}
	return nil
}

// HasWorkspace reports whether SetWorkspace is available (cuBLAS ≥ 11.4).
func (h *Handle) HasWorkspace() bool { return h.b.c.hasWorkspace() }

// SetWorkspace gives the handle a fixed device workspace
// (cublasSetWorkspace_v2), so a captured GEMM never allocates.
func (h *Handle) SetWorkspace(ws DevicePtr, bytes int64) error {
	if !h.b.c.hasWorkspace() {
		return fmt.Errorf("cublas: %s lacks cublasSetWorkspace_v2 (cuBLAS 11.4 or newer)", h.b.Path())
	}
	if s := h.b.c.setWorkspace(h.h, ws, bytes); s != BLASSuccess {
		return h.b.fail("cublasSetWorkspace_v2", s)
	}
	return nil
}

// SetMathMode sets the handle's math mode (cublasSetMathMode).
func (h *Handle) SetMathMode(m MathMode) error {
	if s := h.b.c.setMathMode(h.h, m); s != BLASSuccess {
		return h.b.fail("cublasSetMathMode", s)
	}
	return nil
}

// Destroy releases the handle (cublasDestroy_v2).
func (h *Handle) Destroy() error {
	if s := h.b.c.destroy(h.h); s != BLASSuccess {
		return h.b.fail("cublasDestroy_v2", s)
	}
	return nil
}

// GemmEx queues one cublasGemmEx.
func (h *Handle) GemmEx(g GemmEx) error {
	if g.M < 0 || g.N < 0 || g.K < 0 {
		return fmt.Errorf("cublas: cublasGemmEx: negative size m=%d n=%d k=%d", g.M, g.N, g.K)
	}
	if s := h.b.c.gemmEx(h.h, g); s != BLASSuccess {
		return h.b.fail("cublasGemmEx", s)
	}
	return nil
}

// StridedBatched is a cublasGemmStridedBatchedEx: Batch products of
// GemmEx's shape, the i-th with its operands at A + i·StrideA, B +
// i·StrideB and C + i·StrideC (strides in elements).
type StridedBatched struct {
	GemmEx
	StrideA, StrideB, StrideC int64
	Batch                     int
}

// HasStridedBatched says whether the library has
// cublasGemmStridedBatchedEx.
func (h *Handle) HasStridedBatched() bool { return h.b.c.hasStridedBatched() }

// GemmStridedBatchedEx queues one cublasGemmStridedBatchedEx.
func (h *Handle) GemmStridedBatchedEx(g StridedBatched) error {
	if g.M < 0 || g.N < 0 || g.K < 0 || g.Batch < 0 {
		return fmt.Errorf("cublas: cublasGemmStridedBatchedEx: negative size m=%d n=%d k=%d batch=%d", g.M, g.N, g.K, g.Batch)
	}
	if !h.b.c.hasStridedBatched() {
		return fmt.Errorf("cublas: %s has no cublasGemmStridedBatchedEx", h.b.Path())
	}
	if s := h.b.c.gemmStridedBatchedEx(h.h, g.GemmEx, g.StrideA, g.StrideB, g.StrideC, g.Batch); s != BLASSuccess {
		return h.b.fail("cublasGemmStridedBatchedEx", s)
	}
	return nil
}

// RowMajorGemm returns the cublasGemmEx that computes, for row-major
// matrices, C[m×n] = A[m×k] · B[k×n] (alpha 1, beta 0, fp32 accumulation),
// with A, B and C of element type t and C overwritten.
//
// cuBLAS is column-major. A row-major r×c matrix with row stride c is, read
// column-major with leading dimension c, its c×r transpose. So the
// row-major product C = A·B is the column-major product Cᵀ = Bᵀ·Aᵀ, and
// every transpose is free: pass B as the first operand (n×k column-major,
// ld n), A as the second (k×m, ld k), no transposition, m and n swapped,
// and C comes out as the n×m column-major Cᵀ, i.e. row-major C (ld n).
func RowMajorGemm(m, n, k int, a, b, c DevicePtr, t DataType) GemmEx {
	return GemmEx{
		TransA: OpN, TransB: OpN,
		M: n, N: m, K: k,
		Alpha: 1,
		A:     b, AType: t, LDA: n,
		B: a, BType: t, LDB: k,
		Beta: 0,
		C:    c, CType: t, LDC: n,
		Compute: Compute32F, Algo: GemmDefault,
	}
}
