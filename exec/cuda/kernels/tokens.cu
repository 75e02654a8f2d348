// Token ids in and out: the prompt schedule, embedding lookups, teacher
// forcing and the argmax that samples the next token.

#include "pb_common.cuh"

extern "C" {

// Prompt tokens of the pass: rows [seq][j] at positions *pos + j, when the
// pass lies in the prompt (later passes read what sample fed back).
__global__ void pb_prompt_tokens(float* tokens, const int* pos, int seqs, int q, int seq0, int prompt, int vocab, u64 base) {
	const int p0 = *pos;
	if (p0 >= prompt) return;
	for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < seqs * q; r += gridDim.x * blockDim.x) {
		tokens[r] = (float)pb_prompt_token(base, seq0 + r / q, p0 + r % q, vocab);
	}
}

// Vocabulary-sharded embedding: row r of x is row (id − vstart) of this
// rank's shard, or zeros when the id is another rank's (the all-reduce
// after it sums the shards). One block per row.
__global__ void pb_embed(const float* tokens, elem* x, const elem* emb, int H, int vstart, int vl, int vocab, int* err) {
	const int r = blockIdx.x;
	const int id = pb_token(tokens, r, vocab, err);
	const int local = id - vstart;
	elem* xr = x + (size_t)r * H;
	if (id >= 0 && local >= 0 && local < vl) {
		const elem* er = emb + (size_t)local * H;
		for (int c = threadIdx.x; c < H; c += blockDim.x) xr[c] = er[c];
	} else {
		for (int c = threadIdx.x; c < H; c += blockDim.x) xr[c] = st(0.0f);
	}
}

// Inputs of a model without embeddings: x[r][c] = u(seed, −1, "synthetic", id, c).
__global__ void pb_synthetic(const float* tokens, elem* x, int H, int vocab, u64 base, int* err) {
	const int r = blockIdx.x;
	const int id = pb_token(tokens, r, vocab, err);
	elem* xr = x + (size_t)r * H;
	const u64 h = pb_mix(base ^ (u64)(long long)(id < 0 ? 0 : id));
	for (int c = threadIdx.x; c < H; c += blockDim.x) {
		xr[c] = st(id < 0 ? 0.0f : pb_unit(pb_mix(h ^ (u64)(long long)c)));
	}
}

// Teacher forcing: the token fed to the next pass of sequence seq0 + i is
// the prompt schedule's token at the position after this pass (*pos + qlen).
__global__ void pb_teacher(float* tokens, const int* pos, int qlen, int seqs, int seq0, int vocab, u64 base) {
	const int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < seqs) tokens[i] = (float)pb_prompt_token(base, seq0 + i, *pos + qlen, vocab);
}

// out[i] = x[i·q + q − 1]: the last position of each sequence.
__global__ void pb_last_rows(const elem* x, elem* out, int q, int H) {
	const int i = blockIdx.x;
	const elem* src = x + ((size_t)i * q + q - 1) * H;
	for (int c = threadIdx.x; c < H; c += blockDim.x) out[(size_t)i * H + c] = src[c];
}

// Argmax over the real vocabulary of sequence i (one block each), reading
// logits in the gathered layout [T][seqs][vl]: id v is at
// ((v / vl)·seqs + i)·vl + v % vl. The first index wins ties; NaN never
// wins; out is −1 when nothing compares (as exec/cpu's Argmax).
__global__ void pb_argmax(const elem* logits, int* out, int seqs, int vl, int vocab) {
	const int i = blockIdx.x;
	float bv = -PB_INF;
	int best = -1;
	for (int v = threadIdx.x; v < vocab; v += blockDim.x) {
		const float x = ld(logits[((size_t)(v / vl) * seqs + i) * vl + v % vl]);
		if (x > bv || (best < 0 && x == bv)) {
			bv = x;
			best = v;
		}
	}
	__shared__ float sv[1024];
	__shared__ int si[1024];
	sv[threadIdx.x] = bv;
	si[threadIdx.x] = best;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) {
			const float ov = sv[threadIdx.x + s];
			const int oi = si[threadIdx.x + s];
			const int mi = si[threadIdx.x];
			const float mv = sv[threadIdx.x];
			// The other side wins when it has an index and ours has none, a
			// larger value, or an equal value at a smaller index.
			if (oi >= 0 && (mi < 0 || ov > mv || (ov == mv && oi < mi))) {
				sv[threadIdx.x] = ov;
				si[threadIdx.x] = oi;
			}
		}
		__syncthreads();
	}
	if (threadIdx.x == 0) out[i] = si[0];
}

} // extern "C"
