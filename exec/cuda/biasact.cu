// The bias of a linear and the activation after it as one element-wise
// kernel (biasact.go plans it). Compiled by NVRTC per element type
// (-DPB_F16, -DPB_BF16 or -DPB_F32), fp32 arithmetic, for any
// architecture, in the backend's second module; the element type and its
// conversions are pb_common.cuh's.
//
//   pb_bias_act: a = gelu_tanh(u + bias) over rows of n, where a GPT-2-style
//     up projection's GEMM wrote u without its bias: one read of u, one
//     write of a, the sum kept in fp32 and rounded once, where pb_bias then
//     pb_act read u twice, wrote it once more and rounded u + bias to the
//     storage type before the activation read it back.

#include "pb_common.cuh"

extern "C" {

// The tanh-approximated GELU, the expression of elementwise.cu's pb_act1
// for an ungated activation (so fp32, which rounds nothing in between,
// gives pb_bias + pb_act's values bit for bit).
__device__ __forceinline__ float pb_gelu_tanh(float g) {
	return 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g)));
}

// Elements per 16 bytes: pb_bias_act's vector width.
#define BIAS_ACT_VEC (16 / PB_ELEM_BYTES)

// a[r][c] = gelu_tanh(u[r][c] + bias[c]) for rows rows of n. Where n is a
// multiple of BIAS_ACT_VEC (every row then starts 16-byte aligned, and so
// does every vector of the bias), each thread reads u and the bias and
// writes a with 16-byte accesses; else one element at a time. The
// arithmetic per element is the same either way.
__global__ void pb_bias_act(const elem* u, const elem* bias, elem* a, int rows, int n) {
	const size_t stride = (size_t)gridDim.x * blockDim.x;
	if (n % BIAS_ACT_VEC == 0) {
		const size_t nv = (size_t)rows * n / BIAS_ACT_VEC;
		for (size_t kv = (size_t)blockIdx.x * blockDim.x + threadIdx.x; kv < nv; kv += stride) {
			const size_t k = kv * BIAS_ACT_VEC, c = k % n;
			pb_raw<BIAS_ACT_VEC> x, b, o;
			pb_fetch<BIAS_ACT_VEC>(u + k, x);
			pb_fetch<BIAS_ACT_VEC>(bias + c, b);
#pragma unroll
			for (int e = 0; e < BIAS_ACT_VEC; e++) o.e[e] = st(pb_gelu_tanh(ld(x.e[e]) + ld(b.e[e])));
			pb_store<BIAS_ACT_VEC>(a + k, o);
		}
		return;
	}
	const size_t total = (size_t)rows * n;
	for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
		a[k] = st(pb_gelu_tanh(ld(u[k]) + ld(bias[k % n])));
	}
}

} // extern "C"
