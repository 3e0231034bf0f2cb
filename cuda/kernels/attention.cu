/*
 * attention.cu - causal attention with grouped KV heads over the cache, for
 * prefill and decode alike, with an optional sliding window and per-head
 * sink logits (gpt-oss): each (token, head) attends to positions
 * [first, pos[t]] of its slot, first = pos[t] - window + 1 (or 0).
 *
 * Design notes
 * - cpu_attn_head normalizes the softmax weights before they weight V, and
 *   with an F16 cache rounds them to F16 first (as llama.cpp does); to give
 *   the same weights, these kernels know the softmax's maximum and sum
 *   before they touch V. A sink joins the maximum and the sum, never V.
 * - The positions are split in parts of CUK_ATTN_SPLIT, one block of 8 warps
 *   per (part, head, token), so a long context spreads over the GPU even at
 *   batch 1. In a block, a thread takes a position's score (its K row read
 *   with 16-byte loads, the dot in order of the dimensions), and for Σ w·V
 *   each warp takes every 8th position, four rows in flight, its lanes the
 *   dimensions (coalesced); the warps' sums are added in warp order. (One
 *   warp a part, each lane's dot and V rows read one dependent load at a
 *   time, took 116 µs a layer for 150 positions on an H100.)
 * - A token whose positions fit in one part (every query of a window of at
 *   most 256, any query before position 256) is done in one pass by
 *   attn_value_kernel: scores into shared memory, the maximum (with the
 *   sink), e^(s - max), their sum in double plus the sink's term, weights
 *   e · (1/sum), Σ w·V: the CPU's arithmetic but for the order of the dot
 *   products and of the sum.
 * - A longer one takes three launches more: attn_stats_kernel (each part's
 *   maximum m and Σ e^(s - m)), attn_norm_kernel (the maximum M over parts
 *   and sink, and 1 / Σ of the parts' sums rescaled to M), and, after
 *   attn_value_kernel has recomputed the scores (K is read twice) and
 *   weighted V by e^(s - M) · (1/Σ), attn_sum_kernel adds the parts in
 *   order. That sum is the CPU's up to rounding, so a weight may differ in
 *   its last float bit and, rarely, in its F16 rounding.
 * - Parts a token does not need return at once, so the grid can be sized
 *   for the whole context (and captured in a graph).
 * - With an F16 cache the query is rounded to F16 before q·K, as the CPU
 *   twin and llama.cpp do.
 * - attn_value_kernel asks for two blocks an SM (at most 128 registers):
 *   given only its block size, CUDA 13.0's ptxas held it to 48 registers
 *   and spilled (the build refuses spills), as it did at 64 and 80.
 * - A paged cache changes only where a position's row is read (kv.cuh: one
 *   table entry per position, cached in L1 across a block's rows), never
 *   the arithmetic: slots and any block size give the same bits.
 */
#include <math.h>

#include <cuda_fp16.h>

#include "../kernels.h"
#include "check.h"
#include "common.cuh"
#include "kv.cuh"

