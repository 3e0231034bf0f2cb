#pragma once
/* common.cuh - warp reductions and launch helpers shared by the kernels. */
#include <stdint.h>
#include <type_traits>

#include <cuda_runtime.h>

namespace cuk
{

template <typename T>
__device__ __forceinline__ T
warp_sum(T v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float
warp_max(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/*
 * row_out - the mat-vec kernels' epilogue: lane sums @acc of a warp's row @r
 * added (warp_sum) and, by lane 0, stored to y[b][r] (+ bias[r]).
 */
template <int B>
__device__ __forceinline__ void
row_out(const float *acc, uint32_t lane, uint32_t r, float *y, uint64_t y_ld, const float *bias)
{
#pragma unroll
	for (int b = 0; b < B; b++) {
		float s = warp_sum(acc[b]);
		if (lane == 0)
			y[(uint64_t)b * y_ld + r] = bias ? s + bias[r] : s;
	}
}

/* with_B - @f(std::integral_constant<int, B>) for @B of 1 .. 8 (CUK_MMV_MAX_B; more: 8). */
template <typename F>
void
with_B(uint32_t B, F f)
{
	switch (B) {
	case 1:
		f(std::integral_constant<int, 1>{});
		break;
	case 2:
		f(std::integral_constant<int, 2>{});
		break;
	case 3:
		f(std::integral_constant<int, 3>{});
		break;
	case 4:
		f(std::integral_constant<int, 4>{});
		break;
	case 5:
		f(std::integral_constant<int, 5>{});
		break;
	case 6:
		f(std::integral_constant<int, 6>{});
		break;
	case 7:
		f(std::integral_constant<int, 7>{});
		break;
	default:
		f(std::integral_constant<int, 8>{});
		break;
	}
}

/* launched - the error of the launch just made (cudaGetLastError). */
static inline cudaError_t
launched(void)
{
	return cudaGetLastError();
}

static inline unsigned
div_up(uint64_t a, uint64_t b)
{
	return (unsigned)((a + b - 1) / b);
}

} // namespace cuk

#include <stdio.h>

#include "../kernels.h"
#include "gguf/ggml_type.h"

namespace cuk
{

/* every_type - @one(type, why, why_len) for each type the kernels support; the first error. */
static inline cudaError_t
every_type(cudaError_t (*one)(uint32_t, char *, size_t), char *why, size_t why_len)
{
	for (uint32_t t = 0; t < GGML_TYPE_ID_LIMIT; t++) {
		if (!cuk_type_supported(t))
			continue;
		cudaError_t e = one(t, why, why_len);
		if (e != cudaSuccess)
			return e;
	}
	return cudaSuccess;
}

/*
 * fits - whether @kernel exists for the current device (its binary has code
 * the device runs) and can be launched with @threads threads a block; else
 * the reason in @why.
 */
template <typename K>
cudaError_t
fits(K kernel, int threads, const char *name, char *why, size_t why_len)
{
	cudaFuncAttributes a;
	cudaError_t e = cudaFuncGetAttributes(&a, kernel);

	if (e != cudaSuccess) {
		snprintf(why, why_len, "kernel %s: %s", name, cudaGetErrorString(e));
		return e;
	}
	if (a.maxThreadsPerBlock < threads) {
		snprintf(why, why_len, "kernel %s: %d threads a block, the device allows %d", name,
		         threads, a.maxThreadsPerBlock);
		return cudaErrorInvalidConfiguration;
	}
	return cudaSuccess;
}

} // namespace cuk
