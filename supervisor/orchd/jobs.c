/*
 * jobs.c - a job from its request to its terminal event: the events the
 * worker reports (kept, so a dropped stream can resume), the client
 * streams following it, keep-alive comments, cancellation when the last
 * client goes, and expiry of a finished job's events.
 */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "orchd.h"

static void job_timer(evutil_socket_t fd, short what, void *arg);

struct job *
jobs_new(struct orchd *d, enum job_kind kind, struct model *m)
{
	struct job *j = orch_calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->id = ++d->next_job_id;
	j->kind = kind;
	j->model = m;
	snprintf(j->model_name, sizeof(j->model_name), "%s", m->cfg.name);
	orch__sampling_params__init(&j->sp);
	j->created_ms = orch_mono_ms();
	j->created_unix = orch_unix_ms();
	j->ev_timer = event_new(d->base, -1, 0, job_timer, j);
	if (j->ev_timer == NULL) {
		orch_free(j);
		return NULL;
	}
	/* room for the events of a short job; growth never finds the array empty */
	if ((j->events = orch_calloc(64, sizeof(*j->events))) == NULL) {
		event_free(j->ev_timer);
		orch_free(j);
		return NULL;
	}
	j->cap_events = 64;
	j->d = d;
	j->next_all = d->jobs;
	d->jobs = j;
	d->n_jobs++;
	j->live_next = d->live;
	if (d->live)
		d->live->live_prev = j;
	d->live = j;
	return j;
}

/* Take @j out of the live list (once it ended, or when freed). */
static void
unlink_live(struct orchd *d, struct job *j)
{
	if (j->live_prev)
		j->live_prev->live_next = j->live_next;
	else if (d->live == j)
		d->live = j->live_next;
	if (j->live_next)
		j->live_next->live_prev = j->live_prev;
	j->live_prev = j->live_next = NULL;
}

struct job *
jobs_find_ext(struct orchd *d, const char *ext_id)
{
	for (struct job *j = d->jobs; j; j = j->next_all)
		if (strcmp(j->ext_id, ext_id) == 0)
			return j;
	return NULL;
}

struct job *
jobs_find(struct orchd *d, uint64_t id)
{
	for (struct job *j = d->live; j; j = j->live_next)
		if (j->id == id)
			return j;
	return NULL;
}

const char *
jobs_finish_name(int finish)
{
	switch (finish) {
	case ORCH__FINISH_REASON__FINISH_STOP:
		return "stop";
	case ORCH__FINISH_REASON__FINISH_LENGTH:
		return "length";
	default:
		return "eos";
	}
}

/* ---- streams ---- */

static void
stream_detach(struct stream *s)
{
	struct job *j = s->job;

	for (struct stream **p = &j->streams; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	j->d->n_conns--;
	orch_free(s);
}

/* Stop hearing about @s's connection: before its response ends (and libevent frees it). */
static void
stream_unhook(struct stream *s)
{
	if (s->req)
		evhttp_connection_set_closecb(evhttp_request_get_connection(s->req), NULL, NULL);
}

static void
format(const struct job *j, uint32_t k, struct sbuf *out)
{
	if (j->kind == JOB_NATIVE)
		api_native_format(j, k, out);
	else
		api_openai_format(j, k, out);
}

/* Write the events @s has not seen yet; at the terminal one, end the response. */
static void
stream_flush(struct stream *s)
{
	struct job *j = s->job;
	struct sbuf b = {0};

	if (!s->streaming) {
		if (j->state == JOB_DONE) {
			const struct job_event *last = &j->events[j->n_events - 1];
			stream_unhook(s);
			if (last->type == EV_ERROR)
				http_error(s->req, last->code, NULL, "%s",
				           last->text ? last->text : "");
			else
				http_json(s->req, 200, api_openai_body(j));
			s->req = NULL;
			stream_detach(s);
		}
		return;
	}
	for (; s->sent < j->n_events; s->sent++)
		format(j, s->sent, &b);
	if (j->state == JOB_DONE && j->kind != JOB_NATIVE)
		sbuf_puts(&b, "data: [DONE]\n\n");
	if (b.n)
		http_sse_write(s->req, b.p, b.n);
	sbuf_fini(&b);
	if (j->state == JOB_DONE) {
		stream_unhook(s);
		evhttp_send_reply_end(s->req);
		s->req = NULL;
		stream_detach(s);
	}
}

static void
on_stream_close(struct evhttp_connection *conn, void *arg)
{
	struct stream *s = arg;
	struct job *j = s->job;
	struct orchd *d = j->d;

	(void)conn;
	/* A client gone mid-reply leaves libevent's request detached from its
	 * connection and ours to free, which ending the reply does. A request
	 * still attached is the connection's to free. */
	if (s->req && evhttp_request_get_connection(s->req) == NULL)
		evhttp_send_reply_end(s->req);
	s->req = NULL;
	stream_detach(s);
	if (j->state == JOB_DONE || j->streams != NULL)
		return;
	if (j->resume_grace_s > 0) { /* the client may come back with Last-Event-ID */
		struct timeval tv = {(time_t)j->resume_grace_s, 0};
		j->detached = true;
		evtimer_add(j->ev_timer, &tv);
		return;
	}
	if (j->model)
		j->model->met.cancelled_by_client++;
	jobs_cancel(d, j, "the client went away");
}

void
jobs_attach(struct orchd *d, struct job *j, struct evhttp_request *req, bool streaming,
            uint32_t after)
{
	struct stream *s = orch_calloc(1, sizeof(*s));

	if (s == NULL) {
		http_error(req, ORCH_ENOMEM, NULL, "out of memory");
		return;
	}
	s->req = req;
	s->job = j;
	s->streaming = streaming;
	s->sent = after < j->n_events ? after : j->n_events;
	s->next = j->streams;
	j->streams = s;
	j->detached = false;
	d->n_conns++;
	evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_stream_close, s);
	if (streaming)
		http_sse_start(req);
	if (j->state != JOB_DONE) {
		struct timeval tv = {(time_t)d->cfg.sse_keepalive_s, 0};
		evtimer_add(j->ev_timer, &tv);
	}
	stream_flush(s);
}

