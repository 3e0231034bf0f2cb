/*
 * admin.c - the admin API (docs/http-api.md): HTTP/JSON on a unix socket
 * (mode 0660), and optionally on TCP with its own bearer token.
 *
 *   GET    /admin/status                  models, workers, devices, memory, queue, uptime
 *   GET    /admin/workers                 one object per worker
 *   POST   /admin/models                  load {name, path, device, slots, context, replicas}
 *   DELETE /admin/models/NAME             unload (drain, then stop)
 *   POST   /admin/models/NAME/forget      unload, then forget (models added here only)
 *   POST   /admin/workers/ID/restart
 *   GET    /admin/models/NAME/events      SSE: progress and state changes
 *   GET    /admin/workers/ID/logs         its last output lines (?lines=N, ?since=SEQ)
 *   POST   /admin/shutdown (or /shutdown) drain and exit, as SIGTERM
 */
#include "admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "admin_int.h"
#include "admin_pull.h"
#include "admin_state.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/discover.h"
#include "base/log.h"
#include "base/readfile.h"
#include "base/sbuf.h"
#include "devices.h"
#include "health.h"
#include "inspect.h"
#include "jobs.h"
#include "model_pull.h"
#include "models.h"
#include "orchd.h"
#include "params.h"
#include "reply.h"
#include "route.h"
#include "workers.h"

static cJSON *
worker_json(const struct worker *w)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "id", w->id);
	cJSON_AddStringToObject(o, "model", w->model->cfg.name);
	cJSON_AddStringToObject(o, "device", w->device);
	cJSON_AddStringToObject(o, "state", workers_state_name(w->state));
	cJSON_AddNumberToObject(o, "pid", w->pid);
	cJSON_AddNumberToObject(o, "load_percent", w->load_pct);
	cJSON_AddNumberToObject(o, "memory_used_bytes", (double)w->memory_used);
	cJSON_AddNumberToObject(o, "memory_weights_bytes", (double)w->mem_weights);
	cJSON_AddNumberToObject(o, "memory_kv_bytes", (double)w->mem_kv);
	cJSON_AddNumberToObject(o, "memory_scratch_bytes", (double)w->mem_scratch);
	cJSON_AddNumberToObject(o, "slots_busy", w->slots_busy);
	cJSON_AddNumberToObject(o, "slots_total", w->slots_total);
	cJSON_AddNumberToObject(o, "kv_cells_used", (double)w->kv_used);
	cJSON_AddNumberToObject(o, "kv_cells_total", (double)w->kv_total);
	if (w->kv_blocks_total > 0) { /* paged KV */
		cJSON_AddNumberToObject(o, "kv_blocks_total", w->kv_blocks_total);
		cJSON_AddNumberToObject(o, "kv_blocks_used", w->kv_blocks_used);
		cJSON_AddNumberToObject(o, "kv_blocks_cached", w->kv_blocks_cached);
		cJSON_AddNumberToObject(o, "kv_block_tokens", w->kv_block_tokens);
		cJSON_AddBoolToObject(o, "prefix_cache", w->prefix_cache);
		cJSON_AddNumberToObject(o, "prefix_query_tokens", (double)w->prefix_query_tokens);
		cJSON_AddNumberToObject(o, "prefix_hit_tokens", (double)w->prefix_hit_tokens);
		cJSON_AddNumberToObject(o, "preemptions", (double)w->preemptions);
	}
	cJSON_AddNumberToObject(o, "jobs", w->jobs);
	cJSON_AddNumberToObject(o, "restarts", w->restarts);
	cJSON_AddNumberToObject(o, "last_exit_status", w->last_exit);
	cJSON_AddBoolToObject(o, "residency_ok", w->residency_ok);
	cJSON_AddBoolToObject(o, "degraded", w->degraded);
	cJSON_AddStringToObject(o, "debug_endpoint", w->debug_url);
	health_worker_facts(o, w);
	return o;
}

