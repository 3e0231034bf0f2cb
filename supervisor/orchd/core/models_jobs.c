/*
 * models_jobs.c - the registry's side of its jobs (jobs.h's struct job_host):
 * what a job's end, cancel and free do to its model's queue and its worker,
 * and what becomes of a lost worker's jobs. Thread: the loop.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/log.h"
#include "jobs.h"
#include "models.h"
#include "orchd.h"
#include "wire_send.h"
#include "workers.h"

/* Give @j's slot on its worker back (the job keeps no worker). */
static void
release_worker(struct job *j)
{
	struct worker *w = j->worker;
	uint64_t mt = j->req.max_tokens;

	w->jobs--;
	w->outstanding -= w->outstanding >= mt ? mt : w->outstanding;
	j->worker = NULL;
}

static void
job_ended(struct orchd *d, struct job *j)
{
	if (j->model)
		models_unqueue(j); /* when it ended while queued */
	if (j->worker) {
		struct worker *w = j->worker;
		release_worker(j);
		if (w->model)
			models_dispatch(d, w->model);
	}
}

static bool
job_cancel(struct orchd *d, struct job *j)
{
	(void)d;
	return j->worker != NULL && wire_send_cancel(j->worker, j->id) == ORCH_OK;
}

static void
job_freed(struct orchd *d, struct job *j)
{
	(void)d;
	if (j->model)
		models_unqueue(j);
}

const struct job_host models_job_host = {job_ended, job_cancel, job_freed};

/*
 * Whether @j, on lost worker @w, goes back to its model's queue: no token of
 * it was generated (at most its started event went out: the worker admits
 * up to 4 × slots jobs and waits with most of them), nobody cancelled it,
 * its model stays, orchd is not stopping, and it was not requeued
 * JOBS_REQUEUE_MAX times already.
 */
static bool
requeue_ok(const struct orchd *d, const struct job *j, const struct worker *w)
{
	bool fresh = j->n_events == 0 || (j->n_events == 1 && j->events[0].type == EV_STARTED);

	return fresh && j->tokens_out == 0 && !j->cancel_sent && !d->stopping &&
	       j->state == JOB_RUNNING && j->model != NULL && j->model == w->model &&
	       j->model->state != MODEL_UNLOADING && j->model->state != MODEL_FAILED &&
	       j->requeues < JOBS_REQUEUE_MAX;
}

void
models_jobs_lost(struct orchd *d, struct worker *w, const char *why)
{
	struct job *lost = NULL, *j;

	/* first take w's jobs out of its hands: failing one may dispatch (and end) others */
	for (j = d->live; j; j = j->live_next) /* newest first */
		if (j->worker == w) {
			release_worker(j);
			j->next_queue = lost; /* free while running: a private list, oldest first */
			lost = j;
		}
	/* then, from the newest back, each requeued job goes in front of the one after it */
	struct job *newest_first = NULL;
	while (lost) {
		j = lost;
		lost = j->next_queue;
		j->next_queue = newest_first;
		newest_first = j;
	}
	struct job *fail = NULL;
	while ((j = newest_first) != NULL) {
		newest_first = j->next_queue;
		j->next_queue = NULL;
		if (!requeue_ok(d, j, w)) {
			j->next_queue = fail;
			fail = j;
			continue;
		}
		j->requeues++;
		if (j->n_events ==
		    1) { /* the seed its started event reported holds for the rerun */
			j->req.sp.has_seed = true;
			j->req.sp.seed = j->events[0].seed;
		}
		models_requeue(j);
		d->metrics.jobs_requeued++;
		orch_log(ORCH_LOG_INFO, "job_requeued", "job=%s model=%s worker=%s why=\"%s\"",
		         j->correlation, j->model_name, w->id, why);
	}
	while ((j = fail) != NULL) {
		fail = j->next_queue;
		j->next_queue = NULL;
		jobs_fail(d, j, ORCH_EWORKER_LOST, why);
	}
	if (w->model) /* another worker of the model may take them now */
		models_dispatch(d, w->model);
}
