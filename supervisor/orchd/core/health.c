/*
 * health.c - GET /health's document (health.h). Unknown values (a worker
 * that has not said Ready yet) are null, so the shape never changes.
 */
#include "health.h"

#include <string.h>

#include <cjson/cJSON.h>

#include "base/build_id.h"
#include "base/clock.h"
#include "json_add.h"
#include "models.h"
#include "orchd.h"
#include "workers.h"

/* Seconds since @since_ms (monotonic), null when 0. */
static void
add_uptime(cJSON *o, uint64_t since_ms)
{
	if (since_ms)
		cJSON_AddNumberToObject(o, "uptime_seconds",
		                        (double)(orch_mono_ms() - since_ms) / 1e3);
	else
		cJSON_AddNullToObject(o, "uptime_seconds");
}

/* Its weights are loaded (it said Ready) and its last residency check passed. */
static bool
resident(const struct worker *w)
{
	bool loaded = w->state == WORKER_READY || w->state == WORKER_DRAINING ||
	              w->state == WORKER_UNHEALTHY;

	return loaded && w->pid > 0 && w->residency_ok;
}

void
health_worker_facts(cJSON *o, const struct worker *w)
{
	const struct worker_ident *id = &w->ident;

	cJSON_AddStringToObject(o, "status", workers_healthy(w) ? "healthy" : "unhealthy");
	cJSON_AddBoolToObject(o, "resident", resident(w));
	json_add_str(o, "quant_kind", id->quant_kind);
	cJSON_AddNumberToObject(o, "vram_bytes_used", (double)w->memory_used);
	json_add_str(o, "tokenizer_kind", id->tokenizer_kind);
	json_add_count(o, "vocab_size", id->vocab_size);
	json_add_token(o, "bos_id", id->vocab_size != 0, id->bos_id);
	json_add_token(o, "eos_id", id->vocab_size != 0, id->eos_id);
	json_add_count(o, "context_length", id->context_length);
	add_uptime(o, w->ready_ms);
	json_add_str(o, "model_sha256", id->model_sha256);
	json_add_str(o, "tokenizer_hash", id->tokenizer_hash);
	json_add_str(o, "build_id", id->build_id);
	if (strncmp(w->device, "cuda:", 5) == 0) {
		json_add_str(o, "sm", id->sm);
		json_add_str(o, "cuda_runtime_version", id->cuda_version);
		json_add_str(o, "driver_version", id->driver_version);
	}
	if (w->state == WORKER_UNHEALTHY)
		cJSON_AddStringToObject(o, "reason", w->unhealthy_reason);
	if (w->residency_error[0])
		cJSON_AddStringToObject(o, "residency_error", w->residency_error);
	if (w->last_restart_reason[0])
		cJSON_AddStringToObject(o, "last_restart_reason", w->last_restart_reason);
}

bool
health_model_healthy(const struct model_entry *m)
{
	if (m->state == MODEL_FAILED)
		return false;
	for (uint32_t i = 0; i < m->n_workers; i++)
		if (!workers_healthy(m->workers[i]))
			return false;
	return true;
}

/* The facts of @m's first worker that said Ready, summed or checked over all of them. */
static void
model_facts(cJSON *o, const struct model_entry *m)
{
	const struct worker *first = NULL;
	uint64_t used = 0;
	uint32_t loaded = 0, res = 0;

	for (uint32_t i = 0; i < m->n_workers; i++) {
		const struct worker *w = m->workers[i];
		used += w->pid > 0 ? w->memory_used : 0;
		if (first == NULL && w->ident.vocab_size)
			first = w;
		if (w->pid > 0 && w->ready_ms) {
			loaded++;
			res += resident(w);
		}
	}
	cJSON_AddBoolToObject(o, "resident", loaded > 0 && res == loaded);
	json_add_str(o, "quant_kind", first ? first->ident.quant_kind : "");
	cJSON_AddNumberToObject(o, "vram_bytes_used", (double)used);
	json_add_str(o, "tokenizer_kind", first ? first->ident.tokenizer_kind : "");
	json_add_count(o, "vocab_size", first ? first->ident.vocab_size : 0);
	json_add_token(o, "bos_id", first != NULL, first ? first->ident.bos_id : -1);
	json_add_token(o, "eos_id", first != NULL, first ? first->ident.eos_id : -1);
	json_add_count(o, "context_length", first ? first->ident.context_length : 0);
	add_uptime(o, m->state == MODEL_READY ? m->ready_since_ms : 0);
}

static cJSON *
model_json(const struct model_entry *m)
{
	cJSON *o = cJSON_CreateObject(), *ws;

	cJSON_AddStringToObject(o, "status", health_model_healthy(m) ? "healthy" : "unhealthy");
	cJSON_AddStringToObject(o, "state", models_state_name(m->state));
	model_facts(o, m);
	ws = cJSON_AddArrayToObject(o, "workers");
	for (uint32_t i = 0; i < m->n_workers; i++) {
		const struct worker *w = m->workers[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "id", w->id);
		cJSON_AddStringToObject(x, "device", w->device);
		cJSON_AddStringToObject(x, "state", workers_state_name(w->state));
		cJSON_AddNumberToObject(x, "pid", w->pid);
		health_worker_facts(x, w);
		cJSON_AddItemToArray(ws, x);
	}
	return o;
}

cJSON *
health_json(struct orchd *d)
{
	cJSON *o = cJSON_CreateObject(), *ms;

	cJSON_AddStringToObject(o, "status", "ok");
	cJSON_AddStringToObject(o, "build_id", orch_build_id());
	cJSON_AddNumberToObject(o, "uptime_seconds",
	                        (double)(orch_mono_ms() - d->started_ms) / 1e3);
	ms = cJSON_AddObjectToObject(o, "models");
	for (struct model_entry *m = d->models; m; m = m->next)
		cJSON_AddItemToObject(ms, m->cfg.name, model_json(m));
	return o;
}