cJSON *
admin_model_json(const struct model_entry *m)
{
	cJSON *o = cJSON_CreateObject(), *devs = cJSON_AddArrayToObject(o, "devices");

	cJSON_AddStringToObject(o, "name", m->cfg.name);
	cJSON_AddStringToObject(o, "path", m->cfg.path);
	if (m->cfg.ref[0]) {
		cJSON_AddStringToObject(o, "model", m->cfg.ref);
		cJSON_AddBoolToObject(o, "pull", m->cfg.pull);
	}
	if (m->pulling != NULL) { /* loading: the file is being pulled first */
		struct model_pull_state ps;
		model_pull_progress(m->pulling, &ps);
		cJSON *pj = cJSON_AddObjectToObject(o, "pulling");
		cJSON_AddStringToObject(pj, "file", ps.file);
		cJSON_AddNumberToObject(pj, "file_index", ps.index);
		cJSON_AddNumberToObject(pj, "files", ps.n_files);
		cJSON_AddNumberToObject(pj, "bytes_done", (double)ps.done);
		cJSON_AddNumberToObject(pj, "bytes_total", (double)ps.total);
	}
	cJSON_AddStringToObject(o, "state", models_state_name(m->state));
	cJSON_AddStringToObject(o, "health", health_model_healthy(m) ? "healthy" : "unhealthy");
	for (uint32_t i = 0; i < m->cfg.n_devices; i++)
		cJSON_AddItemToArray(devs, cJSON_CreateString(m->cfg.devices[i]));
	cJSON_AddNumberToObject(o, "slots", m->cfg.slots);
	cJSON_AddNumberToObject(o, "context", m->cfg.context); /* as configured; 0: the model's */
	for (uint32_t i = 0; i < m->n_workers; i++) /* what a worker took, once one loaded */
		if (m->workers[i]->ident.context_length) {
			cJSON_AddNumberToObject(o, "context_length",
			                        m->workers[i]->ident.context_length);
			break;
		}
	cJSON_AddNumberToObject(o, "replicas", m->cfg.replicas);
	cJSON_AddBoolToObject(o, "preload", m->cfg.preload);
	cJSON_AddStringToObject(o, "tokenizer", m->cfg.hf_tokenizer ? "hf-json" : "gguf");
	admin_kv_json(o, &m->cfg);
	if (m->chat_template_origin[0])
		cJSON_AddStringToObject(o, "chat_template", m->chat_template_origin);
	if (m->tool_syntax[0])
		cJSON_AddStringToObject(o, "tool_call_syntax", m->tool_syntax);
	cJSON_AddBoolToObject(o, "wanted", m->wanted);
	cJSON_AddStringToObject(o, "origin", m->runtime ? "admin" : "config");
	if (m->file.known) {
		cJSON_AddNumberToObject(o, "file_bytes", (double)m->file.file_bytes);
		cJSON_AddNumberToObject(o, "n_ctx_train", m->file.n_ctx_train);
	}
	cJSON_AddNumberToObject(o, "queued", m->queued);
	cJSON_AddNumberToObject(o, "restarts", m->restarts);
	uint32_t pct = 0;
	for (uint32_t i = 0; i < m->n_workers; i++)
		pct += m->workers[i]->load_pct;
	cJSON_AddNumberToObject(o, "load_percent", m->n_workers ? pct / m->n_workers : 0);
	if (m->need_known)
		cJSON_AddNumberToObject(o, "memory_estimate_bytes", (double)m->need_bytes);
	cJSON_AddNumberToObject(
	        o, "last_used_unix_ms",
	        m->last_used_ms ? (double)(m->d->started_unix + m->last_used_ms - m->d->started_ms)
	                        : 0);
	cJSON_AddNumberToObject(o, "evictions", (double)m->met.evictions);
	if (m->error[0])
		cJSON_AddStringToObject(o, "error", m->error);
	if (m->error[0] && m->state == MODEL_FAILED)
		cJSON_AddStringToObject(
		        o, "error_code",
		        orch_err_wire(m->error_code ? m->error_code : ORCH_EMODEL_LOAD));
	if (m->state == MODEL_FAILED)
		cJSON_AddNumberToObject(o, "last_exit_status", m->last_exit);
	return o;
}

