/*
 * inspect.c - model files read on helper threads (inspect.h).
 *
 * Design notes. One pipe per orchd, made on the first request: a thread
 * writes its request's pointer (8 bytes, atomic on a pipe) when it is
 * done, and the loop's read event delivers it. The thread touches only its
 * own request (path, sizes in; facts out) and the pipe's write end, which
 * stays open while any thread may still write (a closed and reused
 * descriptor number would take the pointer somewhere else).
 */
#include "inspect.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/alloc.h"
#include "base/log.h"
#include "gguf/gguf.h"
#include "gguf/ident.h"
#include "gguf/model_info.h"
#include "orchd.h"

struct inspect {
	struct orchd *d;
	struct inspector *in;
	inspect_fn fn;
	void *arg;
	bool cancelled;             /* the loop's: the thread never reads it */
	struct inspect_shape shape; /* slots 0: no estimate */
	struct inspect_facts facts;
	char path[]; /* NUL-terminated */
};

struct inspector {
	int fd[2];
	struct event *ev;
	_Atomic uint32_t running; /* threads that have not written yet */
	uint32_t pending;         /* requests not delivered (the loop's count) */
};

/* ---- the helper thread ---- */

/* The memory estimate of @s's workers of @mi (inspect_shape). */
static orch_err
estimate(const struct inspect_shape *s, const struct model_info *mi, struct mem_estimate *ret)
{
	uint32_t ctx = s->context, bt = s->kv_block_tokens;
	struct mem_kv kv = {.pool_bytes = (uint64_t)s->kv_cache_mib << 20, .block_tokens = bt};

	if (ctx == 0)
		ctx = model_default_ctx(mi);
	if (!s->paged)
		return model_mem_estimate(mi, ctx, s->slots, 2, ret);
	if (s->kv_fraction > 0 && /* the worker's sum (engine.c); it refuses a pool of 1 byte */
	    model_kv_fraction_pool(mi, ctx, s->slots, 2, bt, s->kv_fraction, s->mem_total,
	                           &kv.pool_bytes) != ORCH_OK)
		kv.pool_bytes = 1;
	return model_mem_estimate_kv(mi, ctx, s->slots, 2, &kv, ret);
}

