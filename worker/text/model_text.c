/*
 * model_text.c - a model's tokenizer and chat template, from its GGUF or
 * from the Hugging Face files beside it (model_text.h).
 */
#include "model_text.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/readfile.h"
#include "chat.h"
#include "gguf/gguf.h"
#include "text/jinja/jinja.h"
#include "tokenizer.h"

#define HF_CONFIG_MAX_BYTES (16u << 20)

orch_err
text_source_parse(const char *s, enum text_source *out)
{
	if (s == NULL || strcmp(s, "gguf") == 0)
		*out = TEXT_GGUF;
	else if (strcmp(s, "hf-json") == 0)
		*out = TEXT_HF_JSON;
	else
		return ORCH_EINVAL;
	return ORCH_OK;
}

const char *
text_source_name(enum text_source s)
{
	return s == TEXT_HF_JSON ? "hf-json" : "gguf";
}

const char *
chat_origin_name(enum chat_origin o)
{
	static const char *const names[] = {"model", "tokenizer_config", "fallback"};

	return names[o];
}

void
model_text_beside(const char *model_path, const char *name, char *out, size_t cap)
{
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s", model_path);
	snprintf(out, cap, "%s/%s", dirname(dir), name);
}

/*
 * The chat_template of the tokenizer_config.json at @path: a string, or a
 * list of {name, template} (the one named "default", else the first).
 * *@src (inside *@cfg, which the caller deletes) stays NULL when the file
 * or the key is absent.
 */
static orch_err
hf_config_template(const char *path, cJSON **cfg, const char **src, struct orch_errinfo *reterr)
{
	struct stat st;
	struct orch_errinfo e = {0};
	char *buf = NULL;
	size_t n = 0;
	orch_err rv;

	*src = NULL;
	if (stat(path, &st) != 0 && errno == ENOENT)
		return ORCH_OK;
	if ((rv = orch_read_file(path, HF_CONFIG_MAX_BYTES, &buf, &n, &e)) != ORCH_OK)
		return orch_errf(reterr, rv == ORCH_ENOMEM ? rv : ORCH_EMODEL_LOAD, "%s", e.msg);
	*cfg = cJSON_ParseWithLength(buf, n);
	orch_free(buf);
	if (!cJSON_IsObject(*cfg))
		return orch_errf(reterr, ORCH_EMODEL_LOAD, "%s: not a JSON object", path);
	const cJSON *ct = cJSON_GetObjectItem(*cfg, "chat_template"), *pick = NULL, *it;
	if (cJSON_IsArray(ct)) {
		cJSON_ArrayForEach(it, ct)
		{
			const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));
			if (pick == NULL || (name != NULL && strcmp(name, "default") == 0))
				pick = cJSON_GetObjectItem(it, "template");
		}
		ct = pick;
	}
	if (ct != NULL && !cJSON_IsString(ct) && !cJSON_IsNull(ct))
		return orch_errf(reterr, ORCH_EMODEL_LOAD,
		                 "%s: chat_template is neither a string nor a list of templates",
		                 path);
	if (cJSON_IsString(ct) && ct->valuestring[0] != '\0')
		*src = ct->valuestring;
	return ORCH_OK;
}

/* @src compiled into @mt, or the reason it does not compile in @mt->tmpl_err. */
static orch_err
compile(struct model_text *mt, const char *name, const char *src, size_t len)
{
	orch_err rv = jinja_compile(name, src, len, &mt->tmpl, &mt->tmpl_err);

	mt->tools = tool_syntax_detect(src, len);
	mt->think = mt->tok != NULL && think_vocab_find(mt->tok, src, len, &mt->tv);
	return rv == ORCH_ENOMEM ? rv : ORCH_OK;
}

