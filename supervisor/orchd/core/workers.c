/*
 * workers.c - the life of an orch-worker process (workers.h): spawn it with
 * posix_spawn, watch its pidfd and its timeouts, restart it with
 * exponential backoff when it dies, drain it. Its output and messages are
 * workers_io.c's.
 */
#include "workers.h"

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
#include "base/clock.h"
#include "base/log.h"
#include "ipc/ipc.h"
#include "jobs.h"
#include "loop.h"
#include "model.h"
#include "orchd.h"
#include "rundir.h"

extern char **environ;

#define BACKOFF_FIRST_MS 1000u
#define BACKOFF_MAX_MS   60000u
#define FAIL_WINDOW_MS   (10u * 60u * 1000u)
#define FAIL_LIMIT       5u
/* A worker ready this long before it dies was healthy: earlier failures no longer count. */
#define HEALTHY_RESET_MS (60u * 1000u)
#define EXIT_GRACE_MS    100u /* a dead worker's last messages are read this long */

/* Ask @w to finish its jobs and exit. */
static void
send_drain(struct worker *w)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Drain drain = ORCH__DRAIN__INIT;

	env.body_case = ORCH__ENVELOPE__BODY_DRAIN;
	env.drain = &drain;
	(void)workers_send_env(w, &env, 0);
}

const char *
workers_state_name(enum worker_state s)
{
	static const char *const names[] = {"starting", "loading", "ready",   "draining",
	                                    "backoff",  "stopped", "waiting", "unhealthy"};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

struct worker *
workers_find(struct orchd *d, const char *id)
{
	for (struct model_entry *m = d->models; m; m = m->next)
		for (uint32_t i = 0; i < m->n_workers; i++)
			if (strcmp(m->workers[i]->id, id) == 0)
				return m->workers[i];
	return NULL;
}

struct worker *
workers_new(struct orchd *d, struct model_entry *m, uint32_t replica)
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

/* ---- life and death ---- */

static void on_exit_fd(int fd, short what, void *arg);

static void
on_timer(int fd, short what, void *arg)
{
	struct worker *w = arg;
	struct orchd *d = w->model->d;
	uint64_t now = orch_mono_ms();

	(void)fd;
	(void)what;
	if (w->reap_retry && w->pid > 0) { /* an exit the pidfd reported before it was reapable */
		on_exit_fd(w->pidfd, LOOP_READ, w);
		if (w->pid <= 0)
			return;
	}
	if (w->state == WORKER_BACKOFF) { /* the backoff is over */
		struct orch_errinfo e = {0};
		if (workers_spawn(d, w, &e) != ORCH_OK)
			orch_log_err(e.code, &e, "worker_spawn_failed", "worker=%s", w->id);
		return;
	}
	workers_flush(w); /* a send fd that did not wake us */
	const char *why = NULL;
	if (w->state == WORKER_STARTING &&
	    now - w->spawned_ms > d->cfg.handshake_timeout_s * 1000ull)
		why = "no Hello within handshake_timeout_s";
	else if (w->state == WORKER_LOADING &&
	         now - w->last_progress_ms > d->cfg.load_timeout_s * 1000ull)
		why = "no load progress within load_timeout_s";
	else if ((w->state == WORKER_READY || w->state == WORKER_DRAINING ||
	          w->state == WORKER_UNHEALTHY) &&
	         now - w->last_msg_ms > d->cfg.heartbeat_timeout_s * 1000ull)
		why = "no heartbeat within heartbeat_timeout_s";
	else if (w->state == WORKER_UNHEALTHY &&
	         now - w->unhealthy_ms > d->cfg.unhealthy_drain_s * 1000ull)
		why = "unhealthy, and its jobs did not finish within unhealthy_drain_s";
	else if (w->state == WORKER_STOPPED && w->pid > 0 &&
	         now - w->spawned_ms > d->cfg.shutdown_timeout_s * 1000ull)
		why = "did not exit within shutdown_timeout_s";
	if (why != NULL && w->pid > 0) {
		orch_log(ORCH_LOG_WARNING, "worker_kill", "worker=%s pid=%d why=\"%s\"", w->id,
		         (int)w->pid, why);
		snprintf(w->model->error, sizeof(w->model->error), "%s: %s", w->id, why);
		snprintf(w->kill_why, sizeof(w->kill_why), "%s", why);
		kill(w->pid, SIGKILL);
	}
}

/*
 * Whether @m has failed FAIL_LIMIT times within FAIL_WINDOW_MS, counting
 * this one. A worker that served for HEALTHY_RESET_MS before dying starts the
 * count again: five OOM kills spread over hours of serving are not a model
 * that cannot load.
 */
static bool
too_many_failures(struct model_entry *m, const struct worker *w, uint64_t now)
{
	if (w->ready_ms != 0 && now - w->ready_ms >= HEALTHY_RESET_MS)
		m->n_fail = 0;
	memmove(m->fail_ms + 1, m->fail_ms, sizeof(m->fail_ms) - sizeof(m->fail_ms[0]));
	m->fail_ms[0] = now;
	if (m->n_fail < FAIL_LIMIT)
		m->n_fail++;
	return m->n_fail == FAIL_LIMIT && now - m->fail_ms[FAIL_LIMIT - 1] <= FAIL_WINDOW_MS;
}

static void
close_process(struct worker *w)
{
	struct event **evs[] = {&w->ev_recv, &w->ev_pid, &w->ev_log};

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		if (*evs[i])
			loop_free(*evs[i]);
		*evs[i] = NULL;
	}
	workers_sendq_clear(w);
	if (w->pidfd >= 0)
		close(w->pidfd);
	if (w->log_fd >= 0)
		close(w->log_fd);
	w->pidfd = w->log_fd = -1;
	ipc_close(w->ch);
	w->ch = NULL;
	unlink(w->sock_path);
}

