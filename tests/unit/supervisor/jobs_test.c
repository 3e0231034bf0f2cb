/*
 * jobs_test.c - a job's event log, watchers, resume from an event, terminal-once, started
 * always first, metrics events every N tokens, unguessable ids and owners.
 */

#include "core.h"
#include "counters.h"
#include "jobs.h"
#include "loop.h"
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
	static struct model_metrics met;
	struct job_model m = {NULL, "m", &met};
	struct job_request r = {0};

	return jobs_new(&d, JOB_NATIVE, NULL, &m, &r, NULL);
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
	T_EQ(j->met->requests[ORCH_FINISH_LENGTH], 1);
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
	T_EQ(j->met->cancelled_by_client, 1);
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

/* A job that ends before the worker started it still shows started first, once. */
static void
test_started_first(void)
{
	struct job *j = new_job();

	jobs_fail(&d, j, ORCH_ECONTEXT, "the prompt is 300 tokens, the context 256");
	T_EQ(j->n_events, 2);
	T_EQ(j->events[0].type, EV_STARTED);
	T_EQ(j->events[0].prompt_tokens, 0); /* the worker never counted them */
	T_TRUE(j->events[0].unix_ms > 1600000000000ull);
	T_EQ(j->events[1].type, EV_ERROR);
	T_EQ(j->events[1].code, ORCH_ECONTEXT);
	jobs_free(&d, j);
	/* a worker's Started is not doubled */
	j = new_job();
	struct job_event st = {.type = EV_STARTED, .prompt_tokens = 5, .unix_ms = 1};
	struct job_event end = {.type = EV_END, .finish = ORCH_FINISH_EOS};
	jobs_event(&d, j, &st);
	jobs_event(&d, j, &end);
	T_EQ(j->n_events, 2);
	T_EQ(j->events[0].prompt_tokens, 5);
	jobs_free(&d, j);
}

/* metrics_every N: a metrics event after every Nth counted token, none after the end. */
static void
test_metrics_events(void)
{
	struct job *j = new_job();
	struct job_event st = {.type = EV_STARTED}, tok = {.type = EV_TOKEN};
	uint32_t metrics = 0, last = 0;

	j->req.metrics_every = 4;
	jobs_event(&d, j, &st);
	for (uint32_t i = 0; i < 10; i++) {
		j->tokens_out++; /* as wire.c counts a token */
		jobs_event(&d, j, &tok);
		jobs_metrics_due(&d, j);
	}
	for (uint32_t k = 0; k < j->n_events; k++)
		if (j->events[k].type == EV_METRICS) {
			metrics++;
			T_EQ(j->events[k - 1].type, EV_TOKEN);
			T_TRUE(j->events[k].tokens_out == 4 || j->events[k].tokens_out == 8);
			T_TRUE(j->events[k].decode_ms >= 0 && j->events[k].prefill_ms >= 0);
			last = j->events[k].tokens_out;
		}
	T_EQ(metrics, 2);
	T_EQ(last, 8);
	jobs_fail(&d, j, ORCH_ECANCELLED, "x");
	j->tokens_out = 12;
	jobs_metrics_due(&d, j); /* ended: nothing more */
	T_EQ(j->events[j->n_events - 1].type, EV_ERROR);
	jobs_free(&d, j);
}

static struct job *
new_owned(enum job_kind kind, const struct job_owner *o, const char *ext)
{
	static struct model_metrics met;
	struct job_model m = {NULL, "m", &met};
	struct job_request r = {0};
	struct job *j;

	if ((j = jobs_new(&d, kind, NULL, &m, &r, o)) != NULL)
		snprintf(j->ext_id, sizeof(j->ext_id), "%s", ext);
	return j;
}

/*
 * Issue 16: every job has an unguessable id; a job is found only by its
 * owner: by that id, or (with keys) by its job_id in the key's own space.
 */
