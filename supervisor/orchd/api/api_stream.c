/*
 * api_stream.c - a request following a job (api.h): starting a job from a
 * request body, then writing its events with the job's sink, over SSE or
 * as one answer at the end. The follower is a job_watch; when the client
 * goes, jobs_unwatch decides (resume grace or cancel).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "job_tools.h"
#include "jobs.h"
#include "keys.h"
#include "loop.h"
#include "models.h"
#include "orchd.h"
#include "params.h"
#include "reply.h"
#include "request.h"
#include "workers.h"

struct follow {
	struct job_watch watch; /* first: the watch is the follow */
	struct orchd *d;
	struct api_req *req;   /* until answered, or its stream ends or its client goes */
	bool streaming;        /* req is a stream (reply_stream_start) */
	bool busy, dead;       /* inside reply_stream_write; cut meanwhile */
	bool held;             /* an OpenAI stream whose head waits (api_follow) */
	struct event *ev_hold; /* then: the most it waits */
	struct sbuf out;       /* the events being written; reused, not reallocated per token */
};

/* How long an OpenAI stream's head waits for the job's first event (api_follow). */
#define HOLD_HEAD_MS 1000

static void
follow_free(struct follow *f)
{
	f->d->n_conns--;
	loop_free(f->ev_hold);
	sbuf_fini(&f->out);
	orch_free(f);
}

static void on_gone(struct api_req *req, void *arg, const char *why);

/* A held stream's head goes out now; false (answered 500) when out of memory. */
static bool
release_head(struct follow *f, const struct job *j)
{
	f->held = false;
	loop_stop(f->ev_hold);
	if (reply_stream_start(f->req, on_gone, f) != ORCH_OK) {
		reply_error(f->req, ORCH_ENOMEM, NULL, "out of memory");
		f->req = NULL;
		return false;
	}
	f->streaming = true;
	if (j->sink->cut != NULL)
		reply_stream_cut(f->req, j->sink->cut);
	return true;
}

/* The one answer of a request that does not stream. */
static void
answer(struct follow *f, const struct job *j)
{
	const struct job_event *last = &j->events[j->n_events - 1];
	struct api_req *req = f->req;

	f->req = NULL; /* answered: freed */
	if (last->type == EV_ERROR)
		reply_error_job(req, last->code, jobs_error_param(j, last->code, last->text),
		                j->correlation, last->text ? last->text : "");
	else
		reply_json(req, 200, j->sink->body(j));
}

static void
on_events(struct job_watch *w)
{
	struct follow *f = (struct follow *)w;
	struct job *j = w->job;
	struct sbuf *b = &f->out;

	/* a held stream: a job refused before its first token answers as without stream
	 * (a 4xx the client's library raises, as vLLM's); else the stream starts */
	if (f->held && j->state == JOB_DONE && j->n_events > 0 &&
	    j->events[j->n_events - 1].type == EV_ERROR && j->tokens_out == 0) {
		loop_stop(f->ev_hold);
		f->held = false;
		answer(f, j);
		jobs_unwatch(f->d, w, false);
		return follow_free(f);
	}
	if (f->held && j->n_events > 0 && !release_head(f, j)) {
		jobs_unwatch(f->d, w, true);
		return follow_free(f);
	}
	if (f->held)
		return;
	if (!f->streaming) {
		if (j->state == JOB_DONE) {
			answer(f, j);
			jobs_unwatch(f->d, w, false);
			follow_free(f);
		}
		return;
	}
	sbuf_clear(b);
	for (; w->sent < j->n_events; w->sent++)
		j->sink->format(j, w->sent, b);
	if (j->state == JOB_DONE && j->sink->terminator)
		j->sink->terminator(j, b);
	f->busy = true;
	reply_stream_write(f->req, b->p, b->n);
	f->busy = false;
	if (f->dead)
		return follow_free(f);
	if (j->state == JOB_DONE) {
		reply_stream_end(f->req);
		jobs_unwatch(f->d, w, false);
		follow_free(f);
	}
}

/* The job is freed with us on it (orchd stops). */
static void
on_release(struct job_watch *w)
{
	struct follow *f = (struct follow *)w;

	if (f->streaming)
		reply_stream_end(f->req);
	else /* held (the close watch went with the answer: no call into a freed follow) */
		reply_error(f->req, ORCH_EOVERLOADED, NULL, "orchd stopped before the job ended");
	follow_free(f);
}