/* How a process with exit status @code (128 + N: signal N) ended, into @out. */
static void
exit_text(int code, char *out, size_t n)
{
	const char *sig = code > 128 ? sigabbrev_np(code - 128) : NULL;

	if (code > 128 && sig != NULL)
		snprintf(out, n, "killed by SIG%s (%s)", sig, strsignal(code - 128));
	else if (code > 128)
		snprintf(out, n, "killed by signal %d", code - 128);
	else
		snprintf(out, n, "exited with status %d", code);
}

/* Cut @s (NUL-terminated in @n bytes) at its last space when it filled them: whole words, "…". */
static void
cut_words(char *s, size_t n, bool filled)
{
	char *sp = filled ? strrchr(s, ' ') : NULL;

	if (sp != NULL && (size_t)(sp - s) + 4 < n)
		memcpy(sp, " …", sizeof(" …"));
}

/* The model gives up on @w: too many failures, or one no retry fixes. */
static void
give_up(struct orchd *d, struct worker *w, const char *why, int code)
{
	struct model_entry *m = w->model;
	char tail[1024], msg[sizeof(m->error)], how[128];

	workers_tail(w, tail, sizeof(tail));
	exit_text(code, how, sizeof(how));
	int k = m->error[0] ? snprintf(msg, sizeof(msg), "%s (%s); output: %s", m->error, how, tail)
	                    : snprintf(msg, sizeof(msg), "%s; output: %s", why, tail);
	cut_words(msg, sizeof(msg), k >= (int)sizeof(msg)); /* the tail's start is enough */
	memcpy(m->error, msg, sizeof(m->error));
	w->state = WORKER_STOPPED;
	m->met.load_failures++;
	orch_log(ORCH_LOG_ERR, "model_failed", "model=%s msg=\"%s\"", m->cfg.name, m->error);
	d->worker_hooks->changed(d, w);
}

/*
 * 1 s doubling to 60 s, ±20 % jitter so replicas do not restart in step. The
 * delay starts again at 1 s only after HEALTHY_RESET_MS of serving: a worker that
 * crashes seconds after each Ready backs off as one that never gets there.
 */
