/*
 * api_tokenize.c - POST /tokenize and /detokenize (docs/http-api.md): the
 * body parsed (llama.cpp server's field names and vLLM's both taken:
 * docs/DECISIONS.md), the request handed to tokenize.h until a worker of
 * its model answers, then that answer in the shape both servers give.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "base/alloc.h"
#include "base/utf8.h"
#include "jobs.h"
#include "json_add.h"
#include "keys.h"
#include "loop.h"
#include "models.h"
#include "orchd.h"
#include "params.h"
#include "reply.h"
#include "request.h"
#include "tokenize.h"
#include "workers.h"

/* One request: the core's, then the client's side. */
struct api_tok {
	struct tok_req t; /* first: the core's request is ours */
	struct api_req *req;
	struct event *ev_timeout;
	struct job_request chat; /* /tokenize of messages: their array and template variables */
	char *text, *vars;       /* the text to tokenize; the variables sent */
	int32_t *tokens;         /* the tokens to detokenize */
	Orch__TokenizePart *parts, **part_v; /* a mixed content's parts (their texts: ours) */
	size_t n_parts;
	const char *param; /* a mixed content's field ("content", "prompt"): the worker's 400 names
	                      it */
	bool pieces;       /* llama.cpp's with_pieces: tokens as [{id, piece}] */
	bool counted;      /* in orchd's n_conns */
	char *model;       /* the body's "model"; NULL: none given */
	bool refused;      /* the body was refused: @pe says why */
	struct params_err pe;
};

static void
tok_free(struct api_tok *a)
{
	if (a->counted)
		a->t.d->n_conns--;
	loop_free(a->ev_timeout);
	job_request_fini(&a->chat);
	orch_free(a->text);
	free(a->vars); /* cJSON's printing: malloc */
	orch_free(a->tokens);
	for (size_t i = 0; i < a->n_parts; i++) /* a part's text is ours unless init's "" */
		if (a->parts[i].text != protobuf_c_empty_string)
			orch_free(a->parts[i].text);
	orch_free(a->parts);
	orch_free(a->part_v);
	orch_free(a->model);
	orch_free(a);
}

/* ---- the answer ---- */

/* llama.cpp's piece: the bytes as a string when they are valid UTF-8, else as numbers. */
static cJSON *
piece_json(const ProtobufCBinaryData *p)
{
	if (utf8_valid(p->data, p->len) && memchr(p->data, 0, p->len) == NULL)
		return json_text(p->data, p->len);
	return json_bytes(p->data, p->len);
}

static cJSON *
tokens_json(const struct api_tok *t, const Orch__TokenizeResult *r)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a != NULL && i < r->n_tokens; i++) {
		cJSON *v = cJSON_CreateNumber(r->tokens[i]);
		if (t->pieces && r->n_pieces == r->n_tokens) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddItemToObject(o, "id", v);
			cJSON_AddItemToObject(o, "piece", piece_json(&r->pieces[i]));
			v = o;
		}
		cJSON_AddItemToArray(a, v);
	}
	return a;
}

static cJSON *
answer_json(const struct api_tok *t, const struct worker *w, const Orch__TokenizeResult *r)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "model", t->t.m->cfg.name);
	if (t->t.msg.detokenize) {
		cJSON_AddItemToObject(o, "content", json_text(r->text.data, r->text.len));
		cJSON_AddItemToObject(o, "prompt", json_text(r->text.data, r->text.len));
		return o;
	}
	cJSON_AddItemToObject(o, "tokens", tokens_json(t, r));
	cJSON_AddNumberToObject(o, "count", (double)r->n_tokens);
	cJSON_AddNumberToObject(o, "max_model_len", w->ident.context_length);
	if (t->t.msg.with_strings && r->n_strings == r->n_tokens) {
		cJSON *a = cJSON_AddArrayToObject(o, "token_strs");
		for (size_t i = 0; i < r->n_strings; i++)
			cJSON_AddItemToArray(a, json_text((const uint8_t *)r->strings[i],
			                                  strlen(r->strings[i])));
	}
	return o;
}

static void
on_answer(struct tok_req *t, const struct worker *w, const Orch__TokenizeResult *r, orch_err code,
          const char *msg)
{
	struct api_tok *a = (struct api_tok *)t;

	if (code == ORCH_OK) /* the close watch goes with the answer */
		reply_json(a->req, 200, answer_json(a, w, r));
	else
		reply_error(a->req, code,
		            code != ORCH_EINVAL ? NULL
		            : t->msg.detokenize ? "tokens"
		                                : a->param,
		            "%s", msg);
	tok_free(a);
}

