/*
 * tok_hfjson.c - build a tokenizer from a Hugging Face tokenizer.json
 * ("hf-json" kind): byte-level BPE only. The pre-tokenizer regex is taken
 * from the file (a Split's pattern, or GPT-2's when ByteLevel has
 * use_regex) and compiled as the GGUF path compiles its named ones, so both
 * kinds run the same code after loading.
 */
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/readfile.h"
#include "tok_internal.h"

#define HF_JSON_MAX_BYTES (512u << 20)

static cJSON *
read_json(const char *path, struct orch_errinfo *reterr, orch_err *rv)
{
	char *buf = NULL;
	size_t n = 0;
	cJSON *j = NULL;

	*rv = orch_read_file(path, HF_JSON_MAX_BYTES, &buf, &n, reterr);
	if (*rv == ORCH_OK && (j = cJSON_ParseWithLength(buf, n)) == NULL) {
		const char *at = cJSON_GetErrorPtr();
		*rv = orch_errf(reterr, ORCH_EINVAL, "%s: malformed JSON at byte %lld", path,
		                at && at >= buf && at <= buf + n ? (long long)(at - buf) : -1LL);
	}
	orch_free(buf);
	return j;
}

/* The pre-tokenizer regex of @pt (ByteLevel, Split, or a Sequence of them). */
static orch_err
pretok_regex(const cJSON *pt, const char *path, const char **ret, struct orch_errinfo *reterr)
{
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(pt, "type"));
	const cJSON *it;

	if (type == NULL)
		return orch_errf(reterr, ORCH_EUNSUPPORTED, "%s: pre_tokenizer is missing", path);
	if (strcmp(type, "Sequence") == 0) {
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(pt, "pretokenizers"))
		{
			orch_err rv = pretok_regex(it, path, ret, reterr);
			if (rv != ORCH_OK)
				return rv;
		}
		return ORCH_OK;
	}
	if (strcmp(type, "ByteLevel") == 0) {
		if (cJSON_IsTrue(cJSON_GetObjectItem(pt, "add_prefix_space")))
			return orch_errf(reterr, ORCH_EUNSUPPORTED,
			                 "%s: ByteLevel add_prefix_space is not supported", path);
		if (!cJSON_IsFalse(cJSON_GetObjectItem(pt, "use_regex")) && *ret == NULL)
			*ret = tok_pre_regex("gpt-2");
		return ORCH_OK;
	}
	if (strcmp(type, "Split") == 0) {
		const char *re = cJSON_GetStringValue(
		        cJSON_GetObjectItem(cJSON_GetObjectItem(pt, "pattern"), "Regex"));
		const char *behavior = cJSON_GetStringValue(cJSON_GetObjectItem(pt, "behavior"));
		if (re == NULL || behavior == NULL || strcmp(behavior, "Isolated") != 0 ||
		    cJSON_IsTrue(cJSON_GetObjectItem(pt, "invert")))
			return orch_errf(
			        reterr, ORCH_EUNSUPPORTED,
			        "%s: only Split with a Regex pattern and behavior Isolated is supported",
			        path);
		*ret = re;
		return ORCH_OK;
	}
	return orch_errf(reterr, ORCH_EUNSUPPORTED, "%s: pre-tokenizer type '%s' is not supported",
	                 path, type);
}

