package cuda

import (
	"errors"
	"fmt"
	"sync"

	"github.com/partbench/partbench/cgo/dl"
)

// cuBLASLt: matrix products with an epilogue (a bias added to every
// column of the column-major output, optionally GELU after it) in the
// GEMM's own kernel. The enum values below are those of NVIDIA's public
// cublasLt.h (the CUDA 11.x header, where each first appeared; unchanged
// in the cuBLAS 12 and 13 documentation).

// LtEpilogue is a cublasLtEpilogue_t.
type LtEpilogue uint32

const (
	LtEpilogueDefault  LtEpilogue = 1  // CUBLASLT_EPILOGUE_DEFAULT: scale and store
	LtEpilogueBias     LtEpilogue = 4  // CUBLASLT_EPILOGUE_BIAS: + bias[row of D], broadcast over D's columns
	LtEpilogueGELU     LtEpilogue = 32 // CUBLASLT_EPILOGUE_GELU
	LtEpilogueGELUBias LtEpilogue = 36 // CUBLASLT_EPILOGUE_GELU_BIAS (GELU | BIAS): the bias, then GELU
)

func (e LtEpilogue) String() string {
	switch e {
	case LtEpilogueDefault:
		return "CUBLASLT_EPILOGUE_DEFAULT"
	case LtEpilogueBias:
		return "CUBLASLT_EPILOGUE_BIAS"
	case LtEpilogueGELU:
		return "CUBLASLT_EPILOGUE_GELU"
	case LtEpilogueGELUBias:
		return "CUBLASLT_EPILOGUE_GELU_BIAS"
	}
	return fmt.Sprintf("cublasLtEpilogue_t(%d)", uint32(e))
}

// cublasLtMatmulDescAttributes_t values and the sizes of their values.
const (
	ltDescComputeType = 0 // CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, int32
	ltDescScaleType   = 1 // CUBLASLT_MATMUL_DESC_SCALE_TYPE, int32 (cudaDataType)
	ltDescTransA      = 3 // CUBLASLT_MATMUL_DESC_TRANSA, int32 (cublasOperation_t)
	ltDescTransB      = 4 // CUBLASLT_MATMUL_DESC_TRANSB, int32
	ltDescEpilogue    = 7 // CUBLASLT_MATMUL_DESC_EPILOGUE, uint32
	ltDescBiasPointer = 8 // CUBLASLT_MATMUL_DESC_BIAS_POINTER, const void*
)

// cublasLtMatrixLayoutAttribute_t and cublasLtOrder_t values.
const (
	ltLayoutOrder = 1 // CUBLASLT_MATRIX_LAYOUT_ORDER, int32
	ltOrderCol    = 0 // CUBLASLT_ORDER_COL: ld is the stride of a column
)

// cublasLtMatmulPreferenceAttributes_t values.
const (
	ltPrefMaxWorkspaceBytes = 1 // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64
	ltPrefMinAlignA         = 5 // CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32 (default 256)
	ltPrefMinAlignB         = 6 // …_B_BYTES
	ltPrefMinAlignC         = 7 // …_C_BYTES
	ltPrefMinAlignD         = 8 // …_D_BYTES
)

// ltHeuristicBytes is sizeof(cublasLtMatmulHeuristicResult_t): the
// algorithm (8 uint64), workspaceSize (size_t), state (cublasStatus_t),
// wavesCount (float), int reserved[4].
const ltHeuristicBytes = 96

// ErrLtNoAlgorithm is the heuristic finding no algorithm for a product
// (cublasLtMatmulAlgoGetHeuristic returning none, or
// CUBLAS_STATUS_NOT_SUPPORTED): the caller runs the product another way.
var ErrLtNoAlgorithm = errors.New("cublaslt: no algorithm for this product")

// LtMatmul is one cublasLtMatmul, column-major as cuBLASLt sees it (the
// fields of GemmEx): D[m×n] = op(A)[m×k]·op(B)[k×n] (+ bias[m] in every
// column), alpha 1 and beta 0, D (of CType, leading dimension LDC) in
// place of C, fp32 scale.
type LtMatmul struct {
	TransA, TransB Operation
	M, N, K        int
	A, B, D        DevicePtr
	AType, BType   DataType
	CType          DataType
	LDA, LDB, LDC  int
	Compute        ComputeType
	Epilogue       LtEpilogue
	Bias           DevicePtr // CType elements, M of them (with a bias epilogue)
}