/* The client left: a stream (closed, or cut as too slow) or a request waiting for its answer. */
static void
on_gone(struct api_req *req, void *arg, const char *why)
{
	struct follow *f = arg;

	(void)why;
	reply_release(req);
	f->req = NULL;
	if (f->watch.job)
		jobs_unwatch(f->d, &f->watch, true);
	if (f->busy)
		f->dead = true;
	else
		follow_free(f);
}

/* A held stream's head waited HOLD_HEAD_MS (a queued job): it goes out now. */
static void
on_hold(int fd, short what, void *arg)
{
	struct follow *f = arg;
	struct job *j = f->watch.job;

	(void)fd;
	(void)what;
	if (!f->held || j == NULL)
		return;
	if (!release_head(f, j)) {
		jobs_unwatch(f->d, &f->watch, true);
		return follow_free(f);
	}
	on_events(&f->watch);
}

void
api_follow(struct orchd *d, struct job *j, struct api_req *req, bool streaming, uint32_t after)
{
	struct follow *f = orch_calloc(1, sizeof(*f));

	if (f == NULL)
		return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	f->d = d;
	f->req = req;
	f->watch.notify = on_events;
	f->watch.release = on_release;
	/* an OpenAI stream of a new job: its head waits for the job's first event, at most
	 * HOLD_HEAD_MS, so that a refusal by the worker (a prompt past the context, a grammar
	 * it cannot take) is a 4xx as without stream, not a 200 and an error chunk */
	f->held = streaming && j->kind != JOB_NATIVE && after == 0 && j->state != JOB_DONE;
	if (f->held && (f->ev_hold = loop_timer(d->base, on_hold, f)) == NULL)
		f->held = false;
	if (f->held)
		loop_after(f->ev_hold, HOLD_HEAD_MS);
	if (streaming && !f->held) {
		if (reply_stream_start(req, on_gone, f) != ORCH_OK) {
			loop_free(f->ev_hold);
			orch_free(f);
			return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
		}
		f->streaming = true;
		if (j->sink->cut != NULL)
			reply_stream_cut(req, j->sink->cut);
	}
	if (!streaming || f->held) /* a client that goes away cancels the job */
		reply_hold(req, on_gone, f, true);
	d->n_conns++;
	jobs_watch(d, j, &f->watch, after);
}

const struct api_key *
api_caller(struct orchd *d, struct api_req *req)
{
	/* looked up at each call: a reload (SIGHUP) frees the keys a parse off the loop
	 * may outlive; the header lives as long as the request */
	if (d->keys.n == 0)
		return NULL;
	return keys_check(&d->keys, req->authorization);
}

void
api_owner(struct orchd *d, struct api_req *req, struct job_owner *ret)
{
	const struct api_key *key = api_caller(d, req);

	*ret = (struct job_owner){.keyed = key != NULL};
	if (key != NULL)
		memcpy(ret->id, key->digest, sizeof(ret->id));
}

bool
api_room(struct orchd *d, struct api_req *req)
{
	if (d->n_conns < d->cfg.max_connections)
		return true;
	d->metrics.rejected_connections++;
	reply_error(req, ORCH_EOVERLOADED, NULL, "too many open streams (max_connections)");
	return false;
}

/*
 * The part of the max_tokens rule orchd can check without the prompt's
 * tokens (the worker checks the rest): a max_tokens the client gave that
 * alone fills a loaded worker's context leaves no room for a prompt, so it is
 * refused here, before a stream starts.
 */
static bool
fits(struct api_req *req, const struct model_entry *m, const struct job_request *r)
{
	uint32_t ctx = 0;

	for (uint32_t i = 0; i < m->n_workers && ctx == 0; i++)
		ctx = m->workers[i]->ident.context_length;
	if (!r->max_tokens_given || ctx == 0 || r->max_tokens < ctx)
		return true;
	reply_error(req, ORCH_ECONTEXT, "max_tokens",
	            "max_tokens %u leaves no room for the prompt in the model's context of %u "
	            "tokens (prompt + max_tokens must fit)",
	            r->max_tokens, ctx);
	return false;
}

