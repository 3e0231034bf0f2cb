/*
 * cpu_forward.c - one forward step of the CPU backend over a batch.
 *
 * Design notes
 * - The batch's tokens are flattened (token t belongs to sequence
 *   tok_seq[t] at position tok_pos[t]); every matrix product runs once over
 *   all of them, so prefill is matrix-matrix and decode shares the weight
 *   reads of all sequences in the step.
 * - Each token's arithmetic is independent of the others in the batch
 *   (same kernels, same order), so a sequence's logits are bit-identical
 *   whether it runs alone or next to others.
 * - Attention reads the sequence's own KV slot, positions 0..pos (causal),
 *   or its last n_swa of them on a sliding-window layer. Paged (issue 19),
 *   a layer reads and writes them through the sequence's block table
 *   instead (a sliding-window layer through its window table, when its
 *   pool is paged too). An unpaged sliding-window layer's
 *   cache is a ring of n_swa + max_batch_tokens cells (position p in cell
 *   p % cells): a step stores all its tokens' K/V before any attends, and
 *   the newest of at most max_batch_tokens stored overwrites only a position
 *   older than the window of the step's first token. With an F16 cache
 *   it mirrors ggml: Q is rounded to F16 before Q·K, and the softmax weights
 *   to F16 before they weight V; a layer's sinks join each softmax.
 * - A mixture-of-experts layer (gpt-oss, qwen3moe) routes each token to its top
 *   n_expert_used experts; the tokens are grouped by expert, so each chosen
 *   expert's weights are read once per step for all its tokens, and an
 *   expert nobody chose is not read at all.
 * - gemma3: embeddings scaled, a sliding-window layer's own RoPE base, the
 *   queries scaled after RoPE (the scores then not by 1/√d), RMSNorms of the
 *   attention's and the FFN's outputs before each residual add, GeGLU, and
 *   the logits soft-capped when the file says.
 * - mistral3 (Ministral 3): YaRN with llama.cpp's magnitude, and each query
 *   multiplied after RoPE by its position's temperature (model_attn_temp).
 */
#include <math.h>
#include <string.h>

#include "cpu_backend.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"

/* Byte offset of cell @cell of (layer, slot) in a cache of @elem-byte elements. */
static uint64_t
kv_off(const struct be_model *b, uint32_t layer, uint32_t slot, uint32_t cell, size_t elem)
{
	return (b->kv_base[layer] + (uint64_t)slot * b->kv_cells[layer] + cell) * b->kv_dim * elem;
}

/*
 * Byte offset of position @pos of sequence @q in @layer: its cell in the
 * slot (pos itself, or pos % cells in a ring), or, paged, its block's row.
 */
static uint64_t
kv_pos_off(const struct be_model *b, uint32_t layer, const struct be_seq *q, uint32_t pos,
           size_t elem)
{
	uint32_t bt = b->cfg.kv_block_tokens;

	if (!cpu_layer_paged(b, layer))
		return kv_off(b, layer, q->slot, pos % b->kv_cells[layer], elem);
	return (b->kv_base[layer] + (uint64_t)cpu_layer_table(b, layer, q)[pos / bt] * bt +
	        pos % bt) *
	       b->kv_dim * elem;
}

/* Position @pos's K and V into its cell (kv_pos_off). */
static void
kv_store(struct be_model *b, uint32_t layer, const struct be_seq *q, uint32_t pos, const float *k,
         const float *v)
{
	size_t elem = b->cfg.kv_f32 ? 4 : 2;
	uint64_t off = kv_pos_off(b, layer, q, pos, elem);
	uint8_t *kd = (uint8_t *)b->k_cache + off;
	uint8_t *vd = (uint8_t *)b->v_cache + off;

	if (b->cfg.kv_f32) {
		memcpy(kd, k, b->kv_dim * sizeof(float));
		memcpy(vd, v, b->kv_dim * sizeof(float));
		return;
	}
	for (uint32_t i = 0; i < b->kv_dim; i++) {
		uint16_t hk = fp16_from_f32(k[i]), hv = fp16_from_f32(v[i]);
		memcpy(kd + 2 * i, &hk, 2);
		memcpy(vd + 2 * i, &hv, 2);
	}
}

