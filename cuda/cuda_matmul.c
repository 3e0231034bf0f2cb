/*
 * cuda_matmul.c - the matrix products of a step.
 *
 * Design notes
 * - Decode-sized work (sequences of at most CU_MMV_MAX_TOKENS new tokens,
 *   taken together in runs) goes through the fused dequantize + mat-vec
 *   kernels, CUK_MMV_MAX_B token rows a launch: each weight is read once a
 *   launch and a token's result does not depend on its neighbours.
 * - A longer sequence (a prompt chunk) goes through cuBLAS on tensor cores:
 *   F32 weights directly (SGEMM, no TF32), F16 weights directly, every other
 *   type dequantized CU_GEMM_TILE_ROWS rows at a time into an F16 scratch
 *   tile (bounded: never a dequantized copy of a whole matrix, let alone the
 *   model), with the activations rounded to F16 and fp32 accumulation. One
 *   GEMM per sequence, so its result depends only on its own tokens.
 * - MXFP4 weights (gpt-oss's experts, and any MXFP4 matrix) are integer
 *   dots against activations quantized to Q8_0, as the CPU backend and
 *   llama.cpp compute them, decode and prefill alike: their logits differ
 *   from a float product by more than the goldens allow. A long prompt
 *   then reads such a matrix once per CUK_MMV_MAX_B tokens.
 */
#include "cuda_int.h"
#include "gguf/ggml_type.h"

cudaError_t
cu_matmul_q8(struct be_model *b, const struct cuk_mat *w, uint32_t row0, uint32_t rows,
             const float *x, uint64_t x_ld, uint32_t n, float *y, uint64_t y_ld, const float *bias)
{
	uint64_t xq_ld = cuk_q8_row_bytes(w->ne0);
	const uint8_t *xq = b->xq;
	cudaError_t ce;

	if (b->xq == NULL || (uint64_t)n * xq_ld > b->xq_bytes)
		return cudaErrorInvalidValue; /* the footprint did not count this product */
	if ((ce = cuk_quant_q8(x, x_ld, w->ne0, n, b->xq, xq_ld, b->st)) != cudaSuccess)
		return ce;
	for (uint32_t t = 0; t < n; t += CUK_MMV_MAX_B) {
		uint32_t B = n - t < CUK_MMV_MAX_B ? n - t : CUK_MMV_MAX_B;
		if ((ce = cuk_mmv_q8(w, row0, rows, xq + t * xq_ld, xq_ld, B,
		                     y + (uint64_t)t * y_ld, y_ld, bias, b->st)) != cudaSuccess)
			return ce;
	}
	return cudaSuccess;
}

cudaError_t
cu_matmul_rows(struct be_model *b, const struct cuk_mat *w, const float *x, uint64_t x_ld,
               uint32_t n, float *y, uint64_t y_ld)
{
	if (w->type == GGML_TYPE_MXFP4)
		return cu_matmul_q8(b, w, 0, w->rows, x, x_ld, n, y, y_ld, NULL);
	for (uint32_t t = 0; t < n; t += CUK_MMV_MAX_B) {
		uint32_t B = n - t < CUK_MMV_MAX_B ? n - t : CUK_MMV_MAX_B;
		cudaError_t ce = cuk_mmv(w, 0, w->rows, x + (uint64_t)t * x_ld, x_ld, B,
		                         y + (uint64_t)t * y_ld, y_ld, NULL, b->st);
		if (ce != cudaSuccess)
			return ce;
	}
	return cudaSuccess;
}

static cudaError_t
blas_err(cublasStatus_t s)
{
	return s == CUBLAS_STATUS_SUCCESS        ? cudaSuccess
	       : s == CUBLAS_STATUS_ALLOC_FAILED ? cudaErrorMemoryAllocation
	                                         : cudaErrorUnknown;
}

