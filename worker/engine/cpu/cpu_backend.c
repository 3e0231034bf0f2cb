/*
 * cpu_backend.c - the CPU backend: load, memory accounting, free.
 *
 * Weights are used where they lie, in the read-only mapping of the GGUF
 * file, in their own format (no dequantized copy). Load touches every page
 * of them, reporting progress, so the disk reads happen at load and not in
 * the first request. The KV cache and all scratch are allocated here, once;
 * a forward step allocates nothing. A sliding-window layer's KV cache is a
 * ring of model_swa_cells() cells per slot; a full layer's is n_ctx cells
 * per slot, or paged (cfg.kv_blocks > 0) one pool of kv_blocks ×
 * kv_block_tokens rows that all sequences share through their block tables
 * (and a sliding-window layer's one of kv_swa_blocks when that is set).
 */
#include "cpu_backend.h"

#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/meminfo.h"
#include "gguf/fp16.h"
#include "gguf/gguf.h"
#include "gguf/model_info.h"

static void
add_bytes(const struct gguf_tensor *t, void *ctx)
{
	*(uint64_t *)ctx += t->nbytes;
}

void
cpu_load_advance(struct cpu_load *l, uint64_t bytes)
{
	l->done += bytes;
	if (l->progress && l->done >= l->next_report) {
		l->progress(l->ctx, l->done, l->total);
		l->next_report = l->done + l->total / 100 + 1;
	}
}

struct touch {
	struct cpu_load *load;
	const struct be_model *b;
	volatile uint8_t sink;
};

/* Read a byte of each page of @t, unless it was packed (its packed copy is in memory). */
static void
touch_tensor(const struct gguf_tensor *t, void *ctx)
{
	struct touch *tc = ctx;
	const volatile uint8_t *p = t->data;

	if (cpu_pack_find(tc->b->packs, tc->b->n_packs, t) != NULL)
		return;
	for (uint64_t off = 0; off < t->nbytes; off += 4096) {
		tc->sink = (uint8_t)(tc->sink + p[off]);
		cpu_load_advance(tc->load, t->nbytes - off < 4096 ? t->nbytes - off : 4096);
	}
}

static void *
balloc(struct be_model *b, size_t n)
{
	void *p = orch_calloc(1, n);

	if (p != NULL)
		b->bytes_used += n;
	return p;
}

/*
 * The KV cache's layout (cpu_backend.h): each layer's cells per slot (n_ctx, or a sliding
 * window's ring) and where its cells start; *@ret_bytes is the size of the K (or V) cache.
 */
