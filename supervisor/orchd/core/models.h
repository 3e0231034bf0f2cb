#pragma once
/*
 * models.h - the registry: each configured model, its workers, its state
 * (stopped, loading, ready, failed, unloading), its bounded FIFO queue of
 * jobs, and placement of jobs on the READY worker with the fewest
 * outstanding tokens. Thread: the loop.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "model.h"

struct notify_status;
struct job;
struct job_host;
struct orchd;
struct worker;

/*
 * What the registry leaves to the modules above it; core.c installs them as
 * orchd.model_hooks (every member set).
 */
struct model_hooks {
	/* what a job's end, cancel and free do through the registry (models_jobs.c) */
	const struct job_host *job_host;
	/* after @m's queued jobs went out: send what else waits for a worker of @m */
	void (*dispatch)(struct orchd *d, struct model_entry *m);
	/* @m cannot serve what else waits for it (its load failed, it goes): end that */
	void (*fail)(struct orchd *d, struct model_entry *m, orch_err code, const char *msg);
};

/* models_find - the model named @name, or NULL. */
struct model_entry *models_find(struct orchd *d, const char *name);

/*
 * models_add - add a stopped model for @cfg (copied) at the end of the
 * registry; *@ret points at it. ORCH_EINVAL when the name exists, ORCH_ENOMEM.
 */
orch_err models_add(struct orchd *d, const struct cfg_model *cfg, struct model_entry **ret,
                    struct orch_errinfo *reterr);

/* models_start - start its workers if stopped (also after a failure). */
void models_start(struct orchd *d, struct model_entry *m);

/* models_unload - drain and stop its workers; removed from the registry when @remove. */
void models_unload(struct orchd *d, struct model_entry *m, bool remove);

/* a worker is handed at most this many jobs a slot; the rest wait in orchd's queue */
#define WORKER_JOBS_PER_SLOT 4

/*
 * models_room - the most jobs @m holds at once with nothing else running: its
 * workers' WORKER_JOBS_PER_SLOT × slots and max_queue. A request of more jobs
 * (n × prompts) can never be taken, and is refused as such (400, not 429).
 */
uint32_t models_room(const struct orchd *d, const struct model_entry *m);

/*
 * models_submit - place @j on a READY worker or queue it (starting the
 * model). ORCH_EQUEUE_FULL (queue full, unloading), ORCH_EMODEL_LOAD,
 * ORCH_EINSUFFICIENT_VRAM: @j is then neither placed nor queued.
 */
orch_err models_submit(struct orchd *d, struct job *j, struct orch_errinfo *reterr);

/*
 * models_usable - whether work for @m can be taken now or once it loads: a
 * model that failed for want of memory is started again; one that failed
 * otherwise is ORCH_EMODEL_LOAD (or ORCH_EINSUFFICIENT_VRAM) with its error,
 * one being unloaded ORCH_EQUEUE_FULL.
 */
orch_err models_usable(struct orchd *d, struct model_entry *m, struct orch_errinfo *reterr);

/*
 * models_dispatch - move queued jobs of @m, in order, onto workers with
 * room; then the rest of its waiting work (model_hooks.dispatch).
 */
void models_dispatch(struct orchd *d, struct model_entry *m);

/* models_worker_state - a worker of @m changed state: recompute the model's state. */
void models_worker_state(struct orchd *d, struct model_entry *m);

/*
 * models_requeue - put @j (queued state, no worker) back at the front of
 * its model's queue: a lost worker had it but never started it.
 */
void models_requeue(struct job *j);

/* models_unqueue - take @j out of its model's queue (nothing when not queued). */
void models_unqueue(struct job *j);

/* What the registry does for the jobs it holds (models_jobs.c; jobs.h): model_hooks.job_host. */
extern const struct job_host models_job_host;

/*
 * models_jobs_lost - @w is gone: a job with no token generated yet goes
 * back to the front of its model's queue (in order; at most
 * JOBS_REQUEUE_MAX times; its reported seed kept, its one started event
 * not repeated), every other one ends with WORKER_LOST.
 */
void models_jobs_lost(struct orchd *d, struct worker *w, const char *why);

/* models_fail_queued - end every queued job of @m with @code and @msg, in order. */
void models_fail_queued(struct orchd *d, struct model_entry *m, orch_err code, const char *msg);

/* models_state_name - "stopped", "loading", "ready", "failed", "unloading". */
const char *models_state_name(enum model_state s);

/* models_all_ready - every wanted model (preload or loaded, not unloaded since) is READY. */
bool models_all_ready(const struct orchd *d);

/* models_status - what systemd's status line says of the models and their jobs (notify.h). */
void models_status(const struct orchd *d, struct notify_status *s);

/* models_free - free @m and its workers (not in the registry any more); its jobs forget it. */
void models_free(struct orchd *d, struct model_entry *m);

/* models_changed - tell the admin followers (orchd.on_model_event) @m changed. */
void models_changed(struct orchd *d, struct model_entry *m, const char *what);
