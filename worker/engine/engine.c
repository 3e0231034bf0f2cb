/*
 * engine.c - the chain from a GGUF path to a scheduler, once (engine.h).
 */
#include "engine.h"

#include "base/alloc.h"
#include "engine/scheduler.h"
#include "gguf/gguf.h"
#include "gguf/model_info.h"

/* model_mem_estimate sizes a sliding-window layer's ring for the worker's default chunk */
_Static_assert(ENGINE_DEFAULT_CHUNK == MODEL_DEFAULT_CHUNK_TOKENS,
               "the memory estimate assumes the engine's default chunk");

uint32_t
engine_default_ctx(const struct model *m)
{
	return m->hp.n_ctx_train < ENGINE_DEFAULT_CTX ? m->hp.n_ctx_train : ENGINE_DEFAULT_CTX;
}

/* The backend and the scheduler over it, for @e's model and text. */
static orch_err
engine_start(struct engine *e, const struct engine_config *cfg, struct orch_errinfo *reterr)
{
	struct be_config bc = {.slots = e->slots,
	                       .n_ctx = e->n_ctx,
	                       .kv_f32 = cfg->kv_f32,
	                       .threads = cfg->threads,
	                       .max_batch_tokens = e->chunk + e->slots,
	                       .device = cfg->device,
	                       .model_path = cfg->model_path,
	                       .no_graphs = cfg->no_graphs};
	struct sched_config sc = {e->slots, e->n_ctx, e->chunk};
	orch_err rv;

	rv = e->ops->load(&e->m, &bc, cfg->progress, cfg->progress_ctx, &e->b, reterr);
	if (rv != ORCH_OK)
		return rv;
	if (sched_new(e->ops, e->b, e->mt.tok, e->m.hp.n_vocab, &sc, &e->s) != ORCH_OK)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory for the scheduler");
	return ORCH_OK;
}

orch_err
engine_open(const struct engine_config *cfg, struct engine **ret, struct orch_errinfo *reterr)
{
	struct engine *e = orch_calloc(1, sizeof(*e));
	orch_err rv;

	if (e == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	e->ops = cfg->ops;
	if ((e->ops == NULL && (rv = be_for_device(cfg->device, &e->ops, reterr)) != ORCH_OK) ||
	    (rv = gguf_open(cfg->model_path, &e->f, reterr)) != ORCH_OK ||
	    (rv = model_load(e->f, &e->m, reterr)) != ORCH_OK ||
	    (rv = model_text_load(cfg->model_path, e->f, cfg->tokenizer, e->m.hp.n_vocab, &e->mt,
	                          reterr)) != ORCH_OK)
		goto fail;
	e->slots = cfg->slots ? cfg->slots : 1;
	e->n_ctx = cfg->n_ctx ? cfg->n_ctx : engine_default_ctx(&e->m);
	e->chunk = cfg->chunk ? cfg->chunk : ENGINE_DEFAULT_CHUNK;
	if ((rv = engine_start(e, cfg, reterr)) != ORCH_OK)
		goto fail;
	*ret = e;
	return ORCH_OK;
fail:
	engine_close(e);
	return rv;
}

void
engine_close(struct engine *e)
{
	if (e == NULL)
		return;
	sched_free(e->s);
	if (e->b != NULL)
		e->ops->free(e->b);
	model_text_fini(&e->mt);
	model_free(&e->m);
	gguf_close(e->f);
	orch_free(e);
}
