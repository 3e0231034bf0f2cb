/*
 * api_native.c - the native job API (docs/http-api.md): POST /execute
 * streams a job's events as SSE, POST /cancel cancels one, GET
 * /jobs/{id}/events resumes a stream after Last-Event-ID.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "api_logprobs.h"
#include "jobs.h"
#include "orchd.h"
#include "params.h"
#include "reply.h"
#include "request.h"

void
api_native_execute(struct orchd *d, struct api_req *req, const char *arg)
{
	static const struct api_kind native = {REQUEST_EXECUTE, &api_native_sink, NULL};

	(void)arg;
	api_start(d, req, &native);
}

static bool
cancel_job(struct orchd *d, struct api_req *req, const char *job_id)
{
	struct job_owner owner;
	struct job *j;

	api_owner(d, req, &owner);
	j = jobs_lookup(d, job_id, &owner);
	if (j != NULL)
		reply_note(req, NULL, j->correlation);
	if (j == NULL) {
		reply_error(req, ORCH_EJOB_NOT_FOUND, "job_id",
		            "no such job (or its events expired)");
		return false;
	}
	if (j->state != JOB_DONE)
		jobs_cancel(d, j, "cancelled through /cancel");
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "job_id", j->ext_id);
	cJSON_AddStringToObject(r, "id", j->uid);
	cJSON_AddStringToObject(r, "status", j->state == JOB_DONE ? "finished" : "cancelling");
	reply_json(req, 202, r);
	return true;
}

void
api_native_cancel(struct orchd *d, struct api_req *req, const char *arg)
{
	static const char *const keys[] = {"job_id", NULL};
	struct params_err pe = {0};
	const char *job_id = NULL;
	cJSON *root = NULL;

	(void)arg;
	if (params_body(req->body, req->n_body, &root, &pe) == ORCH_OK &&
	    params_known(root, keys, &pe) && params_string(root, "job_id", true, &job_id, &pe))
		cancel_job(d, req, job_id);
	if (pe.code != ORCH_OK)
		reply_params_error(req, &pe);
	cJSON_Delete(root);
}

void
api_native_events(struct orchd *d, struct api_req *req, const char *job_id)
{
	const char *last = req->last_event_id;
	uint64_t after = 0;
	struct job_owner owner;
	struct job *j;

	/* the id is a capability (docs/security.md): the access log shows the route */
	reply_note(req, "/jobs/{id}/events", NULL);
	api_owner(d, req, &owner);
	if ((j = jobs_lookup(d, job_id, &owner)) == NULL)
		return reply_error(req, ORCH_EJOB_NOT_FOUND, NULL,
		                   "no such job (or its events expired)");
	reply_note(req, NULL, j->correlation);
	if (last != NULL) {
		char *end;
		after = strtoull(last, &end, 10);
		if (*last == '\0' || *end != '\0')
			return reply_error(req, ORCH_EINVAL, "Last-Event-ID",
			                   "Last-Event-ID must be an event id");
	}
	if (req->method == API_HEAD)
		return reply_stream_head(req); /* the stream exists; a HEAD does not follow it */
	if (!api_room(d, req))
		return;
	api_follow(d, j, req, true, after > UINT32_MAX ? UINT32_MAX : (uint32_t)after);
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

/* @unix_ms as ISO 8601 UTC with milliseconds, "2026-11-22T10:04:05.123Z", into @out. */
static void
iso8601(uint64_t unix_ms, char out[32])
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	char day[24] = "1970-01-01T00:00:00";

	if (gmtime_r(&t, &tm) != NULL)
		strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%.20s.%03uZ", day, (unsigned)(unix_ms % 1000));
}

/* The metrics event: counts and times so far (docs/http-api.md). */
static void
add_metrics(cJSON *o, const struct job_event *ev)
{
	double rate = ev->decode_ms > 0 && ev->tokens_out > 1
	                      ? (ev->tokens_out - 1) / (ev->decode_ms / 1e3)
	                      : 0;

	cJSON_AddNumberToObject(o, "tokens_out", ev->tokens_out);
	cJSON_AddNumberToObject(o, "elapsed_ms", ev->prefill_ms + ev->decode_ms);
	cJSON_AddNumberToObject(o, "time_to_first_token_ms", ev->prefill_ms);
	cJSON_AddNumberToObject(o, "decode_time_ms", ev->decode_ms);
	cJSON_AddNumberToObject(o, "tokens_per_second", rate);
}

static void
native_format(const struct job *j, uint32_t k, struct sbuf *out)
{
	const struct job_event *ev = &j->events[k];
	cJSON *o = cJSON_CreateObject();
	char when[32];

	switch (ev->type) {
	case EV_STARTED:
		iso8601(ev->unix_ms, when);
		cJSON_AddStringToObject(o, "job_id", j->ext_id);
		cJSON_AddStringToObject(o, "id", j->uid);
		cJSON_AddStringToObject(o, "model", j->model_name);
		cJSON_AddStringToObject(o, "started_at", when);
		cJSON_AddNumberToObject(o, "started_at_ms", (double)ev->unix_ms);
		cJSON_AddNumberToObject(o, "prompt_tokens", ev->prompt_tokens);
		return put_event(out, k + 1, "started", o);
	case EV_TOKEN:
		cJSON_AddStringToObject(o, "t", ev->text ? ev->text : "");
		cJSON_AddNumberToObject(o, "i", ev->index);
		if (ev->msg) { /* harmony: the message the text is content of */
			const struct job_msg *m = &j->msgs[ev->msg - 1];
			cJSON_AddNumberToObject(o, "message", m->wire);
			if (m->channel[0])
				cJSON_AddStringToObject(o, "channel", m->channel);
			if (m->recipient[0])
				cJSON_AddStringToObject(o, "recipient", m->recipient);
		}
		api_lp_native(o, j, ev);
		return put_event(out, k + 1, "token", o);
	case EV_END:
		cJSON_AddNumberToObject(o, "tokens_out", ev->tokens_out);
		cJSON_AddNumberToObject(o, "prompt_tokens", ev->prompt_tokens);
		cJSON_AddNumberToObject(o, "cached_tokens", ev->cached_tokens);
		cJSON_AddNumberToObject(o, "prefill_time_ms", ev->prefill_ms);
		cJSON_AddNumberToObject(o, "decode_time_ms", ev->decode_ms);
		cJSON_AddStringToObject(o, "finish_reason", orch_finish_name(ev->finish));
		cJSON_AddNumberToObject(o, "seed", (double)ev->seed);
		return put_event(out, k + 1, "end", o);
	case EV_METRICS:
		add_metrics(o, ev);
		return put_event(out, k + 1, "metrics", o);
	case EV_PROMPT: /* completions' echo only */
		break;
	case EV_ERROR:
		cJSON_AddStringToObject(o, "code", orch_err_wire(ev->code));
		cJSON_AddStringToObject(o, "message", ev->text ? ev->text : "");
		cJSON_AddBoolToObject(o, "retriable", orch_err_retriable(ev->code));
		cJSON_AddStringToObject(o, "correlation_id", j->correlation);
		return put_event(out, k + 1, "error", o);
	}
	cJSON_Delete(o);
}

const struct job_sink api_native_sink = {native_format, NULL, NULL, NULL};