struct att_job {
	struct be_model *b;
	const struct be_seq *seqs;
	uint32_t layer;
	uint32_t n_tiles; /* cpu_attn_tile's: tiles of tokens b->tile0[k]..b->tile0[k + 1] */
};

/* The first position token @t reads on layer @il: 0, or its window's first. */
static uint32_t
first_pos(const struct be_model *b, uint32_t il, uint32_t t)
{
	const struct model_hparams *hp = &b->m->hp;
	uint32_t n = b->tok_pos[t] + 1;

	return model_layer_swa(hp, il) && n > hp->n_swa ? n - hp->n_swa : 0;
}

/* KV head @kvh's cache on layer @il for sequence @q, positions not set (first = 0). */
static struct cpu_attn
head_cache(const struct be_model *b, uint32_t il, const struct be_seq *q, uint32_t kvh)
{
	size_t elem = b->cfg.kv_f32 ? 4 : 2;
	bool paged = cpu_layer_paged(b, il);
	uint64_t off =
	        (paged ? b->kv_base[il] * b->kv_dim * elem : kv_off(b, il, q->slot, 0, elem)) +
	        (uint64_t)kvh * b->m->hp.head_dim * elem;

	return (struct cpu_attn){.k = (const uint8_t *)b->k_cache + off,
	                         .v = (const uint8_t *)b->v_cache + off,
	                         .stride = b->kv_dim,
	                         .cells = paged ? 0 : b->kv_cells[il],
	                         .blocks = paged ? cpu_layer_table(b, il, q) : NULL,
	                         .block_tokens = b->cfg.kv_block_tokens,
	                         .d = b->m->hp.head_dim,
	                         .f16 = !b->cfg.kv_f32,
	                         .simd = b->dot != cpu_dot_scalar,
	                         .scale = b->m->hp.attn_scale > 0 ? 1.0f : 0.0f};
}

/* Head @h's sink on layer @il, if the layer has sinks. */
static bool
head_sink(const struct be_model *b, uint32_t il, uint32_t h, float *ret)
{
	const struct gguf_tensor *sinks = b->m->layers[il].sinks;

	if (sinks != NULL)
		memcpy(ret, (const float *)sinks->data + h, sizeof(float));
	return sinks != NULL;
}

/* @T tokens in tiles for cpu_attn_tile (cpu_attn_tile_tokens): b->tile0, their count. */
static uint32_t
make_tiles(struct be_model *b, uint32_t T)
{
	uint32_t n = 0, tt = cpu_attn_tile_tokens(&b->m->hp, b->cfg.n_ctx);

	for (uint32_t t = 0; t < T; t++)
		if (t == 0 || b->tok_seq[t] != b->tok_seq[t - 1] || t - b->tile0[n - 1] == tt)
			b->tile0[n++] = t;
	b->tile0[n] = T;
	return n;
}

/*
 * One (tile, KV head) pair: every query head of the KV head for every token
 * of the tile, through cpu_attn_tile. Items alternate between early and
 * late tiles, so that the pool's chunks of consecutive items get even work
 * though later tokens read more positions.
 */
static void
attend_tiles(void *ctx, uint32_t thread, uint64_t begin, uint64_t end)
{
	const struct att_job *j = ctx;
	struct be_model *b = j->b;
	const struct model_hparams *hp = &b->m->hp;
	uint32_t d = hp->head_dim, group = hp->n_head / hp->n_head_kv;
	uint32_t qmax = cpu_attn_tile_tokens(hp, b->cfg.n_ctx) * group;
	struct cpu_attn_query *qs = b->attn_q + (uint64_t)thread * qmax;
	float *scratch =
	        b->attn_scratch + (uint64_t)thread * cpu_attn_tile_floats(qmax, d, b->cfg.n_ctx);

	for (uint64_t it = begin; it < end; it++) {
		uint32_t k = (uint32_t)(it / hp->n_head_kv), kvh = (uint32_t)(it % hp->n_head_kv);
		uint32_t tile = k % 2 ? j->n_tiles - 1 - k / 2 : k / 2, nq = 0;
		const struct be_seq *q = &j->seqs[b->tok_seq[b->tile0[tile]]];
		struct cpu_attn a = head_cache(b, j->layer, q, kvh);
		for (uint32_t t = b->tile0[tile]; t < b->tile0[tile + 1]; t++)
			for (uint32_t h = kvh * group; h < (kvh + 1) * group; h++, nq++) {
				qs[nq] = (struct cpu_attn_query){
				        .q = b->qkv + (uint64_t)t * b->qkv_dim + (uint64_t)h * d,
				        .out = b->att + (uint64_t)t * b->q_dim + (uint64_t)h * d,
				        .lo = first_pos(b, j->layer, t),
				        .hi = b->tok_pos[t] + 1};
				qs[nq].has_sink = head_sink(b, j->layer, h, &qs[nq].sink);
			}
		cpu_attn_tile(&a, qs, nq, b->cfg.n_ctx, scratch);
	}
}

