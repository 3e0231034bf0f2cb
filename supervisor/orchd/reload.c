/*
 * reload.c - SIGHUP's reading off the loop, its applying on it (reload.h).
 *
 * One pipe per orchd, made on the first reload: the thread writes its
 * job's pointer (8 bytes: atomic on a pipe) when it has read both files;
 * the loop reads it and applies the job. The thread owns nothing of the
 * loop's: its job holds copies of the paths in and what was read out.
 */
#include "reload.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/alloc.h"
#include "base/log.h"
#include "config.h"
#include "keys.h"
#include "models.h"
#include "notify.h"
#include "orchd.h"

struct reloader {
	int fd[2];
	struct event *ev;
	bool busy;  /* a job is being read */
	bool again; /* a SIGHUP came meanwhile */
	atomic_bool stopped;
};

/* One reload: the paths in, what was read out. */
struct reload_job {
	struct reloader *r;
	char config_path[CFG_PATH_MAX], keys_path[CFG_PATH_MAX]; /* "": none */
	struct orchd_config c;
	orch_err cfg_rv, keys_rv;
	struct orch_errinfo cfg_e, keys_e;
	struct api_keys keys;
};

static void
job_free(struct reload_job *j)
{
	cfg_free(&j->c);
	keys_free(&j->keys);
	orch_free(j);
}

/* ---- the thread ---- */

static void *
run(void *arg)
{
	struct reload_job *j = arg;
	struct reloader *r = j->r;

	cfg_defaults(&j->c);
	if (j->config_path[0] == '\0')
		j->cfg_rv = orch_errf(&j->cfg_e, ORCH_EINVAL, "orchd was started without --config");
	else if ((j->cfg_rv = cfg_load(&j->c, j->config_path, &j->cfg_e)) == ORCH_OK)
		j->cfg_rv = cfg_check(&j->c, &j->cfg_e);
	if (j->keys_path[0] != '\0')
		j->keys_rv = keys_load(j->keys_path, &j->keys, &j->keys_e);
	if (atomic_load(&r->stopped) || write(r->fd[1], &j, sizeof(j)) != (ssize_t)sizeof(j))
		job_free(j); /* orchd stops: nobody applies it */
	return NULL;
}

/* ---- the loop ---- */

/* Whether @a and @b configure the same model (a reference's file, looked up at each start, is
 * not part of it). */
static bool
same_model(const struct cfg_model *a, const struct cfg_model *b)
{
	struct cfg_model x, y;

	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	if (x.ref[0] != '\0')
		memset(x.path, 0, sizeof(x.path));
	if (y.ref[0] != '\0')
		memset(y.path, 0, sizeof(y.path));
	return memcmp(&x, &y, sizeof(x)) == 0;
}

/* The keys read: in force unless the file could not be read or had none (fail closed). */
static void
apply_keys(struct orchd *d, struct reload_job *j)
{
	if (j->keys_path[0] == '\0')
		return;
	keys_apply(&d->keys, j->keys_path, j->keys_rv, &j->keys, &j->keys_e);
}

/* The models of the config read: added ones start, removed or changed ones drain. */
static void
apply_models(struct orchd *d, struct orchd_config *c)
{
	struct orch_errinfo e = {0};

	for (struct model_entry *m = d->models, *next; m; m = next) {
		next = m->next;
		struct cfg_model *nm = cfg_model_find(c, m->cfg.name);
		if (m->runtime && nm == NULL)
			continue; /* added with orchctl load: the state file's, not the config's */
		if (nm == NULL || !same_model(nm, &m->cfg)) {
			orch_log(ORCH_LOG_INFO, "reload_unload", "model=%s why=%s", m->cfg.name,
			         nm ? "changed" : "removed");
			models_unload(d, m, true);
		}
	}
	for (uint32_t i = 0; i < c->n_models; i++) {
		struct model_entry *m = models_find(d, c->models[i].name);
		if (m != NULL)
			continue; /* unchanged, or changed and still unloading: a later HUP adds it
			           */
		if (models_add(d, &c->models[i], &m, &e) != ORCH_OK) {
			orch_log_err(e.code, &e, "reload_add_failed", "model=%s",
			             c->models[i].name);
			continue;
		}
		if (m->cfg.preload)
			models_start(d, m);
	}
}

