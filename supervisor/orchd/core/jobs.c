/*
 * jobs.c - a job from its request to its terminal event (jobs.h): its
 * unguessable id and its owner, and who may find it again; the events the
 * worker reports; the watchers following it; cancellation when the last one
 * goes; what a client is told of an error; expiry of a finished job (how
 * long and how many are kept: jobs_keep.c). No response format lives here
 * (job_sink).
 */
#include "jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "counters.h"
#include "job_logprobs.h"
#include "loop.h"
#include "orchd.h"
#include "toolparse.h"

static void job_timer(int fd, short what, void *arg);
static void job_deadline(int fd, short what, void *arg);

/* What a client is told when its job's own deadline passed. */
static const char deadline_msg[] = "the request's deadline passed (X-Deadline or deadline_ms)";

/* @n random bytes from the kernel (getrandom(2), blocking only before the pool is ready). */
static bool
fill_random(uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = getrandom(p, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

static void
to_hex(const uint8_t *p, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[p[i] >> 4];
		out[2 * i + 1] = hex[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* @j's uid and correlation id: 128 and 64 random bits. */
static bool
new_ids(struct job *j)
{
	uint8_t r[(JOBS_UID_HEX + JOBS_CORRELATION_HEX) / 2];

	if (!fill_random(r, sizeof(r))) {
		orch_log(ORCH_LOG_ERR, "job_id_failed", "err=\"%s\"", strerror(errno));
		return false;
	}
	to_hex(r, JOBS_UID_HEX / 2, j->uid);
	to_hex(r + JOBS_UID_HEX / 2, JOBS_CORRELATION_HEX / 2, j->correlation);
	return true;
}

/* Put @j at the head of the every-job and live lists. */
static void
link_job(struct orchd *d, struct job *j)
{
	j->next_all = d->jobs;
	d->jobs = j;
	d->n_jobs++;
	j->live_next = d->live;
	if (d->live)
		d->live->live_prev = j;
	d->live = j;
}

struct job *
jobs_new(struct orchd *d, enum job_kind kind, const struct job_sink *sink,
         const struct job_model *m, struct job_request *r, const struct job_owner *owner)
{
	struct job *j = orch_calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->ev_timer = loop_timer(d->base, job_timer, j);
	/* room for the events of a short job; growth never finds the array empty */
	j->events = orch_calloc(64, sizeof(*j->events));
	if (j->ev_timer == NULL || j->events == NULL || !new_ids(j)) {
		if (j->ev_timer)
			loop_free(j->ev_timer);
		orch_free(j->events);
		orch_free(j);
		return NULL;
	}
	j->cap_events = 64;
	j->d = d;
	j->id = ++d->next_job_id;
	j->kind = kind;
	if (owner != NULL)
		j->owner = *owner;
	j->sink = sink;
	j->model = m->entry;
	j->met = m->met;
	snprintf(j->model_name, sizeof(j->model_name), "%s", m->name);
	j->req = *r;
	memset(r, 0, sizeof(*r));
	j->created_ms = orch_mono_ms();
	j->created_unix = orch_unix_ms();
	if (j->req.deadline_unix_ms != 0) {
		uint64_t left = j->req.deadline_unix_ms > j->created_unix
		                        ? j->req.deadline_unix_ms - j->created_unix
		                        : 0;
		if ((j->ev_deadline = loop_timer(d->base, job_deadline, j)) == NULL) {
			*r = j->req; /* as it was: the caller frees it */
			loop_free(j->ev_timer);
			orch_free(j->events);
			orch_free(j);
			return NULL;
		}
		loop_after(j->ev_deadline, left);
	}
	link_job(d, j);
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

/* Whether @id is @uid, in time that does not depend on where they differ. */
static bool
uid_equal(const char *uid, const char *id)
{
	unsigned diff = 0;

	if (strlen(id) != JOBS_UID_HEX)
		return false;
	for (size_t i = 0; i < JOBS_UID_HEX; i++)
		diff |= (unsigned)(uid[i] ^ id[i]);
	return diff == 0;
}

struct job *
jobs_lookup(struct orchd *d, const char *id, const struct job_owner *owner)
{
	for (struct job *j = d->jobs; j; j = j->next_all) {
		if (j->kind != JOB_NATIVE || j->owner.keyed != owner->keyed ||
		    memcmp(j->owner.id, owner->id, sizeof(owner->id)) != 0)
			continue;
		/* the id, or the job_id its owner gave it: a key's namespace, or without keys the
		 * one local owner's (issue 62: the worker contract's cancel by job_id) */
		if (uid_equal(j->uid, id) || strcmp(j->ext_id, id) == 0)
			return j;
	}
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

/* ---- watchers ---- */

void
jobs_watch(struct orchd *d, struct job *j, struct job_watch *w, uint32_t after)
{
	(void)d;
	w->job = j;
	w->sent = after < j->n_events ? after : j->n_events;
	w->next = j->watches;
	j->watches = w;
	if (j->detached) {
		j->detached = false;
		loop_stop(j->ev_timer);
	}
	w->notify(w);
}

void
jobs_unwatch(struct orchd *d, struct job_watch *w, bool client_gone)
{
	struct job *j = w->job;

	for (struct job_watch **p = &j->watches; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	w->job = NULL;
	if (j->state == JOB_DONE && j->watches == NULL) {
		/* the timer frees it, or (kept) applies the caps it may have held past */
		loop_after(j->ev_timer, 0);
		return;
	}
	if (!client_gone || j->state == JOB_DONE || j->watches != NULL)
		return;
	if (j->req.resume_grace_s > 0) { /* the client may come back with Last-Event-ID */
		j->detached = true;
		loop_after(j->ev_timer, j->req.resume_grace_s * 1000ull);
		return;
	}
	if (j->met)
		j->met->cancelled_by_client++;
	jobs_cancel(d, j, "the client went away");
}

/* ---- events ---- */

/* The index of orch_requests_total's outcome for a terminal event. */
static int
outcome(const struct job_event *ev)
{
	if (ev->type == EV_END)
		return ev->finish < MET_FINISHES ? (int)ev->finish : (int)ORCH_FINISH_EOS;
	return MET_FINISHES + (int)ev->code;
}

static void
finish(struct orchd *d, struct job *j, const struct job_event *ev)
{
	uint64_t now = orch_mono_ms();

	j->state = JOB_DONE;
	j->ended_ms = now;
	unlink_live(d, j);
	if (j->met) {
		struct model_metrics *mm = j->met;
		mm->requests[outcome(ev)]++;
		mm->prompt_tokens += j->prompt_tokens;
		mm->generation_tokens += j->tokens_out;
		histo_observe(&mm->e2e, (double)(now - j->created_ms) / 1e3);
	}
	if (j->host) /* off its queue (when it ended while queued) and its worker */
		j->host->ended(d, j);
	char key[9] = "-"; /* the key's fingerprint: its digest's first 4 bytes */
	if (j->owner.keyed)
		to_hex(j->owner.id, 4, key);
	orch_log(ORCH_LOG_INFO, "job_end",
	         "job=%s job_id=%s key=%s model=%s outcome=%s tokens=%u ms=%llu", j->correlation,
	         j->ext_id, key, j->model_name,
	         ev->type == EV_END ? orch_finish_name(ev->finish) : orch_err_wire(ev->code),
	         j->tokens_out, (unsigned long long)(now - j->created_ms));
	job_request_fini(&j->req); /* the prompt and the messages: no longer needed */
	if (j->ev_deadline)
		loop_stop(j->ev_deadline);
	loop_stop(j->ev_timer);
	/* kept events_keep_s for a resume; else freed once nobody follows it */
	loop_after(j->ev_timer, jobs_keep(d, j) ? d->cfg.events_keep_s * 1000ull : 0);
}

/* Time to first token and between tokens, and the text so far. */
static void
on_token(struct job *j, const struct job_event *ev)
{
	uint64_t now = orch_mono_ms();

	if (j->first_token_ms == 0) {
		j->first_token_ms = now;
		j->first_token_ns = orch_mono_ns();
		if (j->met)
			histo_observe(&j->met->ttft, (double)(now - j->created_ms) / 1e3);
	} else if (j->met) {
		histo_observe(&j->met->itl, (double)(now - j->last_token_ms) / 1e3);
	}
	j->last_token_ms = now;
	for (const char *p = ev->text; p && *p; p++) /* code points: lead bytes */
		j->out_chars += ((unsigned char)*p & 0xC0) != 0x80;
	if (ev->text && (j->sink == NULL || j->sink->body != NULL)) /* an answer in one body */
		sbuf_puts(&j->text, ev->text);
}

/* Append @ev to @j's events; false when out of memory (only a non-terminal one is lost). */
static bool
append(struct job *j, const struct job_event *ev)
{
	bool terminal = ev->type == EV_END || ev->type == EV_ERROR;

	/* the last two slots are kept for a started and a terminal event, so a job always ends */
	if (!terminal && j->n_events + 2 >= j->cap_events) {
		uint32_t cap = 2 * j->cap_events;
		struct job_event *e = orch_reallocarray(j->events, cap, sizeof(*e));
		if (e == NULL)
			return false;
		j->events = e;
		j->cap_events = cap;
	}
	struct job_event *e = &j->events[j->n_events++];
	*e = *ev;
	e->text = ev->text ? orch_strndup(ev->text, strlen(ev->text)) : NULL;
	if (ev->type == EV_STARTED)
		j->started_ns = orch_mono_ns();
	return true;
}

/* A recipient that is a role answers in the conversation; any other is a tool. */
static bool
is_tool(const char *recipient)
{
	static const char *const roles[] = {"", "assistant", "user", "system", "developer"};

	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (strcmp(recipient, roles[i]) == 0)
			return false;
	return true;
}

const char *
jobs_error_param(const struct job *j, orch_err code, const char *msg)
{
	static const char *const grammar[] = {"grammar", "the grammar", "constrained output", NULL};

	if (code != ORCH_EINVAL || msg == NULL)
		return NULL;
	if (strncmp(msg, "job ", 4) == 0) { /* past a worker's "job N: " */
		size_t k = 4;
		while (msg[k] >= '0' && msg[k] <= '9')
			k++;
		if (k > 4 && msg[k] == ':' && msg[k + 1] == ' ')
			msg += k + 2;
	}
	if (strncmp(msg, "tool_choice", 11) == 0)
		return "tool_choice";
	if (strncmp(msg, "logit_bias", 10) == 0 || strncmp(msg, "no token is left", 16) == 0)
		return "logit_bias"; /* the second: what the grammar allowed, logit_bias banned */
	for (const char *const *p = grammar; *p && j->req.grammar_param != NULL; p++)
		if (strncmp(msg, *p, strlen(*p)) == 0) /* (the grammar itself is freed by now) */
			return j->req.grammar_param;
	return NULL;
}

uint32_t
jobs_msg(struct job *j, uint32_t wire, const char *channel, const char *recipient)
{
	for (uint32_t k = j->n_msgs; k > 0; k--) /* the last one, nearly always */
		if (j->msgs[k - 1].wire == wire)
			return k;
	struct job_msg *m = orch_reallocarray(j->msgs, j->n_msgs + 1, sizeof(*m));
	if (m == NULL)
		return 0;
	j->msgs = m;
	m = &m[j->n_msgs];
	*m = (struct job_msg){.wire = wire,
	                      .channel = orch_strndup(channel, strlen(channel)),
	                      .recipient = orch_strndup(recipient, strlen(recipient)),
	                      .tool = -1,
	                      .first_event = UINT32_MAX};
	if (m->channel == NULL || m->recipient == NULL) {
		orch_free(m->channel);
		orch_free(m->recipient);
		return 0;
	}
	if (is_tool(recipient))
		m->tool = (int32_t)j->n_tools++;
	return ++j->n_msgs;
}

void
jobs_event(struct orchd *d, struct job *j, const struct job_event *ev)
{
	if (j->state == JOB_DONE)
		return; /* exactly one terminal event */
	if (j->n_events == 0 && ev->type != EV_STARTED) {
		/* admitted by orchd, refused or lost before the worker started it: started first */
		struct job_event st = {.type = EV_STARTED, .unix_ms = orch_unix_ms()};
		append(j, &st);
	}
	if (!append(j, ev))
		return; /* out of memory: this token's event is lost, not the job's end */
	if (ev->type == EV_TOKEN && ev->msg && ev->text && ev->text[0] &&
	    j->msgs[ev->msg - 1].first_event == UINT32_MAX)
		j->msgs[ev->msg - 1].first_event = j->n_events - 1;
	if (ev->type == EV_TOKEN)
		on_token(j, ev);
	if (ev->type == EV_END || ev->type == EV_ERROR)
		finish(d, j, ev);
	for (struct job_watch *w = j->watches, *next; w; w = next) {
		next = w->next; /* notify may unwatch */
		w->notify(w);
	}
}

void
jobs_metrics_due(struct orchd *d, struct job *j)
{
	uint32_t every = j->req.metrics_every;
	uint64_t now = orch_mono_ns();

	if (every == 0 || j->tokens_out == 0 || j->tokens_out % every != 0 || j->state == JOB_DONE)
		return;
	struct job_event ev = {.type = EV_METRICS, .tokens_out = j->tokens_out};
	if (j->first_token_ns) {
		ev.decode_ms = (double)(now - j->first_token_ns) / 1e6;
		ev.prefill_ms = (double)(j->first_token_ns - j->started_ns) / 1e6;
	}
	jobs_event(d, j, &ev);
}

/* Whether a client may read the detail of an error of @code: it is about its request or capacity.
 */
static bool
detail_for_client(orch_err code)
{
	static const orch_err ok[] = {
	        ORCH_EINVAL,        ORCH_ERANGE,           ORCH_EUNSUPPORTED,
	        ORCH_ECONTEXT,      ORCH_ETIMEOUT,         ORCH_ECANCELLED,
	        ORCH_EQUEUE_FULL,   ORCH_EMODEL_NOT_FOUND, ORCH_EINSUFFICIENT_VRAM,
	        ORCH_ETEMPLATE,     ORCH_ETEMPLATE_RAISE,  ORCH_EOVERLOADED,
	        ORCH_EUNAUTHORIZED, ORCH_EJOB_NOT_FOUND,   ORCH_EROUTE_NOT_FOUND,
	        ORCH_EDEADLINE,
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (ok[i] == code)
			return true;
	return false;
}

const char *
jobs_client_message(orch_err code, const char *detail, char *buf, size_t n)
{
	const char *p = detail ? detail : "";
	size_t k = 4;

	if (!detail_for_client(code)) {
		if (code == ORCH_EMODEL_LOAD)
			return "the model failed to load";
		if (code == ORCH_EWORKER_LOST)
			return "the model's worker stopped before the job ended";
		if (code == ORCH_EVRAM)
			return "the worker ran out of device memory for this job";
		if (code == ORCH_ECUDA)
			return "a device error ended the job";
		return "internal error";
	}
	/* a worker's "job N: " names its wire id, which means nothing to the client */
	if (strncmp(p, "job ", 4) == 0) {
		while (p[k] >= '0' && p[k] <= '9')
			k++;
		if (k > 4 && p[k] == ':' && p[k + 1] == ' ') {
			snprintf(buf, n, "%s", p + k + 2);
			return buf;
		}
	}
	return p;
}

void
jobs_fail(struct orchd *d, struct job *j, orch_err code, const char *msg)
{
	char buf[512];

	/* the worker's own timeout (it is sent the sooner of the two) when the client's
	 * deadline came before request_timeout_s: it is the client's deadline that passed */
	if (code == ORCH_ETIMEOUT && j->req.deadline_unix_ms != 0 &&
	    j->req.deadline_unix_ms <= j->created_unix + d->cfg.request_timeout_s * 1000ull) {
		code = ORCH_EDEADLINE;
		msg = deadline_msg;
	}
	const char *text = jobs_client_message(code, msg, buf, sizeof(buf));
	struct job_event ev = {.type = EV_ERROR, .code = code, .text = (char *)(uintptr_t)text};

	if (j->state != JOB_DONE && text != msg) /* what the client does not see, the log has */
		orch_log(code == ORCH_ECANCELLED ? ORCH_LOG_INFO : ORCH_LOG_WARNING, "job_error",
		         "job=%s err=%s msg=\"%s\"", j->correlation, orch_err_wire(code),
		         msg ? msg : "");
	jobs_event(d, j, &ev);
}

void
jobs_cancel(struct orchd *d, struct job *j, const char *why)
{
	if (j->state == JOB_DONE)
		return;
	orch_log(ORCH_LOG_INFO, "job_cancel", "job=%s why=\"%s\"", j->correlation, why);
	if (j->state == JOB_QUEUED || j->worker == NULL || j->host == NULL) {
		jobs_fail(d, j, ORCH_ECANCELLED, why);
		return;
	}
	if (!j->cancel_sent) {
		j->cancel_sent = true;
		if (!j->host->cancel(d, j))
			jobs_fail(d, j, ORCH_ECANCELLED, why);
	}
}

/* The detach grace; expiry once done. */
static void
job_timer(int fd, short what, void *arg)
{
	struct job *j = arg;
	struct orchd *d = j->d;

	(void)fd;
	(void)what;
	if (j->state == JOB_DONE) {
		if (j->watches != NULL) {
			loop_after(j->ev_timer, 1000);
		} else if (!jobs_keep_tick(d, j)) {
			jobs_free(d, j); /* expired, or never kept */
		}
		return;
	}
	if (j->detached && j->watches == NULL)
		jobs_cancel(d, j, "the client did not come back");
}

/*
 * The job's own deadline: it ends now, queued or running, whatever its worker
 * does (a running one is cancelled there; what the worker says of it after is
 * for a job that has ended, and dropped).
 */
static void
job_deadline(int fd, short what, void *arg)
{
	struct job *j = arg;
	struct orchd *d = j->d;

	(void)fd;
	(void)what;
	if (j->state == JOB_DONE)
		return;
	orch_log(ORCH_LOG_INFO, "job_deadline", "job=%s state=%s tokens=%u", j->correlation,
	         j->state == JOB_QUEUED ? "queued" : "running", j->tokens_out);
	if (j->worker != NULL && j->host != NULL && !j->cancel_sent) {
		j->cancel_sent = true;
		(void)j->host->cancel(d, j); /* a worker gone is the job's end all the same */
	}
	jobs_fail(d, j, ORCH_EDEADLINE, deadline_msg);
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
	while (j->watches) {
		struct job_watch *w = j->watches;
		j->watches = w->next;
		w->job = NULL;
		w->release(w);
	}
	if (j->host)
		j->host->freed(d, j);
	jobs_keep_drop(d, j);
	if (j->packed == NULL)
		for (uint32_t i = 0; i < j->n_events; i++)
			orch_free(j->events[i].text);
	orch_free(j->packed);
	orch_free(j->events);
	for (uint32_t i = 0; i < j->n_msgs; i++) {
		orch_free(j->msgs[i].channel);
		orch_free(j->msgs[i].recipient);
	}
	orch_free(j->msgs);
	job_lp_free(j);
	orch_free(j->echo);
	toolparse_free(j->tp);
	job_request_fini(&j->req);
	sbuf_fini(&j->text);
	loop_free(j->ev_timer);
	if (j->ev_deadline)
		loop_free(j->ev_deadline);
	orch_free(j);
}