/*
 * One (token, head) pair: softmax(q·K / √d) · V over positions 0..pos of the
 * slot, or max(0, pos - n_swa + 1)..pos on a sliding-window layer, read from
 * their cells (a ring's wrap, or a paged layer's block table, followed) in
 * position order.
 */
static void
attend(void *ctx, uint32_t thread, uint64_t begin, uint64_t end)
{
	const struct att_job *j = ctx;
	struct be_model *b = j->b;
	const struct model_hparams *hp = &b->m->hp;
	uint32_t d = hp->head_dim, group = hp->n_head / hp->n_head_kv;
	float *sc = b->scores + (uint64_t)thread * b->cfg.n_ctx;

	for (uint64_t th = begin; th < end; th++) {
		uint32_t t = (uint32_t)(th / hp->n_head), h = (uint32_t)(th % hp->n_head);
		const struct be_seq *q = &j->seqs[b->tok_seq[t]];
		uint32_t n = b->tok_pos[t] + 1, first = first_pos(b, j->layer, t);
		struct cpu_attn a = head_cache(b, j->layer, q, h / group);
		a.first = a.blocks != NULL ? first : first % a.cells;
		a.has_sink = head_sink(b, j->layer, h, &a.sink);
		cpu_attn_head(&a, b->qkv + (uint64_t)t * b->qkv_dim + (uint64_t)h * d, n - first,
		              sc, b->att + (uint64_t)t * b->q_dim + (uint64_t)h * d);
	}
}

/* cpu_matmul with @b's pool, scratch and @w's packed copy, if it has one. */
static void
mm(struct be_model *b, const struct gguf_tensor *w, uint64_t row0, uint64_t rows, const float *x,
   uint32_t T, float *y, uint64_t y_stride, const struct gguf_tensor *bias)
{
	cpu_matmul(b->pool, b->dot, w, cpu_pack_find(b->packs, b->n_packs, w), row0, rows, x, T, y,
	           y_stride, bias, b->mm_scratch, b->xq);
}

/* The element-wise work of a step, token by token on the pool: each token's the same bits. */
enum tok_op {
	TOK_NORM,   /* xn = rmsnorm(x) · w */
	TOK_ROPE,   /* RoPE on the token's q and k, and its K/V into the cache */
	TOK_ADD,    /* x += tmp */
	TOK_SWIGLU, /* gate = silu(gate) · up, or gelu(gate) · up (ffn_gelu) */
	TOK_POST,   /* tmp = rmsnorm(tmp) · w (gemma3's post-norms) */
};

struct tok_job {
	struct be_model *b;
	const struct be_seq *seqs;
	uint32_t il;
	enum tok_op op;
	const float *w; /* TOK_NORM's weights */
};

/*
 * Token @t's q and k normed per head (qwen3) and RoPE'd, q scaled (gemma3) or tempered
 * (mistral3), then its K and V stored (layer @il).
 */
