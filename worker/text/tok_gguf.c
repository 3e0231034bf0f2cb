/*
 * tok_gguf.c - build a tokenizer from GGUF metadata ("gguf-bpe" kind):
 * tokenizer.ggml.{model, pre, tokens, scores, token_type, merges,
 * *_token_id, add_bos_token, add_eos_token, add_space_prefix}.
 */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "gguf/gguf.h"
#include "tok_internal.h"

static int32_t
special_id(const struct gguf_file *f, const char *key, uint32_t n_vocab)
{
	uint64_t v;

	if (gguf_get_uint(f, key, &v) != ORCH_OK || v >= n_vocab)
		return -1; /* absent, or -1/UINT32_MAX for "none" */
	return (int32_t)v;
}

static bool
flag(const struct gguf_file *f, const char *key, bool dflt)
{
	bool b;

	return gguf_get_bool(f, key, &b) == ORCH_OK ? b : dflt;
}

static orch_err
load_vocab(const struct gguf_file *f, struct tok *t, struct orch_errinfo *reterr)
{
	const struct gguf_arr *tokens, *scores = NULL, *types = NULL;
	size_t bytes = 0, at = 0;
	orch_err rv;

	rv = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_VTYPE_STRING, &tokens);
	if (rv != ORCH_OK || tokens->n == 0 || tokens->n > INT32_MAX)
		return orch_errf(
		        reterr, rv ? rv : ORCH_EINVAL,
		        "%s: tokenizer.ggml.tokens is missing, empty or not a string array",
		        gguf_name(f));
	if (gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_VTYPE_FLOAT32, &scores) == ORCH_OK &&
	    scores->n != tokens->n)
		return orch_errf(reterr, ORCH_EINVAL, "%s: %llu scores for %llu tokens",
		                 gguf_name(f), (unsigned long long)scores->n,
		                 (unsigned long long)tokens->n);
	if (gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_VTYPE_COUNT, &types) == ORCH_OK &&
	    (types->n != tokens->n || types->raw == NULL))
		return orch_errf(reterr, ORCH_EINVAL,
		                 "%s: token_type does not match the %llu tokens", gguf_name(f),
		                 (unsigned long long)tokens->n);
	for (uint64_t i = 0; i < tokens->n; i++)
		bytes += tokens->strs[i].len;
	if (tok_alloc_vocab(t, (uint32_t)tokens->n, bytes) != ORCH_OK)
		return orch_errf(reterr, ORCH_ENOMEM, "tokenizer: out of memory");
	for (uint32_t i = 0; i < t->n_vocab; i++) {
		memcpy(t->blob + at, tokens->strs[i].ptr, tokens->strs[i].len);
		t->off[i] = (uint32_t)at;
		t->len[i] = (uint32_t)tokens->strs[i].len;
		at += t->len[i];
		t->scores[i] = scores ? (float)gguf_arr_num(scores, i) : 0.0f;
		int64_t ty = types ? gguf_arr_int(types, i) : TOK_TYPE_NORMAL;
		t->types[i] = (uint8_t)(ty >= 0 && ty <= TOK_TYPE_BYTE ? ty : TOK_TYPE_NORMAL);
		strmap_put(t->map, t->blob + t->off[i], t->len[i], (int32_t)i);
	}
	return ORCH_OK;
}

static orch_err
load_merges(const struct gguf_file *f, struct tok *t, const char *pre, struct orch_errinfo *reterr)
{
	const struct gguf_arr *m;
	const char **strs = NULL;
	size_t *lens = NULL;
	orch_err rv;

	if (gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_VTYPE_STRING, &m) != ORCH_OK)
		return orch_errf(reterr, ORCH_ENOTFOUND,
		                 "%s: tokenizer.ggml.merges (string array) is missing",
		                 gguf_name(f));
	strs = orch_calloc(m->n ? (size_t)m->n : 1, sizeof(*strs));
	lens = orch_calloc(m->n ? (size_t)m->n : 1, sizeof(*lens));
	if (strs == NULL || lens == NULL) {
		rv = orch_errf(reterr, ORCH_ENOMEM, "tokenizer: out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < m->n; i++) {
		strs[i] = m->strs[i].ptr;
		lens[i] = (size_t)m->strs[i].len;
	}
	rv = tok_bpe_init(t, strs, lens, (size_t)m->n, pre, NULL, reterr);
out:
	orch_free(strs);
	orch_free(lens);
	return rv;
}

static orch_err
load(const struct gguf_file *f, struct tok *t, struct orch_errinfo *reterr)
{
	struct gguf_str model, pre = {"default", 7};
	char pre_name[64];
	orch_err rv;

	if (gguf_get_str(f, "tokenizer.ggml.model", &model) != ORCH_OK)
		return orch_errf(reterr, ORCH_ENOTFOUND, "%s: tokenizer.ggml.model is missing",
		                 gguf_name(f));
	if (model.len == 5 && memcmp(model.ptr, "llama", 5) == 0)
		t->kind = TOK_SPM;
	else if (model.len == 4 && memcmp(model.ptr, "gpt2", 4) == 0)
		t->kind = TOK_BPE;
	else
		return orch_errf(
		        reterr, ORCH_EUNSUPPORTED,
		        "%s: tokenizer model '%.*s' is not supported (supported: llama, gpt2)",
		        gguf_name(f), (int)(model.len > 40 ? 40 : model.len), model.ptr);
	if ((rv = load_vocab(f, t, reterr)) != ORCH_OK)
		return rv;
	t->bos = special_id(f, "tokenizer.ggml.bos_token_id", t->n_vocab);
	t->eos = special_id(f, "tokenizer.ggml.eos_token_id", t->n_vocab);
	t->eot = special_id(f, "tokenizer.ggml.eot_token_id", t->n_vocab);
	t->eom = special_id(f, "tokenizer.ggml.eom_token_id", t->n_vocab);
	t->unk = special_id(f, "tokenizer.ggml.unknown_token_id", t->n_vocab);
	t->add_bos = flag(f, "tokenizer.ggml.add_bos_token", t->kind == TOK_SPM);
	t->add_eos = flag(f, "tokenizer.ggml.add_eos_token", false);
	t->add_space_prefix = flag(f, "tokenizer.ggml.add_space_prefix", t->kind == TOK_SPM);
	if (t->kind == TOK_BPE) {
		gguf_get_str(f, "tokenizer.ggml.pre", &pre);
		snprintf(pre_name, sizeof(pre_name), "%.*s", (int)(pre.len > 60 ? 60 : pre.len),
		         pre.ptr);
		if ((rv = load_merges(f, t, pre_name, reterr)) != ORCH_OK)
			return rv;
	}
	return tok_finish_load(t, reterr);
}

orch_err
tok_load_gguf(const struct gguf_file *f, struct tok **ret, struct orch_errinfo *reterr)
{
	struct tok *t = orch_calloc(1, sizeof(*t));
	orch_err rv;

	if (t == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "tokenizer: out of memory");
	memset(t->byte_tok, 0xff, sizeof(t->byte_tok));
	rv = load(f, t, reterr);
	if (rv != ORCH_OK) {
		tok_free(t);
		return rv;
	}
	*ret = t;
	return ORCH_OK;
}
