/*
 * workers_io.c - what goes in and out of a worker process: its output,
 * kept line by line for 'orchctl logs' and failure messages; its messages,
 * handed to orchd.worker_hooks; and the bounded queue of encoded messages the
 * socket did not take yet, flushed when its send fd polls writable (or on
 * the worker's second timer), so the loop never waits on a send.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "ipc/ipc.h"
#include "jobs.h"
#include "loop.h"
#include "model.h"
#include "orchd.h"
#include "workers.h"

/* ---- the process's output ---- */

void
workers_keep_line(struct worker *w, bool ours, const char *line, size_t n)
{
	struct worker_line *l = &w->log[w->log_next++ % WORKER_LOG_LINES];

	l->unix_ms = orch_unix_ms();
	l->ours = ours;
	snprintf(l->text, sizeof(l->text), "%.*s", (int)n, line);
}

static void
log_line(struct worker *w, const char *line, size_t n)
{
	while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n'))
		n--;
	if (n == 0)
		return;
	workers_keep_line(w, false, line, n);
	/* the worker's own "<N>" prefix is dropped: its line is our value */
	if (n > 3 && line[0] == '<' && line[2] == '>') {
		line += 3;
		n -= 3;
	}
	orch_log(ORCH_LOG_INFO, "worker_output", "worker=%s line=\"%.*s\"", w->id,
	         (int)(n < 1500 ? n : 1500), line);
}

void
workers_on_log(int fd, short what, void *arg)
{
	struct worker *w = arg;
	char buf[4096];
	ssize_t k = read(fd, buf, sizeof(buf));

	(void)what;
	if (k <= 0) { /* the worker closed its end: it is exiting */
		if (w->log_partial.n)
			log_line(w, w->log_partial.p, w->log_partial.n);
		sbuf_clear(&w->log_partial);
		loop_stop(w->ev_log);
		return;
	}
	size_t start = 0;
	for (size_t i = 0; i < (size_t)k; i++) {
		if (buf[i] != '\n')
			continue;
		if (w->log_partial.n) {
			sbuf_put(&w->log_partial, buf + start, i - start);
			log_line(w, w->log_partial.p, w->log_partial.n);
			sbuf_clear(&w->log_partial);
		} else {
			log_line(w, buf + start, i - start);
		}
		start = i + 1;
	}
	if (start < (size_t)k && w->log_partial.n < 65536)
		sbuf_put(&w->log_partial, buf + start, (size_t)k - start);
}

void
workers_tail(const struct worker *w, char *out, size_t n)
{
	uint64_t first = w->log_next > WORKER_TAIL ? w->log_next - WORKER_TAIL : 0;
	size_t used = 0;

	if (first < w->log_spawn)
		first = w->log_spawn;
	out[0] = '\0';
	for (uint64_t i = first; i < w->log_next && used + 1 < n; i++) {
		const struct worker_line *l = &w->log[i % WORKER_LOG_LINES];
		const char *text = l->text;
		if (l->ours)
			continue; /* orchd's own notes */
		if (text[0] == '<' && text[1] >= '0' && text[1] <= '7' && text[2] == '>') {
			if (text[1] >= '5')
				continue; /* notice, info, debug (the load's steps): nothing of why
				           */
			text += 3; /* the level's prefix is the journal's, not the reader's */
		}
		int k = snprintf(out + used, n - used, "%s%s", used ? " | " : "", text);
		used += k > 0 ? (size_t)k : 0;
	}
	if (used == 0)
		snprintf(out, n, "(none: it wrote no warning or error)");
}

/* ---- messages in ---- */

unsigned
workers_read_pending(struct worker *w)
{
	struct orchd *d = w->model->d;
	unsigned n = 0;

	for (int budget = 0; budget < 256 && w->ch != NULL; budget++) {
		Orch__Envelope *env = NULL;
		struct orch_errinfo e = {0};
		orch_err rv = ipc_recv(w->ch, 0, &env, &e);
		if (rv == ORCH_EAGAIN || rv == ORCH_ECLOSED)
			break;
		if (rv != ORCH_OK) {
			orch_log(ORCH_LOG_WARNING, "worker_msg_dropped", "worker=%s msg=\"%s\"",
			         w->id, e.msg);
			continue;
		}
		d->worker_hooks->message(d, w, env);
		ipc_envelope_free(env);
		n++;
	}
	return n;
}