static void
rope_store(struct be_model *b, const struct be_seq *seqs, uint32_t il, uint32_t t)
{
	const struct model *m = b->m;
	const struct model_hparams *hp = &m->hp;
	const float *factors = m->rope_freqs ? m->rope_freqs->data : NULL;
	float *q = b->qkv + (uint64_t)t * b->qkv_dim;
	const struct model_layer *L = &m->layers[il];

	if (L->q_norm != NULL) { /* qwen3: an RMSNorm of each query and key head first */
		for (uint32_t h = 0; h < hp->n_head; h++)
			cpu_rmsnorm(q + (uint64_t)h * hp->head_dim, L->q_norm->data, hp->head_dim,
			            hp->rms_eps, q + (uint64_t)h * hp->head_dim);
		for (uint32_t h = 0; h < hp->n_head_kv; h++)
			cpu_rmsnorm(q + b->q_dim + (uint64_t)h * hp->head_dim, L->k_norm->data,
			            hp->head_dim, hp->rms_eps,
			            q + b->q_dim + (uint64_t)h * hp->head_dim);
	}
	bool swa = model_layer_swa(hp, il);
	float base = swa && hp->rope_base_swa > 0 ? hp->rope_base_swa : hp->rope_base;
	if (hp->yarn_factor > 0) {
		cpu_rope_yarn(q, hp->n_head + hp->n_head_kv, hp->head_dim, hp->n_rot, b->tok_pos[t],
		              base, hp->rope_neox, &b->yarn);
	} else if (hp->rope_freq_scale > 0 && !swa) { /* linear: a window's layers never */
		struct model_yarn lin = {.freq_scale = hp->rope_freq_scale, .attn_factor = 1.0f};
		cpu_rope_yarn(q, hp->n_head + hp->n_head_kv, hp->head_dim, hp->n_rot, b->tok_pos[t],
		              base, hp->rope_neox, &lin);
	} else {
		cpu_rope(q, hp->n_head, hp->head_dim, hp->n_rot, b->tok_pos[t], base, hp->rope_neox,
		         factors);
		cpu_rope(q + b->q_dim, hp->n_head_kv, hp->head_dim, hp->n_rot, b->tok_pos[t], base,
		         hp->rope_neox, factors);
	}
	if (hp->attn_scale > 0) /* gemma3: the query scaled, as ggml_scale before the attention */
		for (uint32_t i = 0; i < b->q_dim; i++)
			q[i] *= hp->attn_scale;
	if (hp->attn_temp_scale != 0) { /* mistral3: Llama 4's temperature of the position */
		float temp = model_attn_temp(hp, b->tok_pos[t]);
		for (uint32_t i = 0; i < b->q_dim; i++)
			q[i] *= temp;
	}
	kv_store(b, il, &seqs[b->tok_seq[t]], b->tok_pos[t], q + b->q_dim,
	         q + b->q_dim + b->kv_dim);
}

static void
tok_work(void *ctx, uint32_t thread, uint64_t begin, uint64_t end)
{
	const struct tok_job *j = ctx;
	struct be_model *b = j->b;
	const struct model_hparams *hp = &b->m->hp;
	uint64_t E = hp->n_embd;

	(void)thread;
	for (uint64_t t = begin; t < end; t++) {
		switch (j->op) {
		case TOK_NORM:
			cpu_rmsnorm(b->x + t * E, j->w, hp->n_embd, hp->rms_eps, b->xn + t * E);
			break;
		case TOK_ROPE:
			rope_store(b, j->seqs, j->il, (uint32_t)t);
			break;
		case TOK_ADD:
			for (uint64_t i = t * E; i < (t + 1) * E; i++)
				b->x[i] += b->tmp[i];
			break;
		case TOK_SWIGLU:
			if (b->gelu != NULL)
				cpu_geglu(b->gate + t * hp->n_ff, b->up + t * hp->n_ff, hp->n_ff,
				          b->gelu);
			else
				cpu_swiglu(b->gate + t * hp->n_ff, b->up + t * hp->n_ff, hp->n_ff);
			break;
		case TOK_POST:
			cpu_rmsnorm(b->tmp + t * E, j->w, hp->n_embd, hp->rms_eps, b->tmp + t * E);
			break;
		}
	}
}

/* @op over the step's @T tokens on the pool (@w: TOK_NORM's weights). */
static void
per_token(struct be_model *b, const struct be_seq *seqs, uint32_t il, enum tok_op op,
          const float *w, uint32_t T)
{
	const struct model_hparams *hp = &b->m->hp;
	struct tok_job j = {b, seqs, il, op, w};
	uint64_t cost = op == TOK_SWIGLU ? 16ull * hp->n_ff
	                : op == TOK_ROPE ? 16ull * b->qkv_dim
	                                 : 4ull * hp->n_embd;

	cpu_pool_for(b->pool, T, cost, tok_work, &j);
}

