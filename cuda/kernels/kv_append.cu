/*
 * kv_append.cu - the K and V of each token of a step stored at its
 * position's row (kv.cuh: its slot's cell p % cells, or its block's row in
 * the pool), F16 rounded to nearest even as fp16_from_f32, or F32. One
 * thread per element.
 */
#include <cuda_fp16.h>

#include "../kernels.h"
#include "check.h"
#include "common.cuh"
#include "kv.cuh"

namespace
{

template <bool PAGED>
__global__ void
kv_append_kernel(cuk_kv kv, const float *qkv, uint64_t ld, uint64_t kv_off, uint32_t T,
                 const uint32_t *slot, const uint32_t *pos)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= (uint64_t)T * kv.kv_dim)
		return;
	uint32_t t = (uint32_t)(i / kv.kv_dim), e = (uint32_t)(i % kv.kv_dim);
	const float *src = qkv + (uint64_t)t * ld + kv_off;
	uint64_t o = cuk::kv_row<PAGED>(kv, t, pos[t]) * kv.kv_dim + e;
	void *kb = cuk::kv_base<PAGED>(kv, slot, t, false);
	void *vb = cuk::kv_base<PAGED>(kv, slot, t, true);

	if (kv.f16) {
		((__half *)kb)[o] = __float2half_rn(src[e]);
		((__half *)vb)[o] = __float2half_rn(src[kv.kv_dim + e]);
	} else {
		((float *)kb)[o] = src[e];
		((float *)vb)[o] = src[kv.kv_dim + e];
	}
}

} // namespace

extern "C" cudaError_t
cuk_kv_append(const struct cuk_kv *kv, const float *qkv, uint64_t ld, uint64_t kv_off, uint32_t T,
              const uint32_t *slot, const uint32_t *pos, cudaStream_t st)
{
	uint64_t n = (uint64_t)T * kv->kv_dim;

	if (n == 0)
		return cudaSuccess;
	if (!cuk::kv_valid(kv))
		return cudaErrorInvalidValue;
	if (kv->blocks != NULL)
		kv_append_kernel<true>
		        <<<cuk::div_up(n, 256), 256, 0, st>>>(*kv, qkv, ld, kv_off, T, slot, pos);
	else
		kv_append_kernel<false>
		        <<<cuk::div_up(n, 256), 256, 0, st>>>(*kv, qkv, ld, kv_off, T, slot, pos);
	return cuk::launched();
}

cudaError_t
cuk_check_kv_append(char *why, size_t why_len)
{
	cudaError_t e = cuk::fits(kv_append_kernel<false>, 256, "kv_append", why, why_len);

	return e != cudaSuccess
	               ? e
	               : cuk::fits(kv_append_kernel<true>, 256, "kv_append (paged)", why, why_len);
}
