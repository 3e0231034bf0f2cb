#pragma once
/*
 * kernels.h - host launchers of the CUDA backend's kernels (cuda/kernels/, one .cu file each).
 *
 * Every launcher enqueues on @st and returns the launch's cudaError_t
 * (cudaGetLastError after the launch); none synchronizes, allocates or
 * copies between host and device, so all of them can be captured in a CUDA
 * graph. Pointers are device pointers unless a comment says otherwise.
 * Per-step values (token ids, positions, slots) are read from device arrays
 * so that a captured graph replays with new values.
 *
 * Each kernel has a CPU twin in the engine (worker/engine/cpu, worker/engine/sampler.c,
 * common/gguf/quant.c) that tests/gpu compares it with.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "gguf/ggml_type.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most activation rows one mat-vec launch carries (decode batch per launch). */
#define CUK_MMV_MAX_B 8

/* The longest head a attention kernel handles; positions per split of the KV length. */
#define CUK_ATTN_MAX_D 256
#define CUK_ATTN_SPLIT 256

/* A weight matrix in device memory: @rows rows of @ne0 elements of ggml @type. */
struct cuk_mat {
	const void *data;
	uint32_t type;
	uint32_t ne0, rows;
	uint64_t row_bytes;
};

/* cuk_type_supported - whether the kernels compute with weights of ggml @type. */
bool cuk_type_supported(uint32_t type);

/* cuk_limits_check - whether every kernel's launch shape fits device @dev (0: yes). */
cudaError_t cuk_limits_check(int dev, char *why, size_t why_len);

/*
 * cuk_dequant - rows [row0, row0 + rows) of @w, dequantized exactly as
 * dequant_row() does, into @out: F16 (as uint16_t bits) when @f16, else F32,
 * @ld elements from one row to the next.
 */
cudaError_t cuk_dequant(const struct cuk_mat *w, uint32_t row0, uint32_t rows, void *out,
                        uint64_t ld, bool f16, cudaStream_t st);

/*
 * cuk_mmv - y[b][r] = Σ_i W[row0 + r][i] · x[b][i] (+ bias[row0 + r]) for
 * b < @B (≤ CUK_MMV_MAX_B) and r < @rows: weights dequantized in registers,
 * fp32 accumulation. x is [B][x_ld] floats, y [B][y_ld]. A (row, b) result
 * does not depend on B.
 */
cudaError_t cuk_mmv(const struct cuk_mat *w, uint32_t row0, uint32_t rows, const float *x,
                    uint64_t x_ld, uint32_t B, float *y, uint64_t y_ld, const float *bias,
                    cudaStream_t st);

/* cuk_f32_to_f16 - @T rows of @n floats (row stride @x_ld) to F16 bits, packed (round to nearest
 * even). */
cudaError_t cuk_f32_to_f16(const float *x, uint64_t x_ld, uint32_t n, uint32_t T, uint16_t *y,
                           cudaStream_t st);

/* cuk_add_bias - y[t][r] += bias[r] for @T rows of @n (row stride @ld). */
cudaError_t cuk_add_bias(float *y, uint64_t ld, const float *bias, uint32_t n, uint32_t T,
                         cudaStream_t st);

/*
 * cuk_embed - x[t] = row tok[t] of @emb (any supported type) for t < @T,
 * each row of emb->ne0 floats.
 */
cudaError_t cuk_embed(const struct cuk_mat *emb, const int32_t *tok, uint32_t T, float *x,
                      cudaStream_t st);

/*
 * cuk_rmsnorm - out[t] = x[t] / sqrt(mean(x[t]²) + eps) · w for t < @T rows
 * of @n. When @delta is not NULL, x[t] += delta[t] first (written back): the
 * residual add fused with the next norm. @rows_idx (NULL: identity) picks
 * which x rows feed out row t. @out may be @x (without @delta and @rows_idx): each
 * element is read before it is written, by the same thread (gemma3's post-norms).
 */
cudaError_t cuk_rmsnorm(float *x, const float *delta, const float *w, uint32_t n, float eps,
                        uint32_t T, const uint32_t *rows_idx, float *out, cudaStream_t st);

