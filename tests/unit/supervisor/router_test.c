/* router_test.c - the registry's queue: order, limits, dispatch, failing queued jobs. */
#include <unistd.h>

#include "core.h"
#include "inspect.h"
#include "jobs.h"
#include "loop.h"
#include "models.h"
#include "offload.h"
#include "orchd.h"
#include "t.h"
#include "workers.h"

static struct orchd d;

static struct job *
job(struct model_entry *m)
{
	struct job_request r = {0};
	struct job_model jm = {m, m->cfg.name, &m->met};
	struct job *j = jobs_new(&d, JOB_NATIVE, NULL, &jm, &r, NULL);
	if (j != NULL)
		j->host = &models_job_host; /* held by the registry, as models_submit does */
	return j;
}

static struct model_entry *
model_n(const char *name, const char *path, uint32_t replicas)
{
	struct cfg_model c = {0};
	struct model_entry *m = NULL;
	struct orch_errinfo e = {0};

	snprintf(c.name, sizeof(c.name), "%s", name);
	snprintf(c.path, sizeof(c.path), "%s", path);
	snprintf(c.devices[0], sizeof(c.devices[0]), "cpu");
	c.n_devices = 1;
	c.replicas = replicas;
	c.slots = 1;
	if (models_add(&d, &c, &m, &e) != ORCH_OK)
		return NULL;
	return m;
}

static struct model_entry *
model(const char *name, const char *path)
{
	return model_n(name, path, 1);
}

/* Turn the loop until every model file read (inspect.h) is delivered. */
static void
wait_reads(void)
{
	for (int i = 0; i < 5000 && inspect_pending(&d) > 0; i++)
		loop_turn(d.base, true), usleep(1000);
	T_EQ(inspect_pending(&d), 0);
}

/* @j as if @w had taken it (what place() does, without a channel). */
static void
on_worker(struct job *j, struct worker *w)
{
	j->worker = w;
	j->state = JOB_RUNNING;
	w->jobs++;
}

static void
test_requeue(void)
{
	struct model_entry *m = model_n("rq", "/nonexistent.gguf", 2);
	struct worker *w0 = m->workers[0], *w1 = m->workers[1];

	wait_reads();
	m->state = MODEL_READY;
	w0->state = WORKER_READY;
	/* w0 dies holding a job with a token out and two without one; w1 is still loading */
	struct job *s = job(m), *a = job(m), *b = job(m);
	on_worker(s, w0);
	on_worker(a, w0);
	on_worker(b, w0);
	s->started_ms = 1;
	s->tokens_out = 1;
	w1->state = WORKER_LOADING;
	models_jobs_lost(&d, w0, "w0 exited");
	T_EQ(s->state, JOB_DONE);
	T_EQ(s->events[s->n_events - 1].code, ORCH_EWORKER_LOST);
	T_TRUE(m->queue_head == a && a->next_queue == b && m->queue_tail == b); /* in order */
	T_TRUE(a->state == JOB_QUEUED && a->worker == NULL && a->requeues == 1);
	T_EQ(m->queued, 2);
	T_EQ(w0->jobs, 0);
	T_EQ(d.metrics.jobs_requeued, 2);
	/* the same with w1 ready: the queue is offered to it at once (with no channel here, it
	 * refuses them: they end) rather than waiting for w0's restart */
	models_unqueue(a);
	models_unqueue(b);
	on_worker(a, w0);
	on_worker(b, w0);
	w1->state = WORKER_READY;
	w1->pid = 1; /* a process: only a live worker is picked (never signalled here) */
	models_jobs_lost(&d, w0, "w0 exited again");
	w1->pid = 0;
	T_TRUE(m->queue_head == NULL);
	T_TRUE(a->state == JOB_DONE && b->state == JOB_DONE);
	T_EQ(w0->jobs, 0);
	T_EQ(w1->jobs, 0);
	/* a job requeued JOBS_REQUEUE_MAX times is not requeued again */
	struct job *c = job(m);
	c->requeues = JOBS_REQUEUE_MAX;
	on_worker(c, w0);
	w1->state = WORKER_LOADING;
	models_jobs_lost(&d, w0, "w0 exited a third time");
	T_TRUE(c->state == JOB_DONE && m->queue_head == NULL);
}

