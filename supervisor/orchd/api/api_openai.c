/*
 * api_openai.c - the OpenAI-compatible API: POST /v1/completions and
 * /v1/chat/completions (stream true: SSE "data:" chunks then "data:
 * [DONE]"; false: one JSON body), GET /v1/models and /v1/models/ID. The
 * bodies are checked by request.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "api_logprobs.h"
#include "jobs.h"
#include "json_add.h"
#include "keys.h"
#include "models.h"
#include "orchd.h"
#include "params.h"
#include "reply.h"
#include "request.h"
#include "workers.h"

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

void
api_openai_usage(cJSON *o, uint32_t prompt, uint32_t completion, uint32_t cached)
{
	cJSON *u = cJSON_AddObjectToObject(o, "usage");

	cJSON_AddNumberToObject(u, "prompt_tokens", prompt);
	cJSON_AddNumberToObject(u, "completion_tokens", completion);
	cJSON_AddNumberToObject(u, "total_tokens", (double)prompt + completion);
	cJSON *details = cJSON_AddObjectToObject(u, "prompt_tokens_details");
	cJSON_AddNumberToObject(details, "cached_tokens", cached);
}

static void
add_usage(cJSON *o, const struct job *j)
{
	api_openai_usage(o, j->prompt_tokens, j->tokens_out, j->cached_tokens);
}

/*
 * Where a chat's text goes: a harmony message's channel decides (gpt-oss):
 * analysis is reasoning_content, a message to a tool is that call's
 * arguments, anything else (final, a commentary preamble, another model's
 * text) is content.
 */
enum dest { D_CONTENT, D_REASONING, D_TOOL };

static enum dest
dest_of(const struct job *j, const struct job_event *ev, const struct job_msg **ret)
{
	const struct job_msg *m = ev->msg ? &j->msgs[ev->msg - 1] : NULL;

	*ret = m;
	if (j->kind != JOB_OAI_CHAT || m == NULL)
		return D_CONTENT;
	if (m->tool >= 0)
		return D_TOOL;
	return strcmp(m->channel, "analysis") == 0 ? D_REASONING : D_CONTENT;
}

/* A tool call's id: the job's uid and the call's place, so a resent body says the same. */
static void
call_id(const struct job *j, const struct job_msg *m, char *buf, size_t n)
{
	snprintf(buf, n, "call_%.24s%d", j->uid, m->tool);
}

/* A tool's name: the recipient less harmony's "functions." namespace. */
static const char *
tool_name(const struct job_msg *m)
{
	return strncmp(m->recipient, "functions.", 10) == 0 ? m->recipient + 10 : m->recipient;
}

/* A tool call as OpenAI writes one: {id, type, function: {name, arguments}}. */
static cJSON *
tool_call(const struct job *j, const struct job_msg *m, const char *args, bool head)
{
	cJSON *c = cJSON_CreateObject(), *f;
	char id[64];

	if (head) {
		call_id(j, m, id, sizeof(id));
		cJSON_AddStringToObject(c, "id", id);
		cJSON_AddStringToObject(c, "type", "function");
	}
	f = cJSON_AddObjectToObject(c, "function");
	if (head)
		cJSON_AddStringToObject(f, "name", tool_name(m));
	cJSON_AddStringToObject(f, "arguments", args);
	return c;
}

/*
 * One choice of a chunk: a text delta for @d (a tool call's arguments: the
 * first chunk of a call also names it), a role, or the finish reason; with
 * the logprobs of events [@lp_from, @lp_to) (none: equal).
 */
