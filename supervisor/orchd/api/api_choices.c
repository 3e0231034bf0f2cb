/*
 * api_choices.c - one OpenAI request answered by several jobs (api.h): "n"
 * choices, several prompts, or both. Each (prompt, choice) is a job of its
 * own, placed and run like any other (a worker's prefix cache shares the
 * prompt's blocks between them); the answer merges them. Streamed, their
 * chunks interleave as they come, each with its choice's index; after the
 * last one ends, the usage chunk (include_usage) and [DONE]. Not streamed,
 * one body with every choice in order and the usage over them all; a failed
 * job fails the request (the first error answers, the others are
 * cancelled). The client's going cancels them all.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "base/alloc.h"
#include "base/log.h"
#include "jobs.h"
#include "orchd.h"
#include "reply.h"

struct choices;

struct member {
	struct job_watch watch; /* first: the watch is the member */
	struct choices *c;
	struct job *job; /* valid while attached */
	bool attached, done;
};

/*
 * @busy counts the frames that must not free the request (the setup loop, a
 * write, a cancellation loop); what would free it meanwhile sets @dead, and
 * the last frame out frees it. @closing: every job is being let go; no
 * notification acts any more.
 */
struct choices {
	struct orchd *d;
	struct api_req *req; /* until answered, or its stream ends, or its client goes */
	bool streaming, dead, failed, closing;
	uint32_t busy;
	struct sbuf out;
	uint32_t n, per_prompt, attached, done;
	struct member m[];
};

static void
choices_free(struct choices *c)
{
	c->d->n_conns--;
	sbuf_fini(&c->out);
	orch_free(c);
}

/* Free @c now, or when the last busy frame leaves. */
static void
drop(struct choices *c)
{
	if (c->busy > 0)
		c->dead = true;
	else
		choices_free(c);
}

/* Stop following every job; with @gone (the client left) the running ones are cancelled. */
static void
detach_all(struct choices *c, bool gone)
{
	c->closing = true;
	for (uint32_t i = 0; i < c->n; i++) {
		if (!c->m[i].attached)
			continue;
		c->m[i].attached = false;
		c->attached--;
		jobs_unwatch(c->d, &c->m[i].watch, gone);
	}
}

/* The usage over every choice: each prompt counted once. */
static void
usage(const struct choices *c, uint32_t *prompt, uint32_t *completion, uint32_t *cached)
{
	*prompt = *completion = *cached = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		const struct job *j = c->m[i].attached ? c->m[i].job : NULL;
		if (j == NULL)
			continue;
		*completion += j->tokens_out;
		if (i % c->per_prompt == 0) {
			*prompt += j->prompt_tokens;
			*cached += j->cached_tokens;
		}
	}
}

