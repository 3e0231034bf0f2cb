/*
 * cuda_moe.c - a mixture-of-experts FFN (gpt-oss, qwen3moe) on the device, as
 * cpu_forward's moe_block computes it: the router's logits (gpt-oss: with
 * bias), each token's n_expert_used experts and weights (gpt-oss: the top
 * logits, a softmax over those alone; qwen3moe: a softmax over all, the top
 * probabilities renormalized), each chosen expert's gate and up (gpt-oss:
 * with biases), the SwiGLU (gpt-oss's clamped one, or silu(gate) · up), down
 * (gpt-oss: with bias), and the weighted outputs summed in rank order.
 *
 * Design notes
 * - Routing happens on the device (cuk_moe_route) and the expert kernels
 *   read the choices from device memory, so a decode step with experts is
 *   still one captured graph, nothing comes back to the host, and only the
 *   chosen experts' weights are read.
 * - Every (token, choice) pair is its own mat-vec (cuk_moe_mmv), for decode
 *   and prefill alike. Decode reads each chosen expert once per pair, which
 *   is what a step needs at batch 1. A long prefill does too: it reads
 *   (tokens × n_expert_used) expert matrices where grouping the tokens by
 *   expert (as the CPU backend does) would read each chosen expert once
 *   per step; L2 absorbs part of it, since the kernels run the pairs of one
 *   row block together.
 * - Experts are integer dots against activations quantized as the CPU
 *   backend quantizes them (MXFP4 always; Q4_0 ... Q8_0, Q4_K, Q5_K, Q6_K
 *   unless ORCH_CUDA_INT_DOTS=0): Q8_0 blocks, or Q8_K for the K-quants;
 *   gate and up share one quantization of the normed rows when their
 *   formats agree.
 */
#include "cuda_int.h"
#include "gguf/ggml_type.h"

#define TRY(call)                                 \
	do {                                      \
		if ((ce = (call)) != cudaSuccess) \
			return ce;                \
	} while (0)

/* gpt-oss's SwiGLU constants (cpu_forward.c's, llama.cpp's LLM_FFN_SWIGLU_OAI_MOE). */
#define OAI_ALPHA 1.702f
#define OAI_LIMIT 7.0f

/*
 * The @n products y[p] = W_sel[p] · x[p / x_div] (+ bias) of one stacked
 * expert tensor, x being @x_rows rows; integer dots quantize those rows
 * first unless @quantized (b->xq or b->xqk holds them already).
 */
static cudaError_t
experts(struct be_model *b, const struct cuk_mat *w, uint32_t rows_e, uint32_t n, uint32_t x_div,
        const float *x, uint64_t x_ld, uint32_t x_rows, bool quantized, float *y, uint64_t y_ld,
        const float *bias)
{
	struct cuk_moe_mmv_args a = {.w = w,
	                             .rows_e = rows_e,
	                             .sel = b->moe_sel,
	                             .n = n,
	                             .x_div = x_div,
	                             .x = x,
	                             .x_ld = x_ld,
	                             .y = y,
	                             .y_ld = y_ld,
	                             .bias = bias};
	enum cuk_act fmt = cu_moe_act(b, w);
	cudaError_t ce;

	if (fmt != CUK_ACT_FLOAT) {
		uint8_t *buf = fmt == CUK_ACT_Q8K ? b->xqk : b->xq;
		uint64_t cap = fmt == CUK_ACT_Q8K ? b->xqk_bytes : b->xq_bytes;
		a.xq = buf;
		a.xq_ld = cuk_act_row_bytes(fmt, w->ne0);
		if (buf == NULL || (uint64_t)x_rows * a.xq_ld > cap)
			return cudaErrorInvalidValue; /* the footprint did not count it */
		if (!quantized) {
			b->xq_act[fmt] = 0; /* the buffer no longer holds a cu_act's rows */
			if ((ce = cuk_quant_act(fmt, x, x_ld, w->ne0, x_rows, buf, a.xq_ld,
			                        b->st)) != cudaSuccess)
				return ce;
		}
	}
	return cuk_moe_mmv(&a, b->st);
}

enum cuk_act
cu_moe_act(const struct be_model *b, const struct cuk_mat *w)
{
	if (w->type == GGML_TYPE_MXFP4)
		return CUK_ACT_Q8;
	return b->int_dots && cuk_mmvq_ok(w) ? cuk_act_of(w->type) : CUK_ACT_FLOAT;
}

cudaError_t
cu_moe_block(struct be_model *b, uint32_t l, uint32_t T)
{
	const struct model_hparams *hp = &b->m->hp;
	const struct cu_layer *L = &b->layers[l];
	uint32_t K = hp->n_expert_used, E = hp->n_embd, F = hp->n_ff_exp, n = T * K;
	uint64_t ld = 2ull * F;
	enum cuk_act fmt = cu_moe_act(b, &L->gate_exps);
	bool shared = fmt != CUK_ACT_FLOAT && fmt == cu_moe_act(b, &L->up_exps);
	cudaError_t ce;

	/* x += attention output, then the FFN norm */
	TRY(cuk_rmsnorm(b->x, b->tmp, L->ffn_norm, E, hp->rms_eps, T, NULL, b->xn, b->st));
	struct cu_act xn = cu_act_new(b, b->xn, E);
	TRY(cu_matmul(b, &L->router, 0, hp->n_expert, &xn, b->moe_lg, hp->n_expert, L->router_b));
	TRY(cuk_moe_route(b->moe_lg, hp->n_expert, T, K, hp->moe_gating == MODEL_MOE_SOFTMAX_ALL,
	                  hp->moe_norm_w, b->moe_sel, b->moe_w, b->st));
	/* gate and up of pair p = t·K + k into the [gate | up] row p of gu */
	TRY(experts(b, &L->gate_exps, F, n, K, b->xn, E, T, false, b->gu, ld, L->gate_exps_b));
	TRY(experts(b, &L->up_exps, F, n, K, b->xn, E, T, shared, b->gu + F, ld, L->up_exps_b));
	if (hp->moe_swiglu_oai)
		TRY(cuk_swiglu_oai(b->gu, b->gu + F, ld, F, n, OAI_ALPHA, OAI_LIMIT, b->st));
	else
		TRY(cuk_swiglu(b->gu, b->gu + F, ld, F, n, b->st));
	TRY(experts(b, &L->down_exps, E, n, 1, b->gu, ld, n, false, b->moe_out, E, L->down_exps_b));
	return cuk_moe_combine(b->moe_out, E, b->moe_w, K, E, T, b->tmp, E, b->st);
}