void
api_no_model(struct orchd *d, struct api_req *req, const char *name)
{
	const struct api_key *key = api_caller(d, req);
	const char *near = NULL;
	char list[256] = "";
	size_t n = 0;
	uint32_t k = 0, more = 0;

	for (struct model_entry *m = d->models; m; m = m->next) {
		if (!keys_model_ok(key, m->cfg.name))
			continue;
		if (strcasecmp(m->cfg.name, name) == 0)
			near = m->cfg.name;
		int w = k < 4 ? snprintf(list + n, sizeof(list) - n, "%s'%s'", k ? ", " : "",
		                         m->cfg.name)
		              : -1;
		if (w < 0 || (size_t)w >= sizeof(list) - n) {
			list[n] = '\0';
			more++;
			continue;
		}
		n += (size_t)w;
		k++;
	}
	if (near != NULL)
		return reply_error(req, ORCH_EMODEL_NOT_FOUND, "model",
		                   "model '%.128s' is not configured: names are case-sensitive; "
		                   "did you mean '%s'?",
		                   name, near);
	if (k == 0)
		return reply_error(req, ORCH_EMODEL_NOT_FOUND, "model",
		                   "model '%.128s' is not configured (none is)", name);
	reply_error(req, ORCH_EMODEL_NOT_FOUND, "model",
	            "model '%.128s' is not configured; served: %s%s (GET /v1/models)", name, list,
	            more ? " and more" : "");
}

struct model_entry *
api_only_model(struct orchd *d, struct api_req *req)
{
	const struct api_key *key = api_caller(d, req);
	struct model_entry *m, *only = NULL;
	uint32_t n = 0;

	for (m = d->models; m; m = m->next)
		if (keys_model_ok(key, m->cfg.name)) {
			only = m;
			n++;
		}
	if (n == 1)
		return only;
	reply_error(req, ORCH_EINVAL, "model",
	            "'model' is required: %u models are served (GET /v1/models lists them)", n);
	return NULL;
}

/* Checks against the registry; a refusal is answered. */
static struct model_entry *
admit(struct orchd *d, struct api_req *req, const struct job_request *r,
      const struct job_owner *owner)
{
	struct model_entry *m;

	/* a job_id names one job in its owner's space: a key's, or without keys the one local
	 * owner's; a job_id a known job has (running, or ended and kept) is refused */
	if (r->job_id[0] && jobs_lookup(d, r->job_id, owner) != NULL) {
		reply_error(req, ORCH_EINVAL, "job_id", "job_id '%s' is already in use", r->job_id);
		return NULL;
	}
	/* a model the key may not use is one that does not exist, as far as its caller can tell */
	if (!keys_model_ok(api_caller(d, req), r->model) ||
	    (m = models_find(d, r->model)) == NULL) {
		api_no_model(d, req, r->model);
		return NULL;
	}
	if (!fits(req, m, r))
		return NULL;
	char why[400]; /* a forced tool call, where the model's call syntax is known */
	if (r->tool_force != TOOL_FORCE_NO && m->tool_syntax[0] &&
	    job_tools_refusal(r->model, tool_syntax_from_name(m->tool_syntax), why, sizeof(why))) {
		reply_error(req, ORCH_EINVAL, "tool_choice", "%s", why);
		return NULL;
	}
	if (r->stream && !api_room(d, req))
		return NULL;
	return m;
}

static const char *const id_prefix[] = {"", "cmpl", "chatcmpl"};
static const enum job_kind job_kinds[] = {JOB_NATIVE, JOB_OAI_COMPLETION, JOB_OAI_CHAT};

/* A job of @r (taken over) for @req; its ids set. NULL (answered 500) when out of memory. */
static struct job *
new_job(struct orchd *d, struct api_req *req, const struct api_kind *k, struct model_entry *m,
        struct job_request *r, const struct job_owner *owner)
{
	int api = k->api;
	struct job_model jm = {m, m->cfg.name, &m->met};
	struct job *j = jobs_new(d, job_kinds[api], k->sink, &jm, r, owner);