/* Token strings by id: the vocab, then added_tokens over it. */
static orch_err
fill_vocab(struct tok *t, const cJSON *vocab, const cJSON *added)
{
	const cJSON *it;
	const char **text = orch_calloc(t->n_vocab, sizeof(*text));
	size_t bytes = 0, at = 0;

	if (text == NULL)
		return ORCH_ENOMEM;
	cJSON_ArrayForEach(it, vocab) text[(size_t)it->valuedouble] = it->string;
	cJSON_ArrayForEach(it, added)
	{
		const cJSON *id = cJSON_GetObjectItem(it, "id");
		text[(size_t)id->valuedouble] =
		        cJSON_GetStringValue(cJSON_GetObjectItem(it, "content"));
	}
	for (uint32_t i = 0; i < t->n_vocab; i++)
		bytes += text[i] ? strlen(text[i]) : 0;
	if (tok_alloc_vocab(t, t->n_vocab, bytes) != ORCH_OK) {
		orch_free(text);
		return ORCH_ENOMEM;
	}
	for (uint32_t i = 0; i < t->n_vocab; i++) {
		size_t n = text[i] ? strlen(text[i]) : 0;
		memcpy(t->blob + at, text[i] ? text[i] : "", n);
		t->off[i] = (uint32_t)at;
		t->len[i] = (uint32_t)n;
		t->types[i] = text[i] ? TOK_TYPE_NORMAL : TOK_TYPE_UNUSED;
		at += n;
		if (text[i])
			strmap_put(t->map, t->blob + t->off[i], n, (int32_t)i);
	}
	cJSON_ArrayForEach(it, added)
	{
		size_t id = (size_t)cJSON_GetObjectItem(it, "id")->valuedouble;
		t->types[id] = cJSON_IsTrue(cJSON_GetObjectItem(it, "special"))
		                       ? TOK_TYPE_CONTROL
		                       : TOK_TYPE_USER_DEFINED;
		t->strip[id] =
		        (uint8_t)((cJSON_IsTrue(cJSON_GetObjectItem(it, "lstrip")) ? TOK_STRIP_LEFT
		                                                                   : 0) |
		                  (cJSON_IsTrue(cJSON_GetObjectItem(it, "rstrip")) ? TOK_STRIP_RIGHT
		                                                                   : 0));
	}
	orch_free(text);
	return ORCH_OK;
}

/* Vocabulary size from the largest id; every id must be a non-negative integer. */
static orch_err
count_ids(const cJSON *vocab, const cJSON *added, const char *path, uint32_t *ret,
          struct orch_errinfo *reterr)
{
	const cJSON *it;
	double max = -1;

	cJSON_ArrayForEach(it, vocab)
	{
		if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e8)
			return orch_errf(reterr, ORCH_EINVAL,
			                 "%s: vocab id of '%.40s' is not valid", path, it->string);
		max = it->valuedouble > max ? it->valuedouble : max;
	}
	cJSON_ArrayForEach(it, added)
	{
		const cJSON *id = cJSON_GetObjectItem(it, "id");
		if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > 1e8 ||
		    !cJSON_IsString(cJSON_GetObjectItem(it, "content")))
			return orch_errf(reterr, ORCH_EINVAL,
			                 "%s: an added_tokens entry is malformed", path);
		max = id->valuedouble > max ? id->valuedouble : max;
	}
	if (max < 0)
		return orch_errf(reterr, ORCH_EINVAL, "%s: the vocabulary is empty", path);
	*ret = (uint32_t)max + 1;
	return ORCH_OK;
}

/* Merges as "left right" strings; pairs (["left", "right"]) are joined. */
static orch_err
load_merges(struct tok *t, const cJSON *merges, const char *regex, const char *path,
            struct orch_errinfo *reterr)
{
	size_t n = (size_t)cJSON_GetArraySize(merges), k = 0;
	const char **strs = orch_calloc(n ? n : 1, sizeof(*strs));
	size_t *lens = orch_calloc(n ? n : 1, sizeof(*lens));
	struct arena a = {0};
	const cJSON *it;
	orch_err rv = ORCH_OK;

	if (strs == NULL || lens == NULL)
		rv = orch_errf(reterr, ORCH_ENOMEM, "tokenizer: out of memory");
	cJSON_ArrayForEach(it, merges)
	{
		if (rv != ORCH_OK)
			break;
		const char *l = cJSON_GetStringValue(cJSON_GetArrayItem(it, 0));
		const char *r = cJSON_GetStringValue(cJSON_GetArrayItem(it, 1));
		if (cJSON_IsString(it)) {
			strs[k] = it->valuestring;
		} else if (l != NULL && r != NULL) {
			char *s = arena_alloc(&a, strlen(l) + strlen(r) + 2);
			if (s == NULL) {
				rv = orch_errf(reterr, ORCH_ENOMEM, "tokenizer: out of memory");
				break;
			}
			sprintf(s, "%s %s", l, r);
			strs[k] = s;
		} else {
			rv = orch_errf(reterr, ORCH_EINVAL, "%s: merge %zu is malformed", path, k);
			break;
		}
		lens[k] = strlen(strs[k]);
		k++;
	}
	if (rv == ORCH_OK)
		rv = tok_bpe_init(t, strs, lens, k, NULL, regex, reterr);
	arena_free(&a);
	orch_free(strs);
	orch_free(lens);
	return rv;
}

