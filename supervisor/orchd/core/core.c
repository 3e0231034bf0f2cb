/*
 * core.c - the core's hooks and where they lead (core.h): a worker's
 * envelopes to wire_dispatch, its state to its model's, its loss to the
 * tokenize requests and jobs it held; a model's other waiting work to
 * tokenize.h, its jobs' ends to models_jobs.c.
 */
#include "core.h"

#include "models.h"
#include "orchd.h"
#include "tokenize.h"
#include "wire.h"
#include "workers.h"

static void
worker_changed(struct orchd *d, struct worker *w)
{
	models_worker_state(d, w->model);
}

static void
worker_lost(struct orchd *d, struct worker *w, const char *why)
{
	tokenize_fail(d, NULL, w, ORCH_EWORKER_LOST, why);
	models_jobs_lost(d, w, why);
}

static void
model_fail(struct orchd *d, struct model_entry *m, orch_err code, const char *msg)
{
	tokenize_fail(d, m, NULL, code, msg);
}

static const struct worker_hooks worker_hooks = {
        .message = wire_dispatch,
        .changed = worker_changed,
        .lost = worker_lost,
};
static const struct model_hooks model_hooks = {
        .job_host = &models_job_host,
        .dispatch = tokenize_dispatch,
        .fail = model_fail,
};

void
core_init(struct orchd *d)
{
	d->worker_hooks = &worker_hooks;
	d->model_hooks = &model_hooks;
}