/* ---- events ---- */

static orch_err
from_proto(int code)
{
	for (int c = 1; c < ORCH_ERR_COUNT; c++)
		if (orch_err_proto((orch_err)c) == code)
			return (orch_err)c;
	return ORCH_EINTERNAL;
}

static int
outcome(const struct job_event *ev)
{
	if (ev->type == EV_END)
		return ev->finish == ORCH__FINISH_REASON__FINISH_STOP     ? 0
		       : ev->finish == ORCH__FINISH_REASON__FINISH_LENGTH ? 1
		                                                          : 2;
	return 3 + (int)ev->code;
}

static void
finish(struct orchd *d, struct job *j, const struct job_event *ev)
{
	uint64_t now = orch_mono_ms();

	j->state = JOB_DONE;
	j->ended_ms = now;
	unlink_live(d, j);
	if (j->model) {
		struct model_metrics *mm = &j->model->met;
		mm->requests[outcome(ev)]++;
		mm->prompt_tokens += j->prompt_tokens;
		mm->generation_tokens += j->tokens_out;
		histo_observe(&mm->e2e, (double)(now - j->created_ms) / 1e3);
		models_unqueue(j); /* when it ended while queued */
	}
	if (j->worker) {
		struct worker *w = j->worker;
		w->jobs--;
		w->outstanding -= w->outstanding >= j->max_tokens ? j->max_tokens : w->outstanding;
		j->worker = NULL;
		if (w->model)
			models_dispatch(d, w->model);
	}
	orch_log(ORCH_LOG_INFO, "job_end", "job=%s model=%s outcome=%s tokens=%u ms=%llu",
	         j->ext_id, j->model_name,
	         ev->type == EV_END ? jobs_finish_name(ev->finish) : orch_err_wire(ev->code),
	         j->tokens_out, (unsigned long long)(now - j->created_ms));
	struct timeval keep = {(time_t)d->cfg.events_keep_s, 0};
	evtimer_del(j->ev_timer);
	evtimer_add(j->ev_timer, &keep);
}

void
jobs_event(struct orchd *d, struct job *j, const struct job_event *ev)
{
	if (j->state == JOB_DONE)
		return; /* exactly one terminal event */
	bool terminal = ev->type == EV_END || ev->type == EV_ERROR;
	/* the last slot is kept for the terminal event, so a job always ends */
	if (!terminal && j->n_events + 1 == j->cap_events) {
		uint32_t cap = 2 * j->cap_events;
		struct job_event *e = orch_reallocarray(j->events, cap, sizeof(*e));
		if (e == NULL)
			return; /* out of memory: this token's event is lost, not the job's end */
		j->events = e;
		j->cap_events = cap;
	}
	struct job_event *e = &j->events[j->n_events++];
	*e = *ev;
	e->text = ev->text ? orch_strndup(ev->text, strlen(ev->text)) : NULL;
	if (ev->type == EV_TOKEN) {
		uint64_t now = orch_mono_ms();
		if (j->first_token_ms == 0) {
			j->first_token_ms = now;
			if (j->model)
				histo_observe(&j->model->met.ttft,
				              (double)(now - j->created_ms) / 1e3);
		} else if (j->model) {
			histo_observe(&j->model->met.itl, (double)(now - j->last_token_ms) / 1e3);
		}
		j->last_token_ms = now;
		if (ev->text)
			sbuf_puts(&j->text, ev->text);
	}
	if (terminal)
		finish(d, j, ev);
	for (struct stream *s = j->streams, *next; s; s = next) {
		next = s->next;
		stream_flush(s);
	}
}

void
jobs_fail(struct orchd *d, struct job *j, orch_err code, const char *msg)
{
	struct job_event ev = {.type = EV_ERROR, .code = code, .text = (char *)(uintptr_t)msg};

	jobs_event(d, j, &ev);
}

