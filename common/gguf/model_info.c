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
 * gpt-oss's sliding window, read as worker/engine/model/gpt_oss.c reads it (pattern 2 unless
 * the file says): the layers il with il % pattern < pattern - 1 slide. Other architectures
 * have none in the worker (phi3 files carry a sliding_window key it does not use).
 */
static orch_err
get_swa(const struct gguf_file *f, struct model_info *mi, struct orch_errinfo *reterr)
{
	bool opt = true;
	const char *unused;
	orch_err rv;

	if (strcmp(mi->arch, "gpt-oss") != 0)
		return ORCH_OK;
	mi->swa_pattern = 2;
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
model_swa_cells(uint32_t n_ctx, uint32_t n_swa, uint32_t max_batch_tokens)
{
	uint64_t ring = (uint64_t)n_swa + max_batch_tokens;

	return n_swa == 0 || ring >= n_ctx ? n_ctx : (uint32_t)ring;
}

orch_err
model_mem_estimate(const struct model_info *mi, uint32_t n_ctx, uint32_t slots,
                   uint32_t kv_elem_bytes, struct mem_estimate *ret)
{
	uint64_t cell = 2, full, swa, kv, total, act, logits, widest, qkv;
	uint64_t T = MODEL_DEFAULT_CHUNK_TOKENS + (uint64_t)slots;
	uint32_t swa_cells =
	        model_swa_cells(n_ctx, mi->n_swa, T > UINT32_MAX ? UINT32_MAX : (uint32_t)T);

	if (!mi->has_hparams)
		return ORCH_ENOTFOUND;
	qkv = (uint64_t)mi->head_dim * (mi->n_head + 2ull * mi->n_head_kv);
	widest = mi->n_ff > qkv ? mi->n_ff : qkv;
	/* one position of every sequence in one layer: K and V */
	if (__builtin_mul_overflow(cell, (uint64_t)slots, &cell) ||
	    __builtin_mul_overflow(cell, (uint64_t)mi->n_head_kv * mi->head_dim, &cell) ||
	    __builtin_mul_overflow(cell, (uint64_t)kv_elem_bytes, &cell) ||
	    __builtin_mul_overflow(cell, (uint64_t)n_ctx * (mi->n_layer - mi->n_layer_swa),
	                           &full) ||
	    __builtin_mul_overflow(cell, (uint64_t)swa_cells * mi->n_layer_swa, &swa) ||
	    __builtin_add_overflow(full, swa, &kv))
		return ORCH_ERANGE;
	logits = (uint64_t)mi->n_vocab * 4u * slots;
	act = (uint64_t)MODEL_DEFAULT_CHUNK_TOKENS * (4ull * mi->n_embd + 2ull * widest) * 4u;
	if (__builtin_add_overflow(mi->weight_bytes, kv, &total) ||
	    __builtin_add_overflow(total, MODEL_RUNTIME_OVERHEAD_BYTES + logits + act, &total))
		return ORCH_ERANGE;
	ret->weights = mi->weight_bytes;
	ret->kv = kv;
	ret->kv_full = full;
	ret->kv_swa = swa;
	ret->overhead = MODEL_RUNTIME_OVERHEAD_BYTES + logits + act;
	ret->total = total;
	ret->n_ctx = n_ctx;
	ret->slots = slots;
	ret->kv_elem_bytes = kv_elem_bytes;
	ret->swa_cells = mi->n_layer_swa > 0 ? swa_cells : 0;
	return ORCH_OK;
}
