/*
 * quant_q8.cu - activation rows quantized for integer dots with MXFP4
 * weights, exactly as cpu_quant_q8b (llama.cpp's x86 quantize_row_q8_0):
 * per 32 elements the scale amax / 127 rounded to F16, codes
 * x · (127 / amax) rounded half to even and clamped to ±127. One thread per
 * block of 32.
 */
#include <cuda_fp16.h>

#include "../kernels.h"
#include "check.h"
#include "common.cuh"

namespace
{

__global__ void
quant_q8_kernel(const float *x, uint64_t x_ld, uint32_t n, uint32_t T, uint8_t *xq, uint64_t xq_ld)
{
	uint32_t nb = n / 32;
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= (uint64_t)nb * T)
		return;
	uint32_t t = (uint32_t)(i / nb), c = (uint32_t)(i % nb);
	const float *xb = x + (uint64_t)t * x_ld + 32ull * c;
	uint8_t *row = xq + (uint64_t)t * xq_ld;
	float v[32], amax = 0.0f;
#pragma unroll
	for (int k = 0; k < 32; k++) {
		v[k] = xb[k];
		amax = fmaxf(amax, fabsf(v[k]));
	}
	float id = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
	((float *)row)[c] = __half2float(__float2half_rn(__fdiv_rn(amax, 127.0f)));
	uint32_t w[8];
#pragma unroll
	for (int k = 0; k < 8; k++)
		w[k] = 0;
#pragma unroll
	for (int k = 0; k < 32; k++) {
		float r = rintf(__fmul_rn(v[k], id));
		int q = r > 127.0f ? 127 : r < -127.0f ? -127 : (int)r;
		w[k / 4] |= (uint32_t)(q & 0xff) << (8 * (k % 4));
	}
	uint4 *o = (uint4 *)(row + (4ull * nb + 15) / 16 * 16 + 32ull * c);
	o[0] = make_uint4(w[0], w[1], w[2], w[3]);
	o[1] = make_uint4(w[4], w[5], w[6], w[7]);
}

} // namespace

extern "C" cudaError_t
cuk_quant_q8(const float *x, uint64_t x_ld, uint32_t n, uint32_t T, void *xq, uint64_t xq_ld,
             cudaStream_t st)
{
	uint64_t blocks = (uint64_t)(n / 32) * T;

	if (n % 32 != 0 || xq_ld % 16 != 0 || xq_ld < cuk_q8_row_bytes(n) ||
	    ((uintptr_t)xq & 15) != 0)
		return cudaErrorInvalidValue;
	if (blocks == 0)
		return cudaSuccess;
	quant_q8_kernel<<<cuk::div_up(blocks, 128), 128, 0, st>>>(x, x_ld, n, T, (uint8_t *)xq,
	                                                          xq_ld);
	return cuk::launched();
}

cudaError_t
cuk_check_quant_q8(char *why, size_t why_len)
{
	return cuk::fits(quant_q8_kernel, 128, "quant_q8", why, why_len);
}