/* BOS/EOS and their add flags from a parsed tokenizer_config.json (NULL: none). */
static void
apply_config(struct tok *t, const cJSON *cfg)
{
	static const char *const keys[2] = {"bos_token", "eos_token"};
	for (int i = 0; cfg != NULL && i < 2; i++) {
		const cJSON *v = cJSON_GetObjectItem(cfg, keys[i]);
		const char *s = cJSON_IsObject(v)
		                        ? cJSON_GetStringValue(cJSON_GetObjectItem(v, "content"))
		                        : cJSON_GetStringValue(v);
		int32_t id = s ? strmap_get(t->map, s, strlen(s)) : -1;
		*(i == 0 ? &t->bos : &t->eos) = id;
	}
	t->add_bos = cJSON_IsTrue(cJSON_GetObjectItem(cfg, "add_bos_token"));
	t->add_eos = cJSON_IsTrue(cJSON_GetObjectItem(cfg, "add_eos_token"));
}

static orch_err
load(struct tok *t, const cJSON *j, const char *path, const cJSON *cfg, struct orch_errinfo *reterr)
{
	const cJSON *model = cJSON_GetObjectItem(j, "model");
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(model, "type"));
	const cJSON *vocab = cJSON_GetObjectItem(model, "vocab");
	const cJSON *merges = cJSON_GetObjectItem(model, "merges");
	const cJSON *added = cJSON_GetObjectItem(j, "added_tokens");
	const char *regex = NULL;
	orch_err rv;

	if (type == NULL || strcmp(type, "BPE") != 0)
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: tokenizer model type '%s' is not supported (supported: BPE)",
		                 path, type ? type : "(missing)");
	if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges))
		return orch_errf(reterr, ORCH_EINVAL, "%s: model.vocab or model.merges is missing",
		                 path);
	if (cJSON_IsTrue(cJSON_GetObjectItem(model, "byte_fallback")))
		return orch_errf(
		        reterr, ORCH_EUNSUPPORTED,
		        "%s: BPE with byte_fallback (SentencePiece-style) is not supported; use the GGUF tokenizer",
		        path);
	if ((rv = pretok_regex(cJSON_GetObjectItem(j, "pre_tokenizer"), path, &regex, reterr)))
		return rv;
	if (regex == NULL)
		return orch_errf(reterr, ORCH_EUNSUPPORTED, "%s: no pre-tokenizer regex", path);
	t->kind = TOK_BPE;
	t->bos = t->eos = t->eot = t->eom = t->unk = -1;
	if ((rv = count_ids(vocab, added, path, &t->n_vocab, reterr)) != ORCH_OK)
		return rv;
	if (fill_vocab(t, vocab, added) != ORCH_OK)
		return orch_errf(reterr, ORCH_ENOMEM, "tokenizer: out of memory");
	if ((rv = load_merges(t, merges, regex, path, reterr)) != ORCH_OK)
		return rv;
	t->ignore_merges = cJSON_IsTrue(cJSON_GetObjectItem(model, "ignore_merges"));
	apply_config(t, cfg);
	return tok_finish_load(t, reterr);
}

orch_err
tok_load_hf_json_config(const char *path, const void *config, struct tok **ret,
                        struct orch_errinfo *reterr)
{
	struct tok *t = NULL;
	orch_err rv;
	cJSON *j = read_json(path, reterr, &rv);

	if (j == NULL)
		return rv;
	if ((t = orch_calloc(1, sizeof(*t))) == NULL) {
		rv = orch_errf(reterr, ORCH_ENOMEM, "tokenizer: out of memory");
		goto out;
	}
	memset(t->byte_tok, 0xff, sizeof(t->byte_tok));
	rv = load(t, j, path, (const cJSON *)config, reterr);
	if (rv == ORCH_OK) {
		*ret = t;
		t = NULL;
	}
out:
	tok_free(t);
	cJSON_Delete(j);
	return rv;
}

orch_err
tok_load_hf_json(const char *path, struct tok **ret, struct orch_errinfo *reterr)
{
	char dir[4096], cfg_path[4200];
	struct orch_errinfo ignore;
	orch_err rv;

	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(cfg_path, sizeof(cfg_path), "%s/tokenizer_config.json", dirname(dir));
	cJSON *cfg = read_json(cfg_path, &ignore, &rv); /* optional: absent or bad, no BOS/EOS */
	rv = tok_load_hf_json_config(path, cfg, ret, reterr);
	cJSON_Delete(cfg);
	return rv;
}
