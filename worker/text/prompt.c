/*
 * prompt.c - prompts as token ids (prompt.h), for `orch-worker run` and
 * the serving worker alike.
 */
#include "prompt.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/sbuf.h"
#include "text/jinja/jinja.h"

/* The special token @id's text as a new C string ("" when there is none). */
static char *
token_string(const struct tok *t, int32_t id)
{
	size_t n;
	const char *s = id >= 0 ? tok_text(t, id, &n) : NULL;

	return s ? strndup(s, n) : strdup("");
}

/*
 * Add the members of JSON object @json (NULL or "": none) to @obj, past
 * those it has. ORCH_EINVAL (naming @what) when it is not an object.
 */
static orch_err
merge(cJSON *obj, const char *json, const char *what, struct orch_errinfo *reterr)
{
	if (json == NULL || json[0] == '\0')
		return ORCH_OK;
	cJSON *src = cJSON_Parse(json);
	if (!cJSON_IsObject(src)) {
		cJSON_Delete(src);
		return orch_errf(reterr, ORCH_EINVAL, "%s: not a JSON object", what);
	}
	while (src->child != NULL) {
		cJSON *it = cJSON_DetachItemViaPointer(src, src->child);
		if (cJSON_GetObjectItemCaseSensitive(obj, it->string) != NULL)
			cJSON_Delete(it); /* role, content, messages: as given */
		else
			cJSON_AddItemToObject(obj, it->string, it);
	}
	cJSON_Delete(src);
	return ORCH_OK;
}

/*
 * gpt-oss's template writes each tool as "// " + description, which jinja2
 * (and so this engine) refuses when the description is undefined; OpenAI
 * makes it optional and clients leave it out (LangChain's
 * withStructuredOutput) or send null. On a harmony model such a function gets "":
 * an empty comment line, as for a tool described by nothing.
 */
static orch_err
harmony_tools(cJSON *vars)
{
	const cJSON *t;

	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(vars, "tools"))
	{
		cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "function"), *d;
		if (!cJSON_IsObject(f))
			continue;
		d = cJSON_GetObjectItemCaseSensitive(f, "description");
		if (d != NULL && !cJSON_IsNull(d))
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(f, "description"); /* a null one too */
		if (cJSON_AddStringToObject(f, "description", "") == NULL)
			return ORCH_ENOMEM;
	}
	return ORCH_OK;
}

/* @chat rendered by the model's template into *@ret (*@ret_n bytes). */
static orch_err
render(const struct model_text *mt, const struct prompt_chat *chat, char **ret, size_t *ret_n,
       struct orch_errinfo *reterr)
{
	const struct tok *t = mt->tok;
	struct sbuf out = {0};
	orch_err rv = ORCH_ENOMEM;
	cJSON *vars = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(vars, "messages");
	char *bos = token_string(t, tok_bos(t)), *eos = token_string(t, tok_eos(t));

	*ret = NULL;
	if (mt->tmpl == NULL) {
		rv = orch_errf(reterr, ORCH_ETEMPLATE, "%s", mt->tmpl_err.msg);
		goto out;
	}
	if (vars == NULL || arr == NULL || bos == NULL || eos == NULL)
		goto out;
	for (size_t i = 0; i < chat->n_msgs; i++) {
		const struct prompt_msg *pm = &chat->msgs[i];
		cJSON *m = cJSON_CreateObject();
		if (m == NULL || !cJSON_AddItemToArray(arr, m) ||
		    cJSON_AddStringToObject(m, "role", pm->role) == NULL ||
		    cJSON_AddStringToObject(m, "content", pm->content ? pm->content : "") == NULL)
			goto out;
		if ((rv = merge(m, pm->extra_json, "a message's fields", reterr)) != ORCH_OK)
			goto out;
		rv = ORCH_ENOMEM;
	}
	if (cJSON_AddStringToObject(vars, "bos_token", bos) == NULL ||
	    cJSON_AddStringToObject(vars, "eos_token", eos) == NULL)
		goto out;
	if ((rv = merge(vars, chat->vars_json, "the template variables", reterr)) != ORCH_OK)
		goto out;
	rv = ORCH_ENOMEM;
	if (mt->harmony && harmony_tools(vars) != ORCH_OK)
		goto out;
	/* true unless the variables say otherwise (only /tokenize may: orchd reserves it) */
	if (cJSON_GetObjectItemCaseSensitive(vars, "add_generation_prompt") == NULL &&
	    cJSON_AddBoolToObject(vars, "add_generation_prompt", true) == NULL)
		goto out;
	if ((rv = jinja_render(mt->tmpl, vars, NULL, &out, reterr)) != ORCH_OK)
		goto out;
	if ((*ret = sbuf_take(&out, ret_n)) == NULL)
		rv = orch_errf(reterr, ORCH_ENOMEM, "out of memory");
out:
	if (rv == ORCH_ENOMEM && *ret == NULL)
		orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	sbuf_fini(&out);
	cJSON_Delete(vars);
	free(bos);
	free(eos);
	return rv;
}

orch_err
prompt_encode(const struct model_text *mt, const char *text, size_t n, bool literal,
              const struct prompt_chat *chat, struct tok_ids *ids, struct orch_errinfo *reterr)
{
	const struct tok *t = mt->tok;
	unsigned flags = TOK_ADD_SPECIAL | (literal && chat == NULL ? 0 : TOK_PARSE_SPECIAL);
	char *rendered = NULL;
	orch_err rv;

	if (chat != NULL) {
		size_t bl;
		const char *bos = tok_bos(t) >= 0 ? tok_text(t, tok_bos(t), &bl) : NULL;
		if ((rv = render(mt, chat, &rendered, &n, reterr)) != ORCH_OK)
			return rv;
		if (bos != NULL && n >= bl && memcmp(rendered, bos, bl) == 0)
			flags = TOK_PARSE_SPECIAL; /* the template wrote BOS itself */
		text = rendered;
	}
	rv = tok_encode(t, text, n, flags, ids);
	if (rv != ORCH_OK)
		orch_errf(reterr, rv, "tokenizing the prompt: %s", orch_err_name(rv));
	/* an empty prompt (OpenAI's and vLLM's are taken): from BOS, or without one from
	 * the end-of-text token, as OpenAI's models start from <|endoftext|> */
	int32_t start = tok_bos(t) >= 0 ? tok_bos(t) : tok_eos(t);
	if (rv == ORCH_OK && ids->n == 0 && start >= 0)
		rv = tok_ids_push(ids, start);
	orch_free(rendered);
	return rv;
}
