/*
 * serve_start.c - the serving worker's start-up and teardown: Hello, the
 * model load with LoadProgress marks, Ready; and freeing it all.
 */
#include <stdio.h>
#include <unistd.h>

#include "alloc.h"
#include "ggml_type.h"
#include "log.h"
#include "serve_int.h"

#define N_TYPES 64 /* ggml type ids are below this */

/* LoadProgress at every multiple of 5 % the load crosses (so 0, 25, 50, 75, 100 always appear). */
void
serve_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct serve *sv = ctx;
	int pct = total ? (int)(100 * done / total) : 100;

	for (int p = (sv->last_pct / 5 + 1) * 5; p <= pct; p += 5) {
		Orch__Envelope env = ORCH__ENVELOPE__INIT;
		Orch__LoadProgress lp = ORCH__LOAD_PROGRESS__INIT;
		lp.percent = (uint32_t)p;
		lp.bytes_done = done;
		lp.bytes_total = total;
		env.body_case = ORCH__ENVELOPE__BODY_LOAD_PROGRESS;
		env.load_progress = &lp;
		serve_send(sv, &env);
		orch_log(ORCH_LOG_INFO, "model_load_progress", "percent=%d bytes=%llu", p,
		         (unsigned long long)done);
		sv->last_pct = p;
	}
}

void
serve_hello(struct serve *sv)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Hello h = ORCH__HELLO__INIT;
	char build[] = "orch-" PROJECT_VERSION;

	h.protocol_version = IPC_PROTOCOL_VERSION;
	h.build_id = build;
	h.worker_id = (char *)(uintptr_t)sv->o->worker_id;
	h.device = (char *)(uintptr_t)sv->o->device;
	h.model_path = (char *)(uintptr_t)sv->o->model;
	h.pid = (uint32_t)getpid();
	/* the CUDA runtime and driver, when the device's backend can be opened now */
	struct be_info info = {0};
	if (sv->ops == NULL)
		(void)be_for_device(sv->o->device, &sv->ops, NULL);
	if (sv->ops != NULL && sv->ops->info != NULL)
		sv->ops->info(sv->o->device, &info);
	h.cuda_version = info.cuda_version;
	h.driver_version = info.driver_version;
	env.body_case = ORCH__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	serve_send(sv, &env);
}

void
serve_ready(struct serve *sv)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Ready r = ORCH__READY__INIT;
	char *kinds[N_TYPES];
	bool seen[N_TYPES] = {false};
	uint64_t needed;
	struct gguf_str name = {0};
	char name_buf[128] = "", arch[16], tk[8];

	for (size_t i = 0; i < gguf_tensor_count(sv->f); i++) {
		uint32_t ty = gguf_tensor_at(sv->f, i)->type;
		if (ty < N_TYPES && !seen[ty]) {
			seen[ty] = true;
			kinds[r.n_quant_kinds++] = (char *)(uintptr_t)ggml_type_name(ty);
		}
	}
	gguf_get_str(sv->f, "general.name", &name);
	snprintf(name_buf, sizeof(name_buf), "%.*s", (int)(name.len < 127 ? name.len : 127),
	         name.ptr ? name.ptr : "");
	snprintf(arch, sizeof(arch), "%s", model_arch_name(sv->m.hp.arch));
	snprintf(tk, sizeof(tk), "%s", tok_kind(sv->mt.tok) == TOK_SPM ? "spm" : "bpe");
	sv->ops->memory(sv->b, &needed, &r.memory_used);
	r.context_length = sv->n_ctx;
	r.slots = sv->o->slots;
	r.quant_kinds = kinds;
	r.tokenizer_kind = tk;
	r.vocab_size = sv->m.hp.n_vocab;
	r.architecture = arch;
	r.model_name = name_buf;
	r.tokenizer_source = (char *)(uintptr_t)text_source_name(sv->mt.source);
	r.chat_template = (char *)(uintptr_t)chat_origin_name(sv->mt.origin);
	env.body_case = ORCH__ENVELOPE__BODY_READY;
	env.ready = &r;
	serve_send(sv, &env);
}

orch_err
serve_load(struct serve *sv, struct orch_errinfo *e)
{
	orch_err rv;

	if ((rv = be_for_device(sv->o->device, &sv->ops, e)) != ORCH_OK ||
	    (rv = gguf_open(sv->o->model, &sv->f, e)) != ORCH_OK ||
	    (rv = model_load(sv->f, &sv->m, e)) != ORCH_OK ||
	    (rv = model_text_load(sv->o->model, sv->f, sv->o->tokenizer, sv->m.hp.n_vocab, &sv->mt,
	                          e)) != ORCH_OK)
		return rv;
	sv->n_ctx = sv->o->n_ctx ? sv->o->n_ctx
	                         : (sv->m.hp.n_ctx_train < 4096 ? sv->m.hp.n_ctx_train : 4096);
	struct be_config cfg = {.slots = sv->o->slots,
	                        .n_ctx = sv->n_ctx,
	                        .threads = sv->o->threads,
	                        .max_batch_tokens = sv->o->chunk + sv->o->slots,
	                        .device = sv->o->device,
	                        .model_path = sv->o->model,
	                        .no_graphs = sv->o->no_graphs};
	struct sched_config sc = {sv->o->slots, sv->n_ctx, sv->o->chunk};
	if ((rv = sv->ops->load(&sv->m, &cfg, serve_progress, sv, &sv->b, e)) != ORCH_OK)
		return rv;
	if (sched_new(sv->ops, sv->b, sv->mt.tok, sv->m.hp.n_vocab, &sc, &sv->s) != ORCH_OK)
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	sv->max_jobs = 4 * sv->o->slots + 16;
	sv->cap_entries = 2 * sv->max_jobs;
	sv->entries = orch_calloc(sv->cap_entries, sizeof(*sv->entries));
	sv->entry_ptrs = orch_calloc(sv->cap_entries, sizeof(*sv->entry_ptrs));
	sv->text_off = orch_calloc(sv->cap_entries, sizeof(*sv->text_off));
	sv->endings = orch_calloc(sv->max_jobs, sizeof(*sv->endings));
	if (!sv->entries || !sv->entry_ptrs || !sv->text_off || !sv->endings)
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	return ORCH_OK;
}

void
serve_teardown(struct serve *sv)
{
	while (sv->jobs != NULL)
		serve_job_free(sv, sv->jobs);
	sched_free(sv->s);
	if (sv->b != NULL)
		sv->ops->free(sv->b);
	model_text_fini(&sv->mt);
	model_free(&sv->m);
	gguf_close(sv->f);
	orch_free(sv->entries);
	orch_free(sv->entry_ptrs);
	orch_free(sv->text_off);
	sbuf_fini(&sv->text);
	orch_free(sv->endings);
	serve_debug_close(sv);
	ipc_close(sv->ch);
}