static void
attention_block(struct be_model *b, const struct be_seq *seqs, uint32_t T, uint32_t il)
{
	const struct model *m = b->m;
	const struct model_hparams *hp = &m->hp;
	const struct model_layer *L = &m->layers[il];
	struct att_job aj = {b, seqs, il, 0};

	per_token(b, seqs, il, TOK_NORM, L->attn_norm->data, T);
	if (L->wqkv != NULL) {
		mm(b, L->wqkv, 0, b->qkv_dim, b->xn, T, b->qkv, b->qkv_dim, NULL);
	} else {
		mm(b, L->wq, 0, b->q_dim, b->xn, T, b->qkv, b->qkv_dim, L->bq);
		mm(b, L->wk, 0, b->kv_dim, b->xn, T, b->qkv + b->q_dim, b->qkv_dim, L->bk);
		mm(b, L->wv, 0, b->kv_dim, b->xn, T, b->qkv + b->q_dim + b->kv_dim, b->qkv_dim,
		   L->bv);
	}
	per_token(b, seqs, il, TOK_ROPE, NULL, T);
	if (b->attn_q != NULL) { /* blocked, on the AVX2 kernels */
		aj.n_tiles = make_tiles(b, T);
		cpu_pool_for(b->pool, (uint64_t)aj.n_tiles * hp->n_head_kv,
		             (uint64_t)hp->head_dim * 2 * (b->tok_pos[T - 1] + 1) * hp->n_head /
		                     hp->n_head_kv * T / aj.n_tiles,
		             attend_tiles, &aj);
	} else {
		cpu_pool_for(b->pool, (uint64_t)T * hp->n_head,
		             (uint64_t)hp->head_dim * 2 * (b->tok_pos[T - 1] + 1), attend, &aj);
	}
	mm(b, L->wo, 0, hp->n_embd, b->att, T, b->tmp, hp->n_embd, L->bo);
	if (L->attn_post_norm != NULL)
		per_token(b, seqs, il, TOK_POST, L->attn_post_norm->data, T);
	per_token(b, seqs, il, TOK_ADD, NULL, T);
}

static void
ffn_block(struct be_model *b, uint32_t T, uint32_t il)
{
	const struct model_hparams *hp = &b->m->hp;
	const struct model_layer *L = &b->m->layers[il];

	per_token(b, NULL, il, TOK_NORM, L->ffn_norm->data, T);
	if (L->w_gate_up != NULL) { /* fused: gate rows first, then up */
		mm(b, L->w_gate_up, 0, hp->n_ff, b->xn, T, b->gate, hp->n_ff, NULL);
		mm(b, L->w_gate_up, hp->n_ff, hp->n_ff, b->xn, T, b->up, hp->n_ff, NULL);
	} else {
		mm(b, L->w_gate, 0, hp->n_ff, b->xn, T, b->gate, hp->n_ff, NULL);
		mm(b, L->w_up, 0, hp->n_ff, b->xn, T, b->up, hp->n_ff, NULL);
	}
	per_token(b, NULL, il, TOK_SWIGLU, NULL, T);
	mm(b, L->w_down, 0, hp->n_embd, b->gate, T, b->tmp, hp->n_embd, NULL);
	if (L->ffn_post_norm != NULL)
		per_token(b, NULL, il, TOK_POST, L->ffn_post_norm->data, T);
	per_token(b, NULL, il, TOK_ADD, NULL, T);
}

/*
 * Each of @K experts of one token's @score (best first, the lower index on a tie) into @sel
 * and its score into @w.
 */
static void
top_k(const float *score, uint32_t n_expert, uint32_t K, uint32_t *sel, float *w)
{
	for (uint32_t k = 0; k < K; k++) {
		uint32_t best = UINT32_MAX;
		for (uint32_t e = 0; e < n_expert; e++) {
			bool taken = false;
			for (uint32_t i = 0; i < k; i++)
				taken |= sel[i] == e;
			if (!taken && (best == UINT32_MAX || score[e] > score[best]))
				best = e;
		}
		sel[k] = best;
		w[k] = score[best];
	}
}

