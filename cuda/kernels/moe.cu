/*
 * moe.cu - the mixture-of-experts steps of a gpt-oss or qwen3moe layer on the
 * device: routing, the chosen experts' mat-vecs, and their weighted sum.
 *
 * Design notes
 * - cuk_moe_route is cpu_forward's route_tokens line for line, one thread
 *   per token: K passes of an argmax that skips experts already taken (the
 *   lower index on a tie), over the router logits and then a softmax over
 *   the chosen ones (gpt-oss), or over a softmax of all the logits, written
 *   over them, then the chosen probabilities divided by their sum (qwen3moe);
 *   each softmax's exp in float, its sum in double, one reciprocal.
 * - cuk_moe_mmv reads the expert ids from device memory, so a decode step
 *   with experts is still one captured graph. One warp per (product,
 *   row), products fastest in the grid: the blocks running at once share
 *   weight rows, so tokens that chose the same expert mostly find its rows
 *   in L2. Each product is its own mat-vec (no batching of a shared
 *   expert's tokens), so a long prefill reads each chosen expert once per
 *   token and choice from the kernel's point of view; only L2 reuse saves
 *   memory traffic there.
 * - MXFP4 experts are integer dots against Q8_0 activations (q8.cuh), as
 *   the CPU backend computes them; so are Q4_0 ... Q8_0 and Q4_K, Q5_K, Q6_K
 *   experts when the caller gives quantized rows (qdot.cuh, as cuk_mmvq);
 *   other types dequantize 32 weights in registers (deq.cuh) and dot them
 *   with float activations.
 */
#include <math.h>

#include "../kernels.h"
#include "check.h"
#include "common.cuh"
#include "deq.cuh"
#include "q8.cuh"
#include "qdot.cuh"