void
jobs_cancel(struct orchd *d, struct job *j, const char *why)
{
	if (j->state == JOB_DONE)
		return;
	orch_log(ORCH_LOG_INFO, "job_cancel", "job=%s why=\"%s\"", j->ext_id, why);
	if (j->state == JOB_QUEUED || j->worker == NULL) {
		jobs_fail(d, j, ORCH_ECANCELLED, why);
		return;
	}
	if (!j->cancel_sent) {
		Orch__Envelope env = ORCH__ENVELOPE__INIT;
		Orch__Cancel c = ORCH__CANCEL__INIT;
		c.job_id = j->id;
		env.body_case = ORCH__ENVELOPE__BODY_CANCEL;
		env.cancel = &c;
		j->cancel_sent = true;
		if (!workers_send(j->worker, &env))
			jobs_fail(d, j, ORCH_ECANCELLED, why);
	}
}

void
jobs_from_worker(struct orchd *d, struct worker *w, const Orch__Envelope *env)
{
	struct job *j;

	switch (env->body_case) {
	case ORCH__ENVELOPE__BODY_STARTED:
		if ((j = jobs_find(d, env->started->job_id)) != NULL) {
			struct job_event ev = {.type = EV_STARTED, .seed = env->started->seed};
			j->prompt_tokens = env->started->prompt_tokens;
			j->started_ms = orch_mono_ms();
			jobs_event(d, j, &ev);
		}
		break;
	case ORCH__ENVELOPE__BODY_TOKEN_BATCH:
		for (size_t i = 0; i < env->token_batch->n_tokens; i++) {
			const Orch__TokenEntry *t = env->token_batch->tokens[i];
			if ((j = jobs_find(d, t->job_id)) == NULL)
				continue;
			if (t->token_id >= 0)
				j->tokens_out++;
			else if (t->text[0] == '\0')
				continue; /* nothing held back */
			struct job_event ev = {
			        .type = EV_TOKEN, .index = t->index, .text = t->text};
			jobs_event(d, j, &ev);
		}
		break;
	case ORCH__ENVELOPE__BODY_END:
		if ((j = jobs_find(d, env->end->job_id)) != NULL) {
			const Orch__End *e = env->end;
			struct job_event ev = {.type = EV_END,
			                       .finish = e->finish_reason,
			                       .tokens_out = e->tokens_out,
			                       .prompt_tokens = e->prompt_tokens,
			                       .decode_ms = e->decode_ms,
			                       .prefill_ms = e->prefill_ms,
			                       .seed = e->seed};
			j->tokens_out = e->tokens_out;
			j->prompt_tokens = e->prompt_tokens;
			jobs_event(d, j, &ev);
		}
		break;
	case ORCH__ENVELOPE__BODY_ERROR:
		if ((j = jobs_find(d, env->error->job_id)) != NULL)
			jobs_fail(d, j, from_proto(env->error->code), env->error->message);
		break;
	default:
		orch_log(ORCH_LOG_WARNING, "worker_unexpected", "worker=%s body=%s", w->id,
		         ipc_body_name(env->body_case));
		break;
	}
}

void
jobs_worker_lost(struct orchd *d, struct worker *w, const char *why)
{
	for (struct job *j = d->live, *next; j; j = next) {
		next = j->live_next; /* failing it takes it out of the list */
		if (j->worker == w)
			jobs_fail(d, j, ORCH_EWORKER_LOST, why);
	}
}

/* Keep-alive while running; the detach grace; expiry once done. */
static void
job_timer(evutil_socket_t fd, short what, void *arg)
{
	struct job *j = arg;
	struct orchd *d = j->d;

	(void)fd;
	(void)what;
	if (j->state == JOB_DONE) {
		if (j->streams == NULL) {
			jobs_free(d, j);
			return;
		}
		struct timeval again = {1, 0};
		evtimer_add(j->ev_timer, &again);
		return;
	}
	if (j->detached && j->streams == NULL) {
		jobs_cancel(d, j, "the client did not come back");
		return;
	}
	for (struct stream *s = j->streams; s; s = s->next)
		if (s->streaming && s->req)
			http_sse_write(s->req, ": keep-alive\n\n", 14);
	struct timeval tv = {(time_t)d->cfg.sse_keepalive_s, 0};
	evtimer_add(j->ev_timer, &tv);
}

void
jobs_free(struct orchd *d, struct job *j)
{
	for (struct job **p = &d->jobs; *p; p = &(*p)->next_all)
		if (*p == j) {
			*p = j->next_all;
			d->n_jobs--;
			break;
		}
	unlink_live(d, j);
	while (j->streams) {
		struct stream *s = j->streams;
		stream_unhook(s);
		if (s->req && s->streaming)
			evhttp_send_reply_end(s->req);
		s->req = NULL;
		stream_detach(s);
	}
	if (j->model)
		models_unqueue(j);
	for (uint32_t i = 0; i < j->n_events; i++)
		orch_free(j->events[i].text);
	orch_free(j->events);
	for (uint32_t i = 0; i < j->n_stops; i++)
		orch_free(j->stops[i]);
	orch_free(j->prompt);
	cJSON_Delete(j->messages);
	sbuf_fini(&j->text);
	event_free(j->ev_timer);
	orch_free(j);
}
