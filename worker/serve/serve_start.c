/*
 * serve_start.c - the serving worker's start-up and teardown: Hello, the
 * model load with LoadProgress marks, Ready; and freeing it all.
 */
#include <stdio.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "gguf/ggml_type.h"
#include "gguf/ident.h"
#include "serve_int.h"

#define N_TYPES 64 /* ggml type ids are below this */

/*
 * LoadProgress at every multiple of 5 % the load crosses (so 0, 25, 50, 75, 100 always
 * appear); in the log, a line a second at most and none for a load shorter than that
 * (a 1 MB model is not 21 lines on a terminal).
 */
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
		uint64_t now = orch_mono_ms();
		if (now - sv->progress_log_ms >= 1000) {
			orch_log(ORCH_LOG_INFO, "model_load_progress", "percent=%d bytes=%llu", p,
			         (unsigned long long)done);
			sv->progress_log_ms = now;
		}
		sv->last_pct = p;
	}
}

void
serve_hello(struct serve *sv)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Hello h = ORCH__HELLO__INIT;

	h.protocol_version = IPC_PROTOCOL_VERSION;
	h.build_id = (char *)(uintptr_t)sv->id.build_id;
	h.model_sha256 = sv->id.model_sha256;
	h.tokenizer_hash = sv->id.tokenizer_hash;
	h.worker_id = (char *)(uintptr_t)sv->o->worker_id;
	h.device = (char *)(uintptr_t)sv->o->device;
	h.model_path = (char *)(uintptr_t)sv->o->model;
	h.pid = (uint32_t)getpid();
	/* the CUDA runtime and driver, when the device's backend can be opened now */
	struct be_info info = {0};
	const struct be_ops *ops = NULL;
	if (be_for_device(sv->o->device, &ops, NULL) == ORCH_OK && ops->info != NULL)
		ops->info(sv->o->device, &info);
	h.cuda_version = info.cuda_version;
	h.driver_version = info.driver_version;
	h.sm = info.sm;
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
	struct be_memory mem;
	struct gguf_str name = {0};
	char name_buf[128] = "", arch[16], tk[8];

	for (size_t i = 0; i < gguf_tensor_count(sv->eng->f); i++) {
		uint32_t ty = gguf_tensor_at(sv->eng->f, i)->type;
		if (ty < N_TYPES && !seen[ty]) {
			seen[ty] = true;
			kinds[r.n_quant_kinds++] = (char *)(uintptr_t)ggml_type_name(ty);
		}
	}
	gguf_get_str(sv->eng->f, "general.name", &name);
	snprintf(name_buf, sizeof(name_buf), "%.*s", (int)(name.len < 127 ? name.len : 127),
	         name.ptr ? name.ptr : "");
	snprintf(arch, sizeof(arch), "%s", model_arch_name(sv->eng->m.hp.arch));
	snprintf(tk, sizeof(tk), "%s", tok_kind(sv->eng->mt.tok) == TOK_SPM ? "spm" : "bpe");
	sv->eng->ops->memory(sv->eng->b, &mem);
	r.memory_used = mem.used;
	r.memory_weights = mem.weights;
	r.memory_kv = mem.kv;
	r.memory_scratch = mem.scratch;
	r.context_length = sv->eng->n_ctx;
	r.slots = sv->o->slots;
	r.quant_kinds = kinds;
	r.tokenizer_kind = tk;
	r.vocab_size = sv->eng->m.hp.n_vocab;
	r.bos_id = tok_bos(sv->eng->mt.tok);
	r.eos_id = tok_eos(sv->eng->mt.tok);
	r.architecture = arch;
	r.model_name = name_buf;
	r.tokenizer_source = (char *)(uintptr_t)text_source_name(sv->eng->mt.source);
	r.chat_template = (char *)(uintptr_t)chat_origin_name(sv->eng->mt.origin);
	const char *dominant = gguf_dominant_type(sv->eng->f);
	r.quant_kind = (char *)(uintptr_t)(dominant ? dominant : "");
	r.model_sha256 = sv->id.model_sha256;
	r.kv_blocks = sv->eng->kv_blocks;
	r.kv_block_tokens = sv->eng->kv_block_tokens;
	r.prefix_cache = sv->eng->kv_prefix_cache;
	r.tool_syntax = (char *)(uintptr_t)tool_syntax_name(sv->eng->mt.tools);
	env.body_case = ORCH__ENVELOPE__BODY_READY;
	env.ready = &r;
	serve_send(sv, &env);
}

orch_err
serve_load(struct serve *sv, struct orch_errinfo *e)
{
	struct engine_config cfg = {.model_path = sv->o->model,
	                            .device = sv->o->device,
	                            .tokenizer = sv->o->tokenizer,
	                            .slots = sv->o->slots,
	                            .n_ctx = sv->o->n_ctx,
	                            .chunk = sv->o->chunk,
	                            .policy = sv->o->policy,
	                            .threads = sv->o->threads,
	                            .no_graphs = sv->o->no_graphs,
	                            .kv_cache_bytes = (uint64_t)sv->o->kv_cache_mib << 20,
	                            .kv_cache_fraction = sv->o->kv_cache_fraction,
	                            .kv_block_tokens = sv->o->kv_block_tokens,
	                            .kv_prefix_cache = !sv->o->no_prefix_cache,
	                            .kv_watermark = ENGINE_DEFAULT_KV_WATERMARK,
	                            .progress = serve_progress,
	                            .progress_ctx = sv};
	orch_err rv;

	if ((rv = engine_open(&cfg, &sv->eng, e)) != ORCH_OK)
		return rv;
	if (sv->eng->kv_blocks == 0 &&
	    (sv->o->kv_cache_mib || sv->o->kv_cache_fraction > 0 || sv->o->kv_block_tokens))
		orch_log(ORCH_LOG_WARNING, "kv_pool_ignored",
		         "device=%s: its backend keeps one KV slot of the context per sequence; "
		         "kv_cache_mib, kv_cache_fraction and kv_block_tokens do not apply",
		         sv->o->device);
	if (sv->eng->kv_pool_capped)
		orch_log(ORCH_LOG_WARNING, "kv_pool_capped",
		         "the KV budget is larger than a pool addresses: cut to %u blocks of %u",
		         sv->eng->kv_blocks, sv->eng->kv_block_tokens);
	orch_log(ORCH_LOG_INFO, "kv_cache",
	         "blocks=%u block_tokens=%u tokens=%llu prefix_cache=%s slots=%u context=%u",
	         sv->eng->kv_blocks, sv->eng->kv_block_tokens,
	         (unsigned long long)sv->eng->kv_blocks * sv->eng->kv_block_tokens,
	         sv->eng->kv_prefix_cache ? "on" : "off", sv->o->slots, sv->eng->n_ctx);
	sv->max_jobs = 4 * sv->o->slots + 16;
	/* per job and step: released text, the token, the text released at the end */
	sv->cap_entries = 3 * sv->max_jobs;
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
	serve_ident_stop(sv);
	while (sv->jobs != NULL)
		serve_job_free(sv, sv->jobs);
	engine_close(sv->eng);
	sv->eng = NULL;
	orch_free(sv->entries);
	orch_free(sv->entry_ptrs);
	orch_free(sv->text_off);
	orch_free(sv->tops);
	orch_free(sv->top_ptrs);
	orch_free(sv->top_text);
	sbuf_fini(&sv->text);
	orch_free(sv->endings);
	serve_debug_close(sv);
	ipc_close(sv->ch);
}