static void
schedule_restart(struct orchd *d, struct worker *w)
{
	if (w->ready_ms != 0 && orch_mono_ms() - w->ready_ms >= HEALTHY_RESET_MS)
		w->backoff_ms = 0;
	w->backoff_ms = w->backoff_ms ? w->backoff_ms * 2 : BACKOFF_FIRST_MS;
	if (w->backoff_ms > BACKOFF_MAX_MS)
		w->backoff_ms = BACKOFF_MAX_MS;
	uint64_t jitter = w->backoff_ms / 5;
	uint64_t delay = w->backoff_ms - jitter + (uint64_t)random() % (2 * jitter + 1);
	w->state = WORKER_BACKOFF;
	orch_log(ORCH_LOG_INFO, "worker_restart_scheduled", "worker=%s in_ms=%llu", w->id,
	         (unsigned long long)delay);
	loop_after(w->ev_timer, delay); /* a one-shot add over the periodic one */
	d->worker_hooks->changed(d, w);
}

/* Why @w's process (exit status @code) ended when nobody asked it to, into @out. */
static void
exit_reason(const struct worker *w, int code, char *out, size_t n)
{
	if (w->kill_why[0])
		snprintf(out, n, "killed: %s", w->kill_why);
	else if (w->state == WORKER_UNHEALTHY)
		snprintf(out, n, "unhealthy: %.280s", w->unhealthy_reason);
	else if (code == 128 + SIGKILL)
		snprintf(out, n,
		         "killed by SIGKILL, not sent by orchd: the kernel's OOM killer "
		         "(see the kernel log) or an operator");
	else
		exit_text(code, out, n);
}

/* Log and note @w's exit with @code; true when it was meant to stop. */
static bool
note_exit(struct worker *w, int code)
{
	bool intended = w->state == WORKER_STOPPED || w->state == WORKER_DRAINING || w->restart_now;
	char note[sizeof(w->log[0].text)];

	if (!intended)
		exit_reason(w, code, w->last_restart_reason, sizeof(w->last_restart_reason));
	if (intended)
		orch_log(code == 0 ? ORCH_LOG_INFO : ORCH_LOG_WARNING, "worker_exit",
		         "worker=%s pid=%d status=%d intended=yes", w->id, (int)w->exit_pid, code);
	else
		orch_log(ORCH_LOG_WARNING, "worker_exit",
		         "worker=%s pid=%d status=%d intended=no why=\"%s\"", w->id,
		         (int)w->exit_pid, code, w->last_restart_reason);
	int k = snprintf(note, sizeof(note), "orchd: pid %d exited with status %d%s%s%s",
	                 (int)w->exit_pid, code,
	                 intended ? "" : " (unexpected: ", intended ? "" : w->last_restart_reason,
	                 intended ? "" : ")");
	workers_keep_line(w, true, note, k < (int)sizeof(note) ? (size_t)k : sizeof(note) - 1);
	return intended;
}

bool
workers_settling(const struct worker *w)
{
	return w->pid <= 0 && w->ev_reap != NULL && loop_armed(w->ev_reap);
}

/* A dead worker's memory went with it: ps, status and /metrics say so. */
static void
forget_figures(struct worker *w)
{
	w->memory_used = 0;
	w->mem_weights = w->mem_kv = w->mem_scratch = 0;
	w->kv_used = w->kv_total = 0;
	w->kv_blocks_total = w->kv_blocks_used = w->kv_blocks_cached = 0;
}

