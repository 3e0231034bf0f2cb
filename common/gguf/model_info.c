#include "model_info.h"

#include <stdio.h>
#include <string.h>

#include "gguf.h"

static void
copy_str(const struct gguf_file *f, const char *key, char *dst, size_t n)
{
	struct gguf_str s;

	dst[0] = '\0';
	if (gguf_get_str(f, key, &s) == ORCH_OK)
		snprintf(dst, n, "%.*s", (int)(s.len < n ? s.len : n - 1), s.ptr);
}

/* An unsigned integer hyper-parameter "{arch}.@suffix"; *@ok cleared when absent. */
static orch_err
hparam(const struct gguf_file *f, const struct model_info *mi, const char *suffix, uint32_t *out,
       bool *ok, const char **missing, struct orch_errinfo *reterr)
{
	char key[128];
	uint64_t v;
	orch_err rv;

	snprintf(key, sizeof(key), "%s.%s", mi->arch, suffix);
	rv = gguf_get_uint(f, key, &v);
	if (rv == ORCH_ENOTFOUND) {
		if (*ok)
			*missing = suffix;
		*ok = false;
		return ORCH_OK;
	}
	if (rv != ORCH_OK || v > UINT32_MAX)
		return orch_errf(reterr, ORCH_ETYPE, "%s: key %s is not a 32-bit unsigned integer",
		                 gguf_name(f), key);
	*out = (uint32_t)v;
	return ORCH_OK;
}

/*
 * The sliding window of gpt-oss and gemma3, read as worker/engine/model/gpt_oss.c and
 * gemma3.c read it (pattern 2 and 6 unless the file says): the layers il with
 * il % pattern < pattern - 1 slide. Other architectures have none in the worker (phi3
 * files carry a sliding_window key it does not use).
 */
static orch_err
get_swa(const struct gguf_file *f, struct model_info *mi, struct orch_errinfo *reterr)
{
	bool opt = true;
	const char *unused;
	orch_err rv;

	if (strcmp(mi->arch, "gpt-oss") == 0)
		mi->swa_pattern = 2;
	else if (strcmp(mi->arch, "gemma3") == 0)
		mi->swa_pattern = 6;
	else
		return ORCH_OK;
	if ((rv = hparam(f, mi, "attention.sliding_window", &mi->n_swa, &opt, &unused, reterr)) ||
	    (rv = hparam(f, mi, "attention.sliding_window_pattern", &mi->swa_pattern, &opt, &unused,
	                 reterr)))
		return rv;
	for (uint32_t il = 0; mi->n_swa > 0 && mi->swa_pattern > 0 && il < mi->n_layer; il++)
		mi->n_layer_swa += il % mi->swa_pattern < mi->swa_pattern - 1;
	return ORCH_OK;
}

static orch_err
get_hparams(const struct gguf_file *f, struct model_info *mi, struct orch_errinfo *reterr)
{
	bool ok = mi->arch[0] != '\0';
	orch_err rv;

	mi->missing = "general.architecture";
	if ((rv = hparam(f, mi, "block_count", &mi->n_layer, &ok, &mi->missing, reterr)) ||
	    (rv = hparam(f, mi, "embedding_length", &mi->n_embd, &ok, &mi->missing, reterr)) ||
	    (rv = hparam(f, mi, "attention.head_count", &mi->n_head, &ok, &mi->missing, reterr)) ||
	    (rv = hparam(f, mi, "feed_forward_length", &mi->n_ff, &ok, &mi->missing, reterr)) ||
	    (rv = hparam(f, mi, "context_length", &mi->n_ctx_train, &ok, &mi->missing, reterr)))
		return rv;
	mi->n_head_kv = mi->n_head;
	bool opt = true;
	const char *unused;
	if ((rv = hparam(f, mi, "attention.head_count_kv", &mi->n_head_kv, &opt, &unused, reterr)))
		return rv;
	mi->head_dim = mi->n_head ? mi->n_embd / mi->n_head : 0;
	if ((rv = hparam(f, mi, "attention.key_length", &mi->head_dim, &opt, &unused, reterr)))
		return rv;
	if ((rv = get_swa(f, mi, reterr)))
		return rv;
	mi->has_hparams = ok && mi->n_head > 0 && mi->n_head_kv > 0;
	if (mi->has_hparams)
		mi->missing = NULL;
	return ORCH_OK;
}

