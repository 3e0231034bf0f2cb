/*
 * api_openai.c - the OpenAI-compatible API: POST /v1/completions and
 * /v1/chat/completions (stream true: SSE "data:" chunks then "data:
 * [DONE]"; false: one JSON body), GET /v1/models. A parameter orch does
 * not implement is a 400 naming it, never silently ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_params.h"
#include "base/alloc.h"
#include "orchd.h"

static const char *const completion_keys[] = {"model",
                                              "prompt",
                                              "max_tokens",
                                              "temperature",
                                              "top_p",
                                              "stream",
                                              "stream_options",
                                              "stop",
                                              "seed",
                                              "n",
                                              "user",
                                              "echo",
                                              "logprobs",
                                              "presence_penalty",
                                              "frequency_penalty",
                                              "best_of",
                                              "suffix",
                                              "logit_bias",
                                              "top_k",
                                              "min_p",
                                              "repetition_penalty",
                                              NULL};

static const char *const chat_keys[] = {"model",
                                        "messages",
                                        "max_tokens",
                                        "max_completion_tokens",
                                        "temperature",
                                        "top_p",
                                        "stream",
                                        "stream_options",
                                        "stop",
                                        "seed",
                                        "n",
                                        "user",
                                        "logprobs",
                                        "top_logprobs",
                                        "presence_penalty",
                                        "frequency_penalty",
                                        "logit_bias",
                                        "top_k",
                                        "min_p",
                                        "repetition_penalty",
                                        NULL};

/* A parameter accepted only at its neutral value. */
static bool
neutral(struct evhttp_request *req, const cJSON *root, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
	bool ok = v == NULL || cJSON_IsNull(v) || cJSON_IsFalse(v) ||
	          (cJSON_IsNumber(v) && v->valuedouble == 0) ||
	          (cJSON_IsObject(v) && v->child == NULL);

	if (strcmp(name, "n") == 0 || strcmp(name, "best_of") == 0)
		ok = v == NULL || cJSON_IsNull(v) || (cJSON_IsNumber(v) && v->valuedouble == 1);
	if (!ok)
		http_error(req, ORCH_EINVAL, name,
		           "'%s' is not supported by orch (only its default)", name);
	return ok;
}

/* The text of a chat message's content: a string or an array of text parts. */
static char *
content_text(const cJSON *c)
{
	struct sbuf b = {0};
	const cJSON *part;

	if (cJSON_IsString(c))
		return orch_strndup(c->valuestring, strlen(c->valuestring));
	if (!cJSON_IsArray(c))
		return NULL;
	cJSON_ArrayForEach(part, c)
	{
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type"),
		            *text = cJSON_GetObjectItemCaseSensitive(part, "text");
		if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 ||
		    !cJSON_IsString(text)) {
			sbuf_fini(&b);
			return NULL;
		}
		sbuf_puts(&b, text->valuestring);
	}
	if (b.p == NULL)
		sbuf_puts(&b, "");
	return sbuf_err(&b) == ORCH_OK ? sbuf_take(&b, NULL) : NULL;
}

/* messages: an array of {role, content} into @j->messages, normalized. */
static bool
parse_messages(struct evhttp_request *req, const cJSON *root, struct job *j)
{
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages"), *it;

	if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0 ||
	    cJSON_GetArraySize(msgs) > (int)ORCH_MAX_MESSAGES) {
		http_error(req, ORCH_EINVAL, "messages",
		           "'messages' must be an array of 1-%u messages", ORCH_MAX_MESSAGES);
		return false;
	}
	j->messages = cJSON_CreateArray();
	cJSON_ArrayForEach(it, msgs)
	{
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role"),
		            *content = cJSON_GetObjectItemCaseSensitive(it, "content");
		char *text = content ? content_text(content) : NULL;
		if (!cJSON_IsString(role) ||
		    (strcmp(role->valuestring, "system") && strcmp(role->valuestring, "user") &&
		     strcmp(role->valuestring, "assistant") &&
		     strcmp(role->valuestring, "developer"))) {
			orch_free(text);
			http_error(
			        req, ORCH_EINVAL, "messages",
			        "each message needs a role of system, developer, user or assistant");
			return false;
		}
		if (text == NULL) {
			http_error(req, ORCH_EINVAL, "messages",
			           "each message needs a content string or an array of text parts");
			return false;
		}
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", role->valuestring);
		cJSON_AddStringToObject(m, "content", text);
		cJSON_AddItemToArray(j->messages, m);
		orch_free(text);
	}
	return true;
}

