// Rotary embeddings and the KV-cache append.

#include "pb_common.cuh"

extern "C" {

// Rotary embeddings on the q and k heads of each row of qkv (in place; row
// [seq][j] is at position *pos + j), then k and v appended to the cache
// ([seq][pos][kvl·hd]). Pair (2i, 2i+1) turns by pos·base^(−2i/hd), the
// angle in fp64 as on the CPU; base 0 rotates nothing (learned positions).
// One block per row.
__global__ void pb_rope_kv(elem* qkv, elem* kc, elem* vc, const int* pos, int seq0, int q, int hl, int kvl, int hd, int context, float base) {
	const int r = blockIdx.x;
	const int i = r / q, j = r % q;
	const int p = *pos + j;
	const int half = hd / 2;
	elem* row = qkv + (size_t)r * (hl + 2 * kvl) * hd;
	const int nq = hl * half, nk = kvl * half;
	for (int t = threadIdx.x; base > 0.0f && t < nq + nk; t += blockDim.x) {
		const int head = t / half, pi = t % half; // heads 0..hl−1 are q, hl.. are k (contiguous in the row)
		elem* v = row + head * hd + 2 * pi;
		const double theta = (double)p * pow((double)base, -(double)(2 * pi) / (double)hd);
		double sd, cd;
		sincos(theta, &sd, &cd);
		const float s = (float)sd, c = (float)cd;
		const float x0 = ld(v[0]), x1 = ld(v[1]);
		v[0] = st(x0 * c - x1 * s);
		v[1] = st(x0 * s + x1 * c);
	}
	__syncthreads();
	const int kvw = kvl * hd;
	const size_t at = ((size_t)(seq0 + i) * context + p) * kvw;
	for (int e = threadIdx.x; e < kvw; e += blockDim.x) {
		kc[at + e] = row[hl * hd + e];
		vc[at + e] = row[hl * hd + kvw + e];
	}
}

} // extern "C"
