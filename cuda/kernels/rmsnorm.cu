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

/*
 * One warp a (row, head): cpu_rmsnorm over head_dim floats, in place. The squares
 * are floats summed in double, exactly at these sizes, so every lane's total and
 * scale are the CPU's.
 */
__global__ void __launch_bounds__(32)
        head_rmsnorm_kernel(float *x, uint32_t ld, uint32_t head_dim, const float *w, float eps)
{
	float *xr = x + (uint64_t)blockIdx.x * ld + (uint64_t)blockIdx.y * head_dim;
	double s = 0.0;

	for (uint32_t i = threadIdx.x; i < head_dim; i += 32)
		s += (double)__fmul_rn(xr[i], xr[i]);
	s = cuk::warp_sum(s); /* every lane: the row's sum */
	float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn((float)(s / head_dim), eps)));
	for (uint32_t i = threadIdx.x; i < head_dim; i += 32)
		xr[i] = __fmul_rn(__fmul_rn(xr[i], scale), w[i]);
}

} // namespace

extern "C" cudaError_t
cuk_head_rmsnorm(float *x, uint32_t ld, uint32_t T, uint32_t n_heads, uint32_t head_dim,
                 const float *w, float eps, cudaStream_t st)
{
	if (T == 0 || n_heads == 0)
		return cudaSuccess;
	if (T > 0x7fffffffu || n_heads > 65535u)
		return cudaErrorInvalidValue;
	head_rmsnorm_kernel<<<dim3(T, n_heads), 32, 0, st>>>(x, ld, head_dim, w, eps);
	return cuk::launched();
}

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
	cudaError_t e = cuk::fits(rmsnorm_kernel, THREADS, "rmsnorm", why, why_len);

	if (e == cudaSuccess)
		e = cuk::fits(head_rmsnorm_kernel, 32, "head_rmsnorm", why, why_len);
	return e;
}