/*
 * cuk_head_rmsnorm - in place, cuk_rmsnorm of each of @n_heads heads of @head_dim
 * floats at the start of each of @T rows of @x (@ld floats apart), with one
 * weight @w [head_dim] for every head: qwen3's query and key norms.
 */
cudaError_t cuk_head_rmsnorm(float *x, uint32_t ld, uint32_t T, uint32_t n_heads, uint32_t head_dim,
                             const float *w, float eps, cudaStream_t st);

/* cuk_add - x[i] += d[i] for @n floats. */
cudaError_t cuk_add(float *x, const float *d, uint64_t n, cudaStream_t st);

/* YaRN for cuk_rope, as ggml_rope_ext takes it: model_yarn_params's numbers (model.h). */
struct cuk_yarn {
	float freq_scale, ext_factor, attn_factor;
	float corr_dims[2];
};

/*
 * cuk_rope - rotate Q (@n_head heads) and K (@n_head_kv heads) of each of @T
 * tokens in place; token t's row of @qkv (stride @ld) holds Q at 0 and K at
 * n_head·head_dim, its position is pos[t]. @theta_scale = base^(-2/n_rot);
 * @factors (n_rot/2, NULL: none) divide the frequencies; @yarn (a host
 * pointer, NULL: none) applies YaRN's ramp and magnitude as cpu_rope_yarn
 * does (then @factors must be NULL); @neox pairs (i, i + n_rot/2) instead
 * of (2i, 2i + 1).
 */
cudaError_t cuk_rope(float *qkv, uint64_t ld, uint32_t T, const uint32_t *pos, uint32_t n_head,
                     uint32_t n_head_kv, uint32_t head_dim, uint32_t n_rot, float theta_scale,
                     const float *factors, const struct cuk_yarn *yarn, bool neox, cudaStream_t st);

/*
 * The KV cache of one layer, in one of two layouts:
 * - slots (@blocks NULL): slot s holds @cells positions of kv_dim elements
 *   (F16 bits or F32) at k_base[s] + (layer_off + p % cells) · kv_dim, so a
 *   sliding-window layer keeps a ring of its window plus one step's tokens
 *   and any other layer keeps the whole context (cells = n_ctx);
 * - paged (@blocks set): every sequence's rows are in one pool, k_pool
 *   (v_pool): position p of token t's sequence is row layer_off +
 *   blocks[tbl[t] + p / bt] · bt + p % bt, its block table starting at
 *   entry tbl[t] of @blocks (both device arrays, rewritten each step).
 * A query at position p attends over positions [p - window + 1, p] (the
 * window's, its own included) or, with @window 0, over [0, p].
 */
struct cuk_kv {
	void *const *k_base,
	        *const *v_base; /* slots: device arrays [slots + 1] of device pointers */
	uint64_t layer_off; /* rows of the allocation before this layer's (× kv_dim elements) */
	uint32_t cells, kv_dim, window;
	bool f16;
	/* paged */
	void *k_pool, *v_pool;
	const uint32_t *blocks; /* the step's block tables, one after the other */
	const uint32_t *tbl;    /* [T] the entry of @blocks where token t's table starts, indexed
	                           from the same token 0 as the launch's @pos and @slot */
	uint32_t bt;            /* positions a block */
};

/*
 * cuk_kv_append - store K and V of each of @T tokens (at kv_off and
 * kv_off + kv_dim of its @qkv row) at position pos[t] of slot slot[t] (paged:
 * of its block table).
 */
cudaError_t cuk_kv_append(const struct cuk_kv *kv, const float *qkv, uint64_t ld, uint64_t kv_off,
                          uint32_t T, const uint32_t *slot, const uint32_t *pos, cudaStream_t st);

/* cuk_attention_part_floats - the floats cuk_attention's @part scratch holds. */
static inline uint64_t
cuk_attention_part_floats(uint32_t T, uint32_t n_head, uint32_t d, uint32_t n_split)
{
	return (uint64_t)T * n_head * ((uint64_t)n_split * (d + 2) + 2);
}