static void
on_read(evutil_socket_t fd, short what, void *arg)
{
	struct orchd *d = arg;
	struct reloader *r = d->reloader;
	struct reload_job *j;

	(void)what;
	while (read(fd, &j, sizeof(j)) == (ssize_t)sizeof(j)) {
		r->busy = false;
		apply_keys(d,
		           j); /* revoked keys stop working at once; a bad file changes nothing */
		if (j->cfg_rv != ORCH_OK) {
			orch_log_err(ORCH_EINVAL, &j->cfg_e, "reload_failed", "config=%s",
			             j->config_path[0] ? j->config_path : "(none)");
		} else if (!d->stopping) {
			apply_models(d, &j->c);
			orch_log(ORCH_LOG_INFO, "reloaded", "config=%s", j->config_path);
		}
		job_free(j);
		notify_reloaded(d);
		if (r->again) {
			r->again = false;
			reload_start(d);
		}
	}
}

static struct reloader *
reloader(struct orchd *d)
{
	struct reloader *r = d->reloader;

	if (r != NULL)
		return r;
	if ((r = orch_calloc(1, sizeof(*r))) == NULL)
		return NULL;
	if (pipe2(r->fd, O_CLOEXEC) != 0) {
		orch_free(r);
		return NULL;
	}
	fcntl(r->fd[0], F_SETFL, O_NONBLOCK);
	if ((r->ev = event_new(d->base, r->fd[0], EV_READ | EV_PERSIST, on_read, d)) == NULL) {
		close(r->fd[0]);
		close(r->fd[1]);
		orch_free(r);
		return NULL;
	}
	event_add(r->ev, NULL);
	d->reloader = r;
	return r;
}

void
reload_start(struct orchd *d)
{
	struct reloader *r = reloader(d);
	struct reload_job *j = r ? orch_calloc(1, sizeof(*j)) : NULL;
	pthread_attr_t attr;
	pthread_t t;

	if (r != NULL && r->busy) { /* applied after the one being read */
		r->again = true;
		orch_free(j);
		return;
	}
	notify_reloading();
	if (j == NULL) {
		orch_log(ORCH_LOG_ERR, "reload_failed", "why=\"out of memory\"");
		notify_reloaded(d);
		return;
	}
	j->r = r;
	snprintf(j->config_path, sizeof(j->config_path), "%s",
	         d->config_path ? d->config_path : "");
	snprintf(j->keys_path, sizeof(j->keys_path), "%s", d->cfg.api_keys_file);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 1u << 20);
	sigset_t all, old; /* process signals stay the loop's */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int err = pthread_create(&t, &attr, run, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		orch_free(j);
		orch_log(ORCH_LOG_ERR, "reload_failed", "why=\"cannot start a thread: %s\"",
		         strerror(err));
		notify_reloaded(d);
		return;
	}
	r->busy = true;
}

void
reload_stop(struct orchd *d)
{
	struct reloader *r = d->reloader;

	if (r == NULL)
		return;
	atomic_store(&r->stopped, true);
	event_free(r->ev);
	r->ev = NULL;
	struct reload_job *j; /* a job written after the loop's last turn: nobody applies it */
	while (read(r->fd[0], &j, sizeof(j)) == (ssize_t)sizeof(j)) {
		job_free(j);
		r->busy = false;
	}
	if (r->busy) /* its thread (stuck in a read?) holds @r through its job: left to exit */
		return;
	close(r->fd[0]);
	close(r->fd[1]);
	orch_free(r);
	d->reloader = NULL;
}