static void
on_timeout(int fd, short what, void *arg)
{
	struct api_tok *a = arg;
	char msg[160];

	(void)fd;
	(void)what;
	snprintf(msg, sizeof(msg), "no answer from model '%s' within %u s (request_timeout_s)",
	         a->t.m->cfg.name, a->t.d->cfg.request_timeout_s);
	tokenize_remove(a->t.d, &a->t);
	on_answer(&a->t, NULL, NULL, ORCH_ETIMEOUT, msg);
}

static void
on_gone(struct api_req *req, void *arg, const char *why)
{
	struct api_tok *a = arg;

	(void)why;
	reply_release(req);
	tokenize_remove(a->t.d, &a->t);
	tok_free(a);
}

/*
 * The model @name names (NULL: the one model the caller may use), answered
 * 404 or 400 when there is none.
 */
static struct model_entry *
find_model(struct orchd *d, struct api_req *req, const char *name)
{
	struct model_entry *m;

	if (name == NULL)
		return api_only_model(d, req);
	if ((m = models_find(d, name)) != NULL && keys_model_ok(api_caller(d, req), name))
		return m;
	api_no_model(d, req, name);
	return NULL;
}

/* ---- parsing ---- */

static const char *const tokenize_keys[] = {"model",
                                            "content",
                                            "prompt",
                                            "messages",
                                            "add_special",
                                            "add_special_tokens",
                                            "parse_special",
                                            "with_pieces",
                                            "return_token_strs",
                                            "add_generation_prompt",
                                            "tools",
                                            "tool_choice",
                                            "parallel_tool_calls",
                                            "reasoning_effort",
                                            "chat_template_kwargs",
                                            NULL};

/* the keys of a chat's only */
static const char *const chat_keys[] = {
        "add_generation_prompt", "tools", "tool_choice", "parallel_tool_calls", "reasoning_effort",
        "chat_template_kwargs",  NULL};

static const char *const detokenize_keys[] = {"model", "tokens", NULL};

/* @name is in @root and not null. */
static bool
given(const cJSON *root, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	return v != NULL && !cJSON_IsNull(v);
}

/* A boolean by llama.cpp's name @a or vLLM's @b (both given: they must agree). */
static bool
either_bool(const cJSON *root, const char *a, const char *b, bool *out, struct params_err *pe)
{
	bool va = *out, vb = *out;

	if (!params_bool(root, a, &va, pe) || !params_bool(root, b, &vb, pe))
		return false;
	if (given(root, a) && given(root, b) && va != vb)
		return params_fail(pe, ORCH_EINVAL, b,
		                   "'%s' and '%s' are one setting; they disagree", a, b);
	*out = given(root, a) ? va : vb;
	return true;
}

/* A chat: its messages, tools and template variables, as a chat request's. */
static bool
parse_chat(const struct orchd_config *cfg, const cJSON *root, struct api_tok *t,
           struct params_err *pe)
{
	bool gen = true, add = false, parse = true;
	cJSON *vars;

	/* a chat's special tokens are its template's: what a chat request does is what is taken */
	if (!either_bool(root, "add_special", "add_special_tokens", &add, pe) ||
	    !params_bool(root, "parse_special", &parse, pe))
		return false;
	if (add || !parse)
		return params_fail(pe, ORCH_EINVAL,
		                   !add                                ? "parse_special"
		                   : given(root, "add_special_tokens") ? "add_special_tokens"
		                                                       : "add_special",
		                   "a chat's special tokens are its template's, as in a chat "
		                   "request: 'add_special' true and 'parse_special' false apply "
		                   "to a text");
	if (!params_bool(root, "add_generation_prompt", &gen, pe) ||
	    !request_chat_parse(cfg, root, &t->chat, pe))
		return false;
	if (gen) {
		t->vars = t->chat.template_vars; /* taken over */
		t->chat.template_vars = NULL;
	} else {
		vars = t->chat.template_vars ? cJSON_Parse(t->chat.template_vars)
		                             : cJSON_CreateObject();
		if (vars == NULL || cJSON_AddFalseToObject(vars, "add_generation_prompt") == NULL ||
		    (t->vars = cJSON_PrintUnformatted(vars)) == NULL) {
			cJSON_Delete(vars);
			return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
		}
		cJSON_Delete(vars);
	}
	if (t->vars != NULL)
		t->t.msg.template_vars_json = t->vars;
	return true;
}