/* The rest of a worker's exit, EXIT_GRACE_MS after it was reaped: its jobs, its restart. */
static void
on_reaped(int fd, short what, void *arg)
{
	struct worker *w = arg;
	struct orchd *d = w->model->d;
	struct model_entry *m = w->model;
	int st = w->exit_status;
	char why[256];

	(void)fd;
	(void)what;
	/*
	 * First what reached the channel meanwhile: on a busy machine this timer
	 * can run before the channel's event does, and a job whose end is waiting
	 * there is not lost. A late heartbeat must not bring back its figures.
	 */
	(void)workers_read_pending(w);
	forget_figures(w);
	if (m->state == MODEL_UNLOADING) { /* a late Hello or Ready cannot make this unintended */
		w->state = WORKER_DRAINING;
		w->restart_now = false;
	}
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	bool permanent = w->last_exit < 0; /* a load error no retry fixes */
	bool intended = note_exit(w, code);
	char how[128];
	exit_text(code, how, sizeof(how));
	snprintf(why, sizeof(why), "worker %s %s", w->id, how);
	close_process(w);
	d->worker_hooks->lost(d, w, why);
	w->last_exit = m->last_exit = code;
	if (w->restart_now && !d->stopping) {
		struct orch_errinfo e = {0};
		w->restart_now = false;
		w->restarts++;
		if (workers_spawn(d, w, &e) != ORCH_OK)
			orch_log_err(e.code, &e, "worker_spawn_failed", "worker=%s", w->id);
		d->worker_hooks->changed(d, w);
		return;
	}
	if (intended || d->stopping) {
		w->state = WORKER_STOPPED;
		if (w->ev_timer)
			loop_stop(w->ev_timer);
		d->worker_hooks->changed(d, w);
		return;
	}
	if (permanent || too_many_failures(m, w, orch_mono_ms())) {
		give_up(d, w, why, code);
		return;
	}
	m->restarts++; /* counted when it happens: a refused build or a bad file is not restarted */
	w->restarts++;
	schedule_restart(d, w);
}

/*
 * The worker's process is gone (its pidfd): reap it, route nothing more to
 * it, and settle the rest after EXIT_GRACE_MS. What it sent just before it
 * exited (a job's last tokens and end, after a drain) may still be on its
 * way through the channel, whose receive event goes on meanwhile: without
 * the grace, a job that finished would be reported WORKER_LOST.
 */
static void
on_exit_fd(int fd, short what, void *arg)
{
	struct worker *w = arg;
	int st = 0;

	(void)fd;
	(void)what;
	if (waitpid(w->pid, &st, WNOHANG) <= 0) {
		/* the pidfd says it exited, the kernel cannot give its status yet (a tracer
		 * holds it): the one-shot event is spent, the worker's timer asks again */
		w->reap_retry = true;
		return;
	}
	w->reap_retry = false;
	rundir_worker_reaped(w->model->d, w->id);
	w->exit_status = st;
	w->exit_pid = w->pid;
	w->pid = 0;
	forget_figures(w);
	if (w->ev_reap == NULL &&
	    (w->ev_reap = loop_timer(w->model->d->base, on_reaped, w)) == NULL) {
		on_reaped(-1, 0, w); /* out of memory: settle it now */
		return;
	}
	loop_after(w->ev_reap, EXIT_GRACE_MS);
}

/* ---- spawning ---- */

/* The KV pool's options of @mc from argv[@n] on (their numbers in @num[4..6]); the new n. */
static int
kv_argv(const struct cfg_model *mc, char num[7][24], const char **argv, int n)
{
	snprintf(num[4], 24, "%u", mc->kv_cache_mib);
	snprintf(num[5], 24, "%.17g", mc->kv_cache_fraction);
	snprintf(num[6], 24, "%u", mc->kv_block_tokens);
	if (mc->kv_cache_mib) {
		argv[n++] = "--kv-cache-mib";
		argv[n++] = num[4];
	}
	if (mc->kv_cache_fraction > 0) {
		argv[n++] = "--kv-cache-fraction";
		argv[n++] = num[5];
	}
	if (mc->kv_block_tokens) {
		argv[n++] = "--kv-block-tokens";
		argv[n++] = num[6];
	}
	if (!mc->prefix_cache)
		argv[n++] = "--no-prefix-cache";
	return n;
}

