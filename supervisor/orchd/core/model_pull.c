/*
 * model_pull.c - a model reference's file from the store, or pulled (model_pull.h).
 *
 * Design notes. Each pull has its own thread and pipe: pulls are rare and long, so one
 * thread per pull keeps them independent (two models pulling at once, one slow). The
 * thread runs hf_pull, keeping its progress under the pull's mutex, then writes one byte;
 * the loop's read event joins it, runs the callback unless the pull was cancelled, and
 * frees everything. Cancelling sets the stop flag hf_pull checks between chunks, so an
 * unloaded model's pull ends soon and leaves its partial file for the next one.
 */
#include "model_pull.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/readfile.h"
#include "loop.h"
#include "orchd.h"
#include "store/hf.h"
#include "store/store.h"

struct model_pull {
	struct orchd *d;
	model_pull_fn fn;
	void *arg;
	bool cancelled; /* the loop's */
	atomic_bool stop;
	pthread_t thread;
	int fd[2];
	struct event *ev;
	pthread_mutex_t lock; /* progress */
	struct model_pull_state st;
	char dir[PATH_MAX];
	char *token;
	char token_file[CFG_PATH_MAX]; /* read on the thread when no token was given; "": none */
	struct hf_ref ref;
	/* the outcome, the thread's until it writes the pipe */
	orch_err rv;
	struct orch_errinfo err;
	char path[PATH_MAX];
};

orch_err
model_pull_dir(const struct orchd *d, char *buf, size_t n, struct orch_errinfo *reterr)
{
	const char *state = getenv("STATE_DIRECTORY");
	int w = 0;

	if (d->cfg.model_dir[0])
		w = snprintf(buf, n, "%s", d->cfg.model_dir);
	else if (state != NULL && state[0] == '/') /* systemd's first state directory */
		w = snprintf(buf, n, "%.*s/models", (int)strcspn(state, ":"), state);
	else
		return store_default_dir(buf, n, reterr);
	if (w < 0 || (size_t)w >= n)
		return orch_errf(reterr, ORCH_ERANGE, "the model directory's path is too long");
	return ORCH_OK;
}

orch_err
model_pull_find(const struct orchd *d, const char *ref, char *path, size_t n,
                struct orch_errinfo *reterr)
{
	char dir[PATH_MAX];
	struct store *s = NULL;
	struct store_entry en = {0};
	orch_err rv;

	if ((rv = model_pull_dir(d, dir, sizeof(dir), reterr)) != ORCH_OK ||
	    (rv = store_open(dir, false, &s, reterr)) != ORCH_OK) {
		if (rv == ORCH_ENOTFOUND)
			rv = orch_errf(reterr, rv,
			               "%s is not in the model store (%s): run 'orchctl pull "
			               "%s' first, or let orchd pull it (pull = yes, orchctl "
			               "load --pull)",
			               ref, dir, ref);
		return rv;
	}
	rv = store_find(s, ref, &en, reterr);
	if (rv == ORCH_OK)
		rv = store_model_path(s, &en, path, n, reterr);
	else if (rv == ORCH_ENOTFOUND)
		rv = orch_errf(reterr, ORCH_ENOTFOUND,
		               "%s is not in the model store (%s): run 'orchctl pull %s' first, "
		               "or let orchd pull it (pull = yes, orchctl load --pull)",
		               ref, dir, ref);
	store_entry_fini(&en);
	store_close(s);
	return rv;
}

/* hf_pull's progress (the thread). */
static void
on_progress(void *ctx, const struct hf_progress *p)
{
	struct model_pull *q = ctx;

	pthread_mutex_lock(&q->lock);
	snprintf(q->st.file, sizeof(q->st.file), "%s", p->path);
	q->st.index = p->index;
	q->st.n_files = p->n_files;
	q->st.done = p->done;
	q->st.total = p->total;
	pthread_mutex_unlock(&q->lock);
}

/*
 * The token for gated repositories: [server] hf_token_file (@file), else
 * $HF_TOKEN; NULL: none. On the pull's thread: a FIFO or a hung mount named as
 * the file holds that pull only (a regular file only, opened without blocking).
 */