cJSON *
admin_status(struct orchd *d)
{
	cJSON *o = cJSON_CreateObject(), *ms = cJSON_AddArrayToObject(o, "models");
	cJSON *ws = cJSON_AddArrayToObject(o, "workers"),
	      *devs = cJSON_AddArrayToObject(o, "devices");
	uint64_t mem = 0;
	uint32_t queued = 0, running = 0;

	cJSON_AddStringToObject(o, "version", PROJECT_VERSION);
	cJSON_AddNumberToObject(o, "pid", getpid());
	cJSON_AddNumberToObject(o, "uptime_s", (double)(orch_mono_ms() - d->started_ms) / 1e3);
	cJSON_AddStringToObject(o, "listen", d->cfg.listen);
	char store[CFG_PATH_MAX];
	if (model_pull_dir(d, store, sizeof(store), NULL) == ORCH_OK) /* orchctl's models, rm */
		cJSON_AddStringToObject(o, "model_dir", store);
	cJSON_AddItemToObject(o, "pulls", admin_pulls_json(d, true)); /* those running */
	cJSON_AddBoolToObject(o, "ready", models_all_ready(d));
	cJSON_AddBoolToObject(o, "stopping", d->stopping);
	for (struct model_entry *m = d->models; m; m = m->next) {
		cJSON_AddItemToArray(ms, admin_model_json(m));
		queued += m->queued;
		for (uint32_t i = 0; i < m->n_workers; i++) {
			cJSON_AddItemToArray(ws, worker_json(m->workers[i]));
			mem += m->workers[i]->memory_used;
			running += m->workers[i]->jobs;
		}
	}
	devices_refresh(&d->devices, false);
	for (uint32_t i = 0; i < d->devices.n; i++) {
		const struct device_info *di = &d->devices.dev[i];
		cJSON *x = cJSON_CreateObject();
		uint64_t ours = 0;
		for (struct model_entry *m = d->models; m; m = m->next)
			for (uint32_t k = 0; k < m->n_workers; k++)
				if (strcmp(m->workers[k]->device, di->id) == 0)
					ours += m->workers[k]->memory_used;
		cJSON_AddStringToObject(x, "id", di->id);
		cJSON_AddStringToObject(x, "name", di->name);
		cJSON_AddNumberToObject(x, "memory_total_bytes", (double)di->total);
		cJSON_AddNumberToObject(x, "memory_free_bytes", (double)di->free);
		cJSON_AddNumberToObject(x, "memory_used_bytes", (double)ours);
		cJSON_AddItemToArray(devs, x);
	}
	if (d->devices.nvml_note[0])
		cJSON_AddStringToObject(o, "devices_note", d->devices.nvml_note);
	cJSON_AddNumberToObject(o, "memory_used_bytes", (double)mem);
	cJSON_AddNumberToObject(o, "queued", queued);
	cJSON_AddNumberToObject(o, "running", running);
	cJSON_AddNumberToObject(o, "open_streams", d->n_conns);
	cJSON_AddNumberToObject(o, "jobs_kept", d->n_kept);
	cJSON_AddNumberToObject(o, "jobs_kept_bytes", (double)d->kept_bytes);
	return o;
}

/* Take @s out of @m's followers. */
static void
drop_follower(struct model_entry *m, struct api_req *s)
{
	for (uint32_t i = 0; i < m->n_followers; i++)
		if (m->followers[i] == s) {
			m->followers[i] = m->followers[--m->n_followers];
			return;
		}
}

void
admin_model_event(struct orchd *d, struct model_entry *m, const char *what)
{
	/* a model loaded here that failed before it was ever ready (a pull that failed, a file
	 * that cannot load) is saved as not loaded (admin_state.c): a restart does not bring the
	 * failure back and hold /ready at 503 (orchctl load NAME retries it); this orchd's
	 * /ready still says it failed */
	if (what != NULL && strcmp(what, "state") == 0 && m->runtime && m->wanted &&
	    m->state == MODEL_FAILED && m->ready_since_ms == 0) {
		orch_log(ORCH_LOG_INFO, "model_not_kept_loaded",
		         "model=%s why=\"it failed before it was ever ready\"", m->cfg.name);
		admin_state_save(d);
	}
	if (what == NULL) { /* the model goes */
		while (m->n_followers > 0)
			reply_stream_end(m->followers[--m->n_followers]);
		orch_free(m->followers);
		m->followers = NULL;
		return;
	}
	if (m->n_followers == 0)
		return;
	cJSON *o = admin_model_json(m);
	cJSON_AddStringToObject(o, "event", what);
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	struct sbuf b = {0};
	sbuf_printf(&b, "event: %s\ndata: %s\n\n", what, text ? text : "{}");
	free(text);
	/* a follower cut as too slow leaves the array: walk it from the end */
	for (uint32_t i = m->n_followers; i-- > 0;)
		if (i < m->n_followers)
			reply_stream_write(m->followers[i], b.p, b.n);
	sbuf_fini(&b);
}