/* The one answer of a request that does not stream: the first error, or every choice. */
static void
answer(struct choices *c)
{
	struct api_req *req = c->req;
	cJSON *body = NULL, *all = NULL;
	const struct job_event *bad = NULL;
	const struct job *bad_job = NULL;
	uint32_t p, q, k;

	c->req = NULL;                        /* answered below: freed */
	for (uint32_t i = 0; i < c->n; i++) { /* a real error before the cancellations it caused */
		const struct job *j = c->m[i].job;
		const struct job_event *last = &j->events[j->n_events - 1];
		if (last->type == EV_ERROR && (bad == NULL || (bad->code == ORCH_ECANCELLED &&
		                                               last->code != ORCH_ECANCELLED))) {
			bad = last;
			bad_job = j;
		}
	}
	if (bad != NULL)
		return reply_error_job(req, bad->code,
		                       jobs_error_param(bad_job, bad->code, bad->text),
		                       bad_job->correlation, bad->text ? bad->text : "");
	for (uint32_t i = 0; i < c->n; i++) {
		const struct job *j = c->m[i].job;
		cJSON *o = j->sink->body(j);
		if (o == NULL || body == NULL) {
			body = body ? body : o;
			all = cJSON_GetObjectItemCaseSensitive(body, "choices");
			continue;
		}
		cJSON *one = cJSON_DetachItemFromArray(
		        cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
		if (one != NULL)
			cJSON_AddItemToArray(all, one);
		cJSON_Delete(o);
	}
	if (body == NULL || cJSON_GetArraySize(all) != (int)c->n) {
		cJSON_Delete(body);
		return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	}
	usage(c, &p, &q, &k);
	cJSON_DeleteItemFromObjectCaseSensitive(body, "usage");
	api_openai_usage(body, p, q, k);
	reply_json(req, 200, body);
}

/* Not streaming: answer once every job ended (not from inside a busy frame). */
static void
finish_quiet(struct choices *c)
{
	if (c->busy > 0 || c->closing || c->done < c->n)
		return;
	answer(c);
	detach_all(c, false);
	choices_free(c);
}

/* A job ended (not streaming): when one failed, the others are cancelled. */
static void
ended_quiet(struct choices *c, struct member *m)
{
	const struct job *j = m->job;

	m->done = true;
	c->done++;
	if (j->events[j->n_events - 1].type == EV_ERROR && !c->failed) {
		c->failed = true;
		c->busy++; /* a queued job's cancellation ends it here and now */
		for (uint32_t i = 0; i < c->n && !c->closing; i++) {
			struct member *o = &c->m[i];
			if (o->attached && !o->done && o->job->state != JOB_DONE)
				jobs_cancel(c->d, o->job, "another choice of the request failed");
		}
		c->busy--;
	}
	finish_quiet(c);
}

/* Streaming: the last choice ended; end the stream. */
static void
close_stream(struct choices *c)
{
	reply_stream_end(c->req);
	c->req = NULL;
	detach_all(c, false);
	drop(c);
}

static void
on_events(struct job_watch *w)
{
	struct member *m = (struct member *)w;
	struct choices *c = m->c;
	struct job *j = w->job;

	if (m->done || c->closing || c->dead)
		return;
	if (!c->streaming) {
		if (j->state == JOB_DONE)
			ended_quiet(c, m);
		return;
	}
	sbuf_clear(&c->out);
	for (; w->sent < j->n_events; w->sent++)
		j->sink->format(j, w->sent, &c->out);
	if (j->state == JOB_DONE) {
		m->done = true;
		c->done++;
	}
	if (c->done == c->n) {
		uint32_t p, q, k;
		usage(c, &p, &q, &k);
		if (j->req.include_usage)
			api_openai_usage_chunk(j, p, q, k, &c->out);
		j->sink->terminator(j, &c->out);
	}
	c->busy++;
	reply_stream_write(c->req, c->out.p, c->out.n);
	c->busy--;
	if (c->dead) { /* its client went meanwhile */
		if (c->busy == 0)
			choices_free(c);
		return;
	}
	if (c->done == c->n)
		close_stream(c);
}

/* A job is freed with us on it (orchd stops): let every job go. */
static void
on_release(struct job_watch *w)
{
	struct member *m = (struct member *)w;
	struct choices *c = m->c;

	m->attached = false;
	c->attached--;
	if (c->req != NULL && c->streaming)
		reply_stream_end(c->req);
	else if (c->req != NULL) /* the close watch goes with the answer */
		reply_error(c->req, ORCH_EOVERLOADED, NULL, "orchd stopped before the jobs ended");
	c->req = NULL;
	detach_all(c, false);
	drop(c);
}

/* The client left: the stream's (closed, or cut as too slow) or the waiting request's. */
static void
on_gone(struct api_req *req, void *arg, const char *why)
{
	struct choices *c = arg;

	(void)why;
	reply_release(req);
	c->req = NULL;
	detach_all(c, true);
	drop(c);
}

void
api_choices_follow(struct orchd *d, struct job **jobs, uint32_t n, uint32_t per_prompt,
                   struct api_req *req, bool streaming)
{
	struct choices *c = orch_calloc(1, sizeof(*c) + n * sizeof(c->m[0]));

	if (c == NULL) {
		for (uint32_t i = 0; i < n; i++)
			jobs_cancel(d, jobs[i], "out of memory");
		return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	}
	c->d = d;
	c->req = req;
	c->n = n;
	c->per_prompt = per_prompt;
	c->streaming = streaming;
	if (streaming && reply_stream_start(req, on_gone, c) != ORCH_OK) {
		orch_free(c);
		for (uint32_t i = 0; i < n; i++)
			jobs_cancel(d, jobs[i], "out of memory");
		return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	}
	if (streaming && jobs[0]->sink->cut != NULL)
		reply_stream_cut(req, jobs[0]->sink->cut);
	if (!streaming) /* a client that goes away cancels the jobs (docs/http-api.md) */
		reply_hold(req, on_gone, c, true);
	d->n_conns++;
	c->busy = 1; /* a job that already ended is seen at once, before the others are watched */
	for (uint32_t i = 0; i < n; i++) {
		if (c->closing) { /* the client went: the rest, unwatched, are cancelled */
			jobs_cancel(d, jobs[i], "the client went away");
			continue;
		}
		c->m[i] = (struct member){.watch = {.notify = on_events, .release = on_release},
		                          .c = c,
		                          .job = jobs[i],
		                          .attached = true};
		c->attached++;
		jobs_watch(d, jobs[i], &c->m[i].watch, 0);
	}
	c->busy = 0;
	if (c->dead)
		return choices_free(c);
	if (!streaming)
		finish_quiet(c);
}
