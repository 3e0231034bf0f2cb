/*
 * elementwise.cu - the small element-wise kernels of a forward step:
 * residual add, bias add, SwiGLU (silu as x / (1 + e^-x), cpu_swiglu's
 * formula), gpt-oss's clamped SwiGLU (cpu_swiglu_oai's), gemma3's GeGLU,
 * scale and logit soft-cap, mistral3's query temperature, and the float → F16
 * conversion of GEMM activations.
 *
 * GeGLU: the CPU (as ggml's) looks GELU up in a table of F16 inputs and
 * outputs, and so does the device, in the same table (model_gelu_table,
 * uploaded at load): GELU computed on the device differed from the table in
 * 4% of the gates (the simulated device's tanhf is not the host's; CUDA's is
 * within 2 ulp), by several F16 ulps where 1 + tanh cancels (gates near -4).
 * The table is 256 KiB, which L2 holds; a gather per element (its cost on a
 * GPU not measured yet).
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
geglu_kernel(float *g, const float *u, uint64_t ld, uint32_t n, uint32_t T, const float *tab)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= (uint64_t)n * T)
		return;
	uint64_t o = (i / n) * ld + i % n;
	float x = g[o];
	float y = x >= 10.0f ? x : tab[__half_as_ushort(__float2half_rn(x))];
	g[o] = x <= -10.0f ? 0.0f : __fmul_rn(y, u[o]);
}

__global__ void
scale_kernel(float *x, uint64_t ld, uint32_t n, uint32_t T, float s)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < (uint64_t)n * T)
		x[(i / n) * ld + i % n] = __fmul_rn(x[(i / n) * ld + i % n], s);
}

__global__ void
attn_temp_kernel(float *q, uint64_t ld, uint32_t n, uint32_t T, const uint32_t *pos, float scale,
                 float len)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= (uint64_t)n * T)
		return;
	uint64_t t = i / n, o = t * ld + i % n;
	float steps = floorf(__fdiv_rn((float)pos[t], len));
	float s = (float)(log((double)steps + 1.0) * (double)scale + 1.0);
	q[o] = __fmul_rn(q[o], s);
}

__global__ void
softcap_kernel(float *x, uint64_t n, float inv, float cap)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = __fmul_rn(tanhf(__fmul_rn(x[i], inv)), cap);
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
cuk_geglu(float *g, const float *u, uint64_t ld, uint32_t n, uint32_t T, const float *tab,
          cudaStream_t st)
{
	if (tab == NULL)
		return cudaErrorInvalidValue;
	if ((uint64_t)n * T == 0)
		return cudaSuccess;
	geglu_kernel<<<cuk::div_up((uint64_t)n * T, 256), 256, 0, st>>>(g, u, ld, n, T, tab);
	return cuk::launched();
}

extern "C" cudaError_t
cuk_scale(float *x, uint64_t ld, uint32_t n, uint32_t T, float s, cudaStream_t st)
{
	if ((uint64_t)n * T == 0)
		return cudaSuccess;
	scale_kernel<<<cuk::div_up((uint64_t)n * T, 256), 256, 0, st>>>(x, ld, n, T, s);
	return cuk::launched();
}

extern "C" cudaError_t
cuk_attn_temp(float *q, uint64_t ld, uint32_t n, uint32_t T, const uint32_t *pos, float scale,
              uint32_t len, cudaStream_t st)
{
	if (len == 0)
		return cudaErrorInvalidValue;
	if ((uint64_t)n * T == 0)
		return cudaSuccess;
	attn_temp_kernel<<<cuk::div_up((uint64_t)n * T, 256), 256, 0, st>>>(q, ld, n, T, pos, scale,
	                                                                    (float)len);
	return cuk::launched();
}

extern "C" cudaError_t
cuk_softcap(float *x, uint64_t n, float cap, cudaStream_t st)
{
	if (!(cap > 0.0f))
		return cudaErrorInvalidValue;
	if (n == 0)
		return cudaSuccess;
	softcap_kernel<<<cuk::div_up(n, 256), 256, 0, st>>>(x, n, 1.0f / cap, cap);
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
	    (e = cuk::fits(swiglu_oai_kernel, 256, "swiglu_oai", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(geglu_kernel, 256, "geglu", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(scale_kernel, 256, "scale", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(attn_temp_kernel, 256, "attn_temp", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(softcap_kernel, 256, "softcap", why, why_len)) != cudaSuccess)
		return e;
	return cuk::fits(f32_to_f16_kernel, 256, "f32_to_f16", why, why_len);
}
