/*
 * offload.c - work on short-lived threads, handed back to the loop (offload.h).
 *
 * Design notes. One pipe per orchd, made on the first work: a thread writes
 * its item's pointer (8 bytes: atomic on a pipe, and at most OFFLOAD_MAX of
 * them fit in its buffer many times over) when its work is done, and the
 * loop's read event hands it back. The pipe's write end stays open while
 * any thread may still write: a closed and reused descriptor number would
 * take the pointer somewhere else.
 */
#include "offload.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "loop.h"
#include "orchd.h"

/* A work's thread's stack: a parse's recursion is bounded (PARAMS_MAX_DEPTH, cJSON's own). */
#define STACK_BYTES (4u << 20)

struct offloader {
	int fd[2];
	struct event *ev;
	_Atomic uint32_t running; /* threads that have not written yet */
	uint32_t pending;         /* items not handed back (the loop's count) */
};

struct item {
	struct offloader *o;
	offload_work_fn work;
	offload_done_fn done;
	void *arg;
};

static void *
run(void *p)
{
	struct item *it = p;
	struct offloader *o = it->o; /* @it is the loop's once written */

	/* below the loop: on a machine of few cores, many of these must not starve it (Linux:
	 * a thread's nice value is its own) */
	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), OFFLOAD_NICE);
	it->work(it->arg);
	while (write(o->fd[1], &it, sizeof(it)) < 0 && errno == EINTR)
		;
	atomic_fetch_sub(&o->running, 1); /* the last touch: offload_stop may free @o now */
	return NULL;
}

static void
on_done(int fd, short what, void *arg)
{
	struct orchd *d = arg;
	struct item *it;

	(void)what;
	while (read(fd, &it, sizeof(it)) == (ssize_t)sizeof(it)) {
		d->offload->pending--;
		it->done(d, it->arg, true);
		orch_free(it);
	}
}

static orch_err
offloader(struct orchd *d, struct orch_errinfo *reterr)
{
	struct offloader *o;

	if (d->offload != NULL)
		return ORCH_OK;
	if ((o = orch_calloc(1, sizeof(*o))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	if (pipe2(o->fd, O_CLOEXEC) != 0) {
		orch_free(o);
		return orch_errf(reterr, ORCH_EIO, "pipe: %s", strerror(errno));
	}
	fcntl(o->fd[0], F_SETFL, O_NONBLOCK);
	if ((o->ev = loop_watch(d->base, o->fd[0], LOOP_READ | LOOP_PERSIST, on_done, d)) == NULL) {
		close(o->fd[0]);
		close(o->fd[1]);
		orch_free(o);
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	}
	loop_start(o->ev);
	d->offload = o;
	return ORCH_OK;
}

orch_err
offload_start(struct orchd *d, offload_work_fn work, offload_done_fn done, void *arg,
              struct orch_errinfo *reterr)
{
	struct item *it;
	pthread_attr_t attr;
	pthread_t t;
	orch_err rv;
	int err;

	if ((rv = offloader(d, reterr)) != ORCH_OK)
		return rv;
	if (d->offload->pending >= OFFLOAD_MAX)
		return orch_errf(reterr, ORCH_EOVERLOADED,
		                 "%u requests are being read already: try again shortly",
		                 d->offload->pending);
	if ((it = orch_calloc(1, sizeof(*it))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	*it = (struct item){.o = d->offload, .work = work, .done = done, .arg = arg};
	atomic_fetch_add(&d->offload->running, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, STACK_BYTES);
	sigset_t all, old; /* process signals (SIGTERM, SIGCHLD, ...) stay the loop's */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&t, &attr, run, it);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		atomic_fetch_sub(&d->offload->running, 1);
		orch_free(it);
		return orch_errf(reterr, ORCH_EIO, "cannot start a thread: %s", strerror(err));
	}
	d->offload->pending++;
	return ORCH_OK;
}

uint32_t
offload_pending(const struct orchd *d)
{
	return d->offload ? d->offload->pending : 0;
}

void
offload_stop(struct orchd *d)
{
	struct offloader *o = d->offload;
	struct item *it;

	if (o == NULL)
		return;
	loop_free(o->ev);
	d->offload = NULL;
	/* work nearly done (a header read, a parse) finishes: 100 ms at most, then it is left */
	for (int i = 0; i < 100 && atomic_load(&o->running) > 0; i++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	uint32_t running = atomic_load(&o->running); /* before the reads: 0, all is written */
	while (read(o->fd[0], &it, sizeof(it)) == (ssize_t)sizeof(it)) {
		it->done(d, it->arg, false);
		orch_free(it);
	}
	if (running > 0) { /* a thread may still write: leave it all to exit */
		orch_log(ORCH_LOG_WARNING, "offload_unfinished", "threads=%u", running);
		return;
	}
	close(o->fd[0]);
	close(o->fd[1]);
	orch_free(o);
}
