/*
 * mmv.cu - fused dequantize + matrix-vector products for decode (1 to
 * CUK_MMV_MAX_B activation rows per launch).
 *
 * One warp per weight row: lane l takes the row's 32-element chunks l,
 * l + 32, ..., dequantizes each in registers (deq32) and multiplies it with
 * the same 32 elements of every activation row (16-byte loads), accumulating
 * in fp32; a warp reduction finishes the row. The weights are read once per
 * launch whatever B is, and each (row, b) sum is formed in the same order
 * for any B, so results do not depend on the batch.
 *
 * cuk_mmv_q8 is the same for MXFP4 weights against activations quantized
 * to Q8_0 codes (q8.cuh): lane l takes blocks l, l + 32, ..., each an exact
 * integer dot, as the CPU backend (and llama.cpp) compute MXFP4 products.
 */
#include "../kernels.h"
#include "check.h"
#include "common.cuh"
#include "deq.cuh"
#include "q8.cuh"

namespace
{

constexpr int WARPS = 4;
static_assert(CUK_MMV_MAX_B == 8, "cuk::with_B instantiates B = 1 .. 8");

template <int T, int B>
__global__ void
__launch_bounds__(WARPS * 32)
        mmv_kernel(const uint8_t *__restrict__ W, uint64_t row_bytes, uint32_t ne0, uint32_t rows,
                   const float *__restrict__ x, uint64_t x_ld, float *__restrict__ y, uint64_t y_ld,
                   const float *__restrict__ bias)
{
	uint32_t r = blockIdx.x * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
	uint32_t chunks = (ne0 + 31) / 32;
	/* element types may end in a partial chunk; block types never do */
	constexpr bool ELEM = T == GGML_TYPE_F32 || T == GGML_TYPE_F16 || T == GGML_TYPE_BF16;
	float acc[B];

	if (r >= rows)
		return;
#pragma unroll
	for (int b = 0; b < B; b++)
		acc[b] = 0.0f;
	const uint8_t *row = W + (uint64_t)r * row_bytes;
	/* 16-byte activation loads when every row of x is 16-byte aligned */
	bool x16 = (((uintptr_t)x | (x_ld * sizeof(float))) & 15) == 0;
	for (uint32_t c = lane; c < chunks; c += 32) {
		float w[32];
		uint32_t valid = ne0 - 32 * c < 32 ? ne0 - 32 * c : 32;
		cuk::deq32<T>(row, c, valid, w);
		if (x16 && (!ELEM || valid == 32)) {
#pragma unroll
			for (int b = 0; b < B; b++) {
				const float4 *xb =
				        (const float4 *)(x + (uint64_t)b * x_ld + 32 * (uint64_t)c);
				float s = 0.0f;
#pragma unroll
				for (int i = 0; i < 8; i++) {
					float4 v = xb[i];
					s = fmaf(w[4 * i], v.x, s);
					s = fmaf(w[4 * i + 1], v.y, s);
					s = fmaf(w[4 * i + 2], v.z, s);
					s = fmaf(w[4 * i + 3], v.w, s);
				}
				acc[b] += s;
			}
		} else {
#pragma unroll
			for (int b = 0; b < B; b++) {
				const float *xb = x + (uint64_t)b * x_ld + 32 * (uint64_t)c;
				float s = 0.0f;
#pragma unroll
				for (int i = 0; i < 32; i++)
					if (!ELEM || (uint32_t)i < valid)
						s = fmaf(w[i], xb[i], s);
				acc[b] += s;
			}
		}
	}
	cuk::row_out<B>(acc, lane, r, y, y_ld, bias);
}

struct mmv_args {
	const uint8_t *w;
	uint64_t row_bytes;
	uint32_t ne0, rows;
	const float *x;
	uint64_t x_ld;
	float *y;
	uint64_t y_ld;
	const float *bias;
	cudaStream_t st;
};

template <int T>
void
mmv_launch(uint32_t B, const mmv_args &a)
{
	dim3 grid(cuk::div_up(a.rows, WARPS)), block(WARPS * 32);

	cuk::with_B(B, [&](auto n) {
		mmv_kernel<T, n><<<grid, block, 0, a.st>>>(a.w, a.row_bytes, a.ne0, a.rows, a.x,
		                                           a.x_ld, a.y, a.y_ld, a.bias);
	});
}

template <int B>
__global__ void
__launch_bounds__(WARPS * 32)
        mmv_q8_kernel(const uint8_t *__restrict__ W, uint64_t row_bytes, uint32_t ne0,
                      uint32_t rows, const uint8_t *__restrict__ xq, uint64_t xq_ld,
                      float *__restrict__ y, uint64_t y_ld, const float *__restrict__ bias)
{
	uint32_t r = blockIdx.x * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
	uint32_t nb = ne0 / 32;
	float acc[B];

	if (r >= rows)
		return;
#pragma unroll
	for (int b = 0; b < B; b++)
		acc[b] = 0.0f;
	const uint8_t *row = W + (uint64_t)r * row_bytes;
	for (uint32_t c = lane; c < nb; c += 32) {
		const uint8_t *blk = row + 17ull * c;
		float dw = cuk::e8m0_half(blk[0]);
		int v[8];
		cuk::mxfp4_values(blk, v);
#pragma unroll
		for (int b = 0; b < B; b++) {
			const uint8_t *xr = xq + (uint64_t)b * xq_ld;
			int s = cuk::dot_codes(v, cuk::q8_codes(xr, nb, c));
			acc[b] = __fadd_rn(acc[b], cuk::block_term(dw, cuk::q8_scales(xr)[c], s));
		}
	}
	cuk::row_out<B>(acc, lane, r, y, y_ld, bias);
}

} // namespace