void
workers_on_message(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)workers_read_pending(arg);
}

/* ---- messages out ---- */

static void
on_sendable(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	workers_flush(arg);
}

/* Drop the oldest queued message; the job it was about fails (not WORKER_LOST). */
static void
drop_head(struct worker *w, const char *why)
{
	struct worker_msg *m = &w->sendq[w->sendq_head];
	uint64_t job_id = m->job_id;

	orch_free(m->buf);
	m->buf = NULL;
	w->sendq_head = (w->sendq_head + 1) % WORKER_SENDQ;
	w->sendq_n--;
	struct job *j = job_id ? jobs_find(w->model->d, job_id) : NULL;
	if (j != NULL)
		jobs_fail(w->model->d, j, ORCH_EINTERNAL, why);
}

void
workers_flush(struct worker *w)
{
	while (w->sendq_n > 0 && w->ch != NULL) {
		struct worker_msg *m = &w->sendq[w->sendq_head];
		struct orch_errinfo e = {0};
		orch_err rv = ipc_send_nb(w->ch, m->buf, m->n, &e);
		if (rv == ORCH_EAGAIN)
			break;
		if (rv != ORCH_OK) {
			orch_log(ORCH_LOG_WARNING, "worker_send_failed", "worker=%s msg=\"%s\"",
			         w->id, e.msg);
			drop_head(w, "the message to the worker could not be sent");
			continue;
		}
		orch_free(m->buf);
		m->buf = NULL;
		w->sendq_head = (w->sendq_head + 1) % WORKER_SENDQ;
		w->sendq_n--;
	}
	if (w->ev_send == NULL)
		return;
	if (w->sendq_n > 0)
		loop_start(w->ev_send);
	else
		loop_stop(w->ev_send);
}

orch_err
workers_send(struct worker *w, uint8_t *buf, size_t n, uint64_t job_id)
{
	if (w->ch == NULL) {
		orch_free(buf);
		return ORCH_ECLOSED;
	}
	if (w->sendq_n == WORKER_SENDQ) {
		orch_free(buf);
		orch_log(ORCH_LOG_WARNING, "worker_sendq_full", "worker=%s queued=%u", w->id,
		         (unsigned)w->sendq_n);
		return ORCH_EQUEUE_FULL;
	}
	if (w->ev_send == NULL && w->model->d->base != NULL && ipc_send_fd(w->ch) >= 0)
		w->ev_send = loop_watch(w->model->d->base, ipc_send_fd(w->ch),
		                        LOOP_READ | LOOP_PERSIST, on_sendable, w);
	struct worker_msg *m = &w->sendq[(w->sendq_head + w->sendq_n) % WORKER_SENDQ];
	m->buf = buf;
	m->n = n;
	m->job_id = job_id;
	w->sendq_n++;
	workers_flush(w);
	return ORCH_OK;
}

void
workers_sendq_clear(struct worker *w)
{
	while (w->sendq_n > 0) {
		struct worker_msg *m = &w->sendq[w->sendq_head];
		orch_free(m->buf);
		m->buf = NULL;
		w->sendq_head = (w->sendq_head + 1) % WORKER_SENDQ;
		w->sendq_n--;
	}
	if (w->ev_send)
		loop_free(w->ev_send);
	w->ev_send = NULL;
}

orch_err
workers_send_env(struct worker *w, const Orch__Envelope *env, uint64_t job_id)
{
	struct orch_errinfo e = {0};
	uint8_t *buf = NULL;
	size_t n = 0;
	orch_err rv;

	if (w->ch == NULL)
		rv = orch_errf(&e, ORCH_ECLOSED, "no channel");
	else if ((rv = ipc_encode(env, &buf, &n, &e)) == ORCH_OK &&
	         (rv = workers_send(w, buf, n, job_id)) != ORCH_OK)
		orch_errf(&e, rv, "%u messages wait already", (unsigned)w->sendq_n);
	if (rv != ORCH_OK)
		orch_log(ORCH_LOG_WARNING, "worker_send_failed",
		         "worker=%s body=%s err=%s msg=\"%s\"", w->id,
		         ipc_body_name(env->body_case), orch_err_wire(rv), e.msg);
	return rv;
}
