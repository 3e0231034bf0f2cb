/*
 * wire.c - the one dispatch of the envelopes a worker sends (wire.h).
 */
#include "wire.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/build_id.h"
#include "base/clock.h"
#include "base/log.h"
#include "ipc/ipc.h"
#include "job_logprobs.h"
#include "job_tools.h"
#include "jobs.h"
#include "models.h"
#include "orchd.h"
#include "tokenize.h"
#include "workers.h"

/* ---- from a worker: its life ---- */

/* Copy @src (NULL: "") into @dst of @n bytes. */
static void
keep(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static void
on_hello(struct worker *w, const Orch__Hello *h, uint64_t now)
{
	struct worker_ident *id = &w->ident;
	struct orch_errinfo e = {0};

	if (ipc_check_hello(h, orch_build_id(), &e) != ORCH_OK) {
		orch_log(ORCH_LOG_ERR, "worker_refused", "worker=%s build_id=%s msg=\"%s\"", w->id,
		         h->build_id ? h->build_id : "", e.msg);
		snprintf(w->model->error, sizeof(w->model->error), "%s: %.400s", w->id, e.msg);
		w->last_exit = -1; /* another build or protocol: a restart would not help */
		if (w->pid > 0)
			kill(w->pid, SIGKILL);
		return;
	}
	if (id->model_sha256[0] && h->model_sha256[0] && strcmp(id->model_sha256, h->model_sha256))
		orch_log(ORCH_LOG_WARNING, "model_file_changed", "worker=%s path=%s was=%s now=%s",
		         w->id, w->model->cfg.path, id->model_sha256, h->model_sha256);
	keep(id->build_id, sizeof(id->build_id), h->build_id);
	keep(id->model_sha256, sizeof(id->model_sha256), h->model_sha256);
	keep(id->tokenizer_hash, sizeof(id->tokenizer_hash), h->tokenizer_hash);
	keep(id->cuda_version, sizeof(id->cuda_version), h->cuda_version);
	keep(id->driver_version, sizeof(id->driver_version), h->driver_version);
	keep(id->sm, sizeof(id->sm), h->sm);
	orch_log(ORCH_LOG_INFO, "worker_hello",
	         "worker=%s pid=%u device=%s build_id=%s model_sha256=%s tokenizer_hash=%s "
	         "cuda=%s driver=%s sm=%s",
	         w->id, h->pid, h->device, id->build_id,
	         id->model_sha256[0] ? id->model_sha256 : "-",
	         id->tokenizer_hash[0] ? id->tokenizer_hash : "-",
	         id->cuda_version[0] ? id->cuda_version : "-",
	         id->driver_version[0] ? id->driver_version : "-", id->sm[0] ? id->sm : "-");
	w->state = WORKER_LOADING;
	w->last_progress_ms = now;
}

/* Ready's facts into @w->ident. */
static void
keep_ready(struct worker *w, const Orch__Ready *r)
{
	struct worker_ident *id = &w->ident;
	bool hf = r->tokenizer_source && strcmp(r->tokenizer_source, "hf-json") == 0;

	if (r->model_sha256 && r->model_sha256[0] && id->model_sha256[0] == '\0') {
		keep(id->model_sha256, sizeof(id->model_sha256), r->model_sha256);
		orch_log(ORCH_LOG_INFO, "worker_model_sha256", "worker=%s model_sha256=%s", w->id,
		         id->model_sha256);
	}
	keep(id->quant_kind, sizeof(id->quant_kind), r->quant_kind);
	if (hf)
		keep(id->tokenizer_kind, sizeof(id->tokenizer_kind), "hf-json");
	else
		snprintf(id->tokenizer_kind, sizeof(id->tokenizer_kind), "gguf-%.8s",
		         r->tokenizer_kind ? r->tokenizer_kind : "");
	keep(id->architecture, sizeof(id->architecture), r->architecture);
	id->vocab_size = r->vocab_size;
	id->context_length = r->context_length;
	id->bos_id = r->bos_id;
	id->eos_id = r->eos_id;
}

static void
on_ready(struct orchd *d, struct worker *w, const Orch__Ready *r, uint64_t now)
{
	struct model_entry *m = w->model;

	w->state = WORKER_READY;
	w->load_pct = 100;
	w->slots_total = r->slots;
	w->memory_used = r->memory_used;
	w->mem_weights = r->memory_weights;
	w->mem_kv = r->memory_kv;
	w->mem_scratch = r->memory_scratch;
	w->kv_blocks_total = r->kv_blocks;
	w->kv_block_tokens = r->kv_block_tokens;
	w->prefix_cache = r->prefix_cache;
	w->kv_blocks_used = w->kv_blocks_cached = 0;
	w->prefix_query_tokens = w->prefix_hit_tokens = w->preemptions = 0; /* a new process */
	w->ready_ms = now;      /* the backoff starts again after a minute of this (workers.c) */
	w->residency_ok = true; /* checked at load; heartbeats say from now on */
	keep_ready(w, r);
	if (r->chat_template && r->chat_template[0])
		snprintf(m->chat_template_origin, sizeof(m->chat_template_origin), "%s",
		         r->chat_template);
	w->tool_syntax = tool_syntax_from_name(r->tool_syntax);
	snprintf(m->tool_syntax, sizeof(m->tool_syntax), "%s",
	         w->tool_syntax ? tool_syntax_name(w->tool_syntax) : "none");
	orch_log(ORCH_LOG_INFO, "worker_ready",
	         "worker=%s pid=%d ms=%llu quant_kind=%s tokenizer_kind=%s vocab_size=%u "
	         "context_length=%u memory_used=%llu",
	         w->id, (int)w->pid, (unsigned long long)(now - w->spawned_ms),
	         w->ident.quant_kind[0] ? w->ident.quant_kind : "-", w->ident.tokenizer_kind,
	         r->vocab_size, r->context_length, (unsigned long long)r->memory_used);
	histo_observe(&m->met.load, (double)(now - w->spawned_ms) / 1e3);
	m->met.loads++;
	models_worker_state(d, m);
	models_dispatch(d, m);
}

/* What a counter of this process grew by since @last (it only grows while the process lives). */
static uint64_t
grown(uint64_t *last, uint64_t now)
{
	uint64_t d = now >= *last ? now - *last : now;

	*last = now;
	return d;
}

static void
on_heartbeat(struct orchd *d, struct worker *w, const Orch__Heartbeat *hb)
{
	struct model_metrics *mm = &w->model->met;
	char why[WORKER_REASON_MAX];

	w->kv_blocks_total = hb->kv_blocks_total;
	w->kv_blocks_used = hb->kv_blocks_used;
	w->kv_blocks_cached = hb->kv_blocks_cached;
	mm->prefix_query_tokens += grown(&w->prefix_query_tokens, hb->prefix_query_tokens);
	mm->prefix_hit_tokens += grown(&w->prefix_hit_tokens, hb->prefix_hit_tokens);
	mm->preemptions += grown(&w->preemptions, hb->preemptions);

	w->slots_busy = hb->slots_busy;
	w->slots_total = hb->slots_total;
	w->kv_used = hb->kv_cells_used;
	w->kv_total = hb->kv_cells_total;
	w->memory_used = hb->memory_used;
	w->decode_steps = hb->decode_steps;
	w->residency_ok = hb->residency_ok;
	w->degraded = hb->degraded;
	keep(w->residency_error, sizeof(w->residency_error), hb->residency_error);
	if (!hb->residency_ok && w->state == WORKER_READY) {
		snprintf(why, sizeof(why), "residency check failed: %s",
		         w->residency_error[0] ? w->residency_error : "(no reason given)");
		workers_unhealthy(d, w, why);
	}
}

/* An Error about the worker itself (job_id 0): remembered as the model's error. */
static void
on_worker_error(struct worker *w, const Orch__Error *er)
{
	struct model_entry *m = w->model;

	snprintf(m->error, sizeof(m->error), "%s: %s", w->id, er->message);
	orch_log(ORCH_LOG_ERR, "worker_error", "worker=%s code=%d msg=\"%s\"", w->id, er->code,
	         er->message);
	/* a bad model file or too little memory will not get better by retrying */
	if (er->code == ORCH__ERROR_CODE__MODEL_LOAD_FAILED ||
	    er->code == ORCH__ERROR_CODE__INSUFFICIENT_VRAM ||
	    er->code == ORCH__ERROR_CODE__INVALID_REQUEST)
		w->last_exit = -(int)er->code; /* remembered for the exit: no restart */
}

/* ---- from a worker: its jobs ---- */

static void
on_started(struct orchd *d, const Orch__Started *s)
{
	struct job *j = jobs_find(d, s->job_id);

	if (j == NULL)
		return;
	struct job_event ev = {.type = EV_STARTED,
	                       .seed = s->seed,
	                       .prompt_tokens = s->prompt_tokens,
	                       .unix_ms = orch_unix_ms()};
	j->prompt_tokens = s->prompt_tokens;
	j->started_ms = orch_mono_ms();
	if (j->n_events > 0 && j->events[0].type == EV_STARTED)
		return; /* requeued after a lost worker: its one started event is out already */
	jobs_event(d, j, &ev);
}

static void
on_tokens(struct orchd *d, const Orch__TokenBatch *b)
{
	for (size_t i = 0; i < b->n_tokens; i++) {
		const Orch__TokenEntry *t = b->tokens[i];
		struct job *j = jobs_find(d, t->job_id);
		if (j == NULL)
			continue;
		if (t->prompt) { /* echo: the prompt sent back, before any token */
			if (job_lp_prompt(j, t))
				jobs_event(d, j, &(struct job_event){.type = EV_PROMPT});
			continue;
		}
		if (t->token_id >= 0)
			j->tokens_out++;
		else if (t->text[0] == '\0')
			continue; /* nothing held back */
		struct job_event ev = {.type = EV_TOKEN, .index = t->index, .text = t->text};
		if (t->has_logprob && j->req.logprobs)
			ev.lp = job_lp_add(j, t);
		if (t->in_message)
			ev.msg = jobs_msg(j, t->message, t->channel, t->recipient);
		/* a thinking model's answer (channel final) is content: its tool calls are read too
		 */
		if (j->tp != NULL && (!t->in_message || strcmp(t->channel, "final") == 0)) {
			job_tools_text(d, j, t->index, t->text); /* content and calls, split */
			if (ev.lp) { /* the token's log-probability rides alone */
				static char none[] = "";
				ev.text = none;
				jobs_event(d, j, &ev);
			}
		} else {
			jobs_event(d, j, &ev);
		}
		if (t->token_id >= 0)
			jobs_metrics_due(d, j);
	}
}

static void
on_end(struct orchd *d, const Orch__End *e)
{
	struct job *j = jobs_find(d, e->job_id);
	enum orch_finish f = ORCH_FINISH_EOS;

	if (j == NULL)
		return;
	orch_finish_from_proto((uint32_t)e->finish_reason, &f);
	job_tools_end(d, j, e->tokens_out, &f);
	struct job_event ev = {.type = EV_END,
	                       .finish = f,
	                       .tokens_out = e->tokens_out,
	                       .prompt_tokens = e->prompt_tokens,
	                       .decode_ms = e->decode_ms,
	                       .prefill_ms = e->prefill_ms,
	                       .seed = e->seed,
	                       .cached_tokens = e->cached_tokens};
	j->tokens_out = e->tokens_out;
	j->prompt_tokens = e->prompt_tokens;
	j->cached_tokens = e->cached_tokens;
	jobs_event(d, j, &ev);
}

static void
on_error(struct orchd *d, struct worker *w, const Orch__Error *er)
{
	struct job *j;

	if (er->job_id == 0)
		on_worker_error(w, er);
	else if ((j = jobs_find(d, er->job_id)) != NULL)
		jobs_fail(d, j, orch_err_of_proto((int)er->code), er->message);
}

void
wire_dispatch(struct orchd *d, struct worker *w, const Orch__Envelope *env)
{
	uint64_t now = orch_mono_ms();

	w->last_msg_ms = now;
	switch (env->body_case) {
	case ORCH__ENVELOPE__BODY_HELLO:
		return on_hello(w, env->hello, now);
	case ORCH__ENVELOPE__BODY_LOAD_PROGRESS:
		w->load_pct = env->load_progress->percent;
		w->last_progress_ms = now;
		return models_changed(d, w->model, "progress");
	case ORCH__ENVELOPE__BODY_READY:
		return on_ready(d, w, env->ready, now);
	case ORCH__ENVELOPE__BODY_HEARTBEAT:
		return on_heartbeat(d, w, env->heartbeat);
	case ORCH__ENVELOPE__BODY_STARTED:
		return on_started(d, env->started);
	case ORCH__ENVELOPE__BODY_TOKEN_BATCH:
		return on_tokens(d, env->token_batch);
	case ORCH__ENVELOPE__BODY_END:
		return on_end(d, env->end);
	case ORCH__ENVELOPE__BODY_ERROR:
		return on_error(d, w, env->error);
	case ORCH__ENVELOPE__BODY_TOKENIZE_RESULT:
		return tokenize_on_result(d, w, env->tokenize_result);
	default:
		orch_log(ORCH_LOG_WARNING, "worker_unexpected", "worker=%s body=%s", w->id,
		         ipc_body_name(env->body_case));
		return;
	}
}