static cJSON *
chunk(const struct job *j, const char *text, enum dest d, const struct job_msg *m, bool head,
      bool role, const char *finish, uint32_t lp_from, uint32_t lp_to)
{
	cJSON *o = envelope(j, true), *choices = cJSON_AddArrayToObject(o, "choices");
	cJSON *c = cJSON_CreateObject();

	cJSON_AddNumberToObject(c, "index", j->choice);
	if (j->kind == JOB_OAI_CHAT) {
		cJSON *delta = cJSON_AddObjectToObject(c, "delta");
		if (role)
			cJSON_AddStringToObject(delta, "role", "assistant");
		if (text && d == D_TOOL) {
			cJSON *calls = cJSON_AddArrayToObject(delta, "tool_calls");
			cJSON *tc = tool_call(j, m, text, head);
			cJSON_AddNumberToObject(tc, "index", m->tool);
			cJSON_AddItemToArray(calls, tc);
		} else if (text) {
			cJSON_AddStringToObject(
			        delta, d == D_REASONING ? "reasoning_content" : "content", text);
		}
	} else {
		cJSON_AddStringToObject(c, "text", text ? text : "");
	}
	if (lp_from < lp_to)
		cJSON_AddItemToObject(c, "logprobs", api_lp_openai(j, lp_from, lp_to));
	else
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

/* Whether @j's echo waits for the worker (EV_PROMPT): with logprobs, or of token ids. */
static bool
echo_from_worker(const struct job *j)
{
	return j->req.echo && (j->req.logprobs || j->req.prompt_ids != NULL);
}

static void
openai_format(const struct job *j, uint32_t k, struct sbuf *out)
{
	const struct job_event *ev = &j->events[k];

	switch (ev->type) {
	case EV_STARTED: /* the role; a text prompt's echo without logprobs (known already) */
		if (j->kind == JOB_OAI_CHAT || (j->echo != NULL && !echo_from_worker(j)))
			put(out, chunk(j, j->echo ? j->echo : "", D_CONTENT, NULL, false,
			               j->kind == JOB_OAI_CHAT, NULL, 0, 0));
		return;
	case EV_PROMPT: /* echo: the prompt the worker sent back, with logprobs its tokens' */
		if (echo_from_worker(j))
			put(out, chunk(j, j->echo ? j->echo : "", D_CONTENT, NULL, false, false,
			               NULL, k, k + 1));
		return;
	case EV_TOKEN:
		if (ev->text && ev->text[0]) {
			const struct job_msg *m;
			enum dest d = dest_of(j, ev, &m);
			put(out, chunk(j, ev->text, d, m, d == D_TOOL && m->first_event == k, false,
			               NULL, k, k + 1));
		} else if (ev->lp && j->req.logprobs) { /* a token whose text is held back */
			put(out, chunk(j, NULL, D_CONTENT, NULL, false, false, NULL, k, k + 1));
		}
		return;
	case EV_END:
		put(out, chunk(j, NULL, D_CONTENT, NULL, false, false,
		               orch_finish_openai(ev->finish), 0, 0));
		if (j->req.include_usage && !j->grouped) /* a group's comes after its last */
			api_openai_usage_chunk(j, j->prompt_tokens, j->tokens_out, j->cached_tokens,
			                       out);
		return;
	case EV_METRICS: /* a native API option */
		return;
	case EV_ERROR: { /* the body an error answer has (params_err_json), in a chunk */
		cJSON *o = params_err_json(ev->code, jobs_error_param(j, ev->code, ev->text),
		                           ev->text ? ev->text : "");
		cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(o, "error"),
		                        "correlation_id", j->correlation);
		put(out, o);
		return;
	}
	}
}

/*
 * A chat's message from its events: content, reasoning_content (when there
 * is some) and tool_calls (when there are some; content is then null when
 * empty, as OpenAI's is).
 */
static cJSON *
chat_message(const struct job *j)
{
	cJSON *msg = cJSON_CreateObject(), *calls = NULL;
	struct sbuf text[2] = {{0}, {0}}, args = {0};

	cJSON_AddStringToObject(msg, "role", "assistant");
	if (j->n_tools > 0)
		calls = cJSON_CreateArray();
	for (int32_t tool = -1; tool < (int32_t)j->n_tools; tool++) {
		const struct job_msg *call = NULL;
		for (uint32_t k = 0; k < j->n_events; k++) {
			const struct job_event *ev = &j->events[k];
			const struct job_msg *m;
			if (ev->type != EV_TOKEN || ev->text == NULL)
				continue;
			enum dest d = dest_of(j, ev, &m);
			if (tool < 0 && d != D_TOOL)
				sbuf_puts(&text[d], ev->text);
			else if (d == D_TOOL && m->tool == tool) {
				sbuf_puts(&args, ev->text);
				call = m;
			}
		}
		if (call != NULL)
			cJSON_AddItemToArray(calls, tool_call(j, call, args.p ? args.p : "", true));
		sbuf_clear(&args);
	}
	if (calls != NULL && text[D_CONTENT].n == 0)
		cJSON_AddNullToObject(msg, "content");
	else
		cJSON_AddStringToObject(msg, "content", text[D_CONTENT].p ? text[D_CONTENT].p : "");
	if (text[D_REASONING].n > 0)
		cJSON_AddStringToObject(msg, "reasoning_content", text[D_REASONING].p);
	if (calls != NULL)
		cJSON_AddItemToObject(msg, "tool_calls", calls);
	sbuf_fini(&text[0]);
	sbuf_fini(&text[1]);
	sbuf_fini(&args);
	return msg;
}

void
api_openai_usage_chunk(const struct job *j, uint32_t prompt, uint32_t completion, uint32_t cached,
                       struct sbuf *out)
{
	cJSON *o = envelope(j, true);

	cJSON_AddArrayToObject(o, "choices");
	api_openai_usage(o, prompt, completion, cached);
	put(out, o);
}

/* A completion's text: echo's prompt, then what the job generated. */
static void
add_text(cJSON *c, const struct job *j)
{
	struct sbuf t = {0};

	sbuf_puts(&t, j->echo ? j->echo : "");
	sbuf_puts(&t, j->text.p ? j->text.p : "");
	cJSON_AddStringToObject(c, "text", t.p && !t.oom ? t.p : "");
	sbuf_fini(&t);
}