/*
 * cuk_attention - for each token t < @T and head h: softmax(q·K·scale)·V over
 * the positions kv->window lets it see (causal) in slot slot[t] or, paged,
 * through its block table (GQA: head
 * h reads KV head h / (n_head / n_head_kv)), with @sinks[h] (NULL: none)
 * joining each softmax's denominator, exactly as cpu_attn_head computes it
 * (with an F16 cache, q and the normalized weights rounded to F16). q at
 * qkv + t·ld + h·d; output at out + t·out_ld + h·d. The positions are split
 * in parts of CUK_ATTN_SPLIT; @n_split must cover the most positions any
 * token sees (parts a token does not need do nothing); @part holds
 * cuk_attention_part_floats(T, n_head, d, n_split) floats. @scale multiplies
 * each q·K, as cpu_attn.scale: 0 for 1/√d (gemma3 scales its queries before, and 1 here).
 */
cudaError_t cuk_attention(const struct cuk_kv *kv, const float *qkv, uint64_t ld, uint32_t T,
                          const uint32_t *slot, const uint32_t *pos, uint32_t n_head,
                          uint32_t n_head_kv, uint32_t d, uint32_t n_split, const float *sinks,
                          float scale, float *part, float *out, uint64_t out_ld, cudaStream_t st);

/* cuk_swiglu - g[t][i] = silu(g[t][i]) · u[t][i] for T rows of @n (row strides @ld). */
cudaError_t cuk_swiglu(float *g, const float *u, uint64_t ld, uint32_t n, uint32_t T,
                       cudaStream_t st);

/*
 * cuk_geglu - gemma3's GeGLU, cpu_geglu bit for bit: g[t][i] = 0 for g ≤ -10,
 * g · u for g ≥ 10, else tab[g rounded to F16] · u, for T rows of @n (row
 * strides @ld); @tab is model_gelu_table's 65536 floats in device memory.
 */
cudaError_t cuk_geglu(float *g, const float *u, uint64_t ld, uint32_t n, uint32_t T,
                      const float *tab, cudaStream_t st);

/* cuk_scale - x[t][i] *= @s for @T rows of @n (row stride @ld): gemma3's embedding and query
 * scales. */
cudaError_t cuk_scale(float *x, uint64_t ld, uint32_t n, uint32_t T, float s, cudaStream_t st);

/*
 * cuk_attn_temp - q[t][i] *= the temperature of token t's position pos[t] for @T rows of
 * @n (row stride @ld): log(floor(pos / @len) + 1) · @scale + 1, the floor of a float
 * division, the rest in double, rounded to float (model_attn_temp's arithmetic: mistral3's
 * Llama 4 query temperature, after RoPE). @len > 0.
 */
cudaError_t cuk_attn_temp(float *q, uint64_t ld, uint32_t n, uint32_t T, const uint32_t *pos,
                          float scale, uint32_t len, cudaStream_t st);

/*
 * cuk_softcap - x[i] = tanh(x[i] · (1/@cap)) · cap for @n floats, 1/cap rounded to
 * float first, as cpu_forward soft-caps gemma3's logits.
 */
cudaError_t cuk_softcap(float *x, uint64_t n, float cap, cudaStream_t st);

/*
 * cuk_swiglu_oai - gpt-oss's clamped SwiGLU, cpu_swiglu_oai's arithmetic:
 * with x = min(g, @limit) and y = clamp(u, -limit, limit),
 * g[t][i] = x / (1 + e^(-@alpha·x)) · (y + 1), for T rows of @n (row strides @ld).
 */
cudaError_t cuk_swiglu_oai(float *g, const float *u, uint64_t ld, uint32_t n, uint32_t T,
                           float alpha, float limit, cudaStream_t st);

/* ---- integer dots with MXFP4 weights ---- */

/* Inline helpers the kernels (device code) and the host share. */
#ifdef __CUDACC__
#define CUK_SHARED __host__ __device__ static inline
#else
#define CUK_SHARED static inline
#endif

/*
 * Activation rows quantized as cpu_quant_q8b does it (Q8_0 codes and
 * F16-rounded scale per 32 elements) for MXFP4 weights and the integer dots
 * of cuk_mmvq: a row of n (a multiple of 32) holds n/32 float scales,
 * padded to 16 bytes, then n/32 blocks of 32 int8 codes, then each block's
 * code sum (int32, padded to 16 bytes).
 */
CUK_SHARED uint64_t
cuk_q8_codes_off(uint32_t n)
{
	return (4ull * (n / 32) + 15) / 16 * 16;
}