	if (j != NULL && j->req.echo && j->req.prompt != NULL &&
	    (j->echo = orch_strndup(j->req.prompt, strlen(j->req.prompt))) == NULL) {
		jobs_free(d, j);
		j = NULL;
	}
	if (j == NULL) {
		reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	if (api == REQUEST_EXECUTE)
		snprintf(j->ext_id, sizeof(j->ext_id), "%s", j->req.job_id);
	else
		snprintf(j->ext_id, sizeof(j->ext_id), "%s-%s", id_prefix[api], j->uid);
	return j;
}

/* Place or queue @j; a refusal is answered (and logged); false then. */
static bool
submit(struct orchd *d, struct api_req *req, struct job *j)
{
	struct orch_errinfo e = {0};
	char buf[512];

	if (models_submit(d, j, &e) == ORCH_OK)
		return true;
	const char *text = jobs_client_message(e.code, e.msg, buf, sizeof(buf));
	orch_log(ORCH_LOG_INFO, "job_refused", "job=%s model=%s err=%s msg=\"%s\"", j->correlation,
	         j->model_name, orch_err_wire(e.code), e.msg);
	reply_error_job(req, e.code, "model", j->correlation, text);
	return false;
}

/*
 * Several choices or prompts (api_choices.c): a copy of the parsed request @r
 * (taken over) for each job, each with its prompt and choice
 * index; one id for them all; choice i of a request with a seed gets seed + i.
 * A refusal of any cancels those submitted and answers it.
 */
static void
start_many(struct orchd *d, struct api_req *req, const struct api_kind *kind, struct model_entry *m,
           struct job_request *r, const struct job_owner *owner)
{
	uint32_t per = r->n_choices ? r->n_choices : 1;
	uint32_t total = per * (r->prompt_list ? (uint32_t)cJSON_GetArraySize(r->prompt_list) : 1);
	struct params_err pe = {0};
	uint32_t k = 0, room = models_room(d, m);