static cJSON *
openai_body(const struct job *j)
{
	const struct job_event *last = &j->events[j->n_events - 1];
	cJSON *o = envelope(j, false), *choices = cJSON_AddArrayToObject(o, "choices");
	cJSON *c = cJSON_CreateObject();

	cJSON_AddNumberToObject(c, "index", j->choice);
	if (j->kind == JOB_OAI_CHAT)
		cJSON_AddItemToObject(c, "message", chat_message(j));
	else
		add_text(c, j);
	cJSON_AddItemToObject(c, "logprobs", api_lp_openai(j, 0, j->n_events));
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

/* a slow reader's end: an error chunk as params_err_json writes one, then [DONE] */
static const char openai_cut[] =
        "data: {\"error\":{\"message\":\"the client reads too slowly; the stream was cut\","
        "\"type\":\"server_error\",\"param\":null,\"code\":\"OVERLOADED\","
        "\"retriable\":true}}\n\ndata: [DONE]\n\n";

const struct job_sink api_openai_sink = {openai_format, openai_body, openai_done, openai_cut};

void
api_openai_completions(struct orchd *d, struct api_req *req, const char *arg)
{
	static const struct api_kind k = {REQUEST_COMPLETION, &api_openai_sink, api_choices_follow};

	(void)arg;
	api_start(d, req, &k);
}

void
api_openai_chat(struct orchd *d, struct api_req *req, const char *arg)
{
	static const struct api_kind k = {REQUEST_CHAT, &api_openai_sink, api_choices_follow};

	(void)arg;
	api_start(d, req, &k);
}

/* The first of @m's workers that said Ready (its facts), or NULL. */
static const struct worker *
loaded_worker(const struct model_entry *m)
{
	for (uint32_t i = 0; i < m->n_workers; i++)
		if (m->workers[i]->ident.context_length)
			return m->workers[i];
	return NULL;
}

/*
 * @m as OpenAI's model object, with orch's facts (docs/http-api.md): what
 * its file is (from orchd's read of its header, inspect.h) and what its
 * workers loaded (their Ready); null for what is not known yet.
 */
static cJSON *
model_object(const struct orchd *d, const struct model_entry *m)
{
	cJSON *it = cJSON_CreateObject();
	const struct worker *w = loaded_worker(m);
	const struct inspect_model *f = &m->file;

	cJSON_AddStringToObject(it, "id", m->cfg.name);
	cJSON_AddStringToObject(it, "object", "model");
	cJSON_AddNumberToObject(it, "created", (double)(d->started_unix / 1000));
	cJSON_AddStringToObject(it, "owned_by", "orch");
	cJSON_AddStringToObject(it, "state", models_state_name(m->state));
	json_add_count(it, "context_length", w ? w->ident.context_length : 0);
	json_add_count(it, "max_context_length", f->n_ctx_train);
	json_add_count(it, "file_size_bytes", f->known ? f->file_bytes : 0);
	json_add_str(it, "quant_kind", f->known ? f->quant_kind : w ? w->ident.quant_kind : "");
	json_add_str(it, "architecture", f->known ? f->arch : w ? w->ident.architecture : "");
	/* the tokenizer's facts a client of the worker contract reads (issue 62), null until a
	 * worker has loaded the model */
	cJSON *x = cJSON_AddObjectToObject(it, "orch");
	json_add_token(x, "bos_id", w != NULL, w ? w->ident.bos_id : -1);
	json_add_token(x, "eos_id", w != NULL, w ? w->ident.eos_id : -1);
	json_add_count(x, "vocab_size", w ? w->ident.vocab_size : 0);
	json_add_count(x, "context_length", w ? w->ident.context_length : 0);
	if (m->chat_template_origin[0])
		cJSON_AddStringToObject(it, "chat_template", m->chat_template_origin);
	if (m->tool_syntax[0])
		cJSON_AddStringToObject(it, "tool_call_syntax", m->tool_syntax);
	if (m->state == MODEL_FAILED) { /* why (paths, worker output): the admin API, the log */
		char buf[512];
		orch_err code = m->error_code ? m->error_code : ORCH_EMODEL_LOAD;
		cJSON_AddStringToObject(it, "error",
		                        jobs_client_message(code, m->error, buf, sizeof(buf)));
		cJSON_AddNumberToObject(it, "last_exit_status", m->last_exit);
	}
	return it;
}

void
api_openai_models(struct orchd *d, struct api_req *req, const char *arg)
{
	cJSON *o = cJSON_CreateObject(), *data;
	const struct api_key *key = api_caller(d, req);

	(void)arg;
	cJSON_AddStringToObject(o, "object", "list");
	data = cJSON_AddArrayToObject(o, "data");
	for (struct model_entry *m = d->models; m; m = m->next)
		if (keys_model_ok(key, m->cfg.name)) /* the models this key may use */
			cJSON_AddItemToArray(data, model_object(d, m));
	reply_json(req, 200, o);
}

void
api_openai_model(struct orchd *d, struct api_req *req, const char *id)
{
	struct model_entry *m = models_find(d, id);

	/* a model the key may not use is one that does not exist, as far as its caller can tell */
	if (m == NULL || !keys_model_ok(api_caller(d, req), id))
		return api_no_model(d, req, id);
	reply_json(req, 200, model_object(d, m));
}