// LtFromGemm is the LtMatmul of a GemmEx (alpha 1, beta 0), with
// epilogue e and bias b: RowMajorGemm's product with a bias per output
// feature is LtFromGemm(RowMajorGemm(…), LtEpilogueBias, bias) — the
// column-major Dᵀ's rows are the row-major output's features.
func LtFromGemm(g GemmEx, e LtEpilogue, bias DevicePtr) LtMatmul {
	return LtMatmul{TransA: g.TransA, TransB: g.TransB, M: g.M, N: g.N, K: g.K, A: g.A, B: g.B, D: g.C,
		AType: g.AType, BType: g.BType, CType: g.CType, LDA: g.LDA, LDB: g.LDB, LDC: g.LDC,
		Compute: g.Compute, Epilogue: e, Bias: bias}
}

// hasBias says whether the epilogue reads the bias pointer.
func (e LtEpilogue) hasBias() bool { return e == LtEpilogueBias || e == LtEpilogueGELUBias }

// check refuses a product partbench does not send to cuBLASLt.
func (m LtMatmul) check() error {
	if m.M <= 0 || m.N <= 0 || m.K <= 0 {
		return fmt.Errorf("cublaslt: sizes m=%d n=%d k=%d, want each > 0", m.M, m.N, m.K)
	}
	switch m.Epilogue {
	case LtEpilogueDefault, LtEpilogueBias, LtEpilogueGELU, LtEpilogueGELUBias:
	default:
		return fmt.Errorf("cublaslt: epilogue %v is not one partbench uses (DEFAULT, BIAS, GELU, GELU_BIAS)", m.Epilogue)
	}
	if m.A == 0 || m.B == 0 || m.D == 0 {
		return fmt.Errorf("cublaslt: a null operand (A %#x, B %#x, D %#x)", uint64(m.A), uint64(m.B), uint64(m.D))
	}
	if m.Epilogue.hasBias() && m.Bias == 0 {
		return fmt.Errorf("cublaslt: epilogue %v with a null bias pointer", m.Epilogue)
	}
	return nil
}

// BLASLt is the loaded cuBLASLt library.
type BLASLt struct {
	dl     *dl.Library
	c      ltAPI
	closed sync.Once
}

// CUBLASLtSpec is how cuBLASLt is found: libcublasLt.so.13, .12, .11 (the
// soname of each cuBLAS major version, beside libcublas) in
// $PARTBENCH_CUBLASLT_LIB, LD_LIBRARY_PATH, $CUDA_HOME, the system loader
// and the nvidia-cublas wheels, as dl.CUBLAS.
func CUBLASLtSpec() dl.Spec {
	return dl.Spec{
		Name:      "cuBLASLt",
		Sonames:   []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"},
		EnvVar:    "PARTBENCH_CUBLASLT_LIB",
		WheelDirs: []string{"nvidia/cublas/lib", "nvidia/cu13/lib"},
	}
}

// LoadCUBLASLt finds cuBLASLt (CUBLASLtSpec) and binds it.
func LoadCUBLASLt() (*BLASLt, error) {
	lib, err := dl.Find(CUBLASLtSpec())
	if err != nil {
		return nil, fmt.Errorf("cublaslt: %w", err)
	}
	b, err := LoadCUBLASLtFrom(lib)
	if err != nil {
		lib.Close()
		return nil, err
	}
	return b, nil
}

// LoadCUBLASLtFrom binds an already opened cuBLASLt (the test seam). On
// success the BLASLt owns lib.
func LoadCUBLASLtFrom(lib *dl.Library) (*BLASLt, error) {
	c, err := bindLt(lib)
	if err != nil {
		return nil, err
	}
	return &BLASLt{dl: lib, c: c}, nil
}

// Path is the file the library was loaded from.
func (b *BLASLt) Path() string { return b.dl.File() }

// Version is cublasLtGetVersion (major·10000 + minor·100 + patch), 0 where
// the library lacks it.
func (b *BLASLt) Version() int { return b.c.version() }

// Close releases the symbol table and closes the library; every LtHandle
// and LtPlan must be destroyed first. Closing twice does nothing.
func (b *BLASLt) Close() error {
	var err error
	b.closed.Do(func() {
		b.c.free()
		err = b.dl.Close()
	})
	return err
}

func (b *BLASLt) fail(call string, s BLASStatus) error {
	return callError("cublaslt", call, s, "cublasLtGetStatusString", b.c.statusString(s))
}

// LtHandle is a cublasLtHandle_t.
type LtHandle struct {
	b *BLASLt
	h uintptr
}

// NewHandle creates a handle (cublasLtCreate).
func (b *BLASLt) NewHandle() (*LtHandle, error) {
	h, s := b.c.create()
	if s != BLASSuccess {
		return nil, b.fail("cublasLtCreate", s)
	}
	return &LtHandle{b: b, h: h}, nil
}