	if (total > room) { /* never fits, however long the client waits: not retriable */
		pe.code = ORCH_EINVAL;
		snprintf(pe.param, sizeof(pe.param), "%s", r->n_choices > 1 ? "n" : "prompt");
		snprintf(pe.msg, sizeof(pe.msg),
		         "the request makes %u jobs (n × prompts) and model '%s' holds at most %u "
		         "at once (its workers' 4 × slots and max_queue): ask for fewer",
		         total, m->cfg.name, room);
		job_request_fini(r);
		return reply_params_error(req, &pe);
	}
	/* the parsed request, copied for each job (its prompt list lent to each in turn): a
	 * body is parsed, and its grammar compiled, once however many choices it asks for */
	struct job_request base;
	cJSON *list = r->prompt_list;
	r->prompt_list = NULL;
	struct job **jobs = orch_calloc(total, sizeof(*jobs));
	if (jobs == NULL || job_request_copy(r, &base) != ORCH_OK) {
		orch_free(jobs);
		cJSON_Delete(list);
		job_request_fini(r);
		return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	}
	for (; k < total; k++) {
		struct job_request rk;
		if (k > 0 && job_request_copy(&base, &rk) != ORCH_OK)
			break;
		struct job_request *src = k == 0 ? r : &rk;
		src->prompt_list = list;
		bool picked = request_prompt_pick(&d->cfg, src, k / per, &pe);
		src->prompt_list = NULL;
		if (!picked) {
			job_request_fini(src);
			break;
		}
		if (src->sp.has_seed)
			src->sp.seed += k;
		if ((jobs[k] = new_job(d, req, kind, m, src, owner)) == NULL) {
			job_request_fini(src);
			goto fail;
		}
		jobs[k]->choice = k;
		jobs[k]->grouped = true;
		jobs[k]->created_unix = jobs[0]->created_unix;
		if (k > 0)
			memcpy(jobs[k]->ext_id, jobs[0]->ext_id, sizeof(jobs[k]->ext_id));
	}
	job_request_fini(&base);
	cJSON_Delete(list);
	list = NULL;
	if (k < total) {
		reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
		goto fail;
	}
	reply_note(req, NULL, jobs[0]->correlation);
	for (k = 0; k < total; k++)
		if (!submit(d, req, jobs[k]))
			break;
	if (k == total) {
		kind->follow_many(d, jobs, total, per, req, jobs[0]->req.stream);
		orch_free(jobs);
		return;
	}
	for (uint32_t i = 0; i < k; i++) /* submitted: cancelled, freed when they end */
		jobs_cancel(d, jobs[i], "another choice of the request was refused");
	jobs_free(d, jobs[k]);
	for (uint32_t i = k + 1; i < total; i++)
		jobs_free(d, jobs[i]);
	orch_free(jobs);
	return;
fail:
	job_request_fini(&base);
	cJSON_Delete(list);
	for (uint32_t i = 0; i < total; i++)
		if (jobs[i] != NULL)
			jobs_free(d, jobs[i]);
	orch_free(jobs);
}

/* A request being started: its body, and what its parse made. */
struct start {
	const struct api_kind *k;
	uint64_t received; /* when orchd took it (Unix ms): deadline_ms counts from here */
	struct job_request r;
	struct params_err pe;
	orch_err rv;
};

static void
start_parse(const struct orchd_config *cfg, const char *body, size_t n, void *arg)
{
	struct start *s = arg;

	s->rv = request_parse((enum request_api)s->k->api, cfg, body, n, &s->r, &s->pe);
}

static void
start_drop(void *arg)
{
	struct start *s = arg;

	job_request_fini(&s->r);
	orch_free(s);
}

/*
 * @r's deadline (issue 62): X-Deadline's time or deadline_ms after @received, the
 * earlier. False (answered) when X-Deadline is no time, or the deadline has passed:
 * DEADLINE_EXCEEDED before the job is made.
 */
static bool
deadline(struct api_req *req, struct job_request *r, uint64_t received)
{
	const char *h = req->x_deadline;
	struct params_err pe = {0};
	uint64_t t = 0, now = orch_unix_ms();

	if (h != NULL && !request_deadline_header(h, &t, &pe)) {
		reply_params_error(req, &pe);
		return false;
	}
	bool by_ms = r->deadline_ms > 0 && (t == 0 || received + r->deadline_ms < t);
	if (by_ms)
		t = received + r->deadline_ms;
	if (t != 0 && t <= now) {
		reply_error(req, ORCH_EDEADLINE, by_ms ? "deadline_ms" : "X-Deadline",
		            "the request's deadline passed %llu ms before it could be admitted",
		            (unsigned long long)(now - t));
		return false;
	}
	r->deadline_unix_ms = t;
	return true;
}

/* The body parsed into @r: the job made, submitted and followed, or the refusal answered. */
static void
start_parsed(struct orchd *d, struct api_req *req, struct job_request *r, const struct api_kind *k,
             uint64_t received)
{
	int api = k->api;
	struct job_owner owner;
	struct model_entry *m;
	struct job *j;

	api_owner(d, req, &owner);
	if (r->model[0] == '\0' && api != REQUEST_EXECUTE) { /* OpenAI's: the one served */
		if ((m = api_only_model(d, req)) == NULL)
			goto out;
		snprintf(r->model, sizeof(r->model), "%s", m->cfg.name);
	}
	if (!deadline(req, r, received) || (m = admit(d, req, r, &owner)) == NULL)
		goto out;
	if ((r->n_choices > 1 || r->prompt_list != NULL) && k->follow_many != NULL)
		return start_many(d, req, k, m, r, &owner);
	if ((j = new_job(d, req, k, m, r, &owner)) == NULL)
		goto out;
	reply_note(req, NULL, j->correlation);
	if (j->req.ignored != 0 && orch_log_enabled(ORCH_LOG_DEBUG)) {
		char names[512]; /* accepted and ignored (request_openai.c): once per request */
		request_openai_ignored(j->req.ignored, names, sizeof(names));
		orch_log(ORCH_LOG_DEBUG, "request_fields_ignored", "job=%s fields=%s",
		         j->correlation, names);
	}
	if (!submit(d, req, j)) {
		jobs_free(d, j);
		return;
	}
	if (api == REQUEST_EXECUTE) /* the id to resume or cancel with, before any event */
		reply_header(req, "X-Job-Id", j->uid);
	api_follow(d, j, req, j->req.stream, 0);
	return;
out:
	job_request_fini(r);
}

static void
start_cont(struct orchd *d, struct api_req *req, void *arg)
{
	struct start *s = arg;

	if (s->rv != ORCH_OK)
		reply_params_error(req, &s->pe);
	else
		start_parsed(d, req, &s->r, s->k, s->received); /* takes s->r */
	start_drop(s);
}

void
api_start(struct orchd *d, struct api_req *req, const struct api_kind *k)
{
	struct start *s = orch_calloc(1, sizeof(*s));

	if (s == NULL)
		return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	s->k = k;
	s->received = orch_unix_ms();
	api_parse_then(d, req, start_parse, start_cont, start_drop, s);
}