static void
test_ids_and_owners(void)
{
	struct job_owner anon = {0}, k1 = {.id = {1}, .keyed = true},
	                 k2 = {.id = {2}, .keyed = true};
	struct job *a = new_owned(JOB_NATIVE, &k1, "j1"), *b = new_owned(JOB_NATIVE, &k2, "j1");
	struct job *c = new_owned(JOB_NATIVE, &anon, "j1");
	struct job *o = new_owned(JOB_OAI_COMPLETION, &anon, "cmpl-x");
	char near[JOBS_UID_HEX + 1];

	T_TRUE(a && b && c && o);
	T_EQ(strlen(a->uid), 32);
	T_EQ(strspn(a->uid, "0123456789abcdef"), 32);
	T_EQ(strlen(a->correlation), 16);
	T_EQ(strspn(a->correlation, "0123456789abcdef"), 16);
	T_TRUE(strcmp(a->uid, b->uid) != 0 && strcmp(b->uid, c->uid) != 0);
	T_TRUE(strncmp(a->uid, a->correlation, 16) != 0);
	/* with a key: by job_id in its own space, or by uid; never another key's job */
	T_TRUE(jobs_lookup(&d, "j1", &k1) == a);
	T_TRUE(jobs_lookup(&d, "j1", &k2) == b);
	T_TRUE(jobs_lookup(&d, a->uid, &k1) == a);
	T_TRUE(jobs_lookup(&d, a->uid, &k2) == NULL);
	T_TRUE(jobs_lookup(&d, a->uid, &anon) == NULL);
	/* without keys: by uid, or by job_id in the one local owner's space (issue 62) */
	T_TRUE(jobs_lookup(&d, "j1", &anon) == c);
	T_TRUE(jobs_lookup(&d, "j2", &anon) == NULL);
	T_TRUE(jobs_lookup(&d, c->uid, &anon) == c);
	memcpy(near, c->uid, sizeof(near));
	near[31] = near[31] == '0' ? '1' : '0';
	T_TRUE(jobs_lookup(&d, near, &anon) == NULL);
	near[31] = '\0';
	T_TRUE(jobs_lookup(&d, near, &anon) == NULL);
	T_TRUE(jobs_lookup(&d, "", &anon) == NULL);
	/* OpenAI jobs cannot be resumed or cancelled by id */
	T_TRUE(jobs_lookup(&d, o->uid, &anon) == NULL);
	T_TRUE(jobs_lookup(&d, "cmpl-x", &anon) == NULL);
	jobs_free(&d, a);
	jobs_free(&d, b);
	jobs_free(&d, c);
	jobs_free(&d, o);
	/* ids do not repeat (a collision among 2000 has probability ~2^-107) */
	struct job *many[1000];
	for (int i = 0; i < 1000; i++)
		many[i] = new_owned(JOB_NATIVE, &anon, "x");
	for (int i = 0; i < 1000; i++)
		for (int k = 0; k < i; k++)
			T_TRUE(strcmp(many[i]->uid, many[k]->uid) != 0 &&
			       strcmp(many[i]->correlation, many[k]->correlation) != 0);
	for (int i = 0; i < 1000; i++)
		jobs_free(&d, many[i]);
	T_EQ(d.n_jobs, 0);
}

/* A native (or OpenAI) job run to its end: started, @tokens tokens "tok", end. */
static struct job *
run_job(enum job_kind kind, uint32_t tokens)
{
	struct job *j = new_owned(kind, NULL, "r");
	char tok[] = "tok";
	struct job_event st = {.type = EV_STARTED}, t = {.type = EV_TOKEN, .text = tok};
	struct job_event end = {.type = EV_END, .finish = ORCH_FINISH_LENGTH};

	if (j == NULL)
		return NULL;
	j->req.prompt = orch_strndup("a prompt", 8);
	jobs_event(&d, j, &st);
	for (uint32_t i = 0; i < tokens; i++)
		jobs_event(&d, j, &t);
	jobs_event(&d, j, &end);
	return j;
}

/* Run the loop's ready timers (a job's "now" timer). */
static void
run_timers(void)
{
	loop_turn(d.base, false);
	loop_turn(d.base, false);
}

/*
 * Issue 16: finished native jobs are kept within events_keep_jobs and
 * events_keep_mib, oldest evicted first, packed (request gone, texts in one
 * block); a followed job is not evicted until it is let go; OpenAI jobs are
 * not kept at all.
 */