/* @f's tokenizer.chat_template, else orch's fallback format. */
static orch_err
gguf_template(const struct gguf_file *f, struct model_text *mt)
{
	bool fallback = false;
	orch_err rv = chat_template_from_gguf(f, &mt->tmpl, &fallback, &mt->tmpl_err);
	struct gguf_str s;

	if (!fallback && gguf_get_str(f, "tokenizer.chat_template", &s) == ORCH_OK) {
		mt->tools = tool_syntax_detect(s.ptr, (size_t)s.len);
		mt->think =
		        mt->tok != NULL && think_vocab_find(mt->tok, s.ptr, (size_t)s.len, &mt->tv);
	}
	mt->origin = fallback ? CHAT_FALLBACK : CHAT_FROM_MODEL;
	return rv == ORCH_ENOMEM ? rv : ORCH_OK; /* a template that does not compile: tmpl_err */
}

static orch_err
load_hf(const char *model_path, const struct gguf_file *f, uint32_t n_vocab, struct model_text *mt,
        struct orch_errinfo *reterr)
{
	char path[4200], cfg_path[4200];
	struct orch_errinfo e = {0};
	const char *src = NULL;
	cJSON *cfg = NULL;
	orch_err rv;

	/* tokenizer_config.json once, for the tokenizer's BOS/EOS and the template */
	model_text_beside(model_path, "tokenizer_config.json", cfg_path, sizeof(cfg_path));
	if ((rv = hf_config_template(cfg_path, &cfg, &src, reterr)) != ORCH_OK)
		goto out;
	model_text_beside(model_path, "tokenizer.json", path, sizeof(path));
	if ((rv = tok_load_hf_json_config(path, cfg, &mt->tok, &e)) != ORCH_OK) {
		rv = orch_errf(reterr, rv == ORCH_ENOMEM ? rv : ORCH_EMODEL_LOAD,
		               "--tokenizer hf-json: %s", e.msg);
		goto out;
	}
	if (n_vocab != 0 && tok_n_vocab(mt->tok) > n_vocab) {
		rv = orch_errf(reterr, ORCH_EMODEL_LOAD,
		               "%s has %u tokens, more than the model's %u output rows", path,
		               tok_n_vocab(mt->tok), n_vocab);
		goto out;
	}
	if (src != NULL) {
		mt->origin = CHAT_FROM_TOKENIZER_CONFIG;
		rv = compile(mt, cfg_path, src, strlen(src));
	} else {
		rv = gguf_template(f, mt);
	}
	if (rv == ORCH_ENOMEM)
		rv = orch_errf(reterr, rv, "out of memory");
out:
	cJSON_Delete(cfg);
	return rv;
}

static orch_err
load_gguf(const char *model_path, const struct gguf_file *f, uint32_t n_vocab,
          struct model_text *mt, struct orch_errinfo *reterr)
{
	orch_err rv;

	if ((rv = tok_load_gguf(f, &mt->tok, reterr)) != ORCH_OK)
		return rv;
	if (n_vocab != 0 && tok_n_vocab(mt->tok) != n_vocab)
		return orch_errf(reterr, ORCH_EMODEL_LOAD,
		                 "%s: the vocabulary has %u tokens, the model %u", model_path,
		                 tok_n_vocab(mt->tok), n_vocab);
	if (gguf_template(f, mt) != ORCH_OK)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	return ORCH_OK;
}

orch_err
model_text_load(const char *model_path, const struct gguf_file *f, enum text_source src,
                uint32_t n_vocab, struct model_text *mt, struct orch_errinfo *reterr)
{
	orch_err rv;

	mt->source = src;
	rv = src == TEXT_HF_JSON ? load_hf(model_path, f, n_vocab, mt, reterr)
	                         : load_gguf(model_path, f, n_vocab, mt, reterr);
	if (rv != ORCH_OK)
		model_text_fini(mt);
	else if ((mt->harmony = harmony_vocab_find(mt->tok, &mt->hv)))
		mt->tools = TOOL_SYNTAX_HARMONY, mt->think = false;
	return rv;
}

void
model_text_fini(struct model_text *mt)
{
	tok_free(mt->tok);
	jinja_free(mt->tmpl);
	mt->tok = NULL;
	mt->tmpl = NULL;
}