static void
on_follower_gone(struct api_req *s, void *arg, const char *why)
{
	(void)why;
	drop_follower(arg, s);
	reply_release(s);
}

static void
follow(struct orchd *d, struct api_req *req, struct model_entry *m)
{
	struct api_req **f = orch_reallocarray(m->followers, m->n_followers + 1, sizeof(*f));

	if (f == NULL)
		return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	m->followers = f;
	if (reply_stream_start(req, on_follower_gone, m) != ORCH_OK)
		return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	f[m->n_followers++] = req;
	admin_model_event(d, m, "state");
}

/* A change the state file could not keep (a full disk, a read-only mount): a warning in
 * its 202 (@o), which orchctl prints, instead of a silent success a restart undoes. */
void
admin_warn_unsaved(cJSON *o, orch_err saved, enum admin_unsaved what)
{
	static const char *const msgs[] = {
	        [UNSAVED_LOAD] = "the model is loaded, but orchd could not save it in its state "
	                         "file (its log says why): it will not come back after a restart",
	        [UNSAVED_UNLOAD] = "the model is unloading, but orchd could not save that in its "
	                           "state file (its log says why): a restart loads it again",
	        [UNSAVED_FORGET] = "the model is removed, but orchd could not save that in its "
	                           "state file (its log says why): a restart brings it back",
	};

	if (saved == ORCH_OK)
		return;
	cJSON *w = cJSON_GetObjectItem(o, "warnings");
	if (w == NULL)
		w = cJSON_AddArrayToObject(o, "warnings");
	cJSON_AddItemToArray(w, cJSON_CreateString(msgs[what]));
}

static void
not_found(struct api_req *req, const char *what, const char *name)
{
	reply_error(req, ORCH_EROUTE_NOT_FOUND, NULL, "no %s%s%s%s", what, name ? " '" : "",
	            name ? name : "", name ? "'" : "");
}

/*
 * GET /admin/workers/ID/logs: the kept lines, oldest first, each with its
 * number; ?since=SEQ returns those from SEQ on ('orchctl logs --follow'),
 * else the last ?lines=N (default 100).
 */
static void
logs(struct api_req *req, const struct worker *w)
{
	uint64_t oldest = w->log_next > WORKER_LOG_LINES ? w->log_next - WORKER_LOG_LINES : 0;
	uint64_t since = api_query_u64(req->query, "since", UINT64_MAX, UINT64_MAX);
	uint64_t lines = api_query_u64(req->query, "lines", 100, WORKER_LOG_LINES);
	uint64_t first = since != UINT64_MAX   ? since
	                 : w->log_next > lines ? w->log_next - lines
	                                       : 0;
	cJSON *o = cJSON_CreateObject();

	if (first < oldest)
		first = oldest;
	cJSON_AddStringToObject(o, "worker", w->id);
	cJSON_AddNumberToObject(o, "pid", w->pid);
	cJSON_AddNumberToObject(o, "first", (double)first);
	cJSON_AddNumberToObject(o, "next", (double)w->log_next);
	cJSON *a = cJSON_AddArrayToObject(o, "lines");
	for (uint64_t i = first; i < w->log_next; i++) {
		const struct worker_line *l = &w->log[i % WORKER_LOG_LINES];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "seq", (double)i);
		cJSON_AddNumberToObject(x, "unix_ms", (double)l->unix_ms);
		cJSON_AddStringToObject(x, "source", l->ours ? "orchd" : "worker");
		cJSON_AddStringToObject(x, "text", l->text);
		cJSON_AddItemToArray(a, x);
	}
	reply_json(req, 200, o);
}

static void
on_status(struct orchd *d, struct api_req *req, const char *arg)
{
	(void)arg;
	reply_json(req, 200, admin_status(d));
}

static void
on_workers(struct orchd *d, struct api_req *req, const char *arg)
{
	cJSON *a = cJSON_CreateArray();

	(void)arg;
	for (struct model_entry *m = d->models; m; m = m->next)
		for (uint32_t i = 0; i < m->n_workers; i++)
			cJSON_AddItemToArray(a, worker_json(m->workers[i]));
	reply_json(req, 200, a);
}