static char *
token(const char *file)
{
	const char *env = getenv("HF_TOKEN");
	char *text = NULL;
	size_t n = 0;

	struct orch_errinfo e = {0};
	if (file[0] && orch_read_regular(file, 4096, &text, &n, &e) == ORCH_OK) {
		while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
			text[--n] = '\0';
		return text;
	}
	if (file[0]) /* read at each pull: fixing the file fixes the next one */
		orch_log(ORCH_LOG_WARNING, "hf_token_file_unreadable", "file=%s msg=\"%s\"", file,
		         e.msg);
	return env && env[0] ? orch_strndup(env, strlen(env)) : NULL;
}

static void *
run(void *arg)
{
	struct model_pull *q = arg;
	struct store *s = NULL;
	struct store_entry en = {0};
	const char *off = getenv("HF_HUB_OFFLINE");

	if (q->token == NULL)
		q->token = token(q->token_file);
	struct hf_opts o = {.token = q->token,
	                    .offline =
	                            off && (strcmp(off, "1") == 0 || strcasecmp(off, "true") == 0),
	                    .progress = on_progress,
	                    .progress_ctx = q,
	                    .stop = &q->stop};
	char byte = 1;

	q->rv = store_open(q->dir, true, &s, &q->err);
	if (q->rv == ORCH_OK)
		q->rv = hf_pull(s, &q->ref, &o, &en, &q->err);
	if (q->rv == ORCH_OK)
		q->rv = store_model_path(s, &en, q->path, sizeof(q->path), &q->err);
	store_entry_fini(&en);
	store_close(s);
	while (write(q->fd[1], &byte, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static void
pull_free(struct model_pull *q)
{
	if (q->ev)
		loop_free(q->ev);
	close(q->fd[0]);
	close(q->fd[1]);
	pthread_mutex_destroy(&q->lock);
	orch_free(q->token);
	orch_free(q);
}

/* The thread is done: the callback (unless cancelled), then nothing of the pull is left. */
static void
on_done(int fd, short what, void *arg)
{
	struct model_pull *q = arg;
	char byte;

	(void)what;
	if (read(fd, &byte, 1) != 1)
		return;
	pthread_join(q->thread, NULL);
	if (!q->cancelled)
		q->fn(q->d, q->arg, q->rv, q->path, q->err.msg);
	pull_free(q);
}

orch_err
model_pull_start(struct orchd *d, const char *ref, const char *tok, model_pull_fn fn, void *arg,
                 struct model_pull **ret, struct orch_errinfo *reterr)
{
	struct model_pull *q = orch_calloc(1, sizeof(*q));
	orch_err rv;

	if (q == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	*q = (struct model_pull){.d = d, .fn = fn, .arg = arg, .fd = {-1, -1}};
	pthread_mutex_init(&q->lock, NULL);
	if ((rv = hf_ref_parse(ref, &q->ref, reterr)) != ORCH_OK ||
	    (rv = model_pull_dir(d, q->dir, sizeof(q->dir), reterr)) != ORCH_OK) {
		pull_free(q);
		return rv;
	}
	if (tok != NULL)
		q->token = orch_strndup(tok, strlen(tok));
	else
		snprintf(q->token_file, sizeof(q->token_file), "%s", d->cfg.hf_token_file);
	if (pipe2(q->fd, O_CLOEXEC) != 0 ||
	    (q->ev = loop_watch(d->base, q->fd[0], LOOP_READ | LOOP_PERSIST, on_done, q)) == NULL) {
		pull_free(q);
		return orch_errf(reterr, ORCH_EIO, "cannot start a pull: %s", strerror(errno));
	}
	loop_start(q->ev);
	sigset_t all, old; /* process signals stay the loop's */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int err = pthread_create(&q->thread, NULL, run, q);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		pull_free(q);
		return orch_errf(reterr, ORCH_EIO, "cannot start a thread to pull %s: %s", ref,
		                 strerror(err));
	}
	orch_log(ORCH_LOG_INFO, "model_pull", "ref=%s dir=%s", q->ref.canon, q->dir);
	*ret = q;
	return ORCH_OK;
}

void
model_pull_progress(struct model_pull *p, struct model_pull_state *ret)
{
	pthread_mutex_lock(&p->lock);
	*ret = p->st;
	pthread_mutex_unlock(&p->lock);
}

void
model_pull_cancel(struct model_pull *p)
{
	if (p == NULL)
		return;
	p->cancelled = true;
	atomic_store(&p->stop, true);
}