/* The worker's command line into @argv (room for 40); the numbers go into @num. */
static void
build_argv(struct orchd *d, struct worker *w, const char *url, char num[7][24], const char **argv)
{
	const struct cfg_model *mc = &w->model->cfg;
	int n = 0;

	snprintf(num[0], 24, "%u", mc->slots);
	snprintf(num[1], 24, "%u", mc->context);
	snprintf(num[2], 24, "%u", mc->threads);
	snprintf(num[3], 24, "%u", d->cfg.residency_check_s);
	const char *fixed[] = {d->worker_bin,
	                       "serve",
	                       "--endpoint",
	                       url,
	                       "--model",
	                       mc->path,
	                       "--device",
	                       w->device,
	                       "--worker-id",
	                       w->id,
	                       "--slots",
	                       num[0],
	                       "--debug-endpoint",
	                       w->debug_url,
	                       "--residency-check-s",
	                       num[3],
	                       "--hash-cache-dir",
	                       d->hash_dir[0] ? d->hash_dir : d->cfg.runtime_dir};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		argv[n++] = fixed[i];
	if (mc->context) {
		argv[n++] = "--context";
		argv[n++] = num[1];
	}
	if (mc->threads) {
		argv[n++] = "--threads";
		argv[n++] = num[2];
	}
	if (mc->hf_tokenizer) {
		argv[n++] = "--tokenizer";
		argv[n++] = "hf-json";
	}
	if (mc->scheduler == CFG_SCHED_PREFILL_FIRST) {
		argv[n++] = "--scheduler";
		argv[n++] = "prefill_first";
	}
	n = kv_argv(mc, num, argv, n);
	if (!d->cfg.hash_cache_beside)
		argv[n++] = "--no-hash-beside";
	argv[n] = NULL;
}

/*
 * posix_spawn @argv with its output on a pipe; w->pid, w->log_fd, w->pidfd. The
 * worker gets a process group of its own: a terminal's Ctrl-C (SIGINT to the
 * foreground group) reaches orchd alone, which drains its workers' jobs, rather
 * than every worker, which would cancel them.
 */
static orch_err
start_process(struct orchd *d, struct worker *w, const char **argv, struct orch_errinfo *reterr)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int pipefd[2];

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return orch_errf(reterr, ORCH_EIO, "pipe: %s", strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDERR_FILENO);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	int err = posix_spawn(&w->pid, d->worker_bin, &fa, &at, (char *const *)(uintptr_t)argv,
	                      environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	w->log_fd = pipefd[0];
	if (err != 0) {
		w->pid = 0;
		return orch_errf(reterr, ORCH_EIO, "spawn %s: %s", d->worker_bin, strerror(err));
	}
	w->pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
	if (w->pidfd < 0) {
		int e = errno;
		kill(w->pid, SIGKILL);
		waitpid(w->pid, NULL, 0);
		w->pid = 0;
		return orch_errf(reterr, ORCH_EIO, "pidfd_open: %s", strerror(e));
	}
	return ORCH_OK;
}

/* The loop's events for @w's channel, pidfd, output and timer. */
static orch_err
watch(struct orchd *d, struct worker *w, struct orch_errinfo *reterr)
{
	w->ev_recv = loop_watch(d->base, ipc_recv_fd(w->ch), LOOP_READ | LOOP_PERSIST,
	                        workers_on_message, w);
	w->ev_pid = loop_watch(d->base, w->pidfd, LOOP_READ, on_exit_fd, w);
	w->ev_log = loop_watch(d->base, w->log_fd, LOOP_READ | LOOP_PERSIST, workers_on_log, w);
	if (w->ev_timer == NULL)
		w->ev_timer = loop_every(d->base, on_timer, w);
	if (!w->ev_recv || !w->ev_pid || !w->ev_log || !w->ev_timer) {
		kill(w->pid, SIGKILL);
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	}
	loop_start(w->ev_recv);
	loop_start(w->ev_pid);
	loop_start(w->ev_log);
	loop_after(w->ev_timer, 1000);
	return ORCH_OK;
}

