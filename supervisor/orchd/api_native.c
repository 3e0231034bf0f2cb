/*
 * api_native.c - the native job API (docs/http-api.md): POST /execute
 * streams a job's events as SSE, POST /cancel cancels one, GET
 * /jobs/{id}/events resumes a stream after Last-Event-ID.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/keyvalq_struct.h>

#include "api_params.h"
#include "base/alloc.h"
#include "base/log.h"
#include "orchd.h"

#define JOB_ID_MAX 127

static const char *const execute_keys[] = {
        "job_id", "model",          "prompt", "max_tokens",         "temperature",
        "top_p",  "top_k",          "min_p",  "repetition_penalty", "stop",
        "seed",   "resume_grace_s", NULL};

/* Room for one more stream, else 503 with Retry-After. */
bool
api_room(struct orchd *d, struct evhttp_request *req)
{
	if (d->n_conns < d->cfg.max_connections)
		return true;
	d->metrics.rejected_connections++;
	http_retry_after(req, 1);
	cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
	cJSON_AddStringToObject(e, "code", "OVERLOADED");
	cJSON_AddStringToObject(e, "message", "too many open streams (max_connections)");
	cJSON_AddStringToObject(e, "type", "server_error");
	cJSON_AddBoolToObject(e, "retriable", true);
	http_json(req, 503, root);
	return false;
}

void
api_native_execute(struct orchd *d, struct evhttp_request *req)
{
	cJSON *root = http_body(d, req);
	const char *job_id = NULL, *model = NULL, *prompt = NULL;
	int64_t grace = 0;
	struct job *j = NULL;
	struct model *m;

	if (root == NULL)
		return;
	if (!params_known(req, root, execute_keys) ||
	    !params_string(req, root, "job_id", true, &job_id) ||
	    !params_string(req, root, "model", true, &model) ||
	    !params_string(req, root, "prompt", true, &prompt) ||
	    !params_int(req, root, "resume_grace_s", 0, 300, &grace))
		goto out;
	if (job_id[0] == '\0' || strlen(job_id) > JOB_ID_MAX) {
		http_error(req, ORCH_EINVAL, "job_id", "'job_id' must be 1-%d bytes", JOB_ID_MAX);
		goto out;
	}
	if (prompt[0] == '\0' || params_utf8_chars(prompt) > d->cfg.max_prompt_chars) {
		http_error(req, ORCH_EINVAL, "prompt", "'prompt' must be 1-%u characters",
		           d->cfg.max_prompt_chars);
		goto out;
	}
	if (jobs_find_ext(d, job_id) != NULL) {
		http_error(req, ORCH_EINVAL, "job_id", "job_id '%s' is already in use", job_id);
		goto out;
	}
	if ((m = models_find(d, model)) == NULL) {
		http_error(req, ORCH_EMODEL_NOT_FOUND, "model", "model '%s' is not configured",
		           model);
		goto out;
	}
	if (!api_room(d, req))
		goto out;
	if ((j = jobs_new(d, JOB_NATIVE, m)) == NULL) {
		http_error(req, ORCH_ENOMEM, NULL, "out of memory");
		goto out;
	}
	snprintf(j->ext_id, sizeof(j->ext_id), "%s", job_id);
	snprintf(j->correlation, sizeof(j->correlation), "%s", job_id);
	j->resume_grace_s = (uint32_t)grace;
	if (!params_sampling(d, req, root, "repetition_penalty", "max_tokens", NULL, 256, j) ||
	    !params_stop(req, root, j))
		goto fail;
	if ((j->prompt = orch_strndup(prompt, strlen(prompt))) == NULL) {
		http_error(req, ORCH_ENOMEM, NULL, "out of memory");
		goto fail;
	}
	api_submit(d, req, j, true);
	cJSON_Delete(root);
	return;
fail:
	jobs_free(d, j);
out:
	cJSON_Delete(root);
}

