/*
 * sample.cu - samp_sample() on the device: NaN → -inf, a grammar's mask,
 * logit_bias, repetition penalty, presence and frequency penalties, greedy
 * argmax, temperature, a stable descending sort by logit (ties stay in id
 * order), top-k, top-p, min-p and the Philox draw.
 *
 * Design notes
 * - The steps and their float arithmetic are the CPU sampler's: the same
 *   divisions, the probabilities as (float)exp((double)(l - l0)), the
 *   comparisons in the same precision. Only the double sums are formed in a
 *   different order (per-thread runs, then the runs in order), which moves
 *   them by ~1e-16 relative: a draw could pick another token only if it
 *   fell that close to a boundary.
 * - One block per row for the penalty, argmax and the filters; the sort is
 *   CUB's segmented radix sort (stable), over rows that sample at random.
 * - logit_bias is applied by one thread in list order (a token listed twice
 *   gets both, in order, as on the CPU; at most BE_SAMPLE_MAX_BIAS entries).
 *   The presence and frequency penalties count each generated token in the
 *   row's @vals (free until the sort keys are written), then the one thread
 *   that takes a token's count subtracts presence once and frequency as
 *   many times as it occurred, one float subtraction at a time: the CPU's
 *   values, which subtract in order of occurrence.
 */
#include <cub/device/device_segmented_sort.cuh>
#include <math.h>

#include "../kernels.h"
#include "check.h"
#include "common.cuh"

namespace
{

constexpr int THREADS = 256;

__device__ __forceinline__ double
philox_uniform(uint64_t seed, uint64_t index)
{
	uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32), c2 = 0, c3 = 0;
	uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);

	for (int r = 0; r < 10; r++) {
		uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
		uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
		c0 = hi1 ^ c1 ^ k0;
		c1 = lo1;
		c2 = hi0 ^ c3 ^ k1;
		c3 = lo0;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	return (double)c0 / 4294967296.0;
}

/* Presence and frequency penalties over the row's generated tokens (@cnt: n_vocab ints). */
__device__ void
presence_frequency(const cuk_samp &p, const int32_t *h, uint32_t nh, float *lg, uint32_t n_vocab,
                   int32_t *cnt)
{
	uint32_t tid = threadIdx.x, gen = p.index < nh ? (uint32_t)p.index : nh;

	for (uint32_t j = tid; j < n_vocab; j += THREADS)
		cnt[j] = 0;
	__syncthreads();
	for (uint32_t i = nh - gen + tid; i < nh; i += THREADS)
		if (h[i] >= 0 && (uint32_t)h[i] < n_vocab)
			atomicAdd(&cnt[h[i]], 1);
	__syncthreads();
	for (uint32_t i = nh - gen + tid; i < nh; i += THREADS) {
		int32_t id = h[i];
		int c = id >= 0 && (uint32_t)id < n_vocab ? atomicExch(&cnt[id], 0) : 0;
		if (c == 0) /* another thread took this token */
			continue;
		float l = __fsub_rn(lg[id], p.presence);
		for (int k = 0; k < c; k++)
			l = __fsub_rn(l, p.frequency);
		lg[id] = l;
	}
	__syncthreads();
}

/*
 * Per row: NaN → -inf, the mask, logit_bias, the penalties, then greedy rows
 * get their id and the others sort keys.
 */
