/*
 * elementwise.cu - the small element-wise kernels of a forward step:
 * residual add, bias add, SwiGLU (silu as x / (1 + e^-x), cpu_swiglu's
 * formula), gpt-oss's clamped SwiGLU (cpu_swiglu_oai's) and the float → F16
 * conversion of GEMM activations.
 */
#include <cuda_fp16.h>

#include "../kernels.h"
#include "check.h"
#include "common.cuh"

namespace
{

__global__ void
add_kernel(float *x, const float *d, uint64_t n)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] += d[i];
}

__global__ void
add_bias_kernel(float *y, uint64_t ld, const float *bias, uint32_t n, uint32_t T)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < (uint64_t)n * T)
		y[(i / n) * ld + i % n] += bias[i % n];
}

__global__ void
swiglu_kernel(float *g, const float *u, uint64_t ld, uint32_t n, uint32_t T)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= (uint64_t)n * T)
		return;
	uint64_t o = (i / n) * ld + i % n;
	float v = g[o];
	g[o] = __fmul_rn(__fdiv_rn(v, __fadd_rn(1.0f, expf(-v))), u[o]);
}

__global__ void
swiglu_oai_kernel(float *g, const float *u, uint64_t ld, uint32_t n, uint32_t T, float alpha,
                  float limit)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= (uint64_t)n * T)
		return;
	uint64_t o = (i / n) * ld + i % n;
	float x = fminf(g[o], limit), y = fminf(fmaxf(u[o], -limit), limit);
	g[o] = __fmul_rn(__fdiv_rn(x, __fadd_rn(1.0f, expf(__fmul_rn(alpha, -x)))),
	                 __fadd_rn(y, 1.0f));
}

__global__ void
f32_to_f16_kernel(const float *x, uint64_t x_ld, uint32_t n, uint32_t T, __half *y)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < (uint64_t)n * T)
		y[i] = __float2half_rn(x[(i / n) * x_ld + i % n]);
}

} // namespace

extern "C" cudaError_t
cuk_add(float *x, const float *d, uint64_t n, cudaStream_t st)
{
	if (n == 0)
		return cudaSuccess;
	add_kernel<<<cuk::div_up(n, 256), 256, 0, st>>>(x, d, n);
	return cuk::launched();
}

extern "C" cudaError_t
cuk_add_bias(float *y, uint64_t ld, const float *bias, uint32_t n, uint32_t T, cudaStream_t st)
{
	if ((uint64_t)n * T == 0)
		return cudaSuccess;
	add_bias_kernel<<<cuk::div_up((uint64_t)n * T, 256), 256, 0, st>>>(y, ld, bias, n, T);
	return cuk::launched();
}

extern "C" cudaError_t
cuk_swiglu(float *g, const float *u, uint64_t ld, uint32_t n, uint32_t T, cudaStream_t st)
{
	if ((uint64_t)n * T == 0)
		return cudaSuccess;
	swiglu_kernel<<<cuk::div_up((uint64_t)n * T, 256), 256, 0, st>>>(g, u, ld, n, T);
	return cuk::launched();
}

extern "C" cudaError_t
cuk_swiglu_oai(float *g, const float *u, uint64_t ld, uint32_t n, uint32_t T, float alpha,
               float limit, cudaStream_t st)
{
	if ((uint64_t)n * T == 0)
		return cudaSuccess;
	swiglu_oai_kernel<<<cuk::div_up((uint64_t)n * T, 256), 256, 0, st>>>(g, u, ld, n, T, alpha,
	                                                                     limit);
	return cuk::launched();
}

extern "C" cudaError_t
cuk_f32_to_f16(const float *x, uint64_t x_ld, uint32_t n, uint32_t T, uint16_t *y, cudaStream_t st)
{
	if ((uint64_t)n * T == 0)
		return cudaSuccess;
	f32_to_f16_kernel<<<cuk::div_up((uint64_t)n * T, 256), 256, 0, st>>>(x, x_ld, n, T,
	                                                                     (__half *)y);
	return cuk::launched();
}

cudaError_t
cuk_check_elementwise(char *why, size_t why_len)
{
	cudaError_t e;

	if ((e = cuk::fits(add_kernel, 256, "add", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(add_bias_kernel, 256, "add_bias", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(swiglu_kernel, 256, "swiglu", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(swiglu_oai_kernel, 256, "swiglu_oai", why, why_len)) != cudaSuccess)
		return e;
	return cuk::fits(f32_to_f16_kernel, 256, "f32_to_f16", why, why_len);
}