static void
get_tokenizer(const struct gguf_file *f, struct model_info *mi)
{
	static const char *const specials[] = {"bos",     "eos",     "eot",       "eom",
	                                       "unknown", "padding", "seperator", "mask"};
	const struct gguf_arr *tokens;
	struct gguf_str tmpl;

	copy_str(f, "tokenizer.ggml.model", mi->tok_model, sizeof(mi->tok_model));
	copy_str(f, "tokenizer.ggml.pre", mi->tok_pre, sizeof(mi->tok_pre));
	if (gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_VTYPE_STRING, &tokens) == ORCH_OK &&
	    tokens->n <= UINT32_MAX)
		mi->n_vocab = (uint32_t)tokens->n;
	if (gguf_get_str(f, "tokenizer.chat_template", &tmpl) == ORCH_OK)
		mi->chat_template_bytes = tmpl.len;
	for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++) {
		char key[64];
		uint64_t id;
		snprintf(key, sizeof(key), "tokenizer.ggml.%s_token_id", specials[i]);
		/* ids past the vocabulary (llama.cpp writes -1 for "none") are not listed */
		if (gguf_get_uint(f, key, &id) == ORCH_OK && id < mi->n_vocab)
			mi->special[mi->n_special++] =
			        (struct model_special){specials[i], (uint32_t)id};
	}
}

orch_err
model_info_get(const struct gguf_file *f, struct model_info *mi, struct orch_errinfo *reterr)
{
	memset(mi, 0, sizeof(*mi));
	copy_str(f, "general.architecture", mi->arch, sizeof(mi->arch));
	copy_str(f, "general.name", mi->name, sizeof(mi->name));
	for (size_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		mi->n_params += t->n_elements;
		mi->weight_bytes += t->nbytes;
		mi->types[t->type].tensors++;
		mi->types[t->type].bytes += t->nbytes;
	}
	get_tokenizer(f, mi);
	return get_hparams(f, mi, reterr);
}

uint32_t
model_default_ctx(const struct model_info *mi)
{
	return mi->n_ctx_train && mi->n_ctx_train < MODEL_DEFAULT_CTX ? mi->n_ctx_train
	                                                              : MODEL_DEFAULT_CTX;
}

uint32_t
model_swa_cells(uint32_t n_ctx, uint32_t n_swa, uint32_t max_batch_tokens)
{
	uint64_t ring = (uint64_t)n_swa + max_batch_tokens;

	return n_swa == 0 || ring >= n_ctx ? n_ctx : (uint32_t)ring;
}

uint32_t
model_swa_blocks(uint32_t n_ctx, uint32_t n_swa, uint32_t max_batch_tokens, uint32_t block_tokens)
{
	uint64_t bt = block_tokens ? block_tokens : 1, span = (uint64_t)n_swa + max_batch_tokens;
	uint64_t all = (n_ctx + bt - 1) / bt, held = (span > 2 ? (span - 2 + bt - 1) / bt : 0) + 1;

	return (uint32_t)(held < all ? held : all);
}

/*
 * K and V of one position in one layer (*@ret_pos) and over the full-attention layers
 * (*@ret_token); ORCH_ERANGE on overflow.
 */
static orch_err
kv_position_bytes(const struct model_info *mi, uint32_t kv_elem_bytes, uint64_t *ret_pos,
                  uint64_t *ret_token)
{
	uint64_t pos = 2;

	if (__builtin_mul_overflow(pos, (uint64_t)mi->n_head_kv * mi->head_dim, &pos) ||
	    __builtin_mul_overflow(pos, (uint64_t)kv_elem_bytes, &pos) ||
	    __builtin_mul_overflow(pos, (uint64_t)(mi->n_layer - mi->n_layer_swa), ret_token))
		return ORCH_ERANGE;
	*ret_pos = pos;
	return ORCH_OK;
}

/*
 * The pool of @kv into @e: its block size (the default applied) and its blocks, a budget's
 * floor(pool_bytes / block bytes) or slots × ceil(n_ctx / block_tokens); blocks of 0 bytes
 * (no full-attention layer) make no blocks. ORCH_ERANGE as model_mem_estimate_kv says.
 */
static orch_err
kv_pool(const struct mem_kv *kv, struct mem_estimate *e)
{
	uint32_t bt = kv->block_tokens ? kv->block_tokens : MODEL_DEFAULT_KV_BLOCK_TOKENS;
	uint64_t block, blocks;

	if (bt > MODEL_MAX_KV_BLOCK_TOKENS ||
	    __builtin_mul_overflow(e->kv_token_bytes, (uint64_t)bt, &block))
		return ORCH_ERANGE;
	if (block == 0)
		blocks = 0;
	else if (kv->pool_bytes > 0) {
		blocks = kv->pool_bytes / block;
		if (blocks > MODEL_MAX_KV_POOL_TOKENS / bt) {
			blocks = MODEL_MAX_KV_POOL_TOKENS / bt;
			e->kv_pool_capped = true;
		}
	} else
		blocks = (uint64_t)e->slots * ((e->n_ctx + (uint64_t)bt - 1) / bt);
	if (blocks > UINT32_MAX / bt)
		return ORCH_ERANGE;
	e->kv_blocks = (uint32_t)blocks;
	e->kv_block_tokens = bt;
	e->kv_pool_tokens = blocks * bt;
	return ORCH_OK;
}

