// The L2 residency probe's read kernel (exec/cuda/l2probe.go): every thread
// reads float4s of [p, p + n4) in a grid-stride loop and sums them. The
// probe's buffers are zero, so the sum is never the sentinel and sink is
// never written; the compiler cannot know, so every load is kept.
extern "C" __global__ void pb_l2_read(const float4* __restrict__ p, long long n4, float* __restrict__ sink) {
	float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
	const long long stride = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
		const float4 v = p[i];
		acc.x += v.x;
		acc.y += v.y;
		acc.z += v.z;
		acc.w += v.w;
	}
	const float s = acc.x + acc.y + acc.z + acc.w;
	if (s == 12345.678f) sink[blockIdx.x] = s;
}