orch_err
workers_spawn(struct orchd *d, struct worker *w, struct orch_errinfo *reterr)
{
	char url[sizeof(w->sock_path) + 8], num[7][24], note[96];
	const char *argv[40];
	orch_err rv;

	snprintf(url, sizeof(url), "ipc://%s", w->sock_path);
	unlink(w->sock_path);
	if ((rv = ipc_open(url, IPC_LISTEN, &w->ch, reterr)) != ORCH_OK)
		return rv;
	build_argv(d, w, url, num, argv);
	if ((rv = start_process(d, w, argv, reterr)) != ORCH_OK) {
		close_process(w);
		return rv;
	}
	rundir_worker_started(d, w->id, w->pid); /* a later orchd can find it if we die */
	if ((rv = watch(d, w, reterr)) != ORCH_OK)
		return rv;
	w->state = WORKER_STARTING;
	w->spawned_ms = w->last_msg_ms = orch_mono_ms();
	w->load_pct = 0;
	w->last_exit = 0;
	w->ready_ms = 0;
	w->unhealthy_reason[0] = w->kill_why[0] = w->residency_error[0] = '\0';
	int k = snprintf(note, sizeof(note), "orchd: spawned pid %d on %s", (int)w->pid, w->device);
	workers_keep_line(w, true, note, (size_t)k);
	w->log_spawn = w->log_next;
	orch_log(ORCH_LOG_INFO, "worker_spawn", "worker=%s pid=%d model=%s device=%s", w->id,
	         (int)w->pid, w->model->cfg.path, w->device);
	return ORCH_OK;
}

void
workers_drain(struct orchd *d, struct worker *w)
{
	(void)d;
	if (w->pid <= 0 && workers_settling(w)) { /* on_reaped settles its jobs, then stops it */
		w->state = WORKER_DRAINING;
		return;
	}
	if (w->pid <= 0) {
		w->state = WORKER_STOPPED;
		if (w->ev_timer)
			loop_stop(w->ev_timer);
		return;
	}
	w->state = WORKER_DRAINING;
	send_drain(w);
	w->spawned_ms = orch_mono_ms(); /* shutdown_timeout_s counts from here */
}

bool
workers_healthy(const struct worker *w)
{
	return w->state != WORKER_UNHEALTHY && w->state != WORKER_BACKOFF;
}

void
workers_unhealthy(struct orchd *d, struct worker *w, const char *why)
{
	char note[sizeof(w->log[0].text)];

	if (w->state != WORKER_READY)
		return;
	w->state = WORKER_UNHEALTHY;
	w->unhealthy_ms = orch_mono_ms();
	w->unhealthy_total++;
	snprintf(w->unhealthy_reason, sizeof(w->unhealthy_reason), "%s", why);
	snprintf(w->model->error, sizeof(w->model->error), "%s: unhealthy: %s", w->id, why);
	orch_log(ORCH_LOG_ERR, "worker_unhealthy",
	         "worker=%s pid=%d model=%s jobs=%u drain_s=%u why=\"%s\"", w->id, (int)w->pid,
	         w->model->cfg.name, w->jobs, d->cfg.unhealthy_drain_s, why);
	int k = snprintf(note, sizeof(note), "orchd: unhealthy (%s): draining, then a restart",
	                 why);
	workers_keep_line(w, true, note, k < (int)sizeof(note) ? (size_t)k : sizeof(note) - 1);
	send_drain(w);
	d->worker_hooks->changed(d, w);
}

void
workers_restart(struct orchd *d, struct worker *w)
{
	struct orch_errinfo e = {0};

	if (w->pid > 0 ||
	    workers_settling(w)) { /* it dies (or died), then on_reaped starts it again */
		w->restart_now = true;
		if (w->pid > 0)
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
		rundir_worker_reaped(w->model->d, w->id);
	}
	close_process(w);
	if (w->ev_timer)
		loop_free(w->ev_timer);
	if (w->ev_reap)
		loop_free(w->ev_reap);
	sbuf_fini(&w->log_partial);
	orch_free(w);
}
