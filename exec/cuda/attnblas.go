package cuda

import (
	_ "embed" // attnblas.cu
	"fmt"
	"math"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// attnBlasSource is pb_causal_softmax (attnblas.cu), in the second module.
//
//go:embed attnblas.cu
var attnBlasSource string

// Prefill attention through cuBLAS, for the shapes the flash kernel does
// not take (fp32, head dims other than 64 and 128, devices before sm_80):
// per sequence and position within a query-head group, S = scale·Q·Kᵀ
// over the pass's keys as one strided-batched GEMM across the KV heads
// (fp32 scores), pb_causal_softmax, then O = P·V as another. Where it
// runs it replaces pb_attention_vV, which re-reads every earlier key for
// each query row; the trace says " [cublas]".
const (
	// blasAttnMinQ is the fewest queries per sequence a pass must have
	// for cuBLAS: below it (a decode step, a short chunk) each GEMM is a
	// thin matrix-vector product and pb_attention_vV or split-KV serve.
	blasAttnMinQ = 64
	// blasAttnMaxBytes bounds the scores and probabilities the backend
	// allocates for it (kvl · q · context · (4 + element bytes)); a larger
	// op keeps pb_attention_vV.
	blasAttnMaxBytes = 256 << 20
)

// blasAttnState is the workspace: fp32 scores S and probabilities P in
// the element type, [kvl][q][n] each, P 256-byte aligned after S.
type blasAttnState struct {
	s, p  cuda.DevicePtr
	elems int64 // of S and of P: kvl · q · n of the largest op at the full context
	why   string
}

// blasAttnElems is op's scores (and probabilities) at n keys.
func blasAttnElems(op *partition.Op, n int) int64 {
	return int64(op.KVHeads) * int64(op.QLen) * int64(n)
}

// blasAttnBytes is the workspace of elems scores and probabilities.
func blasAttnBytes(elems int64, eb int) int64 { return (elems*4+255)/256*256 + elems*int64(eb) }

// wantsBlasAttn says whether op's shape is for cuBLAS, before any device
// state: a prefill pass of at least blasAttnMinQ queries per sequence that
// the flash kernel does not take, whose workspace fits.
func (c *Compute) wantsBlasAttn(op *partition.Op) bool {
	if op.Kind != partition.Attention || op.QLen < blasAttnMinQ || op.Heads%op.KVHeads != 0 {
		return false
	}
	if _, flash := flashKeyOf(c.attentionKernel(op)); flash {
		return false
	}
	return blasAttnBytes(blasAttnElems(op, c.frame.Context), c.dt.bytes) <= blasAttnMaxBytes
}

// initBlasAttn looks up pb_causal_softmax and allocates the workspace of
// the rank's largest prefill attention that wantsBlasAttn. Without the
// kernel or cublasGemmStridedBatchedEx, pb_attention_vV stays (why says so).
func (c *Compute) initBlasAttn() error {
	ba := &c.blasAttn
	if c.without["cublas-attention"] {
		ba.why = "turned off (Options.Without)"
		return nil
	}
	if !c.handle.HasStridedBatched() {
		ba.why = "cuBLAS has no cublasGemmStridedBatchedEx"
		return nil
	}
	if err := c.extraKernel("pb_causal_softmax", causalSoftmaxSig); err != nil {
		ba.why = err.Error()
		return nil
	}
	var elems int64
	prog := c.plan.Program(c.rank.Rank, partition.Prefill)
	for i := range prog.Ops {
		if op := &prog.Ops[i]; c.wantsBlasAttn(op) {
			elems = max(elems, blasAttnElems(op, c.frame.Context))
		}
	}
	if elems == 0 {
		ba.why = "no prefill attention of the plan is for cuBLAS"
		return nil
	}
	p, err := c.alloc(pexec.AllocWorkspace, blasAttnBytes(elems, c.dt.bytes))
	if err != nil {
		return err
	}
	ba.elems, ba.s = elems, p
	ba.p = p + cuda.DevicePtr((elems*4+255)/256*256)
	return nil
}

// causalSoftmaxSig is pb_causal_softmax's parameter list: S, P, pos, n, bidir.
const causalSoftmaxSig = "pppii"

// usesBlasAttn says whether op runs through cuBLAS on this rank.
func (c *Compute) usesBlasAttn(op *partition.Op) bool {
	return c.blasAttn.elems > 0 && c.wantsBlasAttn(op)
}

// blasAttention runs op through cuBLAS where usesBlasAttn, and reports
// whether it did. q and k were rotated and the pass's keys and values
// appended to the cache (ropeKV) before; past is the pass's first
// position, so the keys are [0, past + q).
func (c *Compute) blasAttention(op *partition.Op, qkv, ao dbuf, cache *dkv, st *mbState, seq0, past int) (bool, error) {
	if !c.usesBlasAttn(op) {
		return false, nil
	}
	q, hl, kvl, hd := op.QLen, op.Heads, op.KVHeads, op.HeadDim
	n := past + q
	g := hl / kvl
	if need := blasAttnElems(op, n); need > c.blasAttn.elems {
		return true, fmt.Errorf("cuda: cuBLAS attention of %s needs %d scores of workspace, %d were allocated", op.Name, need, c.blasAttn.elems)
	}
	eb := int64(c.dt.bytes)
	W := (hl + 2*kvl) * hd // a qkv row
	kvw := kvl * hd
	bidir := 0
	if op.Bidirectional {
		bidir = 1
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	at := func(p cuda.DevicePtr, elems int) cuda.DevicePtr { return p + cuda.DevicePtr(int64(elems)*eb) }
	for s := 0; s < op.Seqs; s++ {
		kBase := at(cache.k, (seq0+s)*c.frame.Context*kvw)
		vBase := at(cache.v, (seq0+s)*c.frame.Context*kvw)
		for gi := 0; gi < g; gi++ {
			// S[b] (n × q column-major, i.e. [q][n] row-major) = scale·K_bᵀ-major
			// product: op(A) = K_b (n × hd: the cache's [n][kvw] as hd × n, ld
			// kvw, transposed), B = Q_h (hd × q: qkv rows, ld W), h = b·g + gi.
			qk := cuda.StridedBatched{GemmEx: cuda.GemmEx{
				TransA: cuda.OpT, TransB: cuda.OpN, M: n, N: q, K: hd, Alpha: scale,
				A: kBase, AType: c.dt.blas, LDA: kvw,
				B: at(qkv.p, s*q*W+gi*hd), BType: c.dt.blas, LDB: W,
				C: c.blasAttn.s, CType: cuda.R32F, LDC: n,
				Compute: cuda.Compute32F, Algo: cuda.GemmDefault,
			}, StrideA: int64(hd), StrideB: int64(g * hd), StrideC: int64(q * n), Batch: kvl}
			if err := c.stridedBatched(qk); err != nil {
				return true, err
			}
			a := c.newArgs().p(c.blasAttn.s).p(c.blasAttn.p).p(st.pos).i(n).i(bidir)
			if err := c.launchShared("pb_causal_softmax", cuda.D2(q, kvl), cuda.D1(rowThreads), 0, a); err != nil {
				return true, err
			}
			// O_h (hd × q, ld hl·hd: ao's rows) = V_b (hd × n, ld kvw) · P_b
			// (n × q, ld n).
			pv := cuda.StridedBatched{GemmEx: cuda.GemmEx{
				TransA: cuda.OpN, TransB: cuda.OpN, M: hd, N: q, K: n, Alpha: 1,
				A: vBase, AType: c.dt.blas, LDA: kvw,
				B: c.blasAttn.p, BType: c.dt.blas, LDB: n,
				C: at(ao.p, s*q*hl*hd+gi*hd), CType: c.dt.blas, LDC: hl * hd,
				Compute: cuda.Compute32F, Algo: cuda.GemmDefault,
			}, StrideA: int64(hd), StrideB: int64(q * n), StrideC: int64(g * hd), Batch: kvl}
			if err := c.stridedBatched(pv); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}

// stridedBatched queues g (nothing while replaying a graph).
func (c *Compute) stridedBatched(g cuda.StridedBatched) error {
	if c.replay {
		return nil
	}
	c.stats.Launches++
	return c.handle.GemmStridedBatchedEx(g)
}