namespace
{

constexpr int WARPS = 4;

/* Each of @K experts of @score, best first (the lower index on a tie), into @s, its score to @w. */
__device__ void
top_k(const float *score, uint32_t n_expert, uint32_t K, int32_t *s, float *w)
{
	for (uint32_t k = 0; k < K; k++) {
		uint32_t best = UINT32_MAX;
		for (uint32_t e = 0; e < n_expert; e++) {
			bool taken = false;
			for (uint32_t i = 0; i < k; i++)
				taken |= (uint32_t)s[i] == e;
			if (!taken && (best == UINT32_MAX || score[e] > score[best]))
				best = e;
		}
		s[k] = (int32_t)best;
		w[k] = score[best];
	}
}

/* cpu_forward's softmax_inplace: exp(x - max) in float, the sum in double, one reciprocal. */
__device__ void
softmax_inplace(float *x, uint32_t n)
{
	float mx = -INFINITY;
	double sum = 0.0;

	for (uint32_t i = 0; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	for (uint32_t i = 0; i < n; i++) {
		x[i] = expf(x[i] - mx);
		sum += (double)x[i];
	}
	float inv = (float)(1.0 / sum);
	for (uint32_t i = 0; i < n; i++)
		x[i] = __fmul_rn(x[i], inv);
}

__global__ void
moe_route_kernel(float *logits, uint32_t n_expert, uint32_t T, uint32_t K, bool softmax_all,
                 bool norm, int32_t *sel, float *sel_w)
{
	uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;

	if (t >= T)
		return;
	float *lg = logits + (uint64_t)t * n_expert, *w = sel_w + (uint64_t)t * K;
	int32_t *s = sel + (uint64_t)t * K;
	if (!softmax_all) {
		top_k(lg, n_expert, K, s, w);
		softmax_inplace(w, K);
		return;
	}
	softmax_inplace(lg, n_expert);
	top_k(lg, n_expert, K, s, w);
	if (!norm)
		return;
	double sum = 0.0;
	for (uint32_t k = 0; k < K; k++)
		sum += (double)w[k];
	float d = (float)sum < 6.103515625e-5f ? 6.103515625e-5f : (float)sum;
	for (uint32_t k = 0; k < K; k++)
		w[k] = __fdiv_rn(w[k], d);
}

/* One warp per (product, row) of a chosen expert, weights of type T against float activations. */
template <int T>
__global__ void
__launch_bounds__(WARPS * 32) moe_mmv_kernel(cuk_moe_mmv_args a, cuk_mat w)
{
	uint32_t p = blockIdx.x, r = blockIdx.y * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
	uint32_t chunks = (w.ne0 + 31) / 32;
	constexpr bool ELEM = T == GGML_TYPE_F32 || T == GGML_TYPE_F16 || T == GGML_TYPE_BF16;

	if (r >= a.rows_e || (uint32_t)a.sel[p] >= w.rows / a.rows_e)
		return;
	uint64_t er = (uint64_t)a.sel[p] * a.rows_e + r; /* the expert's row in the stack */
	const uint8_t *row = (const uint8_t *)w.data + er * w.row_bytes;
	const float *x = a.x + (uint64_t)(p / a.x_div) * a.x_ld;
	float acc = 0.0f;
	for (uint32_t c = lane; c < chunks; c += 32) {
		float v[32], s = 0.0f;
		uint32_t valid = w.ne0 - 32 * c < 32 ? w.ne0 - 32 * c : 32;
		cuk::deq32<T>(row, c, valid, v);
#pragma unroll
		for (int i = 0; i < 32; i++)
			if (!ELEM || (uint32_t)i < valid)
				s = fmaf(v[i], x[32ull * c + i], s);
		acc += s;
	}
	acc = cuk::warp_sum(acc);
	if (lane == 0)
		a.y[(uint64_t)p * a.y_ld + r] = a.bias ? acc + a.bias[er] : acc;
}

/* The same for MXFP4 weights against quantized activations. */
__global__ void
__launch_bounds__(WARPS * 32) moe_mmv_q8_kernel(cuk_moe_mmv_args a, cuk_mat w)
{
	uint32_t p = blockIdx.x, r = blockIdx.y * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
	uint32_t nb = w.ne0 / 32;

	if (r >= a.rows_e || (uint32_t)a.sel[p] >= w.rows / a.rows_e)
		return;
	uint64_t er = (uint64_t)a.sel[p] * a.rows_e + r;
	const uint8_t *row = (const uint8_t *)w.data + er * w.row_bytes;
	const uint8_t *xr = (const uint8_t *)a.xq + (uint64_t)(p / a.x_div) * a.xq_ld;
	float acc = 0.0f;
	for (uint32_t c = lane; c < nb; c += 32) {
		const uint8_t *blk = row + 17ull * c;
		int v[8];
		cuk::mxfp4_values(blk, v);
		int s = cuk::dot_codes(v, cuk::q8_codes(xr, nb, c));
		acc = __fadd_rn(acc,
		                cuk::block_term(cuk::e8m0_half(blk[0]), cuk::q8_scales(xr)[c], s));
	}
	acc = cuk::warp_sum(acc);
	if (lane == 0)
		a.y[(uint64_t)p * a.y_ld + r] = a.bias ? acc + a.bias[er] : acc;
}

/* The same for weights of a qdot.cuh type against activations quantized by cuk_quant_act. */
template <int T>
__global__ void
__launch_bounds__(WARPS * 32) moe_mmvq_kernel(cuk_moe_mmv_args a, cuk_mat w)
{
	uint32_t p = blockIdx.x, r = blockIdx.y * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
	float acc;

	if (r >= a.rows_e || (uint32_t)a.sel[p] >= w.rows / a.rows_e)
		return;
	uint64_t er = (uint64_t)a.sel[p] * a.rows_e + r;
	const uint8_t *xr = (const uint8_t *)a.xq + (uint64_t)(p / a.x_div) * a.xq_ld;
	cuk::qd::lane_sums<T, 1>((const uint8_t *)w.data + er * w.row_bytes, w.ne0, xr, 0, lane, 32,
	                         &acc);
	acc = cuk::warp_sum(acc);
	if (lane == 0)
		a.y[(uint64_t)p * a.y_ld + r] = a.bias ? acc + a.bias[er] : acc;
}

template <int T>
void
moe_mmv_launch(const cuk_moe_mmv_args &a, dim3 grid, cudaStream_t st)
{
	moe_mmv_kernel<T><<<grid, WARPS * 32, 0, st>>>(a, *a.w);
}

template <int T>
void
moe_mmvq_launch(const cuk_moe_mmv_args &a, dim3 grid, cudaStream_t st)
{
	moe_mmvq_kernel<T><<<grid, WARPS * 32, 0, st>>>(a, *a.w);
}

__global__ void
moe_combine_kernel(const float *y, uint64_t y_ld, const float *sel_w, uint32_t K, uint32_t n,
                   uint32_t T, float *out, uint64_t out_ld)
{
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= (uint64_t)n * T)
		return;
	uint64_t t = i / n, c = i % n;
	const float *yt = y + t * K * y_ld + c, *wt = sel_w + t * K;
	float s = __fmul_rn(yt[0], wt[0]);
	for (uint32_t k = 1; k < K; k++)
		s = __fadd_rn(s, __fmul_rn(yt[k * y_ld], wt[k]));
	out[t * out_ld + c] = s;
}

} // namespace