// Destroy releases the handle (cublasLtDestroy).
func (h *LtHandle) Destroy() error {
	if s := h.b.c.destroy(h.h); s != BLASSuccess {
		return h.b.fail("cublasLtDestroy", s)
	}
	return nil
}

// LtPlan is one product's descriptors and the algorithm the heuristic
// chose for it, for the operand alignments it was planned with.
type LtPlan struct {
	h                      *LtHandle
	m                      LtMatmul
	desc, a, b, c          uintptr
	algo                   [8]uint64
	workspace              int64 // the algorithm's
	alignA, alignB, alignD int
}

// Workspace is the device workspace the plan's algorithm needs, in bytes.
func (p *LtPlan) Workspace() int64 { return p.workspace }

// Matmul is the product the plan runs.
func (p *LtPlan) Matmul() LtMatmul { return p.m }

// alignment is the largest power of two up to 256 dividing p.
func alignment(p DevicePtr) int {
	a := 1
	for a < 256 && p%DevicePtr(2*a) == 0 {
		a *= 2
	}
	return a
}

// Plan describes m to cuBLASLt (cublasLtMatmulDescCreate with compute
// m.Compute and scale CUDA_R_32F, TRANSA, TRANSB, EPILOGUE and
// BIAS_POINTER; a column-major layout of A, B and C/D) and asks the
// heuristic for one algorithm that needs at most maxWorkspace bytes and
// works with operands aligned as m's are (the alignments become the
// preference's minimums). ErrLtNoAlgorithm where there is none.
func (h *LtHandle) Plan(m LtMatmul, maxWorkspace int64) (_ *LtPlan, err error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	c := h.b.c
	p := &LtPlan{h: h, m: m, alignA: alignment(m.A), alignB: alignment(m.B), alignD: alignment(m.D)}
	defer func() {
		if err != nil {
			p.Destroy() //nolint:errcheck // the first error is the one to report
		}
	}()
	var s BLASStatus
	if p.desc, s = c.descCreate(m.Compute, R32F); s != BLASSuccess {
		return nil, h.b.fail("cublasLtMatmulDescCreate", s)
	}
	for _, at := range []struct {
		attr int
		v    uint64
		size int
	}{
		{ltDescTransA, uint64(m.TransA), 4}, {ltDescTransB, uint64(m.TransB), 4},
		{ltDescEpilogue, uint64(m.Epilogue), 4}, {ltDescBiasPointer, uint64(m.Bias), 8},
	} {
		if at.attr == ltDescBiasPointer && !m.Epilogue.hasBias() {
			continue
		}
		if s := c.descSet(p.desc, at.attr, at.v, at.size); s != BLASSuccess {
			return nil, h.b.fail(fmt.Sprintf("cublasLtMatmulDescSetAttribute(%d)", at.attr), s)
		}
	}
	rowsA, colsA := m.M, m.K
	if m.TransA != OpN {
		rowsA, colsA = m.K, m.M
	}
	rowsB, colsB := m.K, m.N
	if m.TransB != OpN {
		rowsB, colsB = m.N, m.K
	}
	for _, l := range []struct {
		into       *uintptr
		t          DataType
		rows, cols int
		ld         int
	}{{&p.a, m.AType, rowsA, colsA, m.LDA}, {&p.b, m.BType, rowsB, colsB, m.LDB}, {&p.c, m.CType, m.M, m.N, m.LDC}} {
		if *l.into, s = c.layoutCreate(l.t, l.rows, l.cols, l.ld); s != BLASSuccess {
			return nil, h.b.fail(fmt.Sprintf("cublasLtMatrixLayoutCreate(%v, %d×%d, ld %d)", l.t, l.rows, l.cols, l.ld), s)
		}
		if s := c.layoutSet(*l.into, ltLayoutOrder, ltOrderCol, 4); s != BLASSuccess {
			return nil, h.b.fail("cublasLtMatrixLayoutSetAttribute(ORDER)", s)
		}
	}
	pref, s := c.prefCreate()
	if s != BLASSuccess {
		return nil, h.b.fail("cublasLtMatmulPreferenceCreate", s)
	}
	defer c.prefDestroy(pref)
	for _, at := range []struct {
		attr int
		v    uint64
		size int
	}{
		{ltPrefMaxWorkspaceBytes, uint64(max(maxWorkspace, 0)), 8},
		{ltPrefMinAlignA, uint64(p.alignA), 4}, {ltPrefMinAlignB, uint64(p.alignB), 4},
		{ltPrefMinAlignC, uint64(p.alignD), 4}, {ltPrefMinAlignD, uint64(p.alignD), 4},
	} {
		if s := c.prefSet(pref, at.attr, at.v, at.size); s != BLASSuccess {
			return nil, h.b.fail(fmt.Sprintf("cublasLtMatmulPreferenceSetAttribute(%d)", at.attr), s)
		}
	}
	algo, ws, n, s := c.heuristic(h.h, p.desc, p.a, p.b, p.c, pref)
	if s == BLASNotSupported || (s == BLASSuccess && n == 0) {
		return nil, fmt.Errorf("%w (%v %v·%v, m=%d n=%d k=%d, %v)", ErrLtNoAlgorithm, m.CType, m.TransA, m.TransB, m.M, m.N, m.K, m.Epilogue)
	}
	if s != BLASSuccess {
		return nil, h.b.fail("cublasLtMatmulAlgoGetHeuristic", s)
	}
	p.algo, p.workspace = algo, ws
	return p, nil
}

