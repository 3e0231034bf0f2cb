/*
 * models.c - the registry: each configured model, its workers, its state
 * (stopped, loading, ready, failed, unloading), its bounded FIFO queue, and
 * placement of jobs on the READY worker with the fewest outstanding tokens.
 */
#include "models.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "affinity.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "devices.h"
#include "inspect.h"
#include "job_tools.h"
#include "jobs.h"
#include "loop.h"
#include "model_pull.h"
#include "notify.h"
#include "orchd.h"
#include "placement.h"
#include "wire_send.h"
#include "workers.h"

const char *
models_state_name(enum model_state s)
{
	static const char *const names[] = {"stopped", "loading", "ready", "failed", "unloading"};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

struct model_entry *
models_find(struct orchd *d, const char *name)
{
	for (struct model_entry *m = d->models; m; m = m->next)
		if (strcmp(m->cfg.name, name) == 0)
			return m;
	return NULL;
}

static void start_workers(struct orchd *d, struct model_entry *m);

/*
 * The one model of orchd --model FILE failed before it was ever ready: there is
 * nothing to serve, so orchd stops, exit status 1, saying why (on a terminal too).
 */
static void
flag_model_failed(struct orchd *d, const struct model_entry *m)
{
	orch_log(ORCH_LOG_ERR, "start_failed", "part=model value=%s msg=\"%s\"", m->cfg.path,
	         m->error);
	size_t n = strlen(m->cfg.path); /* an error that names the file already: once is enough */
	bool named = strncmp(m->error, m->cfg.path, n) == 0 && m->error[n] == ':';
	if (isatty(STDERR_FILENO) && named)
		fprintf(stderr, "orchd: --model %s\n", m->error);
	else if (isatty(STDERR_FILENO))
		fprintf(stderr, "orchd: --model %s: %s\n", m->cfg.path, m->error);
	d->exit_code = 1;
	if (d->stop != NULL) /* the config's other models may be serving: drain, as SIGTERM */
		d->stop(d, "the --model model failed to load");
	else
		loop_exit(d->base);
}

/* A start that found the file unusable: the model fails without a worker. */
static void
fail_start(struct orchd *d, struct model_entry *m, orch_err code, const char *msg)
{
	snprintf(m->error, sizeof(m->error), "%.*s", (int)sizeof(m->error) - 1, msg);
	m->met.load_failures++;
	orch_log(ORCH_LOG_ERR, "model_failed", "model=%s err=%s msg=\"%s\"", m->cfg.name,
	         orch_err_wire(code), msg);
	models_worker_state(d, m);
}

/*
 * Starts whose files are read, in registry order: a start waits for the read
 * of every model before it that is starting too, so placement sees the
 * models in the order the configuration gives them, whichever read ends
 * first. Each start then fails on its read's error or starts its workers
 * (both report the state change; a model may be gone after them).
 */
static void
start_pending(struct orchd *d)
{
	for (struct model_entry *m = d->models, *next; m; m = next) {
		next = m->next;
		if (!m->start_after || m->pulling != NULL) /* a pull does not hold the others */
			continue;
		if (m->inspecting != NULL)
			return; /* an earlier start is still reading: the later ones wait */
		m->start_after = false;
		if (m->state != MODEL_LOADING) /* unloaded meanwhile */
			continue;
		if (d->stopping) /* SIGTERM came during the read: no worker starts now */
			models_worker_state(d, m);
		else if (m->read_rv != ORCH_OK) /* the worker would fail the same way */
			fail_start(d, m, m->read_rv, m->read_msg);
		else
			start_workers(d, m);
	}
}

/* The end of @m's read: its error, if any, for a start waiting on it. */
static void
read_done(struct model_entry *m, orch_err rv, const char *msg)
{
	m->inspecting = NULL;
	if (m->ev_read)
		loop_stop(m->ev_read);
	m->read_rv = rv;
	snprintf(m->read_msg, sizeof(m->read_msg), "%.*s", (int)sizeof(m->read_msg) - 1,
	         rv == ORCH_OK ? "" : msg);
}

/* The file's facts (inspect.h): what it is, the estimate, the template's origin; starts go on. */
static void
on_inspected(struct orchd *d, void *arg, const struct inspect_facts *f)
{
	struct model_entry *m = arg;

	read_done(m, f->rv, f->msg);
	m->file = f->model; /* nothing known when the read failed */
	if (f->rv == ORCH_OK) {
		m->need_known = f->has_estimate;
		m->need_bytes = f->need_bytes;
		if (!f->has_estimate)
			orch_log(ORCH_LOG_WARNING, "no_memory_estimate",
			         "model=%s missing=%s: started without a memory check", m->cfg.name,
			         f->missing);
		if (!m->cfg.hf_tokenizer && m->chat_template_origin[0] == '\0') /* Ready says */
			snprintf(m->chat_template_origin, sizeof(m->chat_template_origin), "%s",
			         f->has_chat_template ? "model" : "fallback");
	}
	start_pending(d);
}

/* A read longer than load_timeout_s (a hung mount): the start fails; a later one reads afresh. */
static void
on_read_timeout(int fd, short what, void *arg)
{
	struct model_entry *m = arg;
	char msg[CFG_PATH_MAX + 96];

	(void)fd;
	(void)what;
	if (m->inspecting == NULL)
		return;
	inspect_cancel(m->inspecting);
	snprintf(msg, sizeof(msg), "%s: not read within load_timeout_s (%u s)", m->cfg.path,
	         m->d->cfg.load_timeout_s);
	read_done(m, ORCH_ETIMEOUT, msg);
	start_pending(m->d);
}

static void inspect(struct orchd *d, struct model_entry *m);

/* @m's reference pulled (model_pull.h): its file is read next, or the start fails. */
static void
on_pulled(struct orchd *d, void *arg, orch_err rv, const char *path, const char *msg)
{
	struct model_entry *m = arg;

	(void)path; /* the next read finds it in the store */
	m->pulling = NULL;
	if (rv == ORCH_OK) {
		orch_log(ORCH_LOG_INFO, "model_pulled", "model=%s ref=%s path=%s", m->cfg.name,
		         m->cfg.ref, path);
		inspect(d, m);
	} else {
		orch_log(ORCH_LOG_ERR, "model_pull_failed", "model=%s ref=%s err=%s msg=\"%s\"",
		         m->cfg.name, m->cfg.ref, orch_err_wire(rv), msg);
		read_done(m, rv, msg);
		start_pending(d);
	}
	models_changed(d, m, "state");
}

/*
 * A model named by reference: its file from the store; else, on a start with pull = yes, a
 * pull first (true: wait for it); else the start fails saying how to get it (true too).
 */
static bool
resolve(struct orchd *d, struct model_entry *m)
{
	struct orch_errinfo e = {0};
	orch_err rv;

	if (m->cfg.ref[0] == '\0')
		return false;
	if (m->pulling != NULL)
		return true;
	/* looked up at every read: a reference removed from the store since is seen */
	rv = model_pull_find(d, m->cfg.ref, m->cfg.path, sizeof(m->cfg.path), &e);
	if (rv == ORCH_OK)
		return false;
	m->cfg.path[0] = '\0';
	if (rv == ORCH_ENOTFOUND && m->cfg.pull && m->start_after &&
	    (rv = model_pull_start(d, m->cfg.ref, m->pull_token, on_pulled, m, &m->pulling, &e)) ==
	            ORCH_OK)
		return true;
	read_done(m, rv, e.msg);
	start_pending(d);
	return true;
}

/* Read @m's file off the loop (one read at a time); a start waiting on it goes on after. */
static void
inspect(struct orchd *d, struct model_entry *m)
{
	struct orch_errinfo e = {0};
	/* both backends page their KV; kv_cache_fraction is of the first device's memory */
	struct inspect_shape shape = {.context = m->cfg.context,
	                              .slots = m->cfg.slots,
	                              .paged = true,
	                              .kv_cache_mib = m->cfg.kv_cache_mib,
	                              .kv_block_tokens = m->cfg.kv_block_tokens,
	                              .kv_fraction = m->cfg.kv_cache_fraction};
	const struct device_info *dev =
	        devices_find(&d->devices, m->cfg.n_devices > 0 ? m->cfg.devices[0] : "cpu");

	shape.mem_total = dev ? dev->total : 0;
	if (m->inspecting != NULL || resolve(d, m))
		return;
	if (m->ev_read == NULL && (m->ev_read = loop_timer(d->base, on_read_timeout, m)) == NULL) {
		orch_errf(&e, ORCH_ENOMEM, "out of memory");
	} else if (inspect_start(d, m->cfg.path, &shape, on_inspected, m, &m->inspecting, &e) ==
	           ORCH_OK) {
		loop_after(m->ev_read, d->cfg.load_timeout_s * 1000ull);
		return;
	}
	orch_log_err(e.code, &e, "inspect_failed", "model=%s", m->cfg.name);
	read_done(m, e.code, e.msg);
	start_pending(d);
}

orch_err
models_add(struct orchd *d, const struct cfg_model *cfg, struct model_entry **ret,
           struct orch_errinfo *reterr)
{
	struct model_entry *m;

	if (models_find(d, cfg->name) != NULL)
		return orch_errf(reterr, ORCH_EINVAL, "model '%s' exists", cfg->name);
	if ((m = orch_calloc(1, sizeof(*m))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	m->d = d;
	m->cfg = *cfg;
	m->workers = orch_calloc(cfg->replicas, sizeof(*m->workers));
	if (m->workers == NULL) {
		orch_free(m);
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < cfg->replicas; i++) {
		if ((m->workers[i] = workers_new(d, m, i)) == NULL) {
			models_free(d, m);
			return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
		}
		m->n_workers++;
	}
	m->state = MODEL_STOPPED;
	m->wanted = cfg->preload;
	m->next = NULL;
	inspect(d, m); /* facts for /v1/models before the first start; errors then */
	struct model_entry **tail = &d->models;
	while (*tail)
		tail = &(*tail)->next;
	*tail = m;
	if (ret)
		*ret = m;
	return ORCH_OK;
}

#define WAIT_POLL_MS 250

/* A start waiting for memory: try again, or give up after evict_wait_s. */
static void
on_wait(int fd, short what, void *arg)
{
	struct model_entry *m = arg;
	struct orchd *d = m->d;

	(void)fd;
	(void)what;
	if (m->state != MODEL_LOADING || m->wait_since_ms == 0)
		return;
	if (orch_mono_ms() - m->wait_since_ms > d->cfg.evict_wait_s * 1000ull) {
		for (uint32_t i = 0; i < m->n_workers; i++)
			if (m->workers[i]->state == WORKER_WAITING)
				m->workers[i]->state = WORKER_STOPPED;
		snprintf(m->error, sizeof(m->error),
		         "memory for model '%s' did not come free within evict_wait_s (%u s)",
		         m->cfg.name, d->cfg.evict_wait_s);
		m->error_code = ORCH_EINSUFFICIENT_VRAM;
		m->wait_since_ms = 0;
		models_worker_state(d, m);
		return;
	}
	start_workers(d, m);
}

/* Start each worker of @m that is not running, if its device has room. */
static void
start_workers(struct orchd *d, struct model_entry *m)
{
	bool waiting = false;

	for (uint32_t i = 0; i < m->n_workers; i++) {
		struct worker *w = m->workers[i];
		struct orch_errinfo e = {0};
		struct place_evict ev = {.n = 0};
		if (w->pid > 0 || w->state == WORKER_BACKOFF || workers_settling(w))
			continue;
		switch (placement_check(d, w, &ev, &e)) {
		case PLACE_WAIT:
			for (uint32_t k = 0; k < ev.n; k++)
				models_unload(d, ev.v[k], false);
			w->state = WORKER_WAITING;
			waiting = true;
			continue;
		case PLACE_REFUSE:
			w->state = WORKER_STOPPED;
			orch_log_err(e.code, &e, "placement_refused", "worker=%s", w->id);
			snprintf(m->error, sizeof(m->error), "%s", e.msg);
			m->error_code = e.code;
			continue;
		case PLACE_FIT:
			break;
		}
		w->restarts = 0;
		w->backoff_ms = 0;
		if (workers_spawn(d, w, &e) != ORCH_OK) {
			orch_log_err(e.code, &e, "worker_spawn_failed", "worker=%s", w->id);
			snprintf(m->error, sizeof(m->error), "%s", e.msg);
		}
	}
	if (waiting && m->ev_wait == NULL)
		m->ev_wait = loop_timer(d->base, on_wait, m);
	if (waiting && m->ev_wait) {
		if (m->wait_since_ms == 0)
			m->wait_since_ms = orch_mono_ms();
		loop_after(m->ev_wait, WAIT_POLL_MS);
	} else if (!waiting) {
		m->wait_since_ms = 0;
	}
	models_worker_state(d, m);
}

void
models_start(struct orchd *d, struct model_entry *m)
{
	/* an unloading model (maybe to be removed) starts again only once it has stopped */
	if (m->state == MODEL_LOADING || m->state == MODEL_READY || m->state == MODEL_UNLOADING ||
	    d->stopping)
		return;
	m->error[0] = '\0';
	m->error_code = ORCH_OK;
	m->n_fail = 0;
	m->state = MODEL_LOADING;
	m->load_started_ms = orch_mono_ms();
	orch_log(ORCH_LOG_INFO, "model_load", "model=%s path=%s replicas=%u", m->cfg.name,
	         m->cfg.path, m->n_workers);
	m->start_after = true; /* the file is read first (a read under way will do) */
	inspect(d, m);
	models_changed(d, m, "state");
}

void
models_unload(struct orchd *d, struct model_entry *m, bool remove)
{
	m->remove_when_stopped |= remove;
	m->wanted = false; /* /ready no longer waits for it */
	m->state = MODEL_UNLOADING;
	orch_log(ORCH_LOG_INFO, "model_unload", "model=%s", m->cfg.name);
	model_pull_cancel(m->pulling); /* its partial file stays for the next start */
	m->pulling = NULL;
	/* queued jobs have no worker to wait for any more */
	models_fail_queued(d, m, ORCH_EMODEL_NOT_FOUND, "the model was unloaded");
	for (uint32_t i = 0; i < m->n_workers; i++)
		workers_drain(d, m->workers[i]);
	models_worker_state(d, m);
}

void
models_fail_queued(struct orchd *d, struct model_entry *m, orch_err code, const char *msg)
{
	while (m->queue_head) {
		struct job *j = m->queue_head;
		models_unqueue(j);
		jobs_fail(d, j, code, msg);
	}
	d->model_hooks->fail(d, m, code, msg);
}

void
models_changed(struct orchd *d, struct model_entry *m, const char *what)
{
	if (d->on_model_event)
		d->on_model_event(d, m, what);
}

void
models_requeue(struct job *j)
{
	struct model_entry *m = j->model;

	j->state = JOB_QUEUED;
	j->next_queue = m->queue_head;
	m->queue_head = j;
	if (m->queue_tail == NULL)
		m->queue_tail = j;
	m->queued++;
}

void
models_unqueue(struct job *j)
{
	struct model_entry *m = j->model;

	for (struct job **p = &m->queue_head; *p; p = &(*p)->next_queue) {
		if (*p != j)
			continue;
		*p = j->next_queue;
		if (m->queue_tail == j) {
			m->queue_tail = NULL;
			for (struct job *q = m->queue_head; q; q = q->next_queue)
				m->queue_tail = q;
		}
		j->next_queue = NULL;
		m->queued--;
		return;
	}
}

/*
 * The worker for @j: among @m's READY workers with room, the one its prompt
 * prefix has affinity to (affinity.h) while that one has a free slot and at
 * most AFFINITY_SLACK(slots) more jobs than the least loaded, else the one
 * with the fewest outstanding tokens; NULL when none has room.
 */
/*
 * The jobs a worker of @m takes per slot: WORKER_JOBS_PER_SLOT, the rest waiting
 * in the worker; with scheduler = fair one, so that the rest wait here, where
 * the queue is served by key.
 */
static uint32_t
per_slot(const struct model_entry *m)
{
	return m->cfg.scheduler == CFG_SCHED_FAIR ? 1 : WORKER_JOBS_PER_SLOT;
}

static struct worker *
pick(struct model_entry *m, const struct job *j)
{
	struct worker *best = NULL, *near = NULL;
	uint64_t near_score = 0;

	for (uint32_t i = 0; i < m->n_workers; i++) {
		struct worker *w = m->workers[i];
		/* a worker takes up to 4 × slots jobs (fair: slots); the rest wait here */
		if (w->state != WORKER_READY ||
		    w->pid <= 0 || /* a dead one is READY until reaped */
		    w->jobs >= per_slot(m) * (w->slots_total ? w->slots_total : 1))
			continue;
		if (best == NULL || w->outstanding < best->outstanding)
			best = w;
		uint64_t score = j->affinity ? affinity_score(j->affinity, w->id) : 0;
		if (j->affinity && w->prefix_cache && (near == NULL || score > near_score)) {
			near = w;
			near_score = score;
		}
	}
	if (near != NULL && near != best && near->jobs < near->slots_total &&
	    near->jobs <= best->jobs + AFFINITY_SLACK(near->slots_total)) {
		m->met.affinity_routed++;
		return near;
	}
	return best;
}

static bool
place(struct orchd *d, struct worker *w, struct job *j)
{
	j->worker = w;
	j->state = JOB_RUNNING;
	if (j->requeues == 0) /* the wait a client saw; a requeued job's second wait is not */
		histo_observe(&j->model->met.queue_wait,
		              (double)(orch_mono_ms() - j->created_ms) / 1e3);
	w->jobs++;
	w->outstanding += j->req.max_tokens;
	if (!job_tools_dispatch(d, w->tool_syntax, j))
		return false; /* failed, saying why */
	orch_err rv = wire_send_submit(d, w, j);
	if (rv == ORCH_EQUEUE_FULL) {
		jobs_fail(d, j, ORCH_EQUEUE_FULL,
		          "the worker's send queue is full: it does not take messages");
		return false;
	}
	if (rv != ORCH_OK) {
		jobs_fail(d, j, ORCH_EWORKER_LOST, "the worker did not take the job");
		return false;
	}
	j->model->last_used_ms = orch_mono_ms();
	return true;
}

/* scheduler = fair: the jobs of @m running, counted by owner (an owner's key digest). */
struct owners {
	struct job_owner *who;
	uint32_t *n;
	uint32_t count, cap;
};

static uint32_t *
owner_slot(struct owners *o, const struct job_owner *who)
{
	for (uint32_t i = 0; i < o->count; i++)
		if (memcmp(&o->who[i], who, sizeof(*who)) == 0)
			return &o->n[i];
	return NULL;
}

/* @o of @m's running jobs; false when out of memory (then fcfs serves). */
static bool
owners_count(struct orchd *d, const struct model_entry *m, struct owners *o)
{
	uint32_t running = 0;

	for (uint32_t i = 0; i < m->n_workers; i++)
		running += m->workers[i]->jobs;
	o->cap = running + m->queued + 1; /* every owner running, and those placed now */
	o->count = 0;
	o->who = orch_calloc(o->cap, sizeof(*o->who));
	o->n = orch_calloc(o->cap, sizeof(*o->n));
	if (o->who == NULL || o->n == NULL)
		return false;
	for (struct job *r = d->live; r; r = r->live_next) {
		if (r->model != m || r->state != JOB_RUNNING)
			continue;
		uint32_t *n = owner_slot(o, &r->owner);
		if (n == NULL && o->count < o->cap) {
			o->who[o->count] = r->owner;
			n = &o->n[o->count++];
		}
		if (n != NULL)
			(*n)++;
	}
	return true;
}

/*
 * The next job of @m's queue: its head; with scheduler = fair (@o counted), the
 * job whose owner has the fewest jobs running, then one whose owner is not the
 * last served (keys take turns when none runs, as with one slot), then the
 * earliest. A burst from one key then waits behind every other key's next job.
 */
static struct job *
next_job(struct model_entry *m, struct owners *o)
{
	struct job *best = m->queue_head;
	uint64_t best_key = UINT64_MAX;

	if (o == NULL)
		return best;
	for (struct job *q = m->queue_head; q && best_key > 0; q = q->next_queue) {
		const uint32_t *n = owner_slot(o, &q->owner);
		bool again = memcmp(&q->owner, &m->last_owner, sizeof(q->owner)) == 0;
		uint64_t key = (uint64_t)(n ? *n : 0) << 1 | again;
		if (key < best_key) {
			best = q;
			best_key = key;
		}
	}
	return best;
}

void
models_dispatch(struct orchd *d, struct model_entry *m)
{
	struct owners o = {0};
	bool fair = m->cfg.scheduler == CFG_SCHED_FAIR && m->queue_head != NULL &&
	            owners_count(d, m, &o);
	struct job *j;
	struct worker *w;

	while ((j = next_job(m, fair ? &o : NULL)) != NULL && (w = pick(m, j)) != NULL) {
		models_unqueue(j);
		if (fair) { /* one more running for its owner */
			m->last_owner = j->owner;
			uint32_t *n = owner_slot(&o, &j->owner);
			if (n == NULL && o.count < o.cap) {
				o.who[o.count] = j->owner;
				n = &o.n[o.count++];
			}
			if (n != NULL)
				(*n)++;
		}
		place(d, w, j);
	}
	orch_free(o.who);
	orch_free(o.n);
	d->model_hooks->dispatch(d, m);
}

orch_err
models_usable(struct orchd *d, struct model_entry *m, struct orch_errinfo *reterr)
{
	char path[CFG_PATH_MAX];
	if (m->state == MODEL_FAILED && m->error_code == ORCH_EINSUFFICIENT_VRAM)
		models_start(d, m); /* memory may have come free since */
	else if (m->state == MODEL_FAILED && m->cfg.ref[0] &&
	         model_pull_find(d, m->cfg.ref, path, sizeof(path), NULL) == ORCH_OK &&
	         strcmp(path, m->cfg.path) != 0)
		models_start(d, m); /* its file was pulled since (orchctl pull) */
	if (m->state == MODEL_FAILED && m->error_code == ORCH_EINSUFFICIENT_VRAM)
		return orch_errf(reterr, ORCH_EINSUFFICIENT_VRAM, "%s", m->error);
	if (m->state == MODEL_FAILED)
		return orch_errf(reterr, ORCH_EMODEL_LOAD, "model '%s' failed to load: %s",
		                 m->cfg.name, m->error);
	if (m->state == MODEL_UNLOADING)
		return orch_errf(reterr, ORCH_EQUEUE_FULL, "model '%s' is being unloaded",
		                 m->cfg.name);
	return ORCH_OK;
}

uint32_t
models_room(const struct orchd *d, const struct model_entry *m)
{
	uint64_t room = d->cfg.max_queue;

	for (uint32_t i = 0; i < m->n_workers; i++) {
		uint32_t slots =
		        m->workers[i]->slots_total ? m->workers[i]->slots_total : m->cfg.slots;
		room += per_slot(m) * (uint64_t)(slots ? slots : 1);
	}
	return room > UINT32_MAX ? UINT32_MAX : (uint32_t)room;
}

orch_err
models_submit(struct orchd *d, struct job *j, struct orch_errinfo *reterr)
{
	struct model_entry *m = j->model;
	struct worker *w;
	orch_err rv = models_usable(d, m, reterr);

	/* from here its end and cancel go through the registry */
	j->host = d->model_hooks->job_host;

	if (rv != ORCH_OK)
		return rv;
	if (j->affinity == 0 && m->n_workers > 1)
		j->affinity = affinity_key(&j->req);
	if (m->queue_head == NULL && (w = pick(m, j)) != NULL) {
		place(d, w, j);
		return ORCH_OK;
	}
	if (m->queued >= d->cfg.max_queue) {
		d->metrics.rejected_queue_full++;
		return orch_errf(reterr, ORCH_EQUEUE_FULL, "the queue of model '%s' is full (%u)",
		                 m->cfg.name, d->cfg.max_queue);
	}
	j->state = JOB_QUEUED;
	if (m->queue_tail)
		m->queue_tail->next_queue = j;
	else
		m->queue_head = j;
	m->queue_tail = j;
	m->queued++;
	if (m->state == MODEL_STOPPED)
		models_start(d, m);
	return ORCH_OK;
}

void
models_worker_state(struct orchd *d, struct model_entry *m)
{
	uint32_t ready = 0, live = 0, stopped = 0;
	enum model_state before = m->state;

	for (uint32_t i = 0; i < m->n_workers; i++) {
		enum worker_state s = m->workers[i]->state;
		ready += s == WORKER_READY;
		/* an unhealthy worker drains, then restarts: the model is not given up */
		live += s == WORKER_STARTING || s == WORKER_LOADING || s == WORKER_BACKOFF ||
		        s == WORKER_WAITING || s == WORKER_UNHEALTHY;
		stopped += s == WORKER_STOPPED && m->workers[i]->pid <= 0;
	}
	if (m->state == MODEL_UNLOADING) {
		if (stopped == m->n_workers) {
			m->state = MODEL_STOPPED;
			orch_log(ORCH_LOG_INFO, "model_unloaded", "model=%s", m->cfg.name);
		}
	} else if (ready > 0) {
		m->state = MODEL_READY;
	} else if (live > 0) {
		m->state = MODEL_LOADING;
	} else if (d->stopping && stopped == m->n_workers) {
		m->state = MODEL_STOPPED; /* orchd's own shutdown, not a failure */
	} else if (m->state == MODEL_LOADING || m->state == MODEL_READY) {
		m->state = MODEL_FAILED; /* every worker gave up */
		if (m->error[0] == '\0')
			snprintf(m->error, sizeof(m->error), "every worker stopped");
	}
	if (m->state == MODEL_FAILED) {
		models_fail_queued(d, m, m->error_code ? m->error_code : ORCH_EMODEL_LOAD,
		                   m->error);
		if (m->ready_since_ms == 0 && strcmp(m->cfg.name, d->flag_model) == 0)
			flag_model_failed(d, m);
	}
	if (m->state != before) {
		if (m->state == MODEL_READY)
			m->ready_since_ms = orch_mono_ms();
		orch_log(ORCH_LOG_INFO, "model_state", "model=%s state=%s", m->cfg.name,
		         models_state_name(m->state));
		models_changed(d, m, "state");
		struct notify_status s;
		models_status(d, &s);
		notify_state(d, &s);
	}
	if (m->state == MODEL_STOPPED && m->remove_when_stopped) {
		struct model_entry **p = &d->models;
		while (*p && *p != m)
			p = &(*p)->next;
		if (*p)
			*p = m->next;
		models_free(d, m);
	}
}

void
models_status(const struct orchd *d, struct notify_status *s)
{
	*s = (struct notify_status){.all_ready = models_all_ready(d)};
	for (const struct model_entry *m = d->models; m; m = m->next) {
		s->total++;
		s->ready += m->state == MODEL_READY;
		s->queued += m->queued;
		for (uint32_t i = 0; i < m->n_workers; i++)
			s->running += m->workers[i]->jobs;
	}
}

bool
models_all_ready(const struct orchd *d)
{
	for (const struct model_entry *m = d->models; m; m = m->next)
		if (m->wanted && m->state != MODEL_READY)
			return false;
	return true;
}

void
models_free(struct orchd *d, struct model_entry *m)
{
	for (struct job *j = d->jobs; j; j = j->next_all)
		if (j->model == m) {
			j->model = NULL;
			j->met = NULL;
		}
	d->model_hooks->fail(d, m, ORCH_EMODEL_NOT_FOUND, "the model was removed");
	for (uint32_t i = 0; i < m->n_workers; i++)
		workers_free(m->workers[i]);
	orch_free(m->workers);
	models_changed(d, m, NULL); /* NULL: it goes; the followers are let go */
	inspect_cancel(m->inspecting);
	model_pull_cancel(m->pulling);
	orch_free(m->pull_token);
	if (m->ev_read)
		loop_free(m->ev_read);
	if (m->ev_wait)
		loop_free(m->ev_wait);
	orch_free(m);
}