static void
read_facts(struct inspect *q)
{
	struct inspect_facts *f = &q->facts;
	struct orch_errinfo e = {0};
	struct gguf_file *g = NULL;
	struct model_info mi;
	struct mem_estimate est;
	struct stat st;
	/* O_NONBLOCK: a FIFO's open does not wait for a writer; only a regular file is read */
	int fd = open(q->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		f->rv = ORCH_EIO;
		snprintf(f->msg, sizeof(f->msg), "%s: %s", q->path,
		         fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return;
	}
	/* the file just checked, not whatever the path names by now (a FIFO swapped in) */
	char self[64];
	int k = snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	f->rv = gguf_open(self, &g, &e);
	close(fd);
	if (f->rv != ORCH_OK) { /* its messages name @self: say the path instead */
		bool named = strncmp(e.msg, self, (size_t)k) == 0;
		snprintf(f->msg, sizeof(f->msg), "%s%s", named ? q->path : "",
		         e.msg + (named ? k : 0));
		return;
	}
	if ((f->rv = model_info_get(g, &mi, &e)) != ORCH_OK) {
		snprintf(f->msg, sizeof(f->msg), "%s", e.msg);
		gguf_close(g);
		return;
	}
	f->has_chat_template = mi.chat_template_bytes > 0;
	const char *dominant = gguf_dominant_type(g);
	f->model = (struct inspect_model){
	        .known = true, .file_bytes = (uint64_t)st.st_size, .n_ctx_train = mi.n_ctx_train};
	snprintf(f->model.arch, sizeof(f->model.arch), "%s", mi.arch);
	snprintf(f->model.quant_kind, sizeof(f->model.quant_kind), "%s", dominant ? dominant : "");
	if (q->shape.slots > 0 && estimate(&q->shape, &mi, &est) == ORCH_OK) {
		f->need_bytes = est.total - MODEL_RUNTIME_OVERHEAD_BYTES;
		f->has_estimate = true;
	} else if (q->shape.slots > 0) {
		snprintf(f->missing, sizeof(f->missing), "%s", mi.missing ? mi.missing : "?");
	}
	gguf_close(g); /* mi's strings point into it: nothing of them is kept */
}

static void *
run(void *arg)
{
	struct inspect *q = arg;
	struct inspector *in = q->in; /* q is the loop's once written */

	read_facts(q);
	while (write(in->fd[1], &q, sizeof(q)) < 0 && errno == EINTR)
		;
	atomic_fetch_sub(&in->running, 1); /* the last touch: inspect_stop may free @in now */
	return NULL;
}

/* ---- the loop ---- */

static void
on_done(evutil_socket_t fd, short what, void *arg)
{
	struct orchd *d = arg;
	struct inspect *q;

	(void)what;
	while (read(fd, &q, sizeof(q)) == (ssize_t)sizeof(q)) {
		d->insp->pending--;
		if (!q->cancelled)
			q->fn(d, q->arg, &q->facts);
		orch_free(q);
	}
}

static orch_err
inspector(struct orchd *d, struct orch_errinfo *reterr)
{
	struct inspector *in;

	if (d->insp != NULL)
		return ORCH_OK;
	if ((in = orch_calloc(1, sizeof(*in))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	if (pipe2(in->fd, O_CLOEXEC) != 0) {
		orch_free(in);
		return orch_errf(reterr, ORCH_EIO, "pipe: %s", strerror(errno));
	}
	fcntl(in->fd[0], F_SETFL, O_NONBLOCK);
	if ((in->ev = event_new(d->base, in->fd[0], EV_READ | EV_PERSIST, on_done, d)) == NULL) {
		close(in->fd[0]);
		close(in->fd[1]);
		orch_free(in);
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	}
	event_add(in->ev, NULL);
	d->insp = in;
	return ORCH_OK;
}

orch_err
inspect_start(struct orchd *d, const char *path, const struct inspect_shape *shape, inspect_fn fn,
              void *arg, struct inspect **ret, struct orch_errinfo *reterr)
{
	size_t n = strlen(path);
	struct inspect *q;
	pthread_attr_t attr;
	pthread_t t;
	orch_err rv;
	int err;

	if (ret)
		*ret = NULL;
	if ((rv = inspector(d, reterr)) != ORCH_OK)
		return rv;
	if ((q = orch_calloc(1, sizeof(*q) + n + 1)) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	*q = (struct inspect){.d = d, .in = d->insp, .fn = fn, .arg = arg};
	if (shape != NULL)
		q->shape = *shape;
	memcpy(q->path, path, n + 1);
	atomic_fetch_add(&d->insp->running, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 1u << 20);
	sigset_t all, old; /* process signals (SIGTERM, SIGCHLD, ...) stay the loop's */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&t, &attr, run, q);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		atomic_fetch_sub(&d->insp->running, 1);
		orch_free(q);
		return orch_errf(reterr, ORCH_EIO, "cannot start a thread to read %s: %s", path,
		                 strerror(err));
	}
	d->insp->pending++;
	if (ret)
		*ret = q;
	return ORCH_OK;
}

void
inspect_cancel(struct inspect *q)
{
	if (q != NULL)
		q->cancelled = true;
}

uint32_t
inspect_pending(const struct orchd *d)
{
	return d->insp ? d->insp->pending : 0;
}

/* Teardown runs models_free and admin_stop first: nothing points at a request freed here. */
void
inspect_stop(struct orchd *d)
{
	struct inspector *in = d->insp;

	if (in == NULL)
		return;
	event_free(in->ev);
	if (atomic_load(&in->running) > 0) { /* a thread may still write: leave it all to exit */
		orch_log(ORCH_LOG_WARNING, "inspect_unfinished", "reads=%u",
		         atomic_load(&in->running));
		d->insp = NULL;
		return;
	}
	struct inspect *q;
	while (read(in->fd[0], &q, sizeof(q)) == (ssize_t)sizeof(q))
		orch_free(q);
	close(in->fd[0]);
	close(in->fd[1]);
	orch_free(in);
	d->insp = NULL;
}