static bool
parse_prompt(struct orchd *d, struct evhttp_request *req, const cJSON *root, struct job *j)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");

	if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1)
		p = cJSON_GetArrayItem(p, 0);
	if (!cJSON_IsString(p)) {
		http_error(req, ORCH_EINVAL, "prompt",
		           "'prompt' must be a string (or an array of one string)");
		return false;
	}
	if (p->valuestring[0] == '\0' ||
	    params_utf8_chars(p->valuestring) > d->cfg.max_prompt_chars) {
		http_error(req, ORCH_EINVAL, "prompt", "'prompt' must be 1-%u characters",
		           d->cfg.max_prompt_chars);
		return false;
	}
	j->prompt = orch_strndup(p->valuestring, strlen(p->valuestring));
	return j->prompt != NULL;
}

void
api_openai_completions(struct orchd *d, struct evhttp_request *req, bool chat)
{
	cJSON *root = http_body(d, req);
	const char *model = NULL;
	bool stream = false, usage = false;
	struct job *j = NULL;
	struct model *m;

	if (root == NULL)
		return;
	if (!params_known(req, root, chat ? chat_keys : completion_keys) ||
	    !params_string(req, root, "model", true, &model) ||
	    !params_bool(req, root, "stream", &stream) || !neutral(req, root, "n") ||
	    !neutral(req, root, "presence_penalty") || !neutral(req, root, "frequency_penalty") ||
	    !neutral(req, root, "logprobs") || !neutral(req, root, "logit_bias") ||
	    (!chat && (!neutral(req, root, "echo") || !neutral(req, root, "best_of") ||
	               !neutral(req, root, "suffix"))) ||
	    (chat && !neutral(req, root, "top_logprobs")))
		goto out;
	const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
	if (so != NULL && !cJSON_IsNull(so)) {
		static const char *const so_keys[] = {"include_usage", NULL};
		if (!cJSON_IsObject(so)) {
			http_error(req, ORCH_EINVAL, "stream_options",
			           "'stream_options' must be an object");
			goto out;
		}
		if (!params_known(req, so, so_keys) ||
		    !params_bool(req, so, "include_usage", &usage))
			goto out;
	}
	if ((m = models_find(d, model)) == NULL) {
		http_error(req, ORCH_EMODEL_NOT_FOUND, "model", "model '%s' is not configured",
		           model);
		goto out;
	}
	if (stream && !api_room(d, req))
		goto out;
	if ((j = jobs_new(d, chat ? JOB_OAI_CHAT : JOB_OAI_COMPLETION, m)) == NULL) {
		http_error(req, ORCH_ENOMEM, NULL, "out of memory");
		goto out;
	}
	snprintf(j->ext_id, sizeof(j->ext_id), "%s-%llu", chat ? "chatcmpl" : "cmpl",
	         (unsigned long long)j->id);
	snprintf(j->correlation, sizeof(j->correlation), "%s", j->ext_id);
	j->include_usage = usage;
	if (!params_sampling(d, req, root, "repetition_penalty", "max_tokens",
	                     chat ? "max_completion_tokens" : NULL, chat ? d->cfg.max_tokens : 16,
	                     j) ||
	    !params_stop(req, root, j) ||
	    !(chat ? parse_messages(req, root, j) : parse_prompt(d, req, root, j)))
		goto fail;
	api_submit(d, req, j, stream);
	cJSON_Delete(root);
	return;
fail:
	jobs_free(d, j);
out:
	cJSON_Delete(root);
}

/* ---- responses ---- */

static const char *
finish_reason(int finish)
{
	return finish == ORCH__FINISH_REASON__FINISH_LENGTH ? "length" : "stop";
}

static cJSON *
envelope(const struct job *j, bool chunk)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "id", j->ext_id);
	cJSON_AddStringToObject(o, "object",
	                        j->kind == JOB_OAI_CHAT
	                                ? (chunk ? "chat.completion.chunk" : "chat.completion")
	                                : "text_completion");
	cJSON_AddNumberToObject(o, "created", (double)(j->created_unix / 1000));
	cJSON_AddStringToObject(o, "model", j->model_name);
	return o;
}

static void
add_usage(cJSON *o, const struct job *j)
{
	cJSON *u = cJSON_AddObjectToObject(o, "usage");

	cJSON_AddNumberToObject(u, "prompt_tokens", j->prompt_tokens);
	cJSON_AddNumberToObject(u, "completion_tokens", j->tokens_out);
	cJSON_AddNumberToObject(u, "total_tokens", j->prompt_tokens + j->tokens_out);
}

