/*
 * workers.c - one orch-worker process per (model, replica): spawn it with
 * posix_spawn, capture its output line by line into our log, follow the
 * handshake (Hello, LoadProgress, Ready), watch its heartbeats, its pidfd
 * and its timeouts, and restart it with exponential backoff when it dies.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "orchd.h"

extern char **environ;

#define BACKOFF_FIRST_MS 1000u
#define BACKOFF_MAX_MS   60000u
#define FAIL_WINDOW_MS   (10u * 60u * 1000u)
#define FAIL_LIMIT       5u
#define SEND_TIMEOUT_MS  2000

static struct orchd *
daemon_of(struct worker *w)
{
	return w->model->d;
}

const char *
workers_state_name(enum worker_state s)
{
	static const char *const names[] = {"starting", "loading", "ready",  "draining",
	                                    "backoff",  "stopped", "waiting"};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

struct worker *
workers_find(struct orchd *d, const char *id)
{
	for (struct model *m = d->models; m; m = m->next)
		for (uint32_t i = 0; i < m->n_workers; i++)
			if (strcmp(m->workers[i]->id, id) == 0)
				return m->workers[i];
	return NULL;
}

struct worker *
workers_new(struct orchd *d, struct model *m, uint32_t replica)
{
	struct worker *w = orch_calloc(1, sizeof(*w));

	if (w == NULL)
		return NULL;
	w->model = m;
	w->replica = replica;
	w->pidfd = w->log_fd = -1;
	w->state = WORKER_STOPPED;
	snprintf(w->id, sizeof(w->id), "%s-%u", m->cfg.name, replica);
	snprintf(w->device, sizeof(w->device), "%s", m->cfg.devices[replica % m->cfg.n_devices]);
	snprintf(w->sock_path, sizeof(w->sock_path), "%s/worker-%s.sock", d->cfg.runtime_dir,
	         w->id);
	snprintf(w->debug_url, sizeof(w->debug_url), "ipc://%s/worker-%s.debug", d->cfg.runtime_dir,
	         w->id);
	return w;
}

bool
workers_send(struct worker *w, Orch__Envelope *env)
{
	struct orch_errinfo e = {0};

	if (w->ch == NULL)
		return false;
	if (ipc_send(w->ch, env, SEND_TIMEOUT_MS, &e) != ORCH_OK) {
		orch_log(ORCH_LOG_WARNING, "worker_send_failed", "worker=%s body=%s msg=\"%s\"",
		         w->id, ipc_body_name(env->body_case), e.msg);
		return false;
	}
	return true;
}

/* ---- the process's output ---- */

/* Keeps one line in @w's ring for 'orchctl logs' and failure messages. */
static void
keep_line(struct worker *w, bool ours, const char *line, size_t n)
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
	keep_line(w, false, line, n);
	/* the worker's own "<N>" prefix is dropped: its line is our value */
	if (n > 3 && line[0] == '<' && line[2] == '>') {
		line += 3;
		n -= 3;
	}
	orch_log(ORCH_LOG_INFO, "worker_output", "worker=%s line=\"%.*s\"", w->id,
	         (int)(n < 1500 ? n : 1500), line);
}

