/*
 * quant_q8.cu - activation rows quantized for integer dots, bit for bit as
 * the CPU backend quantizes them (qdot.cuh's q8_block, q8k_*):
 * - Q8 (cpu_quant_q8b, llama.cpp's x86 quantize_row_q8_0): per 32 elements
 *   the scale amax / 127 rounded to F16, codes x · (127 / amax) rounded
 *   half to even and clamped to ±127, and the codes' sum. One thread a block.
 * - Q8K (cpu_quant_q8k, llama.cpp's quantize_row_q8_K_ref): per 256
 *   elements the scale 1 / (127 / amax), the codes, and the sum of each 16.
 *   One warp a super-block, eight elements a lane.
 */
#include <cuda_fp16.h>

#include "../kernels.h"
#include "check.h"
#include "common.cuh"
#include "qdot.cuh"

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
	float v[32], d;
	uint32_t w[8];
#pragma unroll
	for (int k = 0; k < 32; k++)
		v[k] = xb[k];
	int sum = cuk::qd::q8_block(v, w, &d);
	((float *)row)[c] = d;
	((int32_t *)(row + cuk_q8_sums_off(n)))[c] = sum;
	uint4 *o = (uint4 *)(row + cuk_q8_codes_off(n) + 32ull * c);
	o[0] = make_uint4(w[0], w[1], w[2], w[3]);
	o[1] = make_uint4(w[4], w[5], w[6], w[7]);
}

constexpr int Q8K_WARPS = 4;

__global__ void
__launch_bounds__(Q8K_WARPS * 32) quant_q8k_kernel(const float *x, uint64_t x_ld, uint32_t n,
                                                   uint32_t T, uint8_t *xq, uint64_t xq_ld)
{
	uint32_t ns = n / 256, lane = threadIdx.x % 32;
	uint64_t i = (uint64_t)blockIdx.x * Q8K_WARPS + threadIdx.x / 32;

	if (i >= (uint64_t)ns * T) /* the whole warp leaves */
		return;
	uint32_t t = (uint32_t)(i / ns), u = (uint32_t)(i % ns);
	const float *xb = x + (uint64_t)t * x_ld + 256ull * u + 8 * lane;
	uint8_t *row = xq + (uint64_t)t * xq_ld;
	float v[8], amax = 0.0f, id, d;
	uint32_t w[2];
#pragma unroll
	for (int k = 0; k < 8; k++) {
		v[k] = xb[k];
		amax = fmaxf(amax, fabsf(v[k]));
	}
	amax = cuk::warp_max(amax); /* max is exact: the CPU's sequential amax */
	cuk::qd::q8k_scale(amax, &id, &d);
	int s = cuk::qd::q8k_codes8(v, id, w);
	s += __shfl_xor_sync(0xffffffffu, s, 1); /* lanes 2g and 2g + 1: group g's 16 codes */
	*(uint2 *)(row + cuk_q8k_codes_off(n) + 256ull * u + 8 * lane) = make_uint2(w[0], w[1]);
	if (lane % 2 == 0)
		((int16_t *)(row + cuk_q8k_bsums_off(n)))[16ull * u + lane / 2] = (int16_t)s;
	if (lane == 0)
		((float *)row)[u] = d;
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

extern "C" cudaError_t
cuk_quant_act(enum cuk_act fmt, const float *x, uint64_t x_ld, uint32_t n, uint32_t T, void *xq,
              uint64_t xq_ld, cudaStream_t st)
{
	uint64_t warps = (uint64_t)(n / 256) * T;

	if (fmt == CUK_ACT_Q8)
		return cuk_quant_q8(x, x_ld, n, T, xq, xq_ld, st);
	if (fmt != CUK_ACT_Q8K || n % 256 != 0 || xq_ld % 16 != 0 || xq_ld < cuk_q8k_row_bytes(n) ||
	    ((uintptr_t)xq & 15) != 0)
		return cudaErrorInvalidValue;
	if (warps == 0)
		return cudaSuccess;
	quant_q8k_kernel<<<cuk::div_up(warps, Q8K_WARPS), Q8K_WARPS * 32, 0, st>>>(
	        x, x_ld, n, T, (uint8_t *)xq, xq_ld);
	return cuk::launched();
}

cudaError_t
cuk_check_quant_q8(char *why, size_t why_len)
{
	cudaError_t e = cuk::fits(quant_q8_kernel, 128, "quant_q8", why, why_len);

	return e != cudaSuccess
	               ? e
	               : cuk::fits(quant_q8k_kernel, Q8K_WARPS * 32, "quant_q8k", why, why_len);
}
