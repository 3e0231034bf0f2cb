/* jobs_test.c - a job's event log, watchers, resume from an event, terminal-once. */
#include <event2/event.h>

#include "jobs.h"
#include "models.h"
#include "orchd.h"
#include "t.h"

static struct orchd d;

struct seen {
	struct job_watch w;
	uint32_t calls, released;
};

static void
on_notify(struct job_watch *w)
{
	struct seen *s = (struct seen *)w;
	s->calls++;
	w->sent = w->job->n_events;
}

static void
on_release(struct job_watch *w)
{
	((struct seen *)w)->released++;
}

static struct job *
new_job(void)
{
	static struct model_entry m;
	struct job_request r = {0};

	snprintf(m.cfg.name, sizeof(m.cfg.name), "m");
	return jobs_new(&d, JOB_NATIVE, NULL, &m, &r);
}

static void
test_events(void)
{
	struct job *j = new_job();
	struct seen a = {.w = {.notify = on_notify, .release = on_release}};

	T_TRUE(j != NULL);
	T_TRUE(jobs_find(&d, j->id) == j);
	jobs_watch(&d, j, &a.w, 0);
	T_EQ(a.calls, 1);
	char ab[] = "ab";
	struct job_event st = {.type = EV_STARTED}, tok = {.type = EV_TOKEN, .text = ab};
	jobs_event(&d, j, &st);
	for (int i = 0; i < 100; i++) /* past the first 64 slots */
		jobs_event(&d, j, &tok);
	T_EQ(j->n_events, 101);
	T_EQ(a.calls, 102);
	T_EQ(j->text.n, 200);
	struct job_event end = {.type = EV_END, .finish = ORCH_FINISH_LENGTH};
	jobs_event(&d, j, &end);
	T_EQ(j->state, JOB_DONE);
	T_TRUE(jobs_find(&d, j->id) == NULL);     /* not live any more */
	jobs_fail(&d, j, ORCH_EINTERNAL, "late"); /* exactly one terminal event */
	jobs_event(&d, j, &tok);
	T_EQ(j->n_events, 102);
	T_EQ(j->events[101].type, EV_END);
	T_EQ(j->model->met.requests[ORCH_FINISH_LENGTH], 1);
	/* resume: a second watcher from event 100 on */
	struct seen b = {.w = {.notify = on_notify, .release = on_release}};
	jobs_watch(&d, j, &b.w, 100);
	T_EQ(b.calls, 1);
	jobs_unwatch(&d, &a.w, false);
	jobs_free(&d, j);
	T_EQ(a.released, 0);
	T_EQ(b.released, 1);
}

static void
test_client_gone(void)
{
	struct job *j = new_job();
	struct seen a = {.w = {.notify = on_notify, .release = on_release}};

	jobs_watch(&d, j, &a.w, 0);
	jobs_unwatch(&d, &a.w, true); /* no resume grace: cancelled (queued: no worker) */
	T_EQ(j->state, JOB_DONE);
	T_EQ(j->events[j->n_events - 1].type, EV_ERROR);
	T_EQ(j->events[j->n_events - 1].code, ORCH_ECANCELLED);
	T_EQ(j->model->met.cancelled_by_client, 1);
	jobs_free(&d, j);
	j = new_job();
	j->req.resume_grace_s = 5;
	jobs_watch(&d, j, &a.w, 0);
	jobs_unwatch(&d, &a.w, true); /* waits for the client to come back */
	T_TRUE(j->detached);
	T_TRUE(j->state != JOB_DONE);
	jobs_watch(&d, j, &a.w, 0);
	T_TRUE(!j->detached);
	jobs_free(&d, j);
	T_EQ(d.n_jobs, 0);
}

int
main(void)
{
	cfg_defaults(&d.cfg);
	d.base = event_base_new();
	T_RUN(test_events);
	T_RUN(test_client_gone);
	event_base_free(d.base);
	return t_done();
}