static void
on_log(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	char buf[4096];
	ssize_t k = read(fd, buf, sizeof(buf));

	(void)what;
	if (k <= 0) { /* the worker closed its end: it is exiting */
		if (w->log_partial.n)
			log_line(w, w->log_partial.p, w->log_partial.n);
		sbuf_clear(&w->log_partial);
		event_del(w->ev_log);
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

/* The last lines of this process's output, joined by " | ". */
static void
tail_text(const struct worker *w, char *out, size_t n)
{
	uint64_t first = w->log_next > WORKER_TAIL ? w->log_next - WORKER_TAIL : 0;
	size_t used = 0;

	if (first < w->log_spawn)
		first = w->log_spawn;
	out[0] = '\0';
	for (uint64_t i = first; i < w->log_next && used + 1 < n; i++) {
		const struct worker_line *l = &w->log[i % WORKER_LOG_LINES];
		if (l->ours)
			continue;
		int k = snprintf(out + used, n - used, "%s%s", used ? " | " : "", l->text);
		used += k > 0 ? (size_t)k : 0;
	}
}

/* ---- messages ---- */

static void
on_worker_error(struct orchd *d, struct worker *w, const Orch__Error *er)
{
	struct model *m = w->model;

	snprintf(m->error, sizeof(m->error), "%s: %s", w->id, er->message);
	orch_log(ORCH_LOG_ERR, "worker_error", "worker=%s code=%d msg=\"%s\"", w->id, er->code,
	         er->message);
	/* a bad model file or too little memory will not get better by retrying */
	if (er->code == ORCH__ERROR_CODE__MODEL_LOAD_FAILED ||
	    er->code == ORCH__ERROR_CODE__INSUFFICIENT_VRAM ||
	    er->code == ORCH__ERROR_CODE__INVALID_REQUEST)
		w->last_exit = -(int)er->code; /* remembered for on_exit: no restart */
	(void)d;
}

static void
on_msg(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct orchd *d = daemon_of(w);

	(void)fd;
	(void)what;
	for (int budget = 0; budget < 256 && w->ch != NULL; budget++) {
		Orch__Envelope *env = NULL;
		struct orch_errinfo e = {0};
		orch_err rv = ipc_recv(w->ch, 0, &env, &e);
		if (rv == ORCH_EAGAIN || rv == ORCH_ECLOSED)
			return;
		if (rv != ORCH_OK) {
			orch_log(ORCH_LOG_WARNING, "worker_msg_dropped", "worker=%s msg=\"%s\"",
			         w->id, e.msg);
			continue;
		}
		uint64_t now = orch_mono_ms();
		w->last_msg_ms = now;
		switch (env->body_case) {
		case ORCH__ENVELOPE__BODY_HELLO:
			if (ipc_check_hello(env->hello, &e) != ORCH_OK) {
				orch_log(ORCH_LOG_ERR, "worker_refused", "worker=%s msg=\"%s\"",
				         w->id, e.msg);
				snprintf(w->model->error, sizeof(w->model->error), "%s", e.msg);
				w->last_exit = -1;
				kill(w->pid, SIGKILL);
				break;
			}
			w->state = WORKER_LOADING;
			w->last_progress_ms = now;
			break;
		case ORCH__ENVELOPE__BODY_LOAD_PROGRESS:
			w->load_pct = env->load_progress->percent;
			w->last_progress_ms = now;
			admin_model_event(d, w->model, "progress");
			break;
		case ORCH__ENVELOPE__BODY_READY:
			w->state = WORKER_READY;
			w->load_pct = 100;
			w->slots_total = env->ready->slots;
			w->memory_used = env->ready->memory_used;
			w->backoff_ms = 0;
			if (env->ready->chat_template && env->ready->chat_template[0])
				snprintf(w->model->chat_template, sizeof(w->model->chat_template),
				         "%s", env->ready->chat_template);
			orch_log(ORCH_LOG_INFO, "worker_ready", "worker=%s pid=%d ms=%llu", w->id,
			         (int)w->pid, (unsigned long long)(now - w->spawned_ms));
			histo_observe(&w->model->met.load, (double)(now - w->spawned_ms) / 1e3);
			w->model->met.loads++;
			models_worker_state(d, w->model);
			models_dispatch(d, w->model);
			break;
		case ORCH__ENVELOPE__BODY_HEARTBEAT: {
			const Orch__Heartbeat *hb = env->heartbeat;
			w->slots_busy = hb->slots_busy;
			w->slots_total = hb->slots_total;
			w->kv_used = hb->kv_cells_used;
			w->kv_total = hb->kv_cells_total;
			w->memory_used = hb->memory_used;
			w->decode_steps = hb->decode_steps;
			w->residency_ok = hb->residency_ok;
			w->degraded = hb->degraded;
			break;
		}
		case ORCH__ENVELOPE__BODY_ERROR:
			if (env->error->job_id == 0) {
				on_worker_error(d, w, env->error);
				break;
			}
			jobs_from_worker(d, w, env);
			break;
		default:
			jobs_from_worker(d, w, env);
			break;
		}
		ipc_envelope_free(env);
	}
}

/* ---- life and death ---- */

static void close_process(struct worker *w);

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct orchd *d = daemon_of(w);
	uint64_t now = orch_mono_ms();

	(void)fd;
	(void)what;
	if (w->state == WORKER_BACKOFF) { /* the backoff is over */
		struct orch_errinfo e = {0};
		if (workers_spawn(d, w, &e) != ORCH_OK)
			orch_log_err(e.code, &e, "worker_spawn_failed", "worker=%s", w->id);
		return;
	}
	const char *why = NULL;
	if (w->state == WORKER_STARTING &&
	    now - w->spawned_ms > d->cfg.handshake_timeout_s * 1000ull)
		why = "no Hello within handshake_timeout_s";
	else if (w->state == WORKER_LOADING &&
	         now - w->last_progress_ms > d->cfg.load_timeout_s * 1000ull)
		why = "no load progress within load_timeout_s";
	else if ((w->state == WORKER_READY || w->state == WORKER_DRAINING) &&
	         now - w->last_msg_ms > d->cfg.heartbeat_timeout_s * 1000ull)
		why = "no heartbeat within heartbeat_timeout_s";
	else if (w->state == WORKER_STOPPED && w->pid > 0 &&
	         now - w->spawned_ms > d->cfg.shutdown_timeout_s * 1000ull)
		why = "did not exit within shutdown_timeout_s";
	if (why != NULL && w->pid > 0) {
		orch_log(ORCH_LOG_WARNING, "worker_kill", "worker=%s pid=%d why=\"%s\"", w->id,
		         (int)w->pid, why);
		snprintf(w->model->error, sizeof(w->model->error), "%s: %s", w->id, why);
		kill(w->pid, SIGKILL);
	}
}

/* Whether @m has failed FAIL_LIMIT times within FAIL_WINDOW_MS, counting this one. */
static bool
too_many_failures(struct model *m, uint64_t now)
{
	memmove(m->fail_ms + 1, m->fail_ms, sizeof(m->fail_ms) - sizeof(m->fail_ms[0]));
	m->fail_ms[0] = now;
	if (m->n_fail < FAIL_LIMIT)
		m->n_fail++;
	return m->n_fail == FAIL_LIMIT && now - m->fail_ms[FAIL_LIMIT - 1] <= FAIL_WINDOW_MS;
}

static void
on_exit_fd(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct orchd *d = daemon_of(w);
	struct model *m = w->model;
	int st = 0;
	char tail[1024], why[256];

	(void)fd;
	(void)what;
	if (waitpid(w->pid, &st, WNOHANG) <= 0)
		return;
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	bool intended = w->state == WORKER_STOPPED || w->state == WORKER_DRAINING || w->restart_now;
	bool permanent = w->last_exit < 0; /* a load error no retry fixes */
	snprintf(why, sizeof(why), "worker %s exited with status %d", w->id, code);
	orch_log(intended && code == 0 ? ORCH_LOG_INFO : ORCH_LOG_WARNING, "worker_exit",
	         "worker=%s pid=%d status=%d intended=%s", w->id, (int)w->pid, code,
	         intended ? "yes" : "no");
	char note[96];
	int k = snprintf(note, sizeof(note), "orchd: pid %d exited with status %d%s", (int)w->pid,
	                 code, intended ? "" : " (unexpected)");
	keep_line(w, true, note, (size_t)k);
	w->pid = 0;
	close_process(w);
	jobs_worker_lost(d, w, why);
	w->last_exit = code;
	m->last_exit = code;
	if (w->restart_now && !d->stopping) {
		struct orch_errinfo e = {0};
		w->restart_now = false;
		w->restarts++;
		if (workers_spawn(d, w, &e) != ORCH_OK)
			orch_log_err(e.code, &e, "worker_spawn_failed", "worker=%s", w->id);
		models_worker_state(d, m);
		return;
	}
	if (intended || d->stopping) {
		w->state = WORKER_STOPPED;
		if (w->ev_timer)
			event_del(w->ev_timer);
		models_worker_state(d, m);
		return;
	}
	m->restarts++;
	w->restarts++;
	tail_text(w, tail, sizeof(tail));
	if (permanent || too_many_failures(m, orch_mono_ms())) {
		char msg[sizeof(m->error)];
		if (snprintf(msg, sizeof(msg), "%s (status %d); output: %s",
		             m->error[0] ? m->error : why, code, tail) >= (int)sizeof(msg))
			msg[sizeof(msg) - 1] = '\0'; /* cut: the tail's start is enough */
		memcpy(m->error, msg, sizeof(m->error));
		w->state = WORKER_STOPPED;
		m->met.load_failures++;
		orch_log(ORCH_LOG_ERR, "model_failed", "model=%s msg=\"%s\"", m->cfg.name,
		         m->error);
		models_worker_state(d, m);
		return;
	}
	/* 1 s doubling to 60 s, ±20 % jitter so replicas do not restart in step */
	w->backoff_ms = w->backoff_ms ? w->backoff_ms * 2 : BACKOFF_FIRST_MS;
	if (w->backoff_ms > BACKOFF_MAX_MS)
		w->backoff_ms = BACKOFF_MAX_MS;
	uint64_t jitter = w->backoff_ms / 5;
	uint64_t delay = w->backoff_ms - jitter + (uint64_t)random() % (2 * jitter + 1);
	w->state = WORKER_BACKOFF;
	orch_log(ORCH_LOG_INFO, "worker_restart_scheduled", "worker=%s in_ms=%llu", w->id,
	         (unsigned long long)delay);
	struct timeval tv = {(time_t)(delay / 1000), (suseconds_t)(delay % 1000) * 1000};
	evtimer_add(w->ev_timer, &tv); /* a one-shot add over the periodic one */
	models_worker_state(d, m);
}

static void
close_process(struct worker *w)
{
	if (w->ev_recv) {
		event_free(w->ev_recv);
		w->ev_recv = NULL;
	}
	if (w->ev_pid) {
		event_free(w->ev_pid);
		w->ev_pid = NULL;
	}
	if (w->ev_log) {
		event_free(w->ev_log);
		w->ev_log = NULL;
	}
	if (w->pidfd >= 0)
		close(w->pidfd);
	if (w->log_fd >= 0)
		close(w->log_fd);
	w->pidfd = w->log_fd = -1;
	ipc_close(w->ch);
	w->ch = NULL;
	unlink(w->sock_path);
}

orch_err
workers_spawn(struct orchd *d, struct worker *w, struct orch_errinfo *reterr)
{
	const struct cfg_model *mc = &w->model->cfg;
	char url[sizeof(w->sock_path) + 8], slots[16], ctx[16], threads[16];
	const char *argv[32];
	int n = 0, pipefd[2];
	posix_spawn_file_actions_t fa;
	orch_err rv;

	snprintf(url, sizeof(url), "ipc://%s", w->sock_path);
	unlink(w->sock_path);
	if ((rv = ipc_open(url, IPC_LISTEN, &w->ch, reterr)) != ORCH_OK)
		return rv;
	if (pipe2(pipefd, O_CLOEXEC) != 0) {
		close_process(w);
		return orch_errf(reterr, ORCH_EIO, "pipe: %s", strerror(errno));
	}
	snprintf(slots, sizeof(slots), "%u", mc->slots);
	snprintf(ctx, sizeof(ctx), "%u", mc->context);
	snprintf(threads, sizeof(threads), "%u", mc->threads);
	argv[n++] = d->worker_bin;
	argv[n++] = "serve";
	argv[n++] = "--endpoint";
	argv[n++] = url;
	argv[n++] = "--model";
	argv[n++] = mc->path;
	argv[n++] = "--device";
	argv[n++] = w->device;
	argv[n++] = "--worker-id";
	argv[n++] = w->id;
	argv[n++] = "--slots";
	argv[n++] = slots;
	argv[n++] = "--debug-endpoint";
	argv[n++] = w->debug_url;
	if (mc->context) {
		argv[n++] = "--context";
		argv[n++] = ctx;
	}
	if (mc->threads) {
		argv[n++] = "--threads";
		argv[n++] = threads;
	}
	if (mc->hf_tokenizer) {
		argv[n++] = "--tokenizer";
		argv[n++] = "hf-json";
	}
	argv[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDERR_FILENO);
	int err = posix_spawn(&w->pid, d->worker_bin, &fa, NULL, (char *const *)(uintptr_t)argv,
	                      environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	w->log_fd = pipefd[0];
	if (err != 0) {
		w->pid = 0;
		close_process(w);
		return orch_errf(reterr, ORCH_EIO, "spawn %s: %s", d->worker_bin, strerror(err));
	}
	w->pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
	if (w->pidfd < 0) {
		kill(w->pid, SIGKILL);
		waitpid(w->pid, NULL, 0);
		w->pid = 0;
		close_process(w);
		return orch_errf(reterr, ORCH_EIO, "pidfd_open: %s", strerror(errno));
	}
	w->ev_recv = event_new(d->base, ipc_recv_fd(w->ch), EV_READ | EV_PERSIST, on_msg, w);
	w->ev_pid = event_new(d->base, w->pidfd, EV_READ, on_exit_fd, w);
	w->ev_log = event_new(d->base, w->log_fd, EV_READ | EV_PERSIST, on_log, w);
	if (w->ev_timer == NULL)
		w->ev_timer = event_new(d->base, -1, EV_PERSIST, on_timer, w);
	if (!w->ev_recv || !w->ev_pid || !w->ev_log || !w->ev_timer) {
		kill(w->pid, SIGKILL);
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	}
	struct timeval second = {1, 0};
	event_add(w->ev_recv, NULL);
	event_add(w->ev_pid, NULL);
	event_add(w->ev_log, NULL);
	event_add(w->ev_timer, &second);
	w->state = WORKER_STARTING;
	w->spawned_ms = w->last_msg_ms = orch_mono_ms();
	w->load_pct = 0;
	w->last_exit = 0;
	char note[96];
	int k = snprintf(note, sizeof(note), "orchd: spawned pid %d on %s", (int)w->pid, w->device);
	keep_line(w, true, note, (size_t)k);
	w->log_spawn = w->log_next;
	orch_log(ORCH_LOG_INFO, "worker_spawn", "worker=%s pid=%d model=%s device=%s", w->id,
	         (int)w->pid, mc->path, w->device);
	return ORCH_OK;
}

bool
workers_submit(struct orchd *d, struct worker *w, struct job *j)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Submit s = ORCH__SUBMIT__INIT;
	Orch__ChatMessage msgs[64], *mp[64];
	char empty[] = "";

	s.job_id = j->id;
	s.prompt = j->prompt ? j->prompt : empty;
	s.sampling = &j->sp;
	s.max_tokens = j->max_tokens;
	s.stop = j->stops;
	s.n_stop = j->n_stops;
	s.correlation_id = j->correlation;
	s.deadline_unix_ms = j->created_unix + d->cfg.request_timeout_s * 1000ull;
	if (j->messages != NULL) {
		const cJSON *it;
		size_t k = 0;
		cJSON_ArrayForEach(it, j->messages)
		{
			if (k == 64)
				break;
			orch__chat_message__init(&msgs[k]);
			msgs[k].role = cJSON_GetObjectItem(it, "role")->valuestring;
			msgs[k].content = cJSON_GetObjectItem(it, "content")->valuestring;
			mp[k] = &msgs[k];
			k++;
		}
		s.messages = mp;
		s.n_messages = k;
		s.chat = true;
	}
	env.body_case = ORCH__ENVELOPE__BODY_SUBMIT;
	env.submit = &s;
	return workers_send(w, &env);
}

static void
control(struct worker *w, Orch__Envelope__BodyCase what)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Drain drain = ORCH__DRAIN__INIT;
	Orch__Shutdown shut = ORCH__SHUTDOWN__INIT;

	env.body_case = what;
	if (what == ORCH__ENVELOPE__BODY_DRAIN)
		env.drain = &drain;
	else
		env.shutdown = &shut;
	workers_send(w, &env);
}

