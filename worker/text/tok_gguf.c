/*
 * tok_gguf.c - build a tokenizer from GGUF metadata ("gguf-bpe" kind):
 * tokenizer.ggml.{model, pre, tokens, scores, token_type, merges,
 * *_token_id, add_bos_token, add_eos_token, add_space_prefix}.
 *
 * Absent flags take llama.cpp's loader defaults (docs/tokenizers.md):
 * add_bos_token is true for SentencePiece and for the Llama 3 pre-tokenizers
 * (llama-bpe, llama3, llama-v3), false for other byte-level BPE;
 * add_eos_token false; add_space_prefix true for SentencePiece. A model
 * whose general.name says phi-3 gets llama.cpp's whitespace rule for its
 * special tokens: every one but <unk>, <s> and <|endoftext|> swallows the
 * whitespace after it.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

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

static bool
contains_ci(const char *s, size_t n, const char *needle)
{
	size_t m = strlen(needle);

	for (size_t i = 0; i + m <= n; i++)
		if (strncasecmp(s + i, needle, m) == 0)
			return true;
	return false;
}

/* llama.cpp's RSTRIP set for phi-3 (recognised by general.name), after the special list is built.
 */
static void
phi3_strip(const struct gguf_file *f, struct tok *t)
{
	static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
	struct gguf_str name;

	if (gguf_get_str(f, "general.name", &name) != ORCH_OK ||
	    !(contains_ci(name.ptr, name.len, "phi-3") || contains_ci(name.ptr, name.len, "phi3")))
		return;
	for (size_t i = 0; i < t->n_special; i++)
		t->strip[t->special[i]] |= TOK_STRIP_RIGHT;
	int32_t id = strmap_get(t->map, "</s>", 4);
	if (id >= 0)
		t->strip[id] |= TOK_STRIP_RIGHT;
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if ((id = strmap_get(t->map, keep[i], strlen(keep[i]))) >= 0)
			t->strip[id] &= (uint8_t)~TOK_STRIP_RIGHT;
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
	if (t->kind == TOK_BPE) {
		gguf_get_str(f, "tokenizer.ggml.pre", &pre);
		snprintf(pre_name, sizeof(pre_name), "%.*s", (int)(pre.len > 60 ? 60 : pre.len),
		         pre.ptr);
		if ((rv = load_merges(f, t, pre_name, reterr)) != ORCH_OK)
			return rv;
	}
	t->add_bos =
	        flag(f, "tokenizer.ggml.add_bos_token",
	             t->kind == TOK_SPM || t->pre == TOK_PRE_LLAMA3 || t->pre == TOK_PRE_TEKKEN);
	t->add_eos = flag(f, "tokenizer.ggml.add_eos_token", false);
	t->add_space_prefix = flag(f, "tokenizer.ggml.add_space_prefix", t->kind == TOK_SPM);
	if ((rv = tok_finish_load(t, reterr)) != ORCH_OK)
		return rv;
	phi3_strip(f, t);
	return ORCH_OK;
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