__global__ void
__launch_bounds__(THREADS)
        prep_kernel(float *logits, uint32_t n_vocab, const cuk_samp *sp, const int32_t *hist,
                    uint32_t hist_cap, cuk_sample_pre pre, float *keys, int32_t *vals, int32_t *ids)
{
	__shared__ float best_v[THREADS];
	__shared__ uint32_t best_j[THREADS];
	const cuk_samp p = sp[blockIdx.x];
	float *lg = logits + (uint64_t)blockIdx.x * n_vocab;
	uint32_t tid = threadIdx.x;
	const uint32_t *m =
	        p.mask == CUK_NO_MASK ? nullptr : pre.mask + (uint64_t)p.mask * pre.mask_words;

	for (uint32_t j = tid; j < n_vocab; j += THREADS)
		if (isnan(lg[j]) || (m != nullptr && !((m[j / 32] >> (j % 32)) & 1)))
			lg[j] = -INFINITY;
	__syncthreads();
	if (p.n_bias > 0 && tid == 0)
		for (uint32_t i = 0; i < p.n_bias; i++) {
			cuk_bias b = pre.bias[p.bias0 + i];
			if (b.id >= 0 && (uint32_t)b.id < n_vocab)
				lg[b.id] =
				        b.bias <= -100.0f ? -INFINITY : __fadd_rn(lg[b.id], b.bias);
		}
	__syncthreads();
	if (p.repeat_penalty != 1.0f && p.repeat_penalty > 0.0f) {
		const int32_t *h = hist + (uint64_t)p.slot * hist_cap;
		uint32_t nh = min(p.n_hist, hist_cap);
		uint32_t from = nh > p.repeat_last_n ? nh - p.repeat_last_n : 0;
		for (uint32_t i = from + tid; i < nh; i += THREADS) {
			int32_t id = h[i];
			bool seen = id < 0 || (uint32_t)id >= n_vocab;
			for (uint32_t k = from; k < i && !seen; k++)
				seen = h[k] == id;
			if (!seen) /* distinct ids: no two threads write one logit */
				lg[id] = lg[id] > 0 ? __fdiv_rn(lg[id], p.repeat_penalty)
				                    : __fmul_rn(lg[id], p.repeat_penalty);
		}
		__syncthreads();
	}
	if (p.presence != 0.0f || p.frequency != 0.0f) /* the same for every thread of the row */
		presence_frequency(p, hist + (uint64_t)p.slot * hist_cap, min(p.n_hist, hist_cap),
		                   lg, n_vocab, vals + (uint64_t)blockIdx.x * n_vocab);
	if (p.temperature <= 0.0f) { /* greedy: the first maximum */
		float bv = -INFINITY;
		uint32_t bj = tid;
		for (uint32_t j = tid; j < n_vocab; j += THREADS)
			if (lg[j] > bv) {
				bv = lg[j];
				bj = j;
			}
		best_v[tid] = bv;
		best_j[tid] = bj;
		__syncthreads();
		for (uint32_t s = THREADS / 2; s > 0; s >>= 1) {
			if (tid < s) {
				float ov = best_v[tid + s];
				uint32_t oj = best_j[tid + s];
				if (ov > best_v[tid] || (ov == best_v[tid] && oj < best_j[tid])) {
					best_v[tid] = ov;
					best_j[tid] = oj;
				}
			}
			__syncthreads();
		}
		if (tid == 0) /* no candidate above -inf: no token (samp_sample's SAMP_NONE) */
			ids[blockIdx.x] = best_v[0] == -INFINITY ? -1 : (int32_t)best_j[0];
	}
	for (uint32_t j = tid; j < n_vocab; j += THREADS) {
		float k = p.temperature > 0.0f ? __fdiv_rn(lg[j], p.temperature) : lg[j];
		keys[(uint64_t)blockIdx.x * n_vocab + j] =
		        k == 0.0f ? 0.0f : k; /* -0 sorts as +0 */
		vals[(uint64_t)blockIdx.x * n_vocab + j] = (int32_t)j;
	}
}

/* Σ over [0, n) of pr in THREADS contiguous runs: each thread's run sum and the exclusive offsets.
 */
__device__ double
runs_sum(const float *pr, uint32_t n, double *off)
{
	__shared__ double total;
	uint32_t tid = threadIdx.x, seg = (n + THREADS - 1) / THREADS;
	uint32_t lo = min(n, tid * seg), hi = min(n, lo + seg);
	double s = 0.0;

	for (uint32_t j = lo; j < hi; j++)
		s += (double)pr[j];
	off[tid] = s;
	__syncthreads();
	if (tid == 0) {
		double acc = 0.0;
		for (int t = 0; t < THREADS; t++) {
			double v = off[t];
			off[t] = acc;
			acc += v;
		}
		total = acc;
	}
	__syncthreads();
	return total;
}