/* ggml_soft_max of @n floats in place: exp(x - max) in float, the sum in double, one reciprocal. */
static void
softmax_inplace(float *x, uint32_t n)
{
	float max = -INFINITY;
	double sum = 0.0;

	for (uint32_t i = 0; i < n; i++)
		max = x[i] > max ? x[i] : max;
	for (uint32_t i = 0; i < n; i++) {
		x[i] = expf(x[i] - max);
		sum += (double)x[i];
	}
	float inv = (float)(1.0 / sum);
	for (uint32_t i = 0; i < n; i++)
		x[i] *= inv;
}

/*
 * Each token's n_expert_used experts and their weights, as llama.cpp's build_moe_ffn:
 * MODEL_MOE_SOFTMAX_CHOSEN (gpt-oss) takes the top logits and a softmax over those alone;
 * MODEL_MOE_SOFTMAX_ALL (qwen3moe) a softmax over all (in place in b->router), the top
 * probabilities and, with moe_norm_w, each divided by their float sum (at least 2^-14,
 * ggml's clamp).
 */
static void
route_tokens(struct be_model *b, uint32_t T)
{
	const struct model_hparams *hp = &b->m->hp;
	uint32_t K = hp->n_expert_used;

	for (uint32_t t = 0; t < T; t++) {
		float *lg = b->router + (uint64_t)t * hp->n_expert;
		uint32_t *sel = b->sel + (uint64_t)t * K;
		float *w = b->sel_w + (uint64_t)t * K;
		if (hp->moe_gating == MODEL_MOE_SOFTMAX_CHOSEN) {
			top_k(lg, hp->n_expert, K, sel, w);
			softmax_inplace(w, K);
			continue;
		}
		softmax_inplace(lg, hp->n_expert);
		top_k(lg, hp->n_expert, K, sel, w);
		if (!hp->moe_norm_w)
			continue;
		double sum = 0.0;
		for (uint32_t k = 0; k < K; k++)
			sum += (double)w[k];
		float s = (float)sum < 6.103515625e-5f ? 6.103515625e-5f : (float)sum;
		for (uint32_t k = 0; k < K; k++)
			w[k] /= s;
	}
}

/* gpt-oss's SwiGLU constants (llama.cpp's LLM_FFN_SWIGLU_OAI_MOE). */
#define OAI_ALPHA 1.702f
#define OAI_LIMIT 7.0f

/*
 * The experts' FFN: per expert, the rows of the tokens that chose it, in one product each
 * (gpt-oss: with biases, its clamped SwiGLU; qwen3moe: neither).
 */
static void
moe_block(struct be_model *b, uint32_t T, uint32_t il)
{
	const struct model_hparams *hp = &b->m->hp;
	const struct model_layer *L = &b->m->layers[il];
	uint32_t K = hp->n_expert_used, E = hp->n_embd, F = hp->n_ff_exp;

	per_token(b, NULL, il, TOK_NORM, L->ffn_norm->data, T);
	mm(b, L->router, 0, hp->n_expert, b->xn, T, b->router, hp->n_expert, L->router_b);
	route_tokens(b, T);
	for (uint32_t e = 0; e < hp->n_expert; e++) {
		uint32_t n = 0;
		for (uint32_t tk = 0; tk < T * K; tk++)
			if (b->sel[tk] == e)
				b->route[n++] = tk;
		if (n == 0)
			continue;
		for (uint32_t i = 0; i < n; i++)
			memcpy(b->moe_x + (uint64_t)i * E, b->xn + (uint64_t)(b->route[i] / K) * E,
			       E * sizeof(float));
		mm(b, L->gate_exps, (uint64_t)e * F, F, b->moe_x, n, b->gate, F, L->gate_exps_b);
		mm(b, L->up_exps, (uint64_t)e * F, F, b->moe_x, n, b->up, F, L->up_exps_b);
		if (hp->moe_swiglu_oai)
			cpu_swiglu_oai(b->gate, b->up, n * F, OAI_ALPHA, OAI_LIMIT);
		else
			cpu_swiglu(b->gate, b->up, n * F);
		mm(b, L->down_exps, (uint64_t)e * E, E, b->gate, n, b->tmp, E, L->down_exps_b);
		for (uint32_t i = 0; i < n;
		     i++) { /* (down + bias) · weight, into its (t, k) place */
			float w = b->sel_w[b->route[i]],
			      *o = b->moe_out + (uint64_t)b->route[i] * E;
			for (uint32_t c = 0; c < E; c++)
				o[c] = b->tmp[(uint64_t)i * E + c] * w;
		}
	}
	for (uint32_t t = 0; t < T; t++) { /* Σ over k in order, then the residual */
		const float *o = b->moe_out + (uint64_t)t * K * E;
		float *x = b->x + (uint64_t)t * E;
		for (uint32_t c = 0; c < E; c++) {
			float s = o[c];
			for (uint32_t k = 1; k < K; k++)
				s += o[(uint64_t)k * E + c];
			x[c] += s;
		}
	}
}