/*
 * llama.cpp's mixed content @a ("content" or "prompt", @name): strings and
 * token ids in order, into @t's parts. At most max_prompt_chars parts, and
 * as many characters in its strings.
 */
static bool
parse_parts(const struct orchd_config *cfg, const cJSON *a, const char *name, struct api_tok *t,
            struct params_err *pe)
{
	size_t n = (size_t)cJSON_GetArraySize(a), chars = 0, k = 0;
	const cJSON *it;

	if (n == 0 || n > cfg->max_prompt_chars)
		return params_fail(pe, ORCH_EINVAL, name,
		                   "an array '%s' must hold 1-%u strings and token ids", name,
		                   cfg->max_prompt_chars);
	if ((t->parts = orch_calloc(n, sizeof(*t->parts))) == NULL ||
	    (t->part_v = orch_calloc(n, sizeof(*t->part_v))) == NULL)
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	cJSON_ArrayForEach(it, a)
	{
		Orch__TokenizePart *p = &t->parts[k];
		double v = it->valuedouble;
		orch__tokenize_part__init(p);
		t->part_v[k++] = p;
		t->n_parts = k;
		if (cJSON_IsString(it)) {
			chars += params_utf8_chars(it->valuestring);
			if ((p->text = orch_strndup(it->valuestring, strlen(it->valuestring))) ==
			    NULL)
				return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
		} else if (cJSON_IsNumber(it) && v >= 0 && v < 2147483648.0 &&
		           v == (double)(int64_t)v) {
			p->is_token = true;
			p->token = (int32_t)v;
		} else {
			return params_fail(
			        pe, ORCH_EINVAL, name,
			        "'%s'[%zu] must be a string or a token id (an integer >= 0)", name,
			        k - 1);
		}
	}
	if (chars > cfg->max_prompt_chars)
		return params_fail(pe, ORCH_EINVAL, name,
		                   "the text must be at most %u characters (max_prompt_chars)",
		                   cfg->max_prompt_chars);
	t->t.msg.parts = t->part_v;
	t->t.msg.n_parts = t->n_parts;
	t->param = name;
	return true;
}

/*
 * The text to tokenize: "content" or "prompt", a string or (llama.cpp's
 * mixed content) an array of strings and token ids.
 */
static bool
parse_text(const struct orchd_config *cfg, const cJSON *root, struct api_tok *t,
           struct params_err *pe)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "content");
	const char *name = c != NULL && !cJSON_IsNull(c) ? "content" : "prompt";
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

	if (cJSON_IsArray(v))
		return parse_parts(cfg, v, name, t, pe);
	if (!cJSON_IsString(v))
		return params_fail(pe, ORCH_EINVAL, name,
		                   "'%s' must be a string, or an array of strings and token ids",
		                   name);
	if (params_utf8_chars(v->valuestring) > cfg->max_prompt_chars)
		return params_fail(pe, ORCH_EINVAL, name,
		                   "the text must be at most %u characters (max_prompt_chars)",
		                   cfg->max_prompt_chars);
	if ((t->text = orch_strndup(v->valuestring, strlen(v->valuestring))) == NULL)
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	t->t.msg.text = t->text;
	return true;
}

/* /tokenize's body: a text (content or prompt) or a chat (messages), and what to answer. */
static bool
parse_tokenize(const struct orchd_config *cfg, const cJSON *root, struct api_tok *t,
               struct params_err *pe)
{
	bool add = true, parse = true, strs = false,
	     text = given(root, "content") || given(root, "prompt");

	if (!params_bool(root, "with_pieces", &t->pieces, pe) ||
	    !params_bool(root, "return_token_strs", &strs, pe))
		return false;
	t->t.msg.with_pieces = t->pieces;
	t->t.msg.with_strings = strs;
	if (given(root, "content") && given(root, "prompt"))
		return params_fail(pe, ORCH_EINVAL, "prompt",
		                   "'content' and 'prompt' are one field; give one of them");
	if (given(root, "messages") && text)
		return params_fail(pe, ORCH_EINVAL, "messages",
		                   "give a text ('content' or 'prompt') or 'messages', not both");
	if (given(root, "messages"))
		return parse_chat(cfg, root, t, pe);
	if (!text)
		return params_fail(pe, ORCH_EINVAL, "content",
		                   "'content' (or 'prompt', or 'messages') is required");
	for (const char *const *k = chat_keys; *k; k++)
		if (given(root, *k))
			return params_fail(pe, ORCH_EINVAL, *k, "'%s' applies to 'messages' only",
			                   *k);
	if (!either_bool(root, "add_special", "add_special_tokens", &add, pe) ||
	    !params_bool(root, "parse_special", &parse, pe) || !parse_text(cfg, root, t, pe))
		return false;
	t->t.msg.add_special = add;
	t->t.msg.parse_special = parse;
	return true;
}