/*
 * Both estimates: the full-attention layers hold slots × n_ctx positions, or with a pool
 * (@kv not NULL) its kv_pool_tokens; the sliding-window layers a ring per slot, or with a
 * pool model_swa_blocks per slot.
 */
static orch_err
estimate(const struct model_info *mi, uint32_t n_ctx, uint32_t slots, uint32_t kv_elem_bytes,
         const struct mem_kv *kv, struct mem_estimate *ret)
{
	struct mem_estimate e = {.n_ctx = n_ctx, .slots = slots, .kv_elem_bytes = kv_elem_bytes};
	uint64_t pos, ring, full_tokens, act, widest, qkv;
	uint64_t T = MODEL_DEFAULT_CHUNK_TOKENS + (uint64_t)slots;
	uint64_t swa_T = T > UINT32_MAX ? UINT32_MAX : T;
	uint32_t swa_cells = model_swa_cells(n_ctx, mi->n_swa, (uint32_t)swa_T);
	orch_err rv;

	if (!mi->has_hparams)
		return ORCH_ENOTFOUND;
	if ((rv = kv_position_bytes(mi, kv_elem_bytes, &pos, &e.kv_token_bytes)) ||
	    (kv && (rv = kv_pool(kv, &e))))
		return rv;
	if (kv && mi->n_swa > 0)
		swa_cells = model_swa_blocks(n_ctx, mi->n_swa, (uint32_t)swa_T, e.kv_block_tokens) *
		            e.kv_block_tokens;
	full_tokens = kv ? e.kv_pool_tokens : (uint64_t)slots * n_ctx;
	if (__builtin_mul_overflow(e.kv_token_bytes, full_tokens, &e.kv_full) ||
	    __builtin_mul_overflow(pos, (uint64_t)slots, &ring) ||
	    __builtin_mul_overflow(ring, (uint64_t)swa_cells * mi->n_layer_swa, &e.kv_swa) ||
	    __builtin_add_overflow(e.kv_full, e.kv_swa, &e.kv))
		return ORCH_ERANGE;
	qkv = (uint64_t)mi->head_dim * (mi->n_head + 2ull * mi->n_head_kv);
	widest = mi->n_ff > qkv ? mi->n_ff : qkv;
	act = (uint64_t)MODEL_DEFAULT_CHUNK_TOKENS * (4ull * mi->n_embd + 2ull * widest) * 4u;
	e.overhead = MODEL_RUNTIME_OVERHEAD_BYTES +
	             (uint64_t)mi->n_vocab * 4u * (slots + MODEL_PROMPT_LOGIT_ROWS) + act;
	if (__builtin_add_overflow(mi->weight_bytes, e.kv, &e.total) ||
	    __builtin_add_overflow(e.total, e.overhead, &e.total))
		return ORCH_ERANGE;
	e.weights = mi->weight_bytes;
	e.swa_cells = mi->n_layer_swa > 0 ? swa_cells : 0;
	*ret = e;
	return ORCH_OK;
}

orch_err
model_mem_estimate(const struct model_info *mi, uint32_t n_ctx, uint32_t slots,
                   uint32_t kv_elem_bytes, struct mem_estimate *ret)
{
	return estimate(mi, n_ctx, slots, kv_elem_bytes, NULL, ret);
}

orch_err
model_mem_estimate_kv(const struct model_info *mi, uint32_t n_ctx, uint32_t slots,
                      uint32_t kv_elem_bytes, const struct mem_kv *kv, struct mem_estimate *ret)
{
	static const struct mem_kv defaults = {0};

	return estimate(mi, n_ctx, slots, kv_elem_bytes, kv ? kv : &defaults, ret);
}

uint64_t
model_kv_block_bytes(const struct model_info *mi, uint32_t block_tokens, uint32_t kv_elem_bytes)
{
	uint64_t pos, token, block;

	if (!mi->has_hparams || kv_position_bytes(mi, kv_elem_bytes, &pos, &token) != ORCH_OK ||
	    __builtin_mul_overflow(token, (uint64_t)block_tokens, &block))
		return 0;
	return block;
}

orch_err
model_kv_fraction_pool(const struct model_info *mi, uint32_t n_ctx, uint32_t slots,
                       uint32_t kv_elem_bytes, uint32_t block_tokens, double fraction,
                       uint64_t mem_total, uint64_t *ret)
{
	struct mem_kv none = {.pool_bytes = 1, .block_tokens = block_tokens};
	struct mem_estimate e;
	orch_err rv = model_mem_estimate_kv(mi, n_ctx, slots, kv_elem_bytes, &none, &e);
	uint64_t rest;

	if (rv != ORCH_OK)
		return rv;
	rest = e.weights + e.overhead + e.kv_swa;
	if (mem_total <= rest)
		return ORCH_ERANGE;
	*ret = (uint64_t)(fraction * (double)(mem_total - rest));
	return ORCH_OK;
}