namespace
{

constexpr int MAXK = CUK_ATTN_MAX_D / 32;
constexpr uint32_t SPLIT = CUK_ATTN_SPLIT;
constexpr int WARPS = 8; /* of the scores and values kernels */
constexpr uint32_t THREADS = WARPS * 32;

struct attn_args {
	cuk_kv kv;
	const float *qkv; /* [T][ld]: Q heads at 0 */
	uint64_t ld;
	const uint32_t *slot, *pos; /* [T] */
	uint32_t n_head, group, d, n_split;
	const float *sinks; /* [n_head] or NULL */
	float scale;        /* of each q·K */
	float *part;        /* cuk_attention_part_floats */
	float *out;         /* [T][out_ld] */
	uint64_t out_ld;
};

__device__ __forceinline__ float
kv_elem(const void *base, uint64_t i, bool f16)
{
	return f16 ? __half2float(((const __half *)base)[i]) : ((const float *)base)[i];
}

/* The block's maximum of every thread's @v (@red: WARPS floats of shared memory). */
__device__ __forceinline__ float
block_max(float v, float *red)
{
	v = cuk::warp_max(v);
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = v;
	__syncthreads();
	v = red[0];
	for (int w = 1; w < WARPS; w++)
		v = fmaxf(v, red[w]);
	__syncthreads();
	return v;
}

/* The block's sum of every thread's @v, the warps' sums added in order. */
__device__ __forceinline__ double
block_sum(double v, double *red)
{
	v = cuk::warp_sum(v);
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = v;
	__syncthreads();
	v = red[0];
	for (int w = 1; w < WARPS; w++)
		v += red[w];
	__syncthreads();
	return v;
}

/* The positions token @t's query sees: [*first, *first + *n). */
__device__ __forceinline__ void
span(const attn_args &a, uint32_t t, uint32_t *first, uint32_t *n)
{
	uint32_t n_pos = a.pos[t] + 1;

	*first = a.kv.window && n_pos > a.kv.window ? n_pos - a.kv.window : 0;
	*n = n_pos - *first;
}

/* The scratch of (t, h): n_split parts of (max, sum, d outputs), then (M, 1/Σ). */
__device__ __forceinline__ float *
part_of(const attn_args &a, uint32_t t, uint32_t h)
{
	return a.part + ((uint64_t)t * a.n_head + h) * ((uint64_t)a.n_split * (a.d + 2) + 2);
}

/* Head @h's query of token @t into @q (F16-rounded for an F16 cache). */
__device__ __forceinline__ void
load_q(const attn_args &a, uint32_t t, uint32_t h, float *q)
{
	const float *qs = a.qkv + (uint64_t)t * a.ld + (uint64_t)h * a.d;

	for (uint32_t i = threadIdx.x; i < a.d; i += THREADS)
		q[i] = a.kv.f16 ? __half2float(__float2half_rn(qs[i])) : qs[i];
	__syncthreads();
}

/* Cache element offset of token @t's position @p, the KV head of query head @h (kv.cuh). */
template <bool PAGED>
__device__ __forceinline__ uint64_t
kv_at(const attn_args &a, uint32_t t, uint32_t p, uint32_t h)
{
	return cuk::kv_row<PAGED>(a.kv, t, p) * a.kv.kv_dim + (uint64_t)(h / a.group) * a.d;
}

/*
 * q·K row @k: Σ q[i]·k[i] in order of i as fused multiply-adds, the same
 * order whatever the load width; 16-byte loads where the row allows them
 * (its elements are 16-byte aligned whenever d is a multiple of 8 halves or
 * 4 floats, the cache's base being aligned).
 */
__device__ __forceinline__ float
dot_row(const float *q, const void *k, uint32_t d, bool f16)
{
	float s = 0.0f;

	if (f16 && d % 8 == 0) {
		const uint4 *k4 = (const uint4 *)k;
		for (uint32_t i = 0; i < d / 8; i++) {
			uint4 u = k4[i];
			const __half2 *hh = (const __half2 *)&u;
#pragma unroll
			for (int j = 0; j < 4; j++) {
				float2 f = __half22float2(hh[j]);
				s = fmaf(q[8 * i + 2 * j], f.x, s);
				s = fmaf(q[8 * i + 2 * j + 1], f.y, s);
			}
		}
	} else if (!f16 && d % 4 == 0) {
		const float4 *k4 = (const float4 *)k;
		for (uint32_t i = 0; i < d / 4; i++) {
			float4 f = k4[i];
			s = fmaf(q[4 * i], f.x, s);
			s = fmaf(q[4 * i + 1], f.y, s);
			s = fmaf(q[4 * i + 2], f.z, s);
			s = fmaf(q[4 * i + 3], f.w, s);
		}
	} else {
		for (uint32_t i = 0; i < d; i++)
			s = fmaf(q[i], kv_elem(k, i, f16), s);
	}
	return s;
}

/* q·K[p] · scale of positions [p0, p1) into sc[p - p0], a thread each; the block's maximum. */
template <bool PAGED>
__device__ __forceinline__ float
scores(const attn_args &a, uint32_t t, uint32_t h, const float *q, uint32_t p0, uint32_t p1,
       float *sc, float *red)
{
	const uint8_t *kb = (const uint8_t *)cuk::kv_base<PAGED>(a.kv, a.slot, t, false);
	size_t es = a.kv.f16 ? 2 : 4;
	float scale = a.scale, mx = -INFINITY;

	for (uint32_t p = p0 + threadIdx.x; p < p1; p += THREADS) {
		float s = __fmul_rn(dot_row(q, kb + kv_at<PAGED>(a, t, p, h) * es, a.d, a.kv.f16),
		                    scale);
		sc[p - p0] = s;
		mx = fmaxf(mx, s);
	}
	return block_max(mx, red);
}

/* Each part's maximum and Σ e^(s - max), for tokens that need more than one part. */
template <bool PAGED>
__global__ void
__launch_bounds__(THREADS) attn_stats_kernel(attn_args a)
{
	__shared__ float sc[SPLIT];
	__shared__ float q[CUK_ATTN_MAX_D];
	__shared__ float red[WARPS];
	__shared__ double redd[WARPS];
	uint32_t split = blockIdx.x % a.n_split, h = blockIdx.x / a.n_split, t = blockIdx.y;
	uint32_t first, n;

	span(a, t, &first, &n);
	if (n <= SPLIT || split * SPLIT >= n)
		return;
	uint32_t p0 = first + split * SPLIT, p1 = first + min(n, (split + 1) * SPLIT);
	load_q(a, t, h, q);
	float mx = scores<PAGED>(a, t, h, q, p0, p1, sc, red);
	double l = 0.0;
	for (uint32_t p = p0 + threadIdx.x; p < p1; p += THREADS)
		l += (double)expf(sc[p - p0] - mx);
	l = block_sum(l, redd);
	if (threadIdx.x == 0) {
		float *o = part_of(a, t, h) + (uint64_t)split * (a.d + 2);
		o[0] = mx;
		o[1] = (float)l;
	}
}

/* The maximum M over the parts and the sink, and 1 / Σ (sink included) at M. */
__global__ void __launch_bounds__(32) attn_norm_kernel(attn_args a)
{
	uint32_t h = blockIdx.x, t = blockIdx.y, first, n;

	span(a, t, &first, &n);
	if (n <= SPLIT)
		return;
	uint32_t n_act = min((n + SPLIT - 1) / SPLIT, a.n_split);
	float *base = part_of(a, t, h), M = -INFINITY;
	for (uint32_t s = threadIdx.x; s < n_act; s += 32)
		M = fmaxf(M, base[(uint64_t)s * (a.d + 2)]);
	M = cuk::warp_max(M);
	if (a.sinks)
		M = fmaxf(M, a.sinks[h]);
	double tot = 0.0;
	for (uint32_t s = threadIdx.x; s < n_act; s += 32) {
		const float *o = base + (uint64_t)s * (a.d + 2);
		tot += (double)o[1] * (double)expf(o[0] - M);
	}
	tot = cuk::warp_sum(tot);
	if (a.sinks)
		tot += (double)expf(a.sinks[h] - M);
	if (threadIdx.x == 0) {
		base[(uint64_t)a.n_split * (a.d + 2)] = M;
		base[(uint64_t)a.n_split * (a.d + 2) + 1] = (float)(1.0 / tot);
	}
}

/* The normalizer of a one-part token, as cpu_attn_head: e^(s - M) into sc; returns 1 / Σ. */
__device__ __forceinline__ float
one_part_norm(const attn_args &a, uint32_t h, float M, uint32_t len, float *sc, double *redd)
{
	double tot = 0.0;

	if (a.sinks)
		M = fmaxf(M, a.sinks[h]);
	for (uint32_t i = threadIdx.x; i < len; i += THREADS) {
		sc[i] = expf(sc[i] - M);
		tot += (double)sc[i];
	}
	tot = block_sum(tot, redd);
	if (a.sinks)
		tot += (double)expf(a.sinks[h] - M);
	return (float)(1.0 / tot);
}

/*
 * Σ w·V over positions [p0, p1) into acc: warp w takes positions p0 + w,
 * p0 + w + WARPS, ..., four rows in flight, lane l the dimensions l + 32k.
 */
template <bool PAGED>
__device__ __forceinline__ void
weigh_values(const attn_args &a, uint32_t t, uint32_t h, uint32_t p0, uint32_t p1, const float *sc,
             float *acc)
{
	const uint8_t *vb = (const uint8_t *)cuk::kv_base<PAGED>(a.kv, a.slot, t, true);
	size_t es = a.kv.f16 ? 2 : 4;
	uint32_t lane = threadIdx.x % 32, p = p0 + threadIdx.x / 32;

	for (; p + 3 * WARPS < p1; p += 4 * WARPS) {
		const void *v[4];
		float w[4];
#pragma unroll
		for (int r = 0; r < 4; r++) {
			v[r] = vb + kv_at<PAGED>(a, t, p + r * WARPS, h) * es;
			w[r] = sc[p + r * WARPS - p0];
		}
#pragma unroll
		for (int k = 0; k < MAXK; k++) {
			if (lane + 32 * k >= a.d)
				break;
			float x[4];
#pragma unroll
			for (int r = 0; r < 4; r++)
				x[r] = kv_elem(v[r], lane + 32 * k, a.kv.f16);
#pragma unroll
			for (int r = 0; r < 4; r++)
				acc[k] = fmaf(w[r], x[r], acc[k]);
		}
	}
	for (; p < p1; p += WARPS) {
		const void *v = vb + kv_at<PAGED>(a, t, p, h) * es;
		float w = sc[p - p0];
#pragma unroll
		for (int k = 0; k < MAXK; k++)
			if (lane + 32 * k < a.d)
				acc[k] = fmaf(w, kv_elem(v, lane + 32 * k, a.kv.f16), acc[k]);
	}
}

/* Σ w·V over one part: the whole attention of a one-part token, else the part's share. */
template <bool PAGED>
__global__ void
__launch_bounds__(THREADS, 2) attn_value_kernel(attn_args a)
{
	__shared__ float sc[SPLIT];
	__shared__ float q[CUK_ATTN_MAX_D];
	__shared__ float red[WARPS];
	__shared__ double redd[WARPS];
	__shared__ float wsum[WARPS][CUK_ATTN_MAX_D];
	uint32_t split = blockIdx.x % a.n_split, h = blockIdx.x / a.n_split, t = blockIdx.y;
	uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, first, n;

	span(a, t, &first, &n);
	if (split * SPLIT >= n)
		return;
	uint32_t p0 = first + split * SPLIT, p1 = first + min(n, (split + 1) * SPLIT);
	load_q(a, t, h, q);
	float mx = scores<PAGED>(a, t, h, q, p0, p1, sc, red), inv;
	if (n <= SPLIT) {
		inv = one_part_norm(a, h, mx, p1 - p0, sc, redd);
	} else {
		const float *norm = part_of(a, t, h) + (uint64_t)a.n_split * (a.d + 2);
		float M = norm[0];
		inv = norm[1];
		for (uint32_t p = p0 + threadIdx.x; p < p1; p += THREADS)
			sc[p - p0] = expf(sc[p - p0] - M);
	}
	for (uint32_t p = p0 + threadIdx.x; p < p1; p += THREADS) {
		float w = __fmul_rn(sc[p - p0], inv);
		sc[p - p0] = a.kv.f16 ? __half2float(__float2half_rn(w)) : w;
	}
	__syncthreads();
	float acc[MAXK];
#pragma unroll
	for (int k = 0; k < MAXK; k++)
		acc[k] = 0.0f;
	weigh_values<PAGED>(a, t, h, p0, p1, sc, acc);
#pragma unroll
	for (int k = 0; k < MAXK; k++)
		if (lane + 32 * k < a.d)
			wsum[warp][lane + 32 * k] = acc[k];
	__syncthreads();
	float *o = n <= SPLIT ? a.out + (uint64_t)t * a.out_ld + (uint64_t)h * a.d
	                      : part_of(a, t, h) + (uint64_t)split * (a.d + 2) + 2;
	for (uint32_t i = threadIdx.x; i < a.d; i += THREADS) {
		float s = wsum[0][i];
		for (int w = 1; w < WARPS; w++)
			s = __fadd_rn(s, wsum[w][i]);
		o[i] = s;
	}
}

/* The parts' outputs of a many-part token added in order. */
__global__ void __launch_bounds__(32) attn_sum_kernel(attn_args a)
{
	uint32_t h = blockIdx.x, t = blockIdx.y, first, n;

	span(a, t, &first, &n);
	if (n <= SPLIT)
		return;
	uint32_t n_act = min((n + SPLIT - 1) / SPLIT, a.n_split);
	const float *base = part_of(a, t, h);
	for (uint32_t i = threadIdx.x; i < a.d; i += 32) {
		float o = 0.0f;
		for (uint32_t s = 0; s < n_act; s++)
			o = __fadd_rn(o, base[(uint64_t)s * (a.d + 2) + 2 + i]);
		a.out[(uint64_t)t * a.out_ld + (uint64_t)h * a.d + i] = o;
	}
}

} // namespace