CUK_SHARED uint64_t
cuk_q8_sums_off(uint32_t n)
{
	return cuk_q8_codes_off(n) + 32ull * (n / 32);
}

CUK_SHARED uint64_t
cuk_q8_row_bytes(uint32_t n)
{
	return cuk_q8_sums_off(n) + cuk_q8_codes_off(n);
}

/*
 * Activation rows quantized as cpu_quant_q8k does it (llama.cpp's Q8_K: per
 * 256 elements a float scale, 256 int8 codes and the sum of each 16 codes)
 * for the integer dots of K-quant weights: n/256 scales padded to 16 bytes,
 * then n/256 × 16 int16 sums, then n/256 × 256 codes.
 */
CUK_SHARED uint64_t
cuk_q8k_bsums_off(uint32_t n)
{
	return (4ull * (n / 256) + 15) / 16 * 16;
}

CUK_SHARED uint64_t
cuk_q8k_codes_off(uint32_t n)
{
	return cuk_q8k_bsums_off(n) + 32ull * (n / 256);
}

CUK_SHARED uint64_t
cuk_q8k_row_bytes(uint32_t n)
{
	return cuk_q8k_codes_off(n) + 256ull * (n / 256);
}

/* The activation formats of integer dots: how x is quantized for weights of a type. */
enum cuk_act {
	CUK_ACT_FLOAT = 0, /* no integer dots: weights dequantized, products in float */
	CUK_ACT_Q8 = 1,    /* cuk_q8_row_bytes' rows */
	CUK_ACT_Q8K = 2,   /* cuk_q8k_row_bytes' rows */
};

/*
 * cuk_act_of - the activation format cuk_mmvq (or, for MXFP4, cuk_mmv_q8)
 * takes with weights of @type, as the CPU backend's cpu_qdot_act: Q8 for
 * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and MXFP4, Q8K for Q4_K, Q5_K and Q6_K,
 * CUK_ACT_FLOAT for the rest (F32, F16, BF16, Q2_K, Q3_K: cuk_mmv).
 */
CUK_SHARED enum cuk_act
cuk_act_of(uint32_t type)
{
	switch (type) {
	case GGML_TYPE_Q4_0:
	case GGML_TYPE_Q4_1:
	case GGML_TYPE_Q5_0:
	case GGML_TYPE_Q5_1:
	case GGML_TYPE_Q8_0:
	case GGML_TYPE_MXFP4:
		return CUK_ACT_Q8;
	case GGML_TYPE_Q4_K:
	case GGML_TYPE_Q5_K:
	case GGML_TYPE_Q6_K:
		return CUK_ACT_Q8K;
	default:
		return CUK_ACT_FLOAT;
	}
}

/* cuk_act_row_bytes - bytes of one quantized row of @n elements in format @fmt. */
CUK_SHARED uint64_t
cuk_act_row_bytes(enum cuk_act fmt, uint32_t n)
{
	return fmt == CUK_ACT_Q8K  ? cuk_q8k_row_bytes(n)
	       : fmt == CUK_ACT_Q8 ? cuk_q8_row_bytes(n)
	                           : 0;
}

/*
 * cuk_quant_act - quantize @T rows of @n floats (row stride @x_ld; n a
 * multiple of 32, of 256 for Q8K) into @xq in format @fmt, @xq_ld bytes (a
 * multiple of 16, at least cuk_act_row_bytes) a row, bit for bit as
 * cpu_quant_q8b / cpu_quant_q8k.
 */
cudaError_t cuk_quant_act(enum cuk_act fmt, const float *x, uint64_t x_ld, uint32_t n, uint32_t T,
                          void *xq, uint64_t xq_ld, cudaStream_t st);

/*
 * cuk_mmvq_ok - whether cuk_mmvq computes with @w: its type has an integer
 * dot other than MXFP4's (cuk_act_of is not FLOAT) and its layout is
 * aligned as the kernel reads it (Q4_K and Q5_K rows 16-byte aligned).
 */
bool cuk_mmvq_ok(const struct cuk_mat *w);