orch_err
cpu_forward(struct be_model *b, const struct be_seq *seqs, uint32_t n, const float **ret_logits,
            struct orch_errinfo *reterr)
{
	const struct model *m = b->m;
	const struct model_hparams *hp = &m->hp;
	uint32_t T = 0, t = 0, n_out = 0;
	uint64_t row_bytes;
	orch_err rv =
	        be_check_batch(&b->cfg, b->m->hp.n_vocab, b->m->hp.n_swa, seqs, n, &T, reterr);

	if (rv != ORCH_OK)
		return rv;
	const struct cpu_pack *pe = cpu_pack_find(b->packs, b->n_packs, m->tok_embd);
	ggml_row_bytes(m->tok_embd->type, hp->n_embd, &row_bytes);
	for (uint32_t s = 0; s < n; s++) {
		for (uint32_t k = 0; k < seqs[s].n_tokens; k++, t++) {
			uint64_t id = (uint64_t)seqs[s].tokens[k];
			float *xt = b->x + (uint64_t)t * hp->n_embd;
			b->tok_seq[t] = s;
			b->tok_pos[t] = seqs[s].pos + k;
			if (pe != NULL) /* a float embedding, packed (cpu_pack_f.c) */
				cpu_pack_row_f(m->tok_embd->type,
				               pe->data + id / CPU_PACK_ROWS * CPU_PACK_ROWS *
				                                  row_bytes,
				               hp->n_embd, (uint32_t)(id % CPU_PACK_ROWS), xt);
			else
				dequant_row(m->tok_embd->type,
				            (const uint8_t *)m->tok_embd->data + id * row_bytes, xt,
				            hp->n_embd);
			for (uint32_t i = 0; hp->embd_scale > 0 && i < hp->n_embd; i++)
				xt[i] *= hp->embd_scale; /* gemma3: √n_embd */
		}
	}
	for (uint32_t il = 0; il < hp->n_layer; il++) {
		attention_block(b, seqs, T, il);
		if (hp->n_expert > 0)
			moe_block(b, T, il);
		else
			ffn_block(b, T, il);
	}
	for (uint32_t s = 0, end = 0; s < n; s++) {
		end += seqs[s].n_tokens;
		if (!seqs[s].want_logits)
			continue;
		for (uint32_t r = seqs[s].all_logits ? end - seqs[s].n_tokens : end - 1; r < end;
		     r++)
			cpu_rmsnorm(b->x + (uint64_t)r * hp->n_embd, m->output_norm->data,
			            hp->n_embd, hp->rms_eps,
			            b->last + (uint64_t)n_out++ * hp->n_embd);
	}
	mm(b, m->output, 0, hp->n_vocab, b->last, n_out, b->logits, hp->n_vocab, NULL);
	if (hp->final_softcap > 0) /* c · tanh(x / c), as ggml: x · (1/c), tanh, · c */
		for (uint64_t i = 0; i < (uint64_t)n_out * hp->n_vocab; i++)
			b->logits[i] = tanhf(b->logits[i] * (1.0f / hp->final_softcap)) *
			               hp->final_softcap;
	*ret_logits = b->logits;
	return ORCH_OK;
}