extern "C" cudaError_t
cuk_attention(const struct cuk_kv *kv, const float *qkv, uint64_t ld, uint32_t T,
              const uint32_t *slot, const uint32_t *pos, uint32_t n_head, uint32_t n_head_kv,
              uint32_t d, uint32_t n_split, const float *sinks, float scale, float *part,
              float *out, uint64_t out_ld, cudaStream_t st)
{
	if (T == 0)
		return cudaSuccess;
	if (d == 0 || d > CUK_ATTN_MAX_D || n_head_kv == 0 || n_head % n_head_kv != 0 ||
	    n_split == 0 || T > 65535 || (uint64_t)n_split * n_head > 0x7fffffffu ||
	    !cuk::kv_valid(kv) || n_head > 65535)
		return cudaErrorInvalidValue;
	/* 0: 1/√d, computed as cpu_attn_head does */
	float sc = scale != 0.0f ? scale : 1.0f / sqrtf((float)d);
	attn_args a = {*kv, qkv,     ld,    slot, pos,  n_head, n_head / n_head_kv,
	               d,   n_split, sinks, sc,   part, out,    out_ld};
	dim3 parts(n_split * n_head, T), heads(n_head, T);
	cudaError_t e;

	if (kv->blocks != NULL)
		attn_stats_kernel<true><<<parts, THREADS, 0, st>>>(a);
	else
		attn_stats_kernel<false><<<parts, THREADS, 0, st>>>(a);
	if ((e = cuk::launched()) != cudaSuccess)
		return e;
	attn_norm_kernel<<<heads, 32, 0, st>>>(a);
	if ((e = cuk::launched()) != cudaSuccess)
		return e;
	if (kv->blocks != NULL)
		attn_value_kernel<true><<<parts, THREADS, 0, st>>>(a);
	else
		attn_value_kernel<false><<<parts, THREADS, 0, st>>>(a);
	if ((e = cuk::launched()) != cudaSuccess)
		return e;
	attn_sum_kernel<<<heads, 32, 0, st>>>(a);
	return cuk::launched();
}

cudaError_t
cuk_check_attention(char *why, size_t why_len)
{
	cudaError_t e;

	if ((e = cuk::fits(attn_stats_kernel<false>, THREADS, "attn_stats", why, why_len)) !=
	            cudaSuccess ||
	    (e = cuk::fits(attn_stats_kernel<true>, THREADS, "attn_stats (paged)", why, why_len)) !=
	            cudaSuccess ||
	    (e = cuk::fits(attn_norm_kernel, 32, "attn_norm", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(attn_value_kernel<false>, THREADS, "attn_value", why, why_len)) !=
	            cudaSuccess ||
	    (e = cuk::fits(attn_value_kernel<true>, THREADS, "attn_value (paged)", why, why_len)) !=
	            cudaSuccess)
		return e;
	return cuk::fits(attn_sum_kernel, 32, "attn_sum", why, why_len);
}