/* /detokenize's body: tokens, each an integer in [0, 2^31). */
static bool
parse_detokenize(const struct orchd_config *cfg, const cJSON *root, struct api_tok *t,
                 struct params_err *pe)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "tokens"), *it;
	size_t k = 0;

	if (!cJSON_IsArray(a))
		return params_fail(pe, ORCH_EINVAL, "tokens",
		                   "'tokens' must be an array of token ids");
	int n = cJSON_GetArraySize(a);
	if ((uint32_t)n > cfg->max_prompt_chars)
		return params_fail(pe, ORCH_EINVAL, "tokens",
		                   "'tokens' may hold at most %u ids (max_prompt_chars)",
		                   cfg->max_prompt_chars);
	if ((t->tokens = orch_calloc(n ? (size_t)n : 1, sizeof(*t->tokens))) == NULL)
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	cJSON_ArrayForEach(it, a)
	{
		double v = it->valuedouble;
		if (!cJSON_IsNumber(it) || v < 0 || v >= 2147483648.0 || v != (double)(int32_t)v)
			return params_fail(pe, ORCH_EINVAL, "tokens",
			                   "tokens[%zu] must be a token id (an integer from 0)", k);
		t->tokens[k++] = (int32_t)v;
	}
	t->t.msg.tokens = t->tokens;
	t->t.msg.n_tokens = k;
	return true;
}

/* The body (any thread): into @a, or the refusal into @a->pe. */
static void
tok_parse(const struct orchd_config *cfg, const char *body, size_t n, void *arg)
{
	struct api_tok *a = arg;
	const char *model = NULL;
	bool detok = a->t.msg.detokenize;
	cJSON *root = NULL;

	if (params_body(body, n, &root, &a->pe) != ORCH_OK ||
	    !params_known(root, detok ? detokenize_keys : tokenize_keys, &a->pe) ||
	    !params_string(root, "model", false, &model, &a->pe) ||
	    !(detok ? parse_detokenize(cfg, root, a, &a->pe)
	            : parse_tokenize(cfg, root, a, &a->pe)))
		a->refused = true;
	else if (model != NULL && (a->model = orch_strndup(model, strlen(model))) == NULL)
		a->refused = !params_fail(&a->pe, ORCH_ENOMEM, NULL, "out of memory");
	cJSON_Delete(root);
}

static void
tok_drop(void *arg)
{
	tok_free(arg);
}

/* The body parsed: sent to the model's worker, or the refusal answered. */
static void
tok_cont(struct orchd *d, struct api_req *req, void *arg)
{
	struct api_tok *a = arg;

	if (a->refused)
		reply_params_error(req, &a->pe);
	else
		a->t.m = find_model(d, req, a->model); /* answered when NULL */
	if (a->t.m == NULL || !api_room(d, req))
		return tok_free(a);
	if ((a->ev_timeout = loop_timer(d->base, on_timeout, a)) == NULL) {
		reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
		return tok_free(a);
	}
	loop_after(a->ev_timeout, (uint64_t)d->cfg.request_timeout_s * 1000u);
	a->counted = true;
	d->n_conns++;
	a->t.messages = a->chat.messages;
	reply_hold(req, on_gone, a, true);
	tokenize_add(d, &a->t); /* may answer at once */
}

static void
handle(struct orchd *d, struct api_req *req, bool detok)
{
	struct api_tok *a = orch_calloc(1, sizeof(*a));

	if (a == NULL)
		return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	a->t.d = d;
	a->req = req;
	orch__tokenize__init(&a->t.msg);
	a->t.msg.detokenize = detok;
	a->t.answer = on_answer;
	api_parse_then(d, req, tok_parse, tok_cont, tok_drop, a);
}

void
api_tokenize(struct orchd *d, struct api_req *req, const char *arg)
{
	(void)arg;
	handle(d, req, false);
}

void
api_detokenize(struct orchd *d, struct api_req *req, const char *arg)
{
	(void)arg;
	handle(d, req, true);
}