/*
 * cuk_mmvq - cuk_mmv with integer dots, as cpu_qdot computes them: @xq
 * holds @B rows of @xq_ld bytes, x quantized by cuk_quant_act in
 * cuk_act_of(w->type)'s format; per block (Q4_0 ... Q8_0) or 16-code group
 * (K-quants) the exact int32 sum of weight codes times activation codes
 * (__dp4a), combined with the scales in fp32. A (row, b) result does not
 * depend on B. @w must pass cuk_mmvq_ok.
 */
cudaError_t cuk_mmvq(const struct cuk_mat *w, uint32_t row0, uint32_t rows, const void *xq,
                     uint64_t xq_ld, uint32_t B, float *y, uint64_t y_ld, const float *bias,
                     cudaStream_t st);

/*
 * cuk_quant_q8 - quantize @T rows of @n floats (row stride @x_ld, n a
 * multiple of 32) into @xq, @xq_ld bytes (a multiple of 16, at least
 * cuk_q8_row_bytes(n)) a row.
 */
cudaError_t cuk_quant_q8(const float *x, uint64_t x_ld, uint32_t n, uint32_t T, void *xq,
                         uint64_t xq_ld, cudaStream_t st);

/*
 * cuk_mmv_q8 - cuk_mmv for MXFP4 weights against activations quantized by
 * cuk_quant_q8 (rows of @xq_ld bytes): per 32-element block the exact
 * integer sum of doubled E2M1 values times codes, times the E8M0 scale
 * (halved) and the activation scale, accumulated in fp32 — cpu_qdot's
 * arithmetic but for the order of the float sum.
 */
cudaError_t cuk_mmv_q8(const struct cuk_mat *w, uint32_t row0, uint32_t rows, const void *xq,
                       uint64_t xq_ld, uint32_t B, float *y, uint64_t y_ld, const float *bias,
                       cudaStream_t st);

/* ---- mixture of experts ---- */

/* The most experts a layer may have. */
#define CUK_MOE_MAX_EXPERTS 256

/*
 * cuk_moe_route - for each of @T tokens its @K experts (best first, the lower
 * index on a tie) into sel[t·K + k] and their weights into sel_w[t·K + k],
 * cpu_forward's route_tokens: without @softmax_all (gpt-oss) the best router
 * logits of @logits [T][n_expert], weighted by a softmax over those alone;
 * with it (qwen3moe) a softmax over all of a token's logits, written over
 * them, the best probabilities and, with @norm, each divided by their sum
 * (at least 2^-14). Each softmax's sum in double.
 */
cudaError_t cuk_moe_route(float *logits, uint32_t n_expert, uint32_t T, uint32_t K,
                          bool softmax_all, bool norm, int32_t *sel, float *sel_w, cudaStream_t st);

/* The products of cuk_moe_mmv: for p < @n, y[p] = W_sel[p] · x[p / x_div] (+ bias). */
struct cuk_moe_mmv_args {
	const struct cuk_mat *w; /* all experts' matrices stacked: expert e is rows e·rows_e.. */
	uint32_t rows_e;         /* rows of one expert's matrix */
	const int32_t *sel;      /* [n] the expert of each product */
	uint32_t n, x_div;       /* products; product p reads activation row p / x_div */
	const float *x;          /* [..][x_ld] floats: float products (xq NULL, not MXFP4) */
	uint64_t x_ld;
	/* the same rows quantized by cuk_quant_act in cuk_act_of(w->type)'s format, xq_ld
	 * bytes a row: integer dots; MXFP4 needs them, other types (cuk_mmvq_ok) take them */
	const void *xq;
	uint64_t xq_ld;
	float *y; /* [n][y_ld] */
	uint64_t y_ld;
	const float *bias; /* [n_expert][rows_e] or NULL */
};

/*
 * cuk_moe_mmv - the products of @a, one warp a row as cuk_mmv (MXFP4 as
 * cuk_mmv_q8, other types with @a->xq as cuk_mmvq); only the chosen experts'
 * rows are read. A product's result does not depend on the others.
 */
cudaError_t cuk_moe_mmv(const struct cuk_moe_mmv_args *a, cudaStream_t st);

/*
 * cuk_moe_combine - out[t][c] = Σ_k y[t·K + k][c] · sel_w[t·K + k] for @T
 * tokens and c < @n, each product rounded, then summed in k order (as
 * cpu_forward's moe_block).
 */
