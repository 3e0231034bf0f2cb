/*
 * attention.cu - causal attention with grouped KV heads over the cache, for
 * prefill and decode alike: each (token, head) attends to positions
 * [0, pos[t]] of its slot.
 *
 * Design notes
 * - The KV length is split in parts of CUK_ATTN_SPLIT positions, one warp
 *   per (part, head, token), so a long context spreads over the GPU even at
 *   batch 1. A part keeps its scores in shared memory: lane l scores
 *   positions l, l + 32, ... (q·k over the head), then lane l sums dims
 *   l, l + 32, ... of Σ e^(s - max)·V, reading V rows coalesced.
 * - A part writes (max, Σ e^(s - max), unnormalized output); the combine
 *   kernel rescales the parts to the global max and divides by the total.
 *   Parts past the token's position write max = -inf and are skipped, so the
 *   grid can be sized for the whole context (and captured in a graph).
 * - With an F16 cache the query is rounded to F16 before q·K, as the CPU
 *   twin (cpu_attn_head) and llama.cpp do.
 */
#include <math.h>

#include <cuda_fp16.h>

#include "../kernels.h"
#include "check.h"
#include "common.cuh"

namespace
{

constexpr int MAXK = CUK_ATTN_MAX_D / 32;

__device__ __forceinline__ float
kv_elem(const void *base, uint64_t i, bool f16)
{
	return f16 ? __half2float(((const __half *)base)[i]) : ((const float *)base)[i];
}

__global__ void __launch_bounds__(32)
        attn_part_kernel(cuk_kv kv, const float *qkv, uint64_t ld, const uint32_t *slot,
                         const uint32_t *pos, uint32_t n_head, uint32_t group, uint32_t d,
                         uint32_t n_split, float *part)
{
	__shared__ float sc[CUK_ATTN_SPLIT];
	__shared__ float q[CUK_ATTN_MAX_D];
	uint32_t split = blockIdx.x % n_split, h = blockIdx.x / n_split, t = blockIdx.y;
	uint32_t lane = threadIdx.x, n_pos = pos[t] + 1, p0 = split * CUK_ATTN_SPLIT;
	float *out = part + (((uint64_t)t * n_head + h) * n_split + split) * (d + 2);

	if (p0 >= n_pos) {
		if (lane == 0) {
			out[0] = -INFINITY;
			out[1] = 0.0f;
		}
		return;
	}
	uint32_t p1 = min(n_pos, p0 + CUK_ATTN_SPLIT);
	const float *qs = qkv + (uint64_t)t * ld + (uint64_t)h * d;
	for (uint32_t i = lane; i < d; i += 32)
		q[i] = kv.f16 ? __half2float(__float2half_rn(qs[i])) : qs[i];
	__syncwarp();
	uint64_t kvh = (uint64_t)(h / group) * d;
	const uint8_t *kb = (const uint8_t *)kv.k_base[slot[t]];
	const uint8_t *vb = (const uint8_t *)kv.v_base[slot[t]];
	size_t es = kv.f16 ? 2 : 4;
	uint64_t layer0 = (uint64_t)kv.layer * kv.n_ctx;
	float scale = __fdiv_rn(1.0f, sqrtf((float)d)), mx = -INFINITY;

	for (uint32_t p = p0 + lane; p < p1; p += 32) {
		const void *k = kb + ((layer0 + p) * kv.kv_dim + kvh) * es;
		float s = 0.0f;
		for (uint32_t i = 0; i < d; i++)
			s = fmaf(q[i], kv_elem(k, i, kv.f16), s);
		s *= scale;
		sc[p - p0] = s;
		mx = fmaxf(mx, s);
	}
	mx = cuk::warp_max(mx);
	float sum = 0.0f;
	for (uint32_t p = p0 + lane; p < p1; p += 32) {
		float e = expf(sc[p - p0] - mx);
		sc[p - p0] = e;
		sum += e;
	}
	sum = cuk::warp_sum(sum);
	__syncwarp();
	float acc[MAXK];
#pragma unroll
	for (int k = 0; k < MAXK; k++)
		acc[k] = 0.0f;
	for (uint32_t p = p0; p < p1; p++) {
		const void *v = vb + ((layer0 + p) * kv.kv_dim + kvh) * es;
		float w = sc[p - p0];
#pragma unroll
		for (int k = 0; k < MAXK; k++)
			if (lane + 32 * k < d)
				acc[k] = fmaf(w, kv_elem(v, lane + 32 * k, kv.f16), acc[k]);
	}
	if (lane == 0) {
		out[0] = mx;
		out[1] = sum;
	}
#pragma unroll
	for (int k = 0; k < MAXK; k++)
		if (lane + 32 * k < d)
			out[2 + lane + 32 * k] = acc[k];
}

__global__ void __launch_bounds__(32)
        attn_combine_kernel(const float *part, uint32_t n_head, uint32_t d, uint32_t n_split,
                            float *out, uint64_t out_ld)
{
	uint32_t h = blockIdx.x, t = blockIdx.y, lane = threadIdx.x;
	const float *pp = part + ((uint64_t)t * n_head + h) * n_split * (d + 2);
	float mx = -INFINITY, total = 0.0f;

	for (uint32_t s = 0; s < n_split; s++)
		mx = fmaxf(mx, pp[(uint64_t)s * (d + 2)]);
	for (uint32_t s = 0; s < n_split; s++) {
		float m = pp[(uint64_t)s * (d + 2)];
		if (m != -INFINITY)
			total += pp[(uint64_t)s * (d + 2) + 1] * expf(m - mx);
	}
	for (uint32_t i = lane; i < d; i += 32) {
		float o = 0.0f;
		for (uint32_t s = 0; s < n_split; s++) {
			float m = pp[(uint64_t)s * (d + 2)];
			if (m != -INFINITY)
				o = fmaf(pp[(uint64_t)s * (d + 2) + 2 + i], expf(m - mx), o);
		}
		out[(uint64_t)t * out_ld + (uint64_t)h * d + i] = o / total;
	}
}

} // namespace

extern "C" cudaError_t
cuk_attention(const struct cuk_kv *kv, const float *qkv, uint64_t ld, uint32_t T,
              const uint32_t *slot, const uint32_t *pos, uint32_t n_head, uint32_t n_head_kv,
              uint32_t d, uint32_t n_split, float *part, float *out, uint64_t out_ld,
              cudaStream_t st)
{
	if (T == 0)
		return cudaSuccess;
	if (d == 0 || d > CUK_ATTN_MAX_D || n_head_kv == 0 || n_head % n_head_kv != 0 ||
	    n_split == 0 || T > 65535 || (uint64_t)n_split * n_head > 0x7fffffffu)
		return cudaErrorInvalidValue;
	attn_part_kernel<<<dim3(n_split * n_head, T), 32, 0, st>>>(
	        *kv, qkv, ld, slot, pos, n_head, n_head / n_head_kv, d, n_split, part);
	cudaError_t e = cuk::launched();
	if (e != cudaSuccess)
		return e;
	attn_combine_kernel<<<dim3(n_head, T), 32, 0, st>>>(part, n_head, d, n_split, out, out_ld);
	return cuk::launched();
}

cudaError_t
cuk_check_attention(char *why, size_t why_len)
{
	cudaError_t e = cuk::fits(attn_part_kernel, 32, "attn_part", why, why_len);

	return e != cudaSuccess ? e
	                        : cuk::fits(attn_combine_kernel, 32, "attn_combine", why, why_len);
}
