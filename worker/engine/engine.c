/*
 * engine.c - the chain from a GGUF path to a scheduler, once (engine.h).
 */
#include "engine.h"

#include <stdio.h>

#include "base/alloc.h"
#include "base/sha256.h"
#include "engine/kv_blocks.h"
#include "engine/scheduler.h"
#include "gguf/gguf.h"
#include "gguf/ident.h"
#include "gguf/model_info.h"
#include "grammars.h"

/* model_mem_estimate sizes a sliding-window layer's ring or pool for the worker's default
 * chunk (a worker given another --chunk takes what that chunk needs) */
_Static_assert(ENGINE_DEFAULT_CHUNK == MODEL_DEFAULT_CHUNK_TOKENS,
               "the memory estimate assumes the engine's default chunk");
_Static_assert(ENGINE_DEFAULT_CTX == MODEL_DEFAULT_CTX,
               "orchd's estimate assumes the engine's default context");
_Static_assert(KVB_DEFAULT_BLOCK_TOKENS == MODEL_DEFAULT_KV_BLOCK_TOKENS,
               "the estimate assumes the pool's default block");

uint32_t
engine_default_ctx(const struct model *m)
{
	return m->hp.n_ctx_train < ENGINE_DEFAULT_CTX ? m->hp.n_ctx_train : ENGINE_DEFAULT_CTX;
}

/* @bytes for a message: in KiB below 1 MiB, so that small pools do not all read "0.1 MiB". */
static const char *
fmt_size(uint64_t bytes, char *buf, size_t n)
{
	if (bytes < (1u << 20))
		snprintf(buf, n, "%.1f KiB", (double)bytes / 1024);
	else
		snprintf(buf, n, "%.1f MiB", (double)bytes / (1 << 20));
	return buf;
}

/*
 * The bytes kv_cache_fraction buys (model_kv_fraction_pool): that share of
 * the device's total memory (MemTotal on the CPU) less what the weights, the
 * sliding-window layers' pool and the working memory take. Of the total, not of
 * what is free: the same configuration gives the same pool whatever else
 * runs, and orchd counts exactly this in its placement.
 */
static orch_err
kv_fraction_bytes(const struct engine *e, const struct engine_config *cfg,
                  const struct model_info *mi, uint32_t bt, uint64_t *ret,
                  struct orch_errinfo *reterr)
{
	struct be_info info = {0};
	const char *dev = cfg->device ? cfg->device : "cpu";
	char b1[32];

	if (e->ops->info)
		e->ops->info(cfg->device, &info);
	if (info.mem_total == 0)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "kv_cache_fraction: the memory of %s is not known; give "
		                 "kv_cache_mib",
		                 dev);
	if (model_kv_fraction_pool(mi, e->n_ctx, e->slots, cfg->kv_f32 ? 4 : 2, bt,
	                           cfg->kv_cache_fraction, info.mem_total, ret) != ORCH_OK)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "kv_cache_fraction: %s has %s, less than the weights and working "
		                 "memory alone take",
		                 dev, fmt_size(info.mem_total, b1, sizeof(b1)));
	return ORCH_OK;
}

/*
 * Blocks of the pool a budget (kv_cache_bytes, or kv_cache_fraction's
 * bytes) buys, by model_info's estimate: the block size orchd and orchctl
 * inspect use, and the same cut at MODEL_MAX_KV_POOL_TOKENS positions. At
 * least one sequence of n_ctx must fit, else ORCH_EINVAL saying what does.
 */
static orch_err
kv_budget_blocks(struct engine *e, const struct engine_config *cfg, uint32_t bt,
                 uint64_t *ret_blocks, struct orch_errinfo *reterr)
{
	struct model_info mi;
	struct mem_estimate est;
	struct mem_kv kv = {.pool_bytes = cfg->kv_cache_bytes, .block_tokens = bt};
	uint32_t elem = cfg->kv_f32 ? 4 : 2;
	uint64_t block;
	orch_err rv;
	char b1[32], b2[32];

	if (model_info_get(e->f, &mi, reterr) != ORCH_OK ||
	    (block = model_kv_block_bytes(&mi, bt, elem)) == 0)
		return orch_errf(reterr, ORCH_EINVAL, "%s: cannot size a KV pool for this model",
		                 cfg->model_path);
	if (kv.pool_bytes == 0 && (rv = kv_fraction_bytes(e, cfg, &mi, bt, &kv.pool_bytes, reterr)))
		return rv;
	if (model_mem_estimate_kv(&mi, e->n_ctx, e->slots, elem, &kv, &est) != ORCH_OK)
		return orch_errf(reterr, ORCH_EINVAL, "a KV pool of %llu bytes is out of range",
		                 (unsigned long long)kv.pool_bytes);
	*ret_blocks = est.kv_blocks;
	e->kv_pool_capped = est.kv_pool_capped;
	uint64_t need = ((uint64_t)e->n_ctx + bt - 1) / bt;
	if (*ret_blocks < need)
		return orch_errf(
		        reterr, ORCH_EINVAL,
		        "the KV pool (%s) holds %llu tokens, less than one sequence of the "
		        "context (%u tokens need %s): raise %s, or lower context",
		        fmt_size(kv.pool_bytes, b1, sizeof(b1)),
		        (unsigned long long)(*ret_blocks * bt), e->n_ctx,
		        fmt_size(need * block, b2, sizeof(b2)),
		        cfg->kv_cache_bytes ? "kv_cache_mib" : "kv_cache_fraction");
	return ORCH_OK;
}

/* Whether some layer of @m attends over a sliding window. */
static bool
has_swa(const struct model *m)
{
	for (uint32_t il = 0; il < m->hp.n_layer; il++)
		if (model_layer_swa(&m->hp, il))
			return true;
	return false;
}