static void
test_queue(void)
{
	struct orch_errinfo e = {0};
	struct model_entry *m = model("q", "/nonexistent.gguf");

	T_TRUE(m != NULL && models_find(&d, "q") == m);
	T_ERR(models_add(&d, &m->cfg, NULL, &e), ORCH_EINVAL); /* the name exists */
	m->state = MODEL_LOADING;                              /* as if starting: jobs wait */
	d.cfg.max_queue = 2;
	struct job *a = job(m), *b = job(m), *c = job(m);
	T_OK(models_submit(&d, a, &e));
	T_OK(models_submit(&d, b, &e));
	T_ERR(models_submit(&d, c, &e), ORCH_EQUEUE_FULL);
	T_EQ(d.metrics.rejected_queue_full, 1);
	T_TRUE(m->queue_head == a && a->next_queue == b && m->queue_tail == b);
	T_EQ(m->queued, 2);
	/* a worker with room takes the oldest first; with no channel it cannot take it */
	m->workers[0]->state = WORKER_READY;
	m->workers[0]->pid = 1; /* a process: only a live worker is picked (never signalled here) */
	models_dispatch(&d, m);
	m->workers[0]->pid = 0;
	T_TRUE(m->queue_head == NULL);
	T_EQ(a->state, JOB_DONE);
	T_EQ(a->events[0].type, EV_STARTED); /* refused after admission: started, then error */
	T_EQ(a->events[1].code, ORCH_EWORKER_LOST);
	T_EQ(b->state, JOB_DONE);
	T_EQ(m->workers[0]->jobs, 0);
	m->workers[0]->state = WORKER_STOPPED;
	/* failing queued jobs: in order, each with the code */
	struct job *x = job(m), *y = job(m);
	T_OK(models_submit(&d, x, &e));
	T_OK(models_submit(&d, y, &e));
	models_fail_queued(&d, m, ORCH_EMODEL_NOT_FOUND, "gone");
	T_EQ(m->queued, 0);
	T_EQ(x->events[1].code, ORCH_EMODEL_NOT_FOUND);
	T_STREQ(y->events[1].text, "gone");
	T_EQ(m->met.requests[MET_FINISHES + ORCH_EMODEL_NOT_FOUND], 2);
	jobs_free(&d, c);
}

static void
test_load_failure(void)
{
	struct orch_errinfo e = {0};
	struct model_entry *m = model("bad", "/nonexistent.gguf");

	d.cfg.max_queue = 8;
	struct job *j = job(m);
	/* stopped: queued and the model started; its file is missing (read off the loop, so
	 * the loop turns until that read is in), so it fails, and so does j */
	T_OK(models_submit(&d, j, &e));
	T_EQ(m->state, MODEL_LOADING);
	wait_reads();
	T_EQ(m->state, MODEL_FAILED);
	T_EQ(j->state, JOB_DONE);
	T_EQ(j->events[1].code, ORCH_EMODEL_LOAD);
	struct job *k = job(m);
	T_ERR(models_submit(&d, k, &e), ORCH_EMODEL_LOAD);
	jobs_free(&d, k);
	T_TRUE(!models_all_ready(&d) || !m->cfg.preload);
}

int
main(void)
{
	cfg_defaults(&d.cfg);
	core_init(&d);
	snprintf(d.cfg.runtime_dir, sizeof(d.cfg.runtime_dir), "/tmp");
	d.base = loop_base_new();
	T_RUN(test_queue);
	T_RUN(test_load_failure);
	T_RUN(test_requeue);
	while (d.jobs)
		jobs_free(&d, d.jobs);
	while (d.models) {
		struct model_entry *m = d.models;
		d.models = m->next;
		models_free(&d, m);
	}
	wait_reads(); /* the reads models_add started */
	offload_stop(&d);
	loop_base_free(d.base);
	return t_done();
}