/* Per random row, on its sorted keys: top-k, probabilities, top-p, min-p, the draw. */
__global__ void
__launch_bounds__(THREADS) filter_kernel(uint32_t n_vocab, const cuk_samp *sp, const float *keys,
                                         const int32_t *vals, float *probs, int32_t *ids)
{
	__shared__ double off[THREADS];
	__shared__ uint32_t cut;
	const cuk_samp p = sp[blockIdx.x];
	const float *k = keys + (uint64_t)blockIdx.x * n_vocab;
	const int32_t *v = vals + (uint64_t)blockIdx.x * n_vocab;
	float *pr = probs + (uint64_t)blockIdx.x * n_vocab;
	uint32_t tid = threadIdx.x, n = n_vocab;

	if (p.temperature <= 0.0f)
		return;
	if (k[0] == -INFINITY) { /* sorted: nothing above -inf, no token (SAMP_NONE) */
		if (tid == 0)
			ids[blockIdx.x] = -1;
		return;
	}
	if (p.top_k > 0 && (uint32_t)p.top_k < n)
		n = (uint32_t)p.top_k;
	for (uint32_t j = tid; j < n; j += THREADS)
		pr[j] = (float)exp((double)(k[j] - k[0]));
	__syncthreads();
	double sum = runs_sum(pr, n, off);
	uint32_t seg = (n + THREADS - 1) / THREADS, lo = min(n, tid * seg), hi = min(n, lo + seg);
	if (tid == 0)
		cut = n;
	__syncthreads();
	if (p.top_p < 1.0f) { /* the shortest prefix (≥ 1) whose mass reaches top_p */
		double thr = (double)p.top_p * sum, cum = off[tid];
		for (uint32_t j = lo; j < hi; j++) {
			cum += (double)pr[j];
			if (!(cum < thr)) {
				atomicMin(&cut, j + 1);
				break;
			}
		}
		__syncthreads();
		n = cut;
		__syncthreads(); /* every thread has read cut before min-p lowers it again */
	}
	if (p.min_p > 0.0f) { /* then the prefix within min_p of the top */
		float floor_p = p.min_p * pr[0];
		/* every index from 1 once (thread 0 takes THREADS, 2 THREADS, ...) */
		for (uint32_t j = tid == 0 ? THREADS : tid; j < n; j += THREADS)
			if (!(pr[j] >= floor_p)) {
				atomicMin(&cut, j);
				break;
			}
		__syncthreads();
		n = cut;
	}
	sum = runs_sum(pr, n, off);
	seg = (n + THREADS - 1) / THREADS, lo = min(n, tid * seg), hi = min(n, lo + seg);
	if (tid == 0)
		cut = n - 1;
	__syncthreads();
	double u = philox_uniform(p.seed, p.index) * sum, cum = off[tid];
	for (uint32_t j = lo; j < hi; j++) {
		cum += (double)pr[j];
		if (u < cum) {
			atomicMin(&cut, j);
			break;
		}
	}
	__syncthreads();
	if (tid == 0)
		ids[blockIdx.x] = v[cut];
}

/*
 * Greedy rows without a penalty: the first maximum (NaN never wins) of each
 * row, in two launches: AM_PARTS blocks a row each find their slice's, then
 * one warp a row picks among them (ties to the lower id, as prep_kernel).
 * (prep_kernel's one block a row, which also writes the sort's keys, took
 * 400 µs a step for 151,936 logits on an H100.)
 */
constexpr uint32_t AM_PARTS = 64;

__device__ __forceinline__ bool
better(float v, uint32_t j, float bv, uint32_t bj)
{
	return v > bv || (v == bv && j < bj);
}

__global__ void
__launch_bounds__(THREADS)
        argmax_part_kernel(const float *logits, uint32_t n_vocab, float *pv, uint32_t *pj)
{
	__shared__ float sv[THREADS / 32];
	__shared__ uint32_t sj[THREADS / 32];
	const float *lg = logits + (uint64_t)blockIdx.y * n_vocab;
	uint32_t per = (n_vocab + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * per;
	uint32_t hi = min(n_vocab, lo + per), tid = threadIdx.x;
	float bv = -INFINITY;
	uint32_t bj = lo;

	for (uint32_t j = lo + tid; j < hi; j += THREADS)
		if (lg[j] > bv) { /* false for NaN */
			bv = lg[j];
			bj = j;
		}
	for (int o = 16; o > 0; o >>= 1) {
		float ov = __shfl_xor_sync(0xffffffffu, bv, o);
		uint32_t oj = __shfl_xor_sync(0xffffffffu, bj, o);
		if (better(ov, oj, bv, bj)) {
			bv = ov;
			bj = oj;
		}
	}
	if (tid % 32 == 0) {
		sv[tid / 32] = bv;
		sj[tid / 32] = bj;
	}
	__syncthreads();
	if (tid == 0) {
		for (uint32_t w = 1; w < THREADS / 32; w++)
			if (better(sv[w], sj[w], bv, bj)) {
				bv = sv[w];
				bj = sj[w];
			}
		pv[(uint64_t)blockIdx.y * gridDim.x + blockIdx.x] = bv;
		pj[(uint64_t)blockIdx.y * gridDim.x + blockIdx.x] = bj;
	}
}

__global__ void __launch_bounds__(32)
        argmax_done_kernel(uint32_t parts, const float *pv, const uint32_t *pj, int32_t *ids)
{
	const float *v = pv + (uint64_t)blockIdx.x * parts;
	const uint32_t *jj = pj + (uint64_t)blockIdx.x * parts;
	float bv = -INFINITY;
	uint32_t bj = 0xffffffffu;

	for (uint32_t i = threadIdx.x; i < parts; i += 32)
		if (better(v[i], jj[i], bv, bj)) {
			bv = v[i];
			bj = jj[i];
		}
	for (int o = 16; o > 0; o >>= 1) {
		float ov = __shfl_xor_sync(0xffffffffu, bv, o);
		uint32_t oj = __shfl_xor_sync(0xffffffffu, bj, o);
		if (better(ov, oj, bv, bj)) {
			bv = ov;
			bj = oj;
		}
	}
	if (threadIdx.x == 0) /* every logit NaN or -inf: no token (samp_sample's SAMP_NONE) */
		ids[blockIdx.x] = bv == -INFINITY ? -1 : (int32_t)bj;
}

__global__ void
advance_kernel(uint32_t n, const int32_t *ids, int32_t *tok, uint32_t *pos, cuk_samp *sp,
               int32_t *hist, uint32_t hist_cap)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	tok[i] = ids[i] < 0 ? 0 : ids[i]; /* no token: its job ends; never an index below 0 */
	pos[i] += 1;
	sp[i].index += 1;
	uint32_t nh = sp[i].n_hist;
	if (nh < hist_cap)
		hist[(uint64_t)sp[i].slot * hist_cap + nh] = ids[i];
	sp[i].n_hist = nh + 1;
}

} // namespace

