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
 * - Decode products with weights of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K,
 *   Q5_K and Q6_K are integer dots (cuk_mmvq) against the activations
 *   quantized as the CPU backend quantizes them (Q8_0 blocks, or Q8_K for
 *   the K-quants): per 32 weights a few __dp4a instead of 32 float
 *   dequantizations and 32 × B multiply-adds, and the same integer sums as
 *   the CPU backend. An input is quantized once for all the products that
 *   read it (struct cu_act). ORCH_CUDA_INT_DOTS=0 keeps cuk_mmv's float
 *   products, to compare the two.
 * - MXFP4 weights (gpt-oss's experts, and any MXFP4 matrix) are integer
 *   dots against activations quantized to Q8_0, as the CPU backend and
 *   llama.cpp compute them, decode and prefill alike: their logits differ
 *   from a float product by more than the goldens allow. A long prompt
 *   then reads such a matrix once per CUK_MMV_MAX_B tokens.
 */
#include "cuda_int.h"
#include "gguf/ggml_type.h"

/*
 * Rows [0, @n) of @a (@ne0 elements) quantized in format @fmt into b->xq or
 * b->xqk, unless they hold them already; the rows and their stride in
 * *@ret and *@ret_ld.
 */
static cudaError_t
act_quant(struct be_model *b, const struct cu_act *a, enum cuk_act fmt, uint32_t ne0, uint32_t n,
          const uint8_t **ret, uint64_t *ret_ld)
{
	uint8_t *buf = fmt == CUK_ACT_Q8K ? b->xqk : b->xq;
	uint64_t cap = fmt == CUK_ACT_Q8K ? b->xqk_bytes : b->xq_bytes;
	uint64_t ld = cuk_act_row_bytes(fmt, ne0);
	cudaError_t ce;

	if (buf == NULL || (uint64_t)n * ld > cap)
		return cudaErrorInvalidValue; /* the footprint did not count this product */
	*ret = buf;
	*ret_ld = ld;
	if (b->xq_act[fmt] == a->id && b->xq_ne0[fmt] == ne0 && b->xq_rows[fmt] >= n)
		return cudaSuccess;
	b->xq_act[fmt] = 0;
	if ((ce = cuk_quant_act(fmt, a->x, a->ld, ne0, n, buf, ld, b->st)) != cudaSuccess)
		return ce;
	b->xq_act[fmt] = a->id;
	b->xq_rows[fmt] = n;
	b->xq_ne0[fmt] = ne0;
	return cudaSuccess;
}

/*
 * Rows [0, @n) of x through the mat-vec kernels, CUK_MMV_MAX_B a launch:
 * integer dots where the weights take them (MXFP4 always), else cuk_mmv.
 */
static cudaError_t
mmv_rows(struct be_model *b, const struct cuk_mat *w, uint32_t row0, uint32_t rows,
         const struct cu_act *a, uint32_t tok0, uint32_t n, float *y, uint64_t y_ld,
         const float *bias)
{
	bool mx = w->type == GGML_TYPE_MXFP4, q = mx || (b->int_dots && cuk_mmvq_ok(w));
	const uint8_t *xq = NULL;
	uint64_t xq_ld = 0;
	cudaError_t ce;

	/* the quantized rows start at the step's first token: one quantization serves every run */
	if (q && (ce = act_quant(b, a, cuk_act_of(w->type), w->ne0, tok0 + n, &xq, &xq_ld)) !=
	                 cudaSuccess)
		return ce;
	for (uint32_t t = tok0; t < tok0 + n; t += CUK_MMV_MAX_B) {
		uint32_t B = tok0 + n - t < CUK_MMV_MAX_B ? tok0 + n - t : CUK_MMV_MAX_B;
		float *yt = y + (uint64_t)t * y_ld;
		ce = mx ? cuk_mmv_q8(w, row0, rows, xq + t * xq_ld, xq_ld, B, yt, y_ld, bias, b->st)
		     : q ? cuk_mmvq(w, row0, rows, xq + t * xq_ld, xq_ld, B, yt, y_ld, bias, b->st)
		         : cuk_mmv(w, row0, rows, a->x + (uint64_t)t * a->ld, a->ld, B, yt, y_ld,
		                   bias, b->st);
		if (ce != cudaSuccess)
			return ce;
	}
	return cudaSuccess;
}

cudaError_t
cu_matmul_rows(struct be_model *b, const struct cuk_mat *w, const struct cu_act *x, uint32_t n,
               float *y, uint64_t y_ld)
{
	return mmv_rows(b, w, 0, w->rows, x, 0, n, y, y_ld, NULL);
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
cu_matmul(struct be_model *b, const struct cuk_mat *w, uint32_t row0, uint32_t rows,
          const struct cu_act *x, float *y, uint64_t y_ld, const float *bias)
{
	uint32_t end = 0;
	bool any_gemm = false;
	cudaError_t ce;

	if (w->type == GGML_TYPE_MXFP4 && b->n_runs > 0) { /* every token, prefill included */
		const struct cu_run *last = &b->runs[b->n_runs - 1];
		return mmv_rows(b, w, row0, rows, x, 0, last->tok0 + last->n, y, y_ld, bias);
	}
	/* quantize once, for the rows up to the last mat-vec run's, before the first run */
	for (uint32_t i = 0; i < b->n_runs; i++)
		if (!b->runs[i].gemm && b->runs[i].tok0 + b->runs[i].n > end)
			end = b->runs[i].tok0 + b->runs[i].n;
	if (end > 0 && b->int_dots && cuk_mmvq_ok(w)) {
		const uint8_t *xq;
		uint64_t xq_ld;
		if ((ce = act_quant(b, x, cuk_act_of(w->type), w->ne0, end, &xq, &xq_ld)) !=
		    cudaSuccess)
			return ce;
	}
	for (uint32_t i = 0; i < b->n_runs; i++) {
		const struct cu_run *R = &b->runs[i];
		if (R->gemm)
			any_gemm = true;
		else if ((ce = mmv_rows(b, w, row0, rows, x, R->tok0, R->n, y, y_ld, bias)) !=
		         cudaSuccess)
			return ce;
	}
	return any_gemm ? gemm_runs(b, w, row0, rows, x->x, x->ld, y, y_ld, bias) : cudaSuccess;
}