/*
 * The KV pool when the backend pages and the caller did not ask for slots:
 * a budget (kv_cache_bytes or kv_cache_fraction), or slots × ceil(n_ctx /
 * block_tokens) blocks, so every slot can fill its context. Zeros: slots.
 */
static orch_err
kv_geometry(struct engine *e, const struct engine_config *cfg, struct orch_errinfo *reterr)
{
	uint32_t bt = cfg->kv_block_tokens ? cfg->kv_block_tokens : KVB_DEFAULT_BLOCK_TOKENS;
	uint64_t blocks = (uint64_t)e->slots * ((e->n_ctx + (uint64_t)bt - 1) / bt);
	orch_err rv;

	e->kv_blocks = e->kv_block_tokens = e->kv_swa_blocks = 0;
	if (!e->ops->paged || cfg->kv_slots)
		return ORCH_OK;
	if (bt > KVB_MAX_BLOCK_TOKENS)
		return orch_errf(reterr, ORCH_EINVAL, "a KV block of %u tokens (at most %u)", bt,
		                 KVB_MAX_BLOCK_TOKENS);
	if ((cfg->kv_cache_bytes > 0 || cfg->kv_cache_fraction > 0) &&
	    (rv = kv_budget_blocks(e, cfg, bt, &blocks, reterr)) != ORCH_OK)
		return rv;
	if (blocks > MODEL_MAX_KV_POOL_TOKENS / bt)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "a KV pool of %llu blocks of %u tokens is too large (at most %u "
		                 "positions)",
		                 (unsigned long long)blocks, bt, MODEL_MAX_KV_POOL_TOKENS);
	/* the windows' own pool: each sequence's most, so it never runs out */
	uint64_t swa = has_swa(&e->m)
	                       ? (uint64_t)e->slots * model_swa_blocks(e->n_ctx, e->m.hp.n_swa,
	                                                               e->chunk + e->slots, bt)
	                       : 0;
	if (swa > MODEL_MAX_KV_POOL_TOKENS / bt)
		return orch_errf(
		        reterr, ORCH_EINVAL,
		        "a sliding-window KV pool of %llu blocks of %u tokens is too large",
		        (unsigned long long)swa, bt);
	e->kv_blocks = (uint32_t)blocks;
	e->kv_block_tokens = bt;
	e->kv_swa_blocks = (uint32_t)swa;
	return ORCH_OK;
}

/*
 * The prefix cache's identity seed: SHA-256 over the digests of all of the
 * file's metadata and of its tokenizer keys. Cheap (no weights hashed); it
 * only has to tell apart models that share a pool, and each engine has its
 * own pool for now. Shared pools should mix in the file's SHA-256.
 */
static void
kv_seed(const struct engine *e, uint8_t seed[SHA256_BYTES])
{
	uint8_t meta[SHA256_BYTES], tok[SHA256_BYTES];
	struct sha256 h;

	gguf_kv_sha256(e->f, "", meta);
	gguf_kv_sha256(e->f, "tokenizer.", tok);
	sha256_init(&h);
	sha256_update(&h, meta, sizeof(meta));
	sha256_update(&h, tok, sizeof(tok));
	sha256_final(&h, seed);
}

/* The backend and the scheduler over it, for @e's model and text. */
static orch_err
engine_start(struct engine *e, const struct engine_config *cfg, struct orch_errinfo *reterr)
{
	orch_err rv = kv_geometry(e, cfg, reterr);

	if (rv != ORCH_OK)
		return rv;
	struct be_config bc = {.slots = e->slots,
	                       .n_ctx = e->n_ctx,
	                       .kv_f32 = cfg->kv_f32,
	                       .threads = cfg->threads,
	                       .max_batch_tokens = e->chunk + e->slots,
	                       .logit_rows =
	                               e->ops->all_logits ? e->slots + MODEL_PROMPT_LOGIT_ROWS : 0,
	                       .device = cfg->device,
	                       .model_path = cfg->model_path,
	                       .no_graphs = cfg->no_graphs,
	                       .kv_blocks = e->kv_blocks,
	                       .kv_block_tokens = e->kv_block_tokens,
	                       .kv_swa_blocks = e->kv_swa_blocks};
	struct sched_config sc = {
	        .slots = e->slots,
	        .n_ctx = e->n_ctx,
	        .chunk = e->chunk,
	        .policy = cfg->policy,
	        .logit_rows = e->ops->all_logits ? e->slots + MODEL_PROMPT_LOGIT_ROWS : 0,
	        .kv_blocks = e->kv_blocks,
	        .kv_block_tokens = e->kv_block_tokens,
	        .kv_swa_blocks = e->kv_swa_blocks,
	        .n_swa = e->m.hp.n_swa,
	        .kv_watermark = cfg->kv_watermark};

	e->kv_prefix_cache = cfg->kv_prefix_cache && e->kv_blocks > 0;
	sc.prefix_cache = e->kv_prefix_cache;
	if (sc.prefix_cache)
		kv_seed(e, sc.kv_seed);
	rv = e->ops->load(&e->m, &bc, cfg->progress, cfg->progress_ctx, &e->b, reterr);
	if (rv != ORCH_OK)
		return rv;
	return sched_new(e->ops, e->b, e->mt.tok, e->m.hp.n_vocab, &sc, &e->s, reterr);
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
	if (grammars_new(e->mt.tok, &e->grammars) != ORCH_OK) {
		rv = orch_errf(reterr, ORCH_ENOMEM, "out of memory");
		goto fail;
	}
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
	grammars_free(e->grammars);
	if (e->b != NULL)
		e->ops->free(e->b);
	model_text_fini(&e->mt);
	model_free(&e->m);
	gguf_close(e->f);
	orch_free(e);
}