static void
test_retention(void)
{
	struct job *js[5];
	struct seen a = {.w = {.notify = on_notify, .release = on_release}};

	d.cfg.events_keep_jobs = 3;
	for (int i = 0; i < 5; i++)
		T_TRUE((js[i] = run_job(JOB_NATIVE, 10)) != NULL);
	T_EQ(d.n_kept, 3);
	T_EQ(d.metrics.jobs_evicted, 2);
	T_EQ(d.n_jobs, 3);
	T_TRUE(d.kept_head == js[2] && d.kept_tail == js[4]);
	T_EQ(d.kept_bytes, jobs_bytes(js[2]) + jobs_bytes(js[3]) + jobs_bytes(js[4]));
	struct job_owner anon = {0};
	T_TRUE(jobs_lookup(&d, js[4]->uid, &anon) == js[4]);
	/* packed: the request is gone, the texts are in one block and intact */
	struct job *k = js[4];
	T_TRUE(k->req.prompt == NULL && k->packed != NULL && k->cap_events == k->n_events);
	T_EQ(k->packed_bytes, 10 * 4);
	T_STREQ(k->events[10].text, "tok");
	T_TRUE(k->events[10].text >= k->packed && k->events[10].text < k->packed + 40);
	/* 12 events of 80 bytes, the job (about 1.1 KiB), 40 bytes of text, allocator overheads */
	T_TRUE(jobs_bytes(k) < 2368);
	/* a followed job stays past the cap until it is let go */
	jobs_watch(&d, js[2], &a.w, 0); /* a resume of the oldest */
	d.cfg.events_keep_jobs = 1;
	struct job *n = run_job(JOB_NATIVE, 10);
	T_EQ(d.n_kept, 2); /* js[2] followed, n just ended */
	T_TRUE(d.kept_head == js[2] && d.kept_tail == n);
	jobs_unwatch(&d, &a.w, false);
	run_timers();
	T_EQ(d.n_kept, 1);
	T_TRUE(d.kept_head == n);
	/* the byte cap: about two jobs' worth */
	d.cfg.events_keep_jobs = 1000;
	d.cfg.events_keep_bytes = 2 * jobs_bytes(n) + jobs_bytes(n) / 2;
	for (int i = 0; i < 4; i++)
		T_TRUE(run_job(JOB_NATIVE, 10) != NULL);
	T_EQ(d.n_kept, 2);
	T_TRUE(d.kept_bytes <= d.cfg.events_keep_bytes);
	/* OpenAI jobs are never kept: gone once nobody follows them */
	uint32_t jobs_before = d.n_jobs;
	T_TRUE(run_job(JOB_OAI_COMPLETION, 10) != NULL);
	T_EQ(d.n_kept, 2);
	T_EQ(d.n_jobs, jobs_before + 1);
	run_timers();
	T_EQ(d.n_jobs, jobs_before);
	/* no retention: nothing kept */
	d.cfg.events_keep_jobs = 0;
	T_TRUE(run_job(JOB_NATIVE, 10) != NULL);
	run_timers();
	T_EQ(d.n_jobs, jobs_before);
	while (d.jobs)
		jobs_free(&d, d.jobs);
	T_EQ(d.n_kept, 0);
	T_EQ(d.kept_bytes, 0);
	cfg_defaults(&d.cfg);
	core_init(&d);
}

/*
 * Issue 16: a client is told what it can act on; paths, worker output and
 * internal job numbers stay in the log (under the job's correlation id).
 */
static void
test_client_messages(void)
{
	char buf[256];

	T_STREQ(jobs_client_message(ORCH_ECONTEXT,
	                            "job 12: prompt of 1002 tokens exceeds the context of 512", buf,
	                            sizeof(buf)),
	        "prompt of 1002 tokens exceeds the context of 512");
	T_STREQ(jobs_client_message(ORCH_EINVAL, "job 7x: odd", buf, sizeof(buf)), "job 7x: odd");
	T_STREQ(jobs_client_message(ORCH_EQUEUE_FULL, "the queue of model 'a' is full (2)", buf,
	                            sizeof(buf)),
	        "the queue of model 'a' is full (2)");
	T_STREQ(jobs_client_message(ORCH_EMODEL_LOAD,
	                            "a-0: cannot open /srv/models/x.gguf (status 1); output: boom",
	                            buf, sizeof(buf)),
	        "the model failed to load");
	T_STREQ(jobs_client_message(ORCH_EWORKER_LOST, "pid 4242 exited with status 137", buf,
	                            sizeof(buf)),
	        "the model's worker stopped before the job ended");
	T_STREQ(jobs_client_message(ORCH_EINTERNAL, "send queue of a-0 full", buf, sizeof(buf)),
	        "internal error");
	T_STREQ(jobs_client_message(ORCH_EIO, "/etc/x: denied", buf, sizeof(buf)),
	        "internal error");
	T_STREQ(jobs_client_message(ORCH_ECANCELLED, NULL, buf, sizeof(buf)), "");
	/* the job's error event carries the client's text */
	struct job *j = new_job();
	jobs_fail(&d, j, ORCH_EMODEL_LOAD, "a-0: /srv/models/x.gguf: bad magic; output: ...");
	T_STREQ(j->events[j->n_events - 1].text, "the model failed to load");
	jobs_free(&d, j);
	j = new_job();
	jobs_fail(&d, j, ORCH_ECONTEXT, "job 3: prompt of 9 tokens exceeds the context of 8");
	T_STREQ(j->events[j->n_events - 1].text, "prompt of 9 tokens exceeds the context of 8");
	jobs_free(&d, j);
}

int
main(void)
{
	cfg_defaults(&d.cfg);
	core_init(&d);
	d.base = loop_base_new();
	T_RUN(test_events);
	T_RUN(test_client_gone);
	T_RUN(test_started_first);
	T_RUN(test_metrics_events);
	T_RUN(test_ids_and_owners);
	T_RUN(test_retention);
	T_RUN(test_client_messages);
	loop_base_free(d.base);
	return t_done();
}