extern "C" cudaError_t
cuk_moe_route(float *logits, uint32_t n_expert, uint32_t T, uint32_t K, bool softmax_all, bool norm,
              int32_t *sel, float *sel_w, cudaStream_t st)
{
	if (K == 0 || K > n_expert || n_expert > CUK_MOE_MAX_EXPERTS)
		return cudaErrorInvalidValue;
	if (T == 0)
		return cudaSuccess;
	moe_route_kernel<<<cuk::div_up(T, 64), 64, 0, st>>>(logits, n_expert, T, K, softmax_all,
	                                                    norm, sel, sel_w);
	return cuk::launched();
}

extern "C" cudaError_t
cuk_moe_mmv(const struct cuk_moe_mmv_args *a, cudaStream_t st)
{
	const struct cuk_mat *w = a->w;
	bool q8 = w->type == GGML_TYPE_MXFP4, qd = !q8 && a->xq != nullptr;

	if (a->rows_e == 0 || w->rows % a->rows_e != 0 || a->x_div == 0 ||
	    cuk::div_up(a->rows_e, WARPS) > 65535u || a->n > 0x7fffffffu ||
	    (q8 || qd ? a->xq == nullptr || a->xq_ld % 16 != 0 || ((uintptr_t)a->xq & 15) != 0 ||
	                        a->xq_ld < cuk_act_row_bytes(cuk_act_of(w->type), w->ne0)
	              : a->x == nullptr) ||
	    (q8 && w->ne0 % 32 != 0) || (qd && !cuk_mmvq_ok(w)))
		return cudaErrorInvalidValue;
	if (a->n == 0)
		return cudaSuccess;
	dim3 grid(a->n, cuk::div_up(a->rows_e, WARPS));
	if (q8) {
		moe_mmv_q8_kernel<<<grid, WARPS * 32, 0, st>>>(*a, *w);
		return cuk::launched();
	}
	if (qd) {
		CUK_QDOT_TYPE_SWITCH(w->type, moe_mmvq_launch, *a, grid, st)
		return cuk::launched();
	}
	CUK_TYPE_SWITCH(w->type, moe_mmv_launch, *a, grid, st)
	return cuk::launched();
}

extern "C" cudaError_t
cuk_moe_combine(const float *y, uint64_t y_ld, const float *sel_w, uint32_t K, uint32_t n,
                uint32_t T, float *out, uint64_t out_ld, cudaStream_t st)
{
	uint64_t total = (uint64_t)n * T;

	if (K == 0)
		return cudaErrorInvalidValue;
	if (total == 0)
		return cudaSuccess;
	moe_combine_kernel<<<cuk::div_up(total, 256), 256, 0, st>>>(y, y_ld, sel_w, K, n, T, out,
	                                                            out_ld);
	return cuk::launched();
}

namespace
{

template <int T>
void
moe_fits(cudaError_t *e, char *why, size_t why_len)
{
	*e = cuk::fits(moe_mmv_kernel<T>, WARPS * 32, "moe_mmv", why, why_len);
}

template <int T>
void
moe_q_fits(cudaError_t *e, char *why, size_t why_len)
{
	*e = cuk::fits(moe_mmvq_kernel<T>, WARPS * 32, "moe_mmvq", why, why_len);
}

cudaError_t
moe_check_type(uint32_t type, char *why, size_t why_len)
{
	cudaError_t e = cudaSuccess;

	CUK_TYPE_SWITCH(type, moe_fits, &e, why, why_len)
	if (e != cudaSuccess || cuk_act_of(type) == CUK_ACT_FLOAT || type == GGML_TYPE_MXFP4)
		return e;
	CUK_QDOT_TYPE_SWITCH(type, moe_q_fits, &e, why, why_len)
	return e;
}

} // namespace

cudaError_t
cuk_check_moe(char *why, size_t why_len)
{
	cudaError_t e;

	if ((e = cuk::fits(moe_route_kernel, 64, "moe_route", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(moe_mmv_q8_kernel, WARPS * 32, "moe_mmv_q8", why, why_len)) !=
	            cudaSuccess ||
	    (e = cuk::fits(moe_combine_kernel, 256, "moe_combine", why, why_len)) != cudaSuccess)
		return e;
	return cuk::every_type(moe_check_type, why, why_len);
}
