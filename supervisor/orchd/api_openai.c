/*
 * api_openai.c - the OpenAI-compatible API: POST /v1/completions and
 * /v1/chat/completions (stream true: SSE "data:" chunks then "data:
 * [DONE]"; false: one JSON body), GET /v1/models. The bodies are checked
 * by request.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "http.h"
#include "jobs.h"
#include "keys.h"
#include "models.h"
#include "orchd.h"
#include "request.h"

/* ---- responses ---- */

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

static void
openai_format(const struct job *j, uint32_t k, struct sbuf *out)
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
		put(out, chunk(j, NULL, false, orch_finish_openai(ev->finish)));
		if (j->req.include_usage) {
			cJSON *o = envelope(j, true);
			cJSON_AddArrayToObject(o, "choices");
			add_usage(o, j);
			put(out, o);
		}
		return;
	case EV_METRICS: /* a native API option */
		return;
	case EV_ERROR: {
		cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "code", orch_err_wire(ev->code));
		cJSON_AddStringToObject(e, "message", ev->text ? ev->text : "");
		cJSON_AddStringToObject(e, "type",
		                        orch_err_http(ev->code) < 500 ? "invalid_request_error"
		                                                      : "server_error");
		cJSON_AddBoolToObject(e, "retriable", orch_err_retriable(ev->code));
		cJSON_AddStringToObject(e, "correlation_id", j->correlation);
		put(out, o);
		return;
	}
	}
}

static cJSON *
openai_body(const struct job *j)
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
	cJSON_AddStringToObject(c, "finish_reason", orch_finish_openai(last->finish));
	cJSON_AddItemToArray(choices, c);
	add_usage(o, j);
	return o;
}

static void
openai_done(const struct job *j, struct sbuf *out)
{
	(void)j;
	sbuf_puts(out, "data: [DONE]\n\n");
}

const struct job_sink api_openai_sink = {openai_format, openai_body, openai_done};

void
api_openai_completions(struct orchd *d, struct evhttp_request *req, const char *arg)
{
	(void)arg;
	api_start(d, req, REQUEST_COMPLETION);
}

void
api_openai_chat(struct orchd *d, struct evhttp_request *req, const char *arg)
{
	(void)arg;
	api_start(d, req, REQUEST_CHAT);
}

void
api_openai_models(struct orchd *d, struct evhttp_request *req, const char *arg)
{
	cJSON *o = cJSON_CreateObject(), *data;
	const struct api_key *key = api_caller(d, req);

	(void)arg;
	cJSON_AddStringToObject(o, "object", "list");
	data = cJSON_AddArrayToObject(o, "data");
	for (struct model_entry *m = d->models; m; m = m->next) {
		if (!keys_model_ok(key, m->cfg.name))
			continue; /* the models this key may use */
		cJSON *it = cJSON_CreateObject();
		cJSON_AddStringToObject(it, "id", m->cfg.name);
		cJSON_AddStringToObject(it, "object", "model");
		cJSON_AddNumberToObject(it, "created", (double)(d->started_unix / 1000));
		cJSON_AddStringToObject(it, "owned_by", "orch");
		cJSON_AddStringToObject(it, "state", models_state_name(m->state));
		if (m->chat_template_origin[0])
			cJSON_AddStringToObject(it, "chat_template", m->chat_template_origin);
		if (m->state ==
		    MODEL_FAILED) { /* why (paths, worker output): the admin API, the log */
			char buf[512];
			orch_err code = m->error_code ? m->error_code : ORCH_EMODEL_LOAD;
			cJSON_AddStringToObject(
			        it, "error", jobs_client_message(code, m->error, buf, sizeof(buf)));
			cJSON_AddNumberToObject(it, "last_exit_status", m->last_exit);
		}
		cJSON_AddItemToArray(data, it);
	}
	http_json(req, 200, o);
}