extern "C" cudaError_t
cuk_mmv_q8(const struct cuk_mat *w, uint32_t row0, uint32_t rows, const void *xq, uint64_t xq_ld,
           uint32_t B, float *y, uint64_t y_ld, const float *bias, cudaStream_t st)
{
	if (B == 0 || B > CUK_MMV_MAX_B || rows == 0 || row0 + rows > w->rows ||
	    w->type != GGML_TYPE_MXFP4 || w->ne0 % 32 != 0 || xq_ld % 16 != 0 ||
	    ((uintptr_t)xq & 15) != 0)
		return cudaErrorInvalidValue;
	const uint8_t *W = (const uint8_t *)w->data + (uint64_t)row0 * w->row_bytes;
	const uint8_t *X = (const uint8_t *)xq;
	const float *bb = bias ? bias + row0 : nullptr;
	dim3 grid(cuk::div_up(rows, WARPS)), block(WARPS * 32);

	cuk::with_B(B, [&](auto n) {
		mmv_q8_kernel<n><<<grid, block, 0, st>>>(W, w->row_bytes, w->ne0, rows, X, xq_ld, y,
		                                         y_ld, bb);
	});
	return cuk::launched();
}

extern "C" cudaError_t
cuk_mmv(const struct cuk_mat *w, uint32_t row0, uint32_t rows, const float *x, uint64_t x_ld,
        uint32_t B, float *y, uint64_t y_ld, const float *bias, cudaStream_t st)
{
	if (B == 0 || B > CUK_MMV_MAX_B || rows == 0 || row0 + rows > w->rows)
		return cudaErrorInvalidValue;
	mmv_args a = {(const uint8_t *)w->data + (uint64_t)row0 * w->row_bytes,
	              w->row_bytes,
	              w->ne0,
	              rows,
	              x,
	              x_ld,
	              y,
	              y_ld,
	              bias ? bias + row0 : nullptr,
	              st};
	CUK_TYPE_SWITCH(w->type, mmv_launch, B, a)
	return cuk::launched();
}

namespace
{

template <int T>
void
mmv_fits(cudaError_t *e, char *why, size_t why_len)
{
	*e = cuk::fits(mmv_kernel<T, CUK_MMV_MAX_B>, WARPS * 32, "mmv", why, why_len);
	if (*e == cudaSuccess)
		*e = cuk::fits(mmv_kernel<T, 1>, WARPS * 32, "mmv", why, why_len);
}

cudaError_t
mmv_check_type(uint32_t type, char *why, size_t why_len)
{
	cudaError_t e = cudaSuccess;

	CUK_TYPE_SWITCH(type, mmv_fits, &e, why, why_len)
	return e;
}

} // namespace

cudaError_t
cuk_check_mmv(char *why, size_t why_len)
{
	cudaError_t e;

	if ((e = cuk::fits(mmv_q8_kernel<1>, WARPS * 32, "mmv_q8", why, why_len)) != cudaSuccess ||
	    (e = cuk::fits(mmv_q8_kernel<CUK_MMV_MAX_B>, WARPS * 32, "mmv_q8", why, why_len)) !=
	            cudaSuccess)
		return e;
	return cuk::every_type(mmv_check_type, why, why_len);
}
