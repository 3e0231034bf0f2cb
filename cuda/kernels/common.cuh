#pragma once
/* common.cuh - warp reductions and launch helpers shared by the kernels. */
#include <cuda_runtime.h>
#include <stdint.h>

namespace cuk {

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

namespace cuk {

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
