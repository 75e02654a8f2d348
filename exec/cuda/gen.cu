// Weights generated on the device: model.Generator's seeded tensors, bit
// for bit (gen.go holds the Go statement of each launch, genSegment, and
// its tests hold that against model.Generator). Compiled in the second
// module (after splitkv.cu and fused.cu, whose stand-alone element type it
// shares), for every element type and architecture.
//
// One launch writes one rectangle of a shard: element (r, c) of the
// rectangle is scale·Unit(KeyAt(base, keyRow0 + r, keyCol0 + c)) (+ add),
// or with transposed the key's row and column swapped (a tied LM head is
// the embedding transposed). KeyAt and Unit are model's splitmix64
// finalizer and top-24-bit map (pb_common.cuh's pb_mix and pb_unit, which
// the main module's kernels use too). The product is rounded
// (__fmul_rn, never contracted with the add) as Go's float32 product is;
// the store rounds to the element type as the host's upload does.

#include "pb_common.cuh"


extern "C" __global__ void pb_gen(elem* dst, int ld, int rows, int cols, u64 base, int keyRow0, int keyCol0, int transposed,
	float scale, float add) {
	const size_t n = (size_t)rows * cols;
	for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
		const int r = (int)(k / cols), c = (int)(k % cols);
		const long long kr = transposed ? keyRow0 + c : keyRow0 + r;
		const long long kc = transposed ? keyCol0 + r : keyCol0 + c;
		float v = __fmul_rn(scale, pb_unit(pb_mix(pb_mix(base ^ (u64)kr) ^ (u64)kc)));
		if (add != 0.0f) v = v + add;
		dst[(size_t)r * ld + c] = st(v);
	}
}
