/*
 * mmvq.cu - decode mat-vecs with integer dots (cuk_mmvq): weights of Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K against activations quantized
 * by cuk_quant_act, the arithmetic of qdot.cuh.
 *
 * One warp a weight row; lane l takes the row's 32-code chunks l, l + 32,
 * ..., so a warp reads 32 consecutive blocks (or four K-quant super-blocks)
 * at a time, and each chunk's codes, unpacked once into registers, meet
 * the B activation rows (16-byte loads, L1-resident: every warp reads the
 * same rows). Per 32 weights that is four to eight __dp4a a row of B
 * instead of cuk_mmv's 32 dequantizations and 32 × B float multiply-adds.
 */
#include "../kernels.h"
#include "check.h"
#include "common.cuh"
#include "qdot.cuh"

namespace
{

constexpr int WARPS = 4;

template <int T, int B>
__global__ void
__launch_bounds__(WARPS * 32)
        mmvq_kernel(const uint8_t *__restrict__ W, uint64_t row_bytes, uint32_t ne0, uint32_t rows,
                    const uint8_t *__restrict__ xq, uint64_t xq_ld, float *__restrict__ y,
                    uint64_t y_ld, const float *__restrict__ bias)
{
	uint32_t r = blockIdx.x * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
	float acc[B];

	if (r >= rows)
		return;
	cuk::qd::lane_sums<T, B>(W + (uint64_t)r * row_bytes, ne0, xq, xq_ld, lane, 32, acc);
	cuk::row_out<B>(acc, lane, r, y, y_ld, bias);
}

struct mmvq_args {
	const uint8_t *w;
	uint64_t row_bytes;
	uint32_t ne0, rows;
	const uint8_t *xq;
	uint64_t xq_ld;
	float *y;
	uint64_t y_ld;
	const float *bias;
	cudaStream_t st;
};

template <int T>
void
mmvq_launch(uint32_t B, const mmvq_args &a)
{
	dim3 grid(cuk::div_up(a.rows, WARPS)), block(WARPS * 32);

	cuk::with_B(B, [&](auto n) {
		mmvq_kernel<T, n><<<grid, block, 0, a.st>>>(a.w, a.row_bytes, a.ne0, a.rows, a.xq,
		                                            a.xq_ld, a.y, a.y_ld, a.bias);
	});
}

template <int T>
void
mmvq_fits(cudaError_t *e, char *why, size_t why_len)
{
	*e = cuk::fits(mmvq_kernel<T, CUK_MMV_MAX_B>, WARPS * 32, "mmvq", why, why_len);
	if (*e == cudaSuccess)
		*e = cuk::fits(mmvq_kernel<T, 1>, WARPS * 32, "mmvq", why, why_len);
}

cudaError_t
mmvq_check_type(uint32_t type, char *why, size_t why_len)
{
	cudaError_t e = cudaSuccess;

	if (cuk_act_of(type) == CUK_ACT_FLOAT || type == GGML_TYPE_MXFP4)
		return cudaSuccess;
	CUK_QDOT_TYPE_SWITCH(type, mmvq_fits, &e, why, why_len)
	return e;
}

} // namespace

extern "C" bool
cuk_mmvq_ok(const struct cuk_mat *w)
{
	bool k45 = w->type == GGML_TYPE_Q4_K || w->type == GGML_TYPE_Q5_K;

	uint32_t unit = cuk_act_of(w->type) == CUK_ACT_Q8K ? 256 : 32;

	return cuk_act_of(w->type) != CUK_ACT_FLOAT && w->type != GGML_TYPE_MXFP4 &&
	       w->ne0 % unit == 0 && (((uintptr_t)w->data | w->row_bytes) & (k45 ? 15 : 1)) == 0;
}

extern "C" cudaError_t
cuk_mmvq(const struct cuk_mat *w, uint32_t row0, uint32_t rows, const void *xq, uint64_t xq_ld,
         uint32_t B, float *y, uint64_t y_ld, const float *bias, cudaStream_t st)
{
	if (B == 0 || B > CUK_MMV_MAX_B || rows == 0 || row0 + rows > w->rows || !cuk_mmvq_ok(w) ||
	    xq_ld % 16 != 0 || xq_ld < cuk_act_row_bytes(cuk_act_of(w->type), w->ne0) ||
	    ((uintptr_t)xq & 15) != 0)
		return cudaErrorInvalidValue;
	mmvq_args a = {(const uint8_t *)w->data + (uint64_t)row0 * w->row_bytes,
	               w->row_bytes,
	               w->ne0,
	               rows,
	               (const uint8_t *)xq,
	               xq_ld,
	               y,
	               y_ld,
	               bias ? bias + row0 : nullptr,
	               st};
	CUK_QDOT_TYPE_SWITCH(w->type, mmvq_launch, B, a)
	return cuk::launched();
}

cudaError_t
cuk_check_mmvq(char *why, size_t why_len)
{
	return cuk::every_type(mmvq_check_type, why, why_len);
}
