/*
 * rmsnorm.cu - RMSNorm with cpu_rmsnorm's arithmetic (squares summed in
 * double, the scale 1 / sqrt(mean + eps) in float, x · scale · w rounded
 * twice), optionally fused with the residual add that precedes it. One
 * block per row.
 */
#include "../kernels.h"
#include "check.h"
#include "common.cuh"

namespace
{

constexpr int THREADS = 256;

__global__ void
__launch_bounds__(THREADS) rmsnorm_kernel(float *x, const float *delta, const float *w, uint32_t n,
                                          float eps, const uint32_t *rows_idx, float *out)
{
	__shared__ double part[THREADS / 32];
	__shared__ float scale;
	uint32_t t = blockIdx.x, src = rows_idx ? rows_idx[t] : t;
	float *xr = x + (uint64_t)src * n;
	double s = 0.0;

	for (uint32_t i = threadIdx.x; i < n; i += THREADS) {
		float v = xr[i];
		if (delta) {
			v = __fadd_rn(v, delta[(uint64_t)src * n + i]);
			xr[i] = v;
		}
		s += (double)__fmul_rn(v, v);
	}
	s = cuk::warp_sum(s);
	if (threadIdx.x % 32 == 0)
		part[threadIdx.x / 32] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		double sum = 0.0;
		for (int k = 0; k < THREADS / 32; k++)
			sum += part[k];
		scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn((float)(sum / n), eps)));
	}
	__syncthreads();
	for (uint32_t i = threadIdx.x; i < n; i += THREADS)
		out[(uint64_t)t * n + i] = __fmul_rn(__fmul_rn(xr[i], scale), w[i]);
}

} // namespace

extern "C" cudaError_t
cuk_rmsnorm(float *x, const float *delta, const float *w, uint32_t n, float eps, uint32_t T,
            const uint32_t *rows_idx, float *out, cudaStream_t st)
{
	if (T == 0)
		return cudaSuccess;
	if (T > 0x7fffffffu || (delta && rows_idx))
		return cudaErrorInvalidValue;
	rmsnorm_kernel<<<T, THREADS, 0, st>>>(x, delta, w, n, eps, rows_idx, out);
	return cuk::launched();
}

cudaError_t
cuk_check_rmsnorm(char *why, size_t why_len)
{
	return cuk::fits(rmsnorm_kernel, THREADS, "rmsnorm", why, why_len);
}