extern "C" cudaError_t
cuk_sample_tmp_bytes(uint32_t n, uint32_t n_vocab, size_t *ret)
{
	int items = (int)((uint64_t)n * n_vocab);

	if ((uint64_t)n * n_vocab > 0x7fffffffu)
		return cudaErrorInvalidValue;
	return cub::DeviceSegmentedSort::StableSortPairsDescending(
	        nullptr, *ret, (const float *)nullptr, (float *)nullptr, (const int32_t *)nullptr,
	        (int32_t *)nullptr, items, (int)n, (const uint32_t *)nullptr,
	        (const uint32_t *)nullptr);
}

extern "C" cudaError_t
cuk_sample(float *logits, uint32_t n, uint32_t n_vocab, const struct cuk_samp *sp,
           const int32_t *hist, uint32_t hist_cap, bool any_random,
           const struct cuk_sample_pre *pre, void *sort_tmp, size_t sort_tmp_bytes, float *keys,
           int32_t *vals, float *probs, const uint32_t *seg, int32_t *ids, cudaStream_t st)
{
	uint64_t items = (uint64_t)n * n_vocab;
	cudaError_t e;

	if (n == 0)
		return cudaSuccess;
	if (items > 0x7fffffffu || n_vocab == 0)
		return cudaErrorInvalidValue;
	if (!any_random && !pre->any) {
		/* parts · 2 ≤ n_vocab: the partials fit in @probs */
		uint32_t parts = max(1u, min(AM_PARTS, n_vocab / THREADS));
		float *pv = probs;
		uint32_t *pj = (uint32_t *)(probs + (uint64_t)n * parts);
		if (n > 65535)
			return cudaErrorInvalidValue;
		argmax_part_kernel<<<dim3(parts, n), THREADS, 0, st>>>(logits, n_vocab, pv, pj);
		if ((e = cuk::launched()) != cudaSuccess)
			return e;
		argmax_done_kernel<<<n, 32, 0, st>>>(parts, pv, pj, ids);
		return cuk::launched();
	}
	prep_kernel<<<n, THREADS, 0, st>>>(logits, n_vocab, sp, hist, hist_cap, *pre, keys, vals,
	                                   ids);
	if ((e = cuk::launched()) != cudaSuccess || !any_random)
		return e;
	size_t bytes = sort_tmp_bytes;
	e = cub::DeviceSegmentedSort::StableSortPairsDescending(sort_tmp, bytes, keys, keys + items,
	                                                        vals, vals + items, (int)items,
	                                                        (int)n, seg, seg + 1, st);
	if (e != cudaSuccess)
		return e;
	filter_kernel<<<n, THREADS, 0, st>>>(n_vocab, sp, keys + items, vals + items, probs, ids);
	return cuk::launched();
}

extern "C" cudaError_t
cuk_advance(uint32_t n, const int32_t *ids, int32_t *tok, uint32_t *pos, struct cuk_samp *sp,
            int32_t *hist, uint32_t hist_cap, cudaStream_t st)
{
	if (n == 0)
		return cudaSuccess;
	advance_kernel<<<cuk::div_up(n, 128), 128, 0, st>>>(n, ids, tok, pos, sp, hist, hist_cap);
	return cuk::launched();
}

cudaError_t
cuk_check_sample(char *why, size_t why_len)
{
	cudaError_t e;

	if ((e = cuk::fits(prep_kernel, THREADS, "sample_prep", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(argmax_part_kernel, THREADS, "argmax_part", why, why_len)) !=
	            cudaSuccess ||
	    (e = cuk::fits(argmax_done_kernel, 32, "argmax_done", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(filter_kernel, THREADS, "sample_filter", why, why_len)) != cudaSuccess)
		return e;
	return cuk::fits(advance_kernel, 128, "sample_advance", why, why_len);
}