cudaError_t cuk_moe_combine(const float *y, uint64_t y_ld, const float *sel_w, uint32_t K,
                            uint32_t n, uint32_t T, float *out, uint64_t out_ld, cudaStream_t st);

/* ---- sampling (samp_sample's steps on the device) ---- */

/* A row's sampling takes no mask (cuk_samp.mask). */
#define CUK_NO_MASK UINT32_MAX

/* One logit_bias entry (samp_bias): @bias added to token @id's logit, -100 or less bans it. */
struct cuk_bias {
	int32_t id;
	float bias;
};

/* One sequence's sampling parameters and state, as the device reads them. */
struct cuk_samp {
	float temperature, top_p, min_p, repeat_penalty;
	int32_t top_k;
	uint32_t repeat_last_n;
	uint64_t seed, index; /* the Philox key and counter */
	uint32_t slot;        /* history: the first n_hist tokens at hist + slot · hist_cap */
	uint32_t n_hist;
	/* OpenAI's penalties over the generated tokens: the history's last min(index, n_hist) */
	float presence, frequency;
	uint32_t bias0, n_bias; /* logit_bias: entries [bias0, bias0 + n_bias) of @bias */
	uint32_t mask;          /* the row of @mask with the tokens it may take; CUK_NO_MASK */
	uint32_t pad_;          /* 0: no padding bytes (the host compares these with memcmp) */
};

/* What cuk_sample applies to the logits before it chooses (a row's own entries pick). */
struct cuk_sample_pre {
	const struct cuk_bias *bias; /* every row's logit_bias entries (cuk_samp.bias0, n_bias) */
	const uint32_t *mask;        /* rows of @mask_words words: bit i % 32 of word i / 32 set
	                                = token i allowed (cuk_samp.mask) */
	uint32_t mask_words;
	bool any; /* some row has a mask, bias, or a repetition, presence or frequency penalty */
};

/*
 * cuk_sample - the token of each of @n logit rows (@n_vocab each, modified in
 * place) into ids[i], exactly as samp_sample() picks it from the row with the
 * tokens its mask leaves out at -inf: NaN → -inf, the mask, logit_bias in
 * list order, the repetition penalty, presence and frequency penalties, then
 * greedy or the filters and the draw; -1 for a row with nothing above -inf
 * (samp_sample's SAMP_NONE). @hist holds the per-slot histories
 * (prompt and generated tokens, @hist_cap each). @pre: what comes before the
 * choice (@pre->any false: nothing, and greedy rows take a faster argmax).
 * @any_random: some row has temperature > 0 (then the rows are sorted):
 * @sort_tmp of @sort_tmp_bytes (cuk_sample_tmp_bytes), @keys and @vals of 2 ·
 * n · n_vocab each (@vals' first n · n_vocab also count the penalties'
 * tokens), @probs of n · n_vocab, @seg the n + 1 row offsets i · n_vocab.
 */
cudaError_t cuk_sample(float *logits, uint32_t n, uint32_t n_vocab, const struct cuk_samp *sp,
                       const int32_t *hist, uint32_t hist_cap, bool any_random,
                       const struct cuk_sample_pre *pre, void *sort_tmp, size_t sort_tmp_bytes,
                       float *keys, int32_t *vals, float *probs, const uint32_t *seg, int32_t *ids,
                       cudaStream_t st);

/* cuk_sample_tmp_bytes - scratch cuk_sample's sort needs for @n rows of @n_vocab. */
cudaError_t cuk_sample_tmp_bytes(uint32_t n, uint32_t n_vocab, size_t *ret);

/*
 * cuk_advance - after sampling: for i < @n, tok[i] = ids[i] (0 for an id of -1: no
 * token, its job ends), pos[i] += 1,
 * ids[i] appended to the history of sp[i].slot, sp[i].index and
 * sp[i].n_hist += 1 — the next decode step's inputs, made on the device.
 */
cudaError_t cuk_advance(uint32_t n, const int32_t *ids, int32_t *tok, uint32_t *pos,
                        struct cuk_samp *sp, int32_t *hist, uint32_t hist_cap, cudaStream_t st);

#ifdef __cplusplus
}
#endif