/* One choice of a chunk: a text delta, a role, or the finish reason. */
static cJSON *
chunk(const struct job *j, const char *text, bool role, const char *finish)
{
	cJSON *o = envelope(j, true), *choices = cJSON_AddArrayToObject(o, "choices");
	cJSON *c = cJSON_CreateObject();

	cJSON_AddNumberToObject(c, "index", 0);
	if (j->kind == JOB_OAI_CHAT) {
		cJSON *delta = cJSON_AddObjectToObject(c, "delta");
		if (role)
			cJSON_AddStringToObject(delta, "role", "assistant");
		if (text)
			cJSON_AddStringToObject(delta, "content", text);
	} else {
		cJSON_AddStringToObject(c, "text", text ? text : "");
	}
	cJSON_AddNullToObject(c, "logprobs");
	if (finish)
		cJSON_AddStringToObject(c, "finish_reason", finish);
	else
		cJSON_AddNullToObject(c, "finish_reason");
	cJSON_AddItemToArray(choices, c);
	return o;
}

static void
put(struct sbuf *out, cJSON *o)
{
	char *text = cJSON_PrintUnformatted(o);

	cJSON_Delete(o);
	sbuf_printf(out, "data: %s\n\n", text ? text : "{}");
	free(text);
}

void
api_openai_format(const struct job *j, uint32_t k, struct sbuf *out)
{
	const struct job_event *ev = &j->events[k];

	switch (ev->type) {
	case EV_STARTED:
		if (j->kind == JOB_OAI_CHAT)
			put(out, chunk(j, "", true, NULL));
		return;
	case EV_TOKEN:
		if (ev->text && ev->text[0])
			put(out, chunk(j, ev->text, false, NULL));
		return;
	case EV_END:
		put(out, chunk(j, NULL, false, finish_reason(ev->finish)));
		if (j->include_usage) {
			cJSON *o = envelope(j, true);
			cJSON_AddArrayToObject(o, "choices");
			add_usage(o, j);
			put(out, o);
		}
		return;
	case EV_ERROR: {
		cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "code", orch_err_wire(ev->code));
		cJSON_AddStringToObject(e, "message", ev->text ? ev->text : "");
		cJSON_AddStringToObject(e, "type",
		                        orch_err_http(ev->code) < 500 ? "invalid_request_error"
		                                                      : "server_error");
		cJSON_AddBoolToObject(e, "retriable", orch_err_retriable(ev->code));
		put(out, o);
		return;
	}
	}
}

cJSON *
api_openai_body(const struct job *j)
{
	const struct job_event *last = &j->events[j->n_events - 1];
	cJSON *o = envelope(j, false), *choices = cJSON_AddArrayToObject(o, "choices");
	cJSON *c = cJSON_CreateObject();
	const char *text = j->text.p ? j->text.p : "";

	cJSON_AddNumberToObject(c, "index", 0);
	if (j->kind == JOB_OAI_CHAT) {
		cJSON *msg = cJSON_AddObjectToObject(c, "message");
		cJSON_AddStringToObject(msg, "role", "assistant");
		cJSON_AddStringToObject(msg, "content", text);
	} else {
		cJSON_AddStringToObject(c, "text", text);
	}
	cJSON_AddNullToObject(c, "logprobs");
	cJSON_AddStringToObject(c, "finish_reason", finish_reason(last->finish));
	cJSON_AddItemToArray(choices, c);
	add_usage(o, j);
	return o;
}

void
api_openai_models(struct orchd *d, struct evhttp_request *req)
{
	cJSON *o = cJSON_CreateObject(), *data;

	cJSON_AddStringToObject(o, "object", "list");
	data = cJSON_AddArrayToObject(o, "data");
	for (struct model *m = d->models; m; m = m->next) {
		cJSON *it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "id", m->cfg.name);
		cJSON_AddStringToObject(it, "object", "model");
		cJSON_AddNumberToObject(it, "created", (double)(d->started_unix / 1000));
		cJSON_AddStringToObject(it, "owned_by", "orch");
		cJSON_AddStringToObject(it, "state", models_state_name(m->state));
		if (m->chat_template[0])
			cJSON_AddStringToObject(it, "chat_template", m->chat_template);
		if (m->state == MODEL_FAILED) {
			cJSON_AddStringToObject(it, "error", m->error);
			cJSON_AddNumberToObject(it, "last_exit_status", m->last_exit);
		}
		cJSON_AddItemToArray(data, it);
	}
	http_json(req, 200, o);
}