void
api_native_cancel(struct orchd *d, struct evhttp_request *req)
{
	cJSON *root = http_body(d, req);
	static const char *const keys[] = {"job_id", NULL};
	const char *job_id = NULL;

	if (root == NULL)
		return;
	if (params_known(req, root, keys) && params_string(req, root, "job_id", true, &job_id)) {
		struct job *j = jobs_find_ext(d, job_id);
		if (j == NULL) {
			cJSON *r = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(r, "error");
			cJSON_AddStringToObject(e, "code", "JOB_NOT_FOUND");
			cJSON_AddStringToObject(e, "message",
			                        "no such job (or its events expired)");
			cJSON_AddStringToObject(e, "param", "job_id");
			http_json(req, 404, r);
		} else {
			if (j->state != JOB_DONE)
				jobs_cancel(d, j, "cancelled through /cancel");
			cJSON *r = cJSON_CreateObject();
			cJSON_AddStringToObject(r, "job_id", job_id);
			cJSON_AddStringToObject(r, "status",
			                        j->state == JOB_DONE ? "finished" : "cancelling");
			http_json(req, 202, r);
		}
	}
	cJSON_Delete(root);
}

void
api_native_events(struct orchd *d, struct evhttp_request *req, const char *job_id)
{
	struct job *j = jobs_find_ext(d, job_id);
	const char *last =
	        evhttp_find_header(evhttp_request_get_input_headers(req), "Last-Event-ID");
	uint64_t after = 0;

	if (j == NULL || j->kind != JOB_NATIVE) {
		cJSON *r = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(r, "error");
		cJSON_AddStringToObject(e, "code", "JOB_NOT_FOUND");
		cJSON_AddStringToObject(e, "message", "no such job (or its events expired)");
		cJSON_AddNullToObject(e, "param");
		http_json(req, 404, r);
		return;
	}
	if (last != NULL) {
		char *end;
		after = strtoull(last, &end, 10);
		if (*last == '\0' || *end != '\0') {
			http_error(req, ORCH_EINVAL, "Last-Event-ID",
			           "Last-Event-ID must be an event id");
			return;
		}
	}
	if (!api_room(d, req))
		return;
	jobs_attach(d, j, req, true, after > UINT32_MAX ? UINT32_MAX : (uint32_t)after);
}

/* ---- the stream ---- */

static void
put_event(struct sbuf *out, uint32_t id, const char *name, cJSON *data)
{
	char *text = cJSON_PrintUnformatted(data);

	cJSON_Delete(data);
	sbuf_printf(out, "id: %u\nevent: %s\ndata: %s\n\n", id, name, text ? text : "{}");
	free(text);
}

void
api_native_format(const struct job *j, uint32_t k, struct sbuf *out)
{
	const struct job_event *ev = &j->events[k];
	cJSON *o = cJSON_CreateObject();

	switch (ev->type) {
	case EV_STARTED:
		cJSON_AddStringToObject(o, "job_id", j->ext_id);
		cJSON_AddStringToObject(o, "model", j->model_name);
		cJSON_AddNumberToObject(o, "started_at", (double)j->created_unix / 1e3);
		cJSON_AddNumberToObject(o, "prompt_tokens", j->prompt_tokens);
		return put_event(out, k + 1, "started", o);
	case EV_TOKEN:
		cJSON_AddStringToObject(o, "t", ev->text ? ev->text : "");
		cJSON_AddNumberToObject(o, "i", ev->index);
		return put_event(out, k + 1, "token", o);
	case EV_END:
		cJSON_AddNumberToObject(o, "tokens_out", ev->tokens_out);
		cJSON_AddNumberToObject(o, "prompt_tokens", ev->prompt_tokens);
		cJSON_AddNumberToObject(o, "decode_time_ms", ev->decode_ms);
		cJSON_AddStringToObject(o, "finish_reason", jobs_finish_name(ev->finish));
		cJSON_AddNumberToObject(o, "seed", (double)ev->seed);
		return put_event(out, k + 1, "end", o);
	case EV_ERROR:
		cJSON_AddStringToObject(o, "code", orch_err_wire(ev->code));
		cJSON_AddStringToObject(o, "message", ev->text ? ev->text : "");
		cJSON_AddBoolToObject(o, "retriable", orch_err_retriable(ev->code));
		return put_event(out, k + 1, "error", o);
	}
	cJSON_Delete(o);
}