/* The model named @name, or answered 404. */
static struct model_entry *
model_or_reply(struct orchd *d, struct api_req *req, const char *name)
{
	struct model_entry *m = models_find(d, name);

	if (m == NULL)
		reply_error(req, ORCH_EMODEL_NOT_FOUND, "name", "no model '%s'", name);
	return m;
}

/* The worker with id @id, or answered 404. */
static struct worker *
worker_or_reply(struct orchd *d, struct api_req *req, const char *id)
{
	struct worker *w = workers_find(d, id);

	if (w == NULL)
		not_found(req, "worker", id);
	return w;
}

static void
on_unload(struct orchd *d, struct api_req *req, const char *name)
{
	struct model_entry *m = model_or_reply(d, req, name);

	if (m == NULL)
		return;
	cJSON *o = admin_model_json(m);
	bool runtime = m->runtime;
	models_unload(d, m, false);
	if (runtime)
		admin_warn_unsaved(o, admin_state_save(d), UNSAVED_UNLOAD);
	reply_json(req, 202, o);
}

/* POST /admin/models/NAME/forget: unload, then out of the registry and the state file. */
static void
on_forget(struct orchd *d, struct api_req *req, const char *name)
{
	struct model_entry *m = model_or_reply(d, req, name);

	if (m == NULL)
		return;
	if (!m->runtime)
		return reply_error(req, ORCH_EINVAL, "name",
		                   "model '%s' comes from the configuration file; remove it there "
		                   "and reload orchd (SIGHUP), or 'orchctl unload %s'",
		                   name, name);
	cJSON *o = admin_model_json(m);
	orch_log(ORCH_LOG_INFO, "model_forget", "model=%s", name);
	models_unload(d, m, true); /* may free it */
	admin_warn_unsaved(o, admin_state_save(d), UNSAVED_FORGET);
	reply_json(req, 202, o);
}

static void
on_events(struct orchd *d, struct api_req *req, const char *name)
{
	struct model_entry *m = model_or_reply(d, req, name);

	if (m != NULL)
		follow(d, req, m);
}

static void
on_restart(struct orchd *d, struct api_req *req, const char *id)
{
	struct worker *w = worker_or_reply(d, req, id);

	if (w == NULL)
		return;
	workers_restart(d, w);
	reply_json(req, 202, worker_json(w));
}

static void
on_logs(struct orchd *d, struct api_req *req, const char *id)
{
	struct worker *w = worker_or_reply(d, req, id);

	if (w != NULL)
		logs(req, w);
}

/* POST /admin/shutdown (and /shutdown, the worker contract's name): drain and exit, as
 * SIGTERM; 202 {"stopping": true, "running_jobs": N} at once. */
static void
on_shutdown(struct orchd *d, struct api_req *req, const char *arg)
{
	cJSON *o = cJSON_CreateObject();
	uint32_t live = 0;

	(void)arg;
	for (const struct job *j = d->live; j != NULL; j = j->live_next)
		live++;
	cJSON_AddBoolToObject(o, "stopping", true);
	cJSON_AddNumberToObject(o, "running_jobs", live);
	cJSON_AddNumberToObject(o, "shutdown_timeout_s", d->cfg.shutdown_timeout_s);
	reply_json(req, 202, o);
	if (d->stop != NULL)
		d->stop(d, "POST /admin/shutdown");
}

static const struct api_route admin_routes[] = {
        {API_GET, "/admin/status", false, NULL, on_status},
        {API_POST, "/admin/shutdown", false, NULL, on_shutdown},
        {API_POST, "/shutdown", false, NULL, on_shutdown},
        {API_GET, "/admin/workers", false, NULL, on_workers},
        {API_POST, "/admin/models", false, NULL, admin_on_load},
        {API_DELETE, "/admin/models/", true, "", on_unload},
        {API_GET, "/admin/models/", true, "/events", on_events},
        {API_POST, "/admin/models/", true, "/forget", on_forget},
        {API_POST, "/admin/workers/", true, "/restart", on_restart},
        {API_GET, "/admin/workers/", true, "/logs", on_logs},
        {API_POST, "/admin/pulls", false, NULL, admin_pulls_post},
        {API_GET, "/admin/pulls", false, NULL, admin_pulls_get},
};

void
admin_route(struct orchd *d, struct api_req *req)
{
	if (!api_route_run(d, req, admin_routes, sizeof(admin_routes) / sizeof(admin_routes[0])))
		not_found(req, "such admin route", NULL);
}