static orch_err
kv_layout(struct be_model *b, uint64_t *ret_bytes, struct orch_errinfo *reterr)
{
	const struct model_hparams *hp = &b->m->hp;
	uint32_t ring = model_swa_cells(b->cfg.n_ctx, hp->n_swa, b->cfg.max_batch_tokens);
	uint64_t cells = 0, bytes;

	if ((b->kv_cells = balloc(b, hp->n_layer * sizeof(uint32_t))) == NULL ||
	    (b->kv_base = balloc(b, hp->n_layer * sizeof(uint64_t))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "cpu backend: out of memory");
	for (uint32_t il = 0; il < hp->n_layer; il++) {
		b->kv_base[il] = cells;
		if (cpu_layer_paged(b, il)) { /* one pool of rows, not per slot */
			uint32_t blocks =
			        model_layer_swa(hp, il) ? b->cfg.kv_swa_blocks : b->cfg.kv_blocks;
			b->kv_cells[il] = blocks * b->cfg.kv_block_tokens;
			cells += b->kv_cells[il];
			continue;
		}
		b->kv_cells[il] = model_layer_swa(hp, il) ? ring : b->cfg.n_ctx;
		cells += (uint64_t)b->cfg.slots * b->kv_cells[il];
	}
	if (__builtin_mul_overflow(cells, (uint64_t)b->kv_dim * (b->cfg.kv_f32 ? 4 : 2), &bytes) ||
	    bytes > SIZE_MAX / 2)
		return orch_errf(reterr, ORCH_ENOMEM,
		                 "cpu backend: a KV cache of %llu cells of %u values is too large",
		                 (unsigned long long)cells, b->kv_dim);
	*ret_bytes = bytes;
	return ORCH_OK;
}

static orch_err
alloc_buffers(struct be_model *b, struct orch_errinfo *reterr)
{
	const struct model_hparams *hp = &b->m->hp;
	uint64_t B = b->cfg.max_batch_tokens, S = be_logit_rows(&b->cfg),
	         th = cpu_pool_threads(b->pool);
	uint64_t ff = hp->n_ff > hp->n_ff_exp ? hp->n_ff : hp->n_ff_exp, K = hp->n_expert_used;
	uint64_t kv = 0, att, sf;
	size_t f = sizeof(float);
	orch_err rv;
	/* attention's scratch: blocked (AVX2) queries and scores, or one head's scores */
	bool tiles = b->dot != cpu_dot_scalar && hp->head_dim % 8 == 0;
	uint32_t qmax = cpu_attn_tile_tokens(hp, b->cfg.n_ctx) * (hp->n_head / hp->n_head_kv);

	if ((rv = kv_layout(b, &kv, reterr)) != ORCH_OK)
		return rv;
	b->kv_bytes = 2 * kv;
	sf = cpu_attn_tile_floats(qmax, hp->head_dim, b->cfg.n_ctx);
	att = tiles ? th * (qmax * sizeof(*b->attn_q) + sf * f) + (B + 1) * sizeof(uint32_t)
	            : th * b->cfg.n_ctx * f;
	b->bytes_needed =
	        b->weight_bytes + 2 * kv + hp->n_layer * (sizeof(uint32_t) + sizeof(uint64_t)) +
	        65536 * f * (hp->ffn_gelu ? 2 : 1) +
	        f * (B * (3ull * hp->n_embd + b->qkv_dim + b->q_dim + 2ull * ff) +
	             (hp->n_expert ? B * (hp->n_expert + 3 * K + (1 + K) * hp->n_embd) : 0) +
	             S * ((uint64_t)hp->n_embd + hp->n_vocab) + th * b->max_ne0) +
	        (B > S ? B : S) * (b->max_ne0 / 32 + 1) * 34 + 2 * B * sizeof(uint32_t) + att;
	if ((b->k_cache = balloc(b, (size_t)kv)) == NULL ||
	    (b->v_cache = balloc(b, (size_t)kv)) == NULL ||
	    (b->f16 = balloc(b, 65536 * f)) == NULL ||
	    (b->x = balloc(b, B * hp->n_embd * f)) == NULL ||
	    (b->xn = balloc(b, B * hp->n_embd * f)) == NULL ||
	    (b->tmp = balloc(b, B * hp->n_embd * f)) == NULL ||
	    (b->qkv = balloc(b, B * b->qkv_dim * f)) == NULL ||
	    (b->att = balloc(b, B * b->q_dim * f)) == NULL ||
	    (b->gate = balloc(b, B * ff * f)) == NULL || (b->up = balloc(b, B * ff * f)) == NULL ||
	    (b->last = balloc(b, S * hp->n_embd * f)) == NULL ||
	    (b->logits = balloc(b, S * hp->n_vocab * f)) == NULL ||
	    (b->mm_scratch = balloc(b, th * b->max_ne0 * f)) == NULL ||
	    (b->xq = balloc(b, (B > S ? B : S) * (b->max_ne0 / 32 + 1) * 40)) == NULL ||
	    (b->tok_seq = balloc(b, B * sizeof(uint32_t))) == NULL ||
	    (b->tok_pos = balloc(b, B * sizeof(uint32_t))) == NULL)
		return b->cfg.kv_blocks > 0
		               ? orch_errf(
		                         reterr, ORCH_ENOMEM,
		                         "cpu backend: cannot allocate %llu bytes (KV cache %llu: "
		                         "a pool of %u blocks of %u tokens, %u for sliding windows)",
		                         (unsigned long long)(b->bytes_needed - b->weight_bytes),
		                         (unsigned long long)(2 * kv), b->cfg.kv_blocks,
		                         b->cfg.kv_block_tokens, b->cfg.kv_swa_blocks)
		               : orch_errf(
		                         reterr, ORCH_ENOMEM,
		                         "cpu backend: cannot allocate %llu bytes (KV cache %llu for "
		                         "%u slots x %u context)",
		                         (unsigned long long)(b->bytes_needed - b->weight_bytes),
		                         (unsigned long long)(2 * kv), b->cfg.slots, b->cfg.n_ctx);
	if (hp->n_expert > 0 && ((b->router = balloc(b, B * hp->n_expert * f)) == NULL ||
	                         (b->sel = balloc(b, B * K * sizeof(uint32_t))) == NULL ||
	                         (b->sel_w = balloc(b, B * K * f)) == NULL ||
	                         (b->route = balloc(b, B * K * sizeof(uint32_t))) == NULL ||
	                         (b->moe_x = balloc(b, B * hp->n_embd * f)) == NULL ||
	                         (b->moe_out = balloc(b, B * K * hp->n_embd * f)) == NULL))
		return orch_errf(reterr, ORCH_ENOMEM,
		                 "cpu backend: cannot allocate the experts' scratch");
	if (hp->ffn_gelu && (b->gelu = balloc(b, 65536 * f)) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "cpu backend: cannot allocate GELU's table");
	if (tiles ? (b->attn_q = balloc(b, th * qmax * sizeof(*b->attn_q))) == NULL ||
	                    (b->attn_scratch = balloc(b, th * sf * f)) == NULL ||
	                    (b->tile0 = balloc(b, (B + 1) * sizeof(uint32_t))) == NULL
	          : (b->scores = balloc(b, th * b->cfg.n_ctx * f)) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM,
		                 "cpu backend: cannot allocate the attention's scratch");
	for (uint32_t h = 0; h < 65536; h++)
		b->f16[h] = fp16_to_f32((uint16_t)h);
	if (b->gelu != NULL)
		model_gelu_table(b->gelu);
	b->bytes_used += b->weight_bytes;
	return ORCH_OK;
}

static void cpu_free(struct be_model *b);

static orch_err
cpu_load(const struct model *m, const struct be_config *cfg, be_progress_fn progress, void *ctx,
         struct be_model **ret, struct orch_errinfo *reterr)
{
	const struct model_hparams *hp = &m->hp;
	struct be_model *b;
	struct cpu_load load = {0};
	struct touch tc = {.load = &load};
	orch_err rv;

	if (cfg->slots == 0 || cfg->n_ctx == 0 || cfg->max_batch_tokens == 0 || cfg->slots > 4096)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "cpu backend: slots, context and batch must be positive");
	if (cfg->kv_blocks > 0 &&
	    (cfg->kv_block_tokens == 0 || cfg->kv_blocks > UINT32_MAX / cfg->kv_block_tokens ||
	     cfg->kv_swa_blocks > UINT32_MAX / cfg->kv_block_tokens))
		return orch_errf(reterr, ORCH_EINVAL,
		                 "cpu backend: a KV pool of %u blocks (%u for sliding windows) of "
		                 "%u tokens",
		                 cfg->kv_blocks, cfg->kv_swa_blocks, cfg->kv_block_tokens);
	if (hp->head_dim > CPU_ATTN_MAX_D)
		return orch_errf(reterr, ORCH_EUNSUPPORTED, "cpu backend: head_dim %u is over 512",
		                 hp->head_dim);
	if ((b = orch_calloc(1, sizeof(*b))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "cpu backend: out of memory");
	b->m = m;
	b->cfg = *cfg;
	b->q_dim = hp->head_dim * hp->n_head;
	b->kv_dim = hp->head_dim * hp->n_head_kv;
	b->qkv_dim = b->q_dim + 2 * b->kv_dim;
	b->max_ne0 = hp->n_embd > hp->n_ff ? hp->n_embd : hp->n_ff;
	b->max_ne0 = b->max_ne0 > b->q_dim ? b->max_ne0 : b->q_dim;
	b->max_ne0 = b->max_ne0 > hp->n_ff_exp ? b->max_ne0 : hp->n_ff_exp;
	if (hp->yarn_factor > 0)
		model_yarn_params(hp->n_rot, hp->rope_base, hp->yarn_factor, hp->yarn_orig_ctx,
		                  hp->yarn_beta_fast, hp->yarn_beta_slow, hp->yarn_attn_factor,
		                  &b->yarn);
	b->dot = cpu_dot_select(true);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t threads = cfg->threads ? cfg->threads : (uint32_t)(cores > 0 ? cores : 1);
	if (cpu_pool_new(threads > 256 ? 256 : threads, &b->pool) != ORCH_OK) {
		rv = orch_errf(reterr, ORCH_ENOMEM, "cpu backend: out of memory");
		goto fail;
	}
	model_for_each_tensor(m, add_bytes, &b->weight_bytes);
	if ((rv = alloc_buffers(b, reterr)) != ORCH_OK)
		goto fail;
	load = (struct cpu_load){.total = b->weight_bytes, .progress = progress, .ctx = ctx};
	if (progress)
		progress(ctx, 0, load.total);
	/* packed tensors first: their file pages are dropped as they go */
	if ((rv = cpu_pack_model(b, &load, reterr)) != ORCH_OK)
		goto fail;
	tc.b = b;
	model_for_each_tensor(m, touch_tensor, &tc);
	if (progress)
		progress(ctx, load.total, load.total);
	*ret = b;
	return ORCH_OK;
fail:
	cpu_free(b);
	return rv;
}

/*
 * Rows [0, n) of block @src into block @dst, K and V, in every paged layer of one pool:
 * the sliding-window layers' with @swa, else the full-attention layers'.
 */
static orch_err
cpu_copy_blocks(struct be_model *b, bool swa, uint32_t src, uint32_t dst, uint32_t n,
                struct orch_errinfo *reterr)
{
	uint32_t bt = b->cfg.kv_block_tokens;
	uint32_t pool = b->cfg.kv_blocks == 0 ? 0 : swa ? b->cfg.kv_swa_blocks : b->cfg.kv_blocks;
	size_t row = (size_t)b->kv_dim * (b->cfg.kv_f32 ? 4 : 2);

	if (src >= pool || dst >= pool || n > bt || src == dst)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "cpu backend: copy of %u rows from block %u to %u (%spool of %u)",
		                 n, src, dst, swa ? "sliding-window " : "", pool);
	for (uint32_t il = 0; il < b->m->hp.n_layer; il++) {
		if (!cpu_layer_paged(b, il) || model_layer_swa(&b->m->hp, il) != swa)
			continue;
		uint64_t s_off = (b->kv_base[il] + (uint64_t)src * bt) * row;
		uint64_t d_off = (b->kv_base[il] + (uint64_t)dst * bt) * row;
		memcpy((uint8_t *)b->k_cache + d_off, (uint8_t *)b->k_cache + s_off, n * row);
		memcpy((uint8_t *)b->v_cache + d_off, (uint8_t *)b->v_cache + s_off, n * row);
	}
	return ORCH_OK;
}

