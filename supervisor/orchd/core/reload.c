/*
 * reload.c - SIGHUP's reading off the loop, its applying on it (reload.h).
 * The reading is a work of offload.h: its thread owns nothing of the
 * loop's; its job holds copies of the paths in and what was read out.
 */
#include "reload.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "config.h"
#include "keys.h"
#include "models.h"
#include "notify.h"
#include "offload.h"
#include "orchd.h"

/* One reload: the paths in, what was read out. */
struct reload_job {
	char config_path[CFG_PATH_MAX], keys_path[CFG_PATH_MAX]; /* "": none */
	struct orchd_config c;
	bool keys_moved;   /* the config names another api_keys_file (or one, where none was) */
	bool keys_dropped; /* the config names none any more: the keys in force stay */
	orch_err cfg_rv, keys_rv;
	struct orch_errinfo cfg_e, keys_e;
	struct api_keys keys;
};

/* READY=1 again, with the status line as the registry counts it now. */
static void
reloaded(struct orchd *d)
{
	struct notify_status s;

	models_status(d, &s);
	notify_reloaded(d, &s);
}

static void
job_free(struct reload_job *j)
{
	cfg_free(&j->c);
	keys_free(&j->keys);
	orch_free(j);
}

/* ---- the thread ---- */

static void
work(void *arg)
{
	struct reload_job *j = arg;

	cfg_defaults(&j->c);
	if (j->config_path[0] == '\0')
		j->cfg_rv = orch_errf(&j->cfg_e, ORCH_EINVAL, "orchd was started without --config");
	else if ((j->cfg_rv = cfg_load(&j->c, j->config_path, &j->cfg_e)) == ORCH_OK)
		j->cfg_rv = cfg_check(&j->c, &j->cfg_e);
	if (j->cfg_rv == ORCH_OK && j->c.api_keys_file[0] != '\0' &&
	    strcmp(j->c.api_keys_file, j->keys_path) != 0) {
		snprintf(j->keys_path, sizeof(j->keys_path), "%s", j->c.api_keys_file);
		j->keys_moved = true;
	} else if (j->cfg_rv == ORCH_OK && j->c.api_keys_file[0] == '\0' &&
	           j->keys_path[0] != '\0') {
		j->keys_dropped = true;
	}
	if (j->keys_path[0] != '\0')
		j->keys_rv = keys_load(j->keys_path, &j->keys, &j->keys_e);
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
	if (j->keys_dropped)
		orch_log(ORCH_LOG_WARNING, "api_keys_file_removed",
		         "file=%s note=\"the config names no api_keys_file now: the keys in force "
		         "stay until a restart (a reload never turns keys off)\"",
		         j->keys_path);
	if (j->keys_path[0] == '\0')
		return;
	/* another file (or keys where there were none: only ever stricter) once it reads */
	if (keys_apply(&d->keys, j->keys_path, j->keys_rv, &j->keys, &j->keys_e) == ORCH_OK &&
	    j->keys_moved)
		snprintf(d->cfg.api_keys_file, sizeof(d->cfg.api_keys_file), "%s", j->keys_path);
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
done(struct orchd *d, void *arg, bool live)
{
	struct reload_job *j = arg;

	d->reload_busy = false;
	if (!live) { /* orchd stops: nobody applies it */
		job_free(j);
		return;
	}
	apply_keys(d, j); /* revoked keys stop working at once; a bad file changes nothing */
	if (j->cfg_rv != ORCH_OK) {
		orch_log_fail(ORCH_EINVAL, &j->cfg_e, "reload_failed", "config=%s",
		              j->config_path[0] ? j->config_path : "(none)");
	} else if (!d->stopping) {
		apply_models(d, &j->c);
		orch_log(ORCH_LOG_INFO, "reloaded", "config=%s", j->config_path);
	}
	job_free(j);
	reloaded(d);
	if (d->reload_again) {
		d->reload_again = false;
		reload_start(d);
	}
}

void
reload_start(struct orchd *d)
{
	struct reload_job *j;
	struct orch_errinfo e = {0};

	if (d->reload_busy) { /* applied after the one being read */
		d->reload_again = true;
		return;
	}
	notify_reloading();
	if ((j = orch_calloc(1, sizeof(*j))) == NULL) {
		orch_log(ORCH_LOG_ERR, "reload_failed", "why=\"out of memory\"");
		reloaded(d);
		return;
	}
	snprintf(j->config_path, sizeof(j->config_path), "%s",
	         d->config_path ? d->config_path : "");
	snprintf(j->keys_path, sizeof(j->keys_path), "%s", d->cfg.api_keys_file);
	if (offload_start(d, work, done, j, &e) != ORCH_OK) {
		orch_free(j);
		orch_log_fail(e.code, &e, "reload_failed", "config=%s",
		              d->config_path ? d->config_path : "(none)");
		reloaded(d);
		return;
	}
	d->reload_busy = true;
}
