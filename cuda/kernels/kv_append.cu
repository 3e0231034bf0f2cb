/*
 * kv_append.cu - the K and V of each token of a step stored in its slot's
 * cache at its position's cell, p % cells (F16 rounded to nearest even, as
 * fp16_from_f32, or F32). One thread per element.
 */
#include <cuda_fp16.h>

#include "../kernels.h"
#include "check.h"
#include "common.cuh"

namespace
{

__global__ void
kv_append_kernel(cuk_kv kv, const float *qkv, uint64_t ld, uint64_t kv_off, uint32_t T,
                 const uint32_t *slot, const uint32_t *pos)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= (uint64_t)T * kv.kv_dim)
		return;
	uint32_t t = (uint32_t)(i / kv.kv_dim), e = (uint32_t)(i % kv.kv_dim);
	const float *src = qkv + (uint64_t)t * ld + kv_off;
	uint64_t o = (kv.layer_off + pos[t] % kv.cells) * kv.kv_dim + e;
	void *kb = kv.k_base[slot[t]], *vb = kv.v_base[slot[t]];

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
	if (kv->cells == 0)
		return cudaErrorInvalidValue;
	kv_append_kernel<<<cuk::div_up(n, 256), 256, 0, st>>>(*kv, qkv, ld, kv_off, T, slot, pos);
	return cuk::launched();
}

cudaError_t
cuk_check_kv_append(char *why, size_t why_len)
{
	return cuk::fits(kv_append_kernel, 256, "kv_append", why, why_len);
}