// Run queues the planned product on st with workspace ws of wsBytes.
func (p *LtPlan) Run(ws DevicePtr, wsBytes int64, st Stream) error {
	return p.RunOn(p.m.A, p.m.B, p.m.D, ws, wsBytes, st)
}

// RunOn queues the planned product on other operands of the same shape:
// D = op(A)·op(B) (+ the epilogue), A, B and D in cuBLASLt's column-major
// roles (RowMajorGemm's A is the row-major right operand). Operands less
// aligned than those the plan was made with, or a workspace smaller than
// the algorithm's, are refused.
func (p *LtPlan) RunOn(a, b, d DevicePtr, ws DevicePtr, wsBytes int64, st Stream) error {
	if a == 0 || b == 0 || d == 0 {
		return fmt.Errorf("cublaslt: cublasLtMatmul with a null operand (A %#x, B %#x, D %#x)", uint64(a), uint64(b), uint64(d))
	}
	if alignment(a) < p.alignA || alignment(b) < p.alignB || alignment(d) < p.alignD {
		return fmt.Errorf("cublaslt: operands aligned to %d, %d, %d bytes; the plan was made for %d, %d, %d",
			alignment(a), alignment(b), alignment(d), p.alignA, p.alignB, p.alignD)
	}
	if wsBytes < p.workspace {
		return fmt.Errorf("cublaslt: workspace of %d bytes, the algorithm needs %d", wsBytes, p.workspace)
	}
	if s := p.h.b.c.matmul(p.h.h, p.desc, a, p.a, b, p.b, d, p.c, &p.algo, ws, wsBytes, st.h); s != BLASSuccess {
		return p.h.b.fail("cublasLtMatmul", s)
	}
	return nil
}

// Destroy releases the plan's descriptors.
func (p *LtPlan) Destroy() error {
	c := p.h.b.c
	var errs []error
	for _, l := range []*uintptr{&p.a, &p.b, &p.c} {
		if *l != 0 {
			if s := c.layoutDestroy(*l); s != BLASSuccess {
				errs = append(errs, p.h.b.fail("cublasLtMatrixLayoutDestroy", s))
			}
			*l = 0
		}
	}
	if p.desc != 0 {
		if s := c.descDestroy(p.desc); s != BLASSuccess {
			errs = append(errs, p.h.b.fail("cublasLtMatmulDescDestroy", s))
		}
		p.desc = 0
	}
	return errors.Join(errs...)
}

// ltAPI is cuBLASLt as the Go side sees it (lt.go; lt_capi.go implements
// it through the C shim).
type ltAPI interface {
	free()
	version() int
	statusString(s BLASStatus) string // "" when the library lacks cublasLtGetStatusString
	create() (uintptr, BLASStatus)
	destroy(h uintptr) BLASStatus
	descCreate(compute ComputeType, scale DataType) (uintptr, BLASStatus)
	descDestroy(d uintptr) BLASStatus
	descSet(d uintptr, attr int, v uint64, size int) BLASStatus
	layoutCreate(t DataType, rows, cols, ld int) (uintptr, BLASStatus)
	layoutDestroy(l uintptr) BLASStatus
	layoutSet(l uintptr, attr int, v uint64, size int) BLASStatus
	prefCreate() (uintptr, BLASStatus)
	prefDestroy(p uintptr) BLASStatus
	prefSet(p uintptr, attr int, v uint64, size int) BLASStatus
	heuristic(h, desc, a, b, c, pref uintptr) (algo [8]uint64, workspace int64, n int, s BLASStatus)
	matmul(h, desc uintptr, a DevicePtr, la uintptr, b DevicePtr, lb uintptr, d DevicePtr, ld uintptr,
		algo *[8]uint64, ws DevicePtr, wsBytes int64, st uintptr) BLASStatus
}