/* y[t][r] for rows [r0, r0 + n) of a weight tile @a (F16 or F32, @lda elements a row). */
static cudaError_t
gemm(struct be_model *b, const void *a, bool a_f32, uint64_t lda, uint32_t n, uint32_t ne0,
     const void *x, uint64_t x_ld, uint32_t T, float *y, uint64_t y_ld)
{
	const float one = 1.0f, zero = 0.0f;
	cudaDataType_t ta = a_f32 ? CUDA_R_32F : CUDA_R_16F;

	/* column-major: C (n × T) = Aᵀ (n × ne0) · X (ne0 × T) */
	return blas_err(cublasGemmEx(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)T, (int)ne0,
	                             &one, a, ta, (int)lda, x, ta, (int)x_ld, &zero, y, CUDA_R_32F,
	                             (int)y_ld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static cudaError_t
gemm_runs(struct be_model *b, const struct cuk_mat *w, uint32_t row0, uint32_t rows, const float *x,
          uint64_t x_ld, float *y, uint64_t y_ld, const float *bias)
{
	bool f32 = w->type == GGML_TYPE_F32, f16 = w->type == GGML_TYPE_F16;
	cudaError_t ce;

	/* activations in the weights' precision: F32 stay, the rest go to F16 */
	if (!f32)
		for (uint32_t i = 0; i < b->n_runs; i++)
			if (b->runs[i].gemm &&
			    (ce = cuk_f32_to_f16(x + (uint64_t)b->runs[i].tok0 * x_ld, x_ld, w->ne0,
			                         b->runs[i].n,
			                         b->gemm_x + (uint64_t)b->runs[i].tok0 * w->ne0,
			                         b->st)) != cudaSuccess)
				return ce;
	for (uint32_t r = 0; r < rows; r += CU_GEMM_TILE_ROWS) {
		uint32_t n = rows - r < CU_GEMM_TILE_ROWS ? rows - r : CU_GEMM_TILE_ROWS;
		const uint8_t *a = (const uint8_t *)w->data + (uint64_t)(row0 + r) * w->row_bytes;
		uint64_t lda = w->ne0;
		if (!f32 && !f16) {
			if ((ce = cuk_dequant(w, row0 + r, n, b->gemm_w, w->ne0, true, b->st)) !=
			    cudaSuccess)
				return ce;
			a = (const uint8_t *)b->gemm_w;
		}
		for (uint32_t i = 0; i < b->n_runs; i++) {
			const struct cu_run *R = &b->runs[i];
			if (!R->gemm)
				continue;
			const void *xx =
			        f32 ? (const void *)(x + (uint64_t)R->tok0 * x_ld)
			            : (const void *)(b->gemm_x + (uint64_t)R->tok0 * w->ne0);
			if ((ce = gemm(b, a, f32, lda, n, w->ne0, xx, f32 ? x_ld : w->ne0, R->n,
			               y + (uint64_t)R->tok0 * y_ld + r, y_ld)) != cudaSuccess)
				return ce;
		}
	}
	if (bias)
		for (uint32_t i = 0; i < b->n_runs; i++)
			if (b->runs[i].gemm &&
			    (ce = cuk_add_bias(y + (uint64_t)b->runs[i].tok0 * y_ld, y_ld,
			                       bias + row0, rows, b->runs[i].n, b->st)) !=
			            cudaSuccess)
				return ce;
	return cudaSuccess;
}

cudaError_t
cu_matmul(struct be_model *b, const struct cuk_mat *w, uint32_t row0, uint32_t rows, const float *x,
          uint64_t x_ld, float *y, uint64_t y_ld, const float *bias)
{
	bool any_gemm = false;
	cudaError_t ce;

	if (w->type == GGML_TYPE_MXFP4 && b->n_runs > 0) {
		const struct cu_run *last = &b->runs[b->n_runs - 1];
		return cu_matmul_q8(b, w, row0, rows, x, x_ld, last->tok0 + last->n, y, y_ld, bias);
	}
	for (uint32_t i = 0; i < b->n_runs; i++) {
		const struct cu_run *R = &b->runs[i];
		if (R->gemm) {
			any_gemm = true;
			continue;
		}
		for (uint32_t t = R->tok0; t < R->tok0 + R->n; t += CUK_MMV_MAX_B) {
			uint32_t B = R->tok0 + R->n - t < CUK_MMV_MAX_B ? R->tok0 + R->n - t
			                                                : CUK_MMV_MAX_B;
			if ((ce = cuk_mmv(w, row0, rows, x + (uint64_t)t * x_ld, x_ld, B,
			                  y + (uint64_t)t * y_ld, y_ld, bias, b->st)) !=
			    cudaSuccess)
				return ce;
		}
	}
	return any_gemm ? gemm_runs(b, w, row0, rows, x, x_ld, y, y_ld, bias) : cudaSuccess;
}