static void
cpu_memory(const struct be_model *b, struct be_memory *ret)
{
	ret->needed = b->bytes_needed;
	ret->used = b->bytes_used;
	ret->weights = b->weight_bytes + b->pack_extra_bytes;
	ret->kv = b->kv_bytes;
	ret->scratch = ret->used - ret->weights - ret->kv;
}

static void
cpu_free(struct be_model *b)
{
	if (b == NULL)
		return;
	cpu_pool_free(b->pool);
	cpu_pack_free(b);
	void *bufs[] = {b->k_cache, b->v_cache, b->kv_cells,     b->kv_base, b->f16,    b->x,
	                b->xn,      b->tmp,     b->qkv,          b->att,     b->gate,   b->up,
	                b->last,    b->logits,  b->mm_scratch,   b->xq,      b->scores, b->tok_seq,
	                b->tok_pos, b->router,  b->sel,          b->sel_w,   b->route,  b->moe_x,
	                b->moe_out, b->attn_q,  b->attn_scratch, b->tile0,   b->gelu};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		orch_free(bufs[i]);
	orch_free(b);
}

/* The host's memory: MemTotal and MemAvailable (what can be allocated without swapping). */
static void
cpu_info(const char *device, struct be_info *ret)
{
	(void)device;
	memset(ret, 0, sizeof(*ret));
	orch_meminfo(&ret->mem_total, &ret->mem_free);
}

const struct be_ops be_cpu_ops = {
        .name = "cpu",
        .paged = true,
        .all_logits = true,
        .load = cpu_load,
        .memory = cpu_memory,
        .forward = cpu_forward,
        .free = cpu_free,
        .copy_blocks = cpu_copy_blocks,
        .info = cpu_info,
};