/* Drain (finish active jobs, then exit) or shut down (cancel them) @w. */
static void
wind_down(struct worker *w, bool drain)
{
	if (w->pid <= 0) {
		w->state = WORKER_STOPPED;
		if (w->ev_timer)
			event_del(w->ev_timer);
		return;
	}
	w->state = drain ? WORKER_DRAINING : WORKER_STOPPED;
	control(w, drain ? ORCH__ENVELOPE__BODY_DRAIN : ORCH__ENVELOPE__BODY_SHUTDOWN);
	w->spawned_ms = orch_mono_ms(); /* shutdown_timeout_s counts from here */
}

void
workers_drain(struct orchd *d, struct worker *w)
{
	(void)d;
	wind_down(w, true);
}

void
workers_stop(struct orchd *d, struct worker *w)
{
	(void)d;
	wind_down(w, false);
}

void
workers_restart(struct orchd *d, struct worker *w)
{
	struct orch_errinfo e = {0};

	if (w->pid > 0) { /* it dies, then on_exit starts it again */
		w->restart_now = true;
		kill(w->pid, SIGTERM);
		return;
	}
	if (workers_spawn(d, w, &e) != ORCH_OK)
		orch_log_err(e.code, &e, "worker_spawn_failed", "worker=%s", w->id);
}

void
workers_free(struct worker *w)
{
	if (w == NULL)
		return;
	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		waitpid(w->pid, NULL, 0);
	}
	close_process(w);
	if (w->ev_timer)
		event_free(w->ev_timer);
	sbuf_fini(&w->log_partial);
	orch_free(w);
}
