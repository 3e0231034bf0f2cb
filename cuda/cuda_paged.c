/*
 * cuda_paged.c - the paged KV cache on the device (cfg.kv_blocks > 0): the
 * step's block tables staged and uploaded, and copy_blocks.
 *
 * Design notes
 * - The pools are allocated at load (cuda_backend.c), one K and one V
 *   allocation holding every layer's rows: a full-attention layer's
 *   (kv_blocks + 1) · bt, a sliding-window layer's (kv_swa_blocks + 1) · bt.
 *   The extra block of each pool is the padding sequence's, which decode
 *   graphs and the warm-up compute in: its tables (the first 2 · nb_max
 *   entries of d_tab) point every entry at it, uploaded once at load.
 * - A step's tables are staged one sequence after another, each only as far
 *   as the step reads (ceil((pos + n) / bt) entries); a window table only
 *   from its first kept entry, the token's start moved back by as many
 *   entries (kernels index with uint32 arithmetic, so the start may wrap:
 *   the kernels never read an entry before the first kept one). They are
 *   uploaded when they differ from what the device holds: a steady decode
 *   step uploads nothing until some sequence enters a new block.
 * - The kernels take the tables from fixed device addresses (d_tab, and the
 *   step inputs' tbl and swa_tbl), so captured graphs replay with new tables.
 * - copy_blocks is two device-to-device copies a layer of the pool, on the
 *   step stream: the next step sees them, no synchronization.
 */
#include <string.h>

#include "cuda_int.h"

uint64_t
cu_tab_entries(const struct be_config *cfg)
{
	uint64_t bt = cfg->kv_block_tokens, nb = bt ? (cfg->n_ctx + bt - 1) / bt : 0;

	return 2 * nb * (1ull + cfg->slots);
}

void
cu_stage_tables(struct be_model *b, const struct be_seq *s, uint32_t t0)
{
	uint32_t bt = b->cfg.kv_block_tokens;
	uint32_t need = (uint32_t)(((uint64_t)s->pos + s->n_tokens + bt - 1) / bt);
	uint32_t full = b->tab_n, swa = 0;

	memcpy(b->h_tab + full, s->blocks, need * 4ull);
	b->tab_n += need;
	if (b->cfg.kv_swa_blocks > 0) {
		uint32_t first = s->swa_first_block < need ? s->swa_first_block : need;
		memcpy(b->h_tab + b->tab_n, s->swa_blocks + first, (need - first) * 4ull);
		swa = b->tab_n - first; /* entry i of the table at h_tab[swa + i], i ≥ first */
		b->tab_n += need - first;
	}
	for (uint32_t k = 0; k < s->n_tokens; k++) {
		b->h.tbl[t0 + k] = full;
		b->h.swa_tbl[t0 + k] = swa;
	}
}

cudaError_t
cu_tables_init(struct be_model *b)
{
	uint32_t nb = b->nb_max;
	cudaError_t ce;

	for (uint32_t i = 0; i < nb; i++) {
		b->h_tab[i] = b->cfg.kv_blocks;          /* the full pool's padding block */
		b->h_tab[nb + i] = b->cfg.kv_swa_blocks; /* the window pool's */
	}
	b->tab_n = 2 * nb;
	memcpy(b->mir_tab, b->h_tab, 2ull * nb * 4);
	b->mir_tab_n = b->tab_n;
	if ((ce = cudaMemcpyAsync(b->d_tab, b->h_tab, 2ull * nb * 4, cudaMemcpyHostToDevice,
	                          b->st)) != cudaSuccess)
		return ce;
	return cudaStreamSynchronize(b->st);
}

cudaError_t
cu_upload_tables(struct be_model *b, bool *ret_uploaded)
{
	uint32_t from = 2 * b->nb_max;

	*ret_uploaded = false;
	if (b->mir_tab_n == b->tab_n &&
	    memcmp(b->h_tab + from, b->mir_tab + from, (b->tab_n - from) * 4ull) == 0)
		return cudaSuccess;
	memcpy(b->mir_tab + from, b->h_tab + from, (b->tab_n - from) * 4ull);
	b->mir_tab_n = b->tab_n;
	*ret_uploaded = true;
	return cudaMemcpyAsync(b->d_tab + from, b->h_tab + from, (b->tab_n - from) * 4ull,
	                       cudaMemcpyHostToDevice, b->st);
}

orch_err
cu_copy_blocks(struct be_model *b, bool swa, uint32_t src, uint32_t dst, uint32_t n_tokens,
               struct orch_errinfo *reterr)
{
	uint32_t bt = b->cfg.kv_block_tokens;
	uint32_t pool = !b->paged ? 0 : swa ? b->cfg.kv_swa_blocks : b->cfg.kv_blocks;
	uint64_t row = (uint64_t)b->kv_dim * (b->cfg.kv_f32 ? 4 : 2);
	cudaError_t ce;

	if (src >= pool || dst >= pool || n_tokens > bt || src == dst)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "cuda backend: copy of %u rows from block %u to %u (%spool of %u)",
		                 n_tokens, src, dst, swa ? "sliding-window " : "", pool);
	if (b->dead)
		return orch_errf(reterr, ORCH_ECUDA, "the CUDA context is unusable");
	if (n_tokens == 0)
		return ORCH_OK;
	if ((ce = cudaSetDevice(b->dev)) != cudaSuccess)
		return cu_fail(b, ce, "selecting the device", reterr);
	for (uint32_t l = 0; l < b->m->hp.n_layer; l++) {
		const struct cu_layer *L = &b->layers[l];
		if (L->swa != swa)
			continue;
		uint64_t s_off = (L->kv_cell0 + (uint64_t)src * bt) * row;
		uint64_t d_off = (L->kv_cell0 + (uint64_t)dst * bt) * row;
		if ((ce = cudaMemcpyAsync((uint8_t *)b->k_pool + d_off,
		                          (const uint8_t *)b->k_pool + s_off, n_tokens * row,
		                          cudaMemcpyDeviceToDevice, b->st)) != cudaSuccess ||
		    (ce = cudaMemcpyAsync((uint8_t *)b->v_pool + d_off,
		                          (const uint8_t *)b->v_pool + s_off, n_tokens * row,
		                          cudaMemcpyDeviceToDevice, b->st)) != cudaSuccess)
			return cu_fail(b, ce, "copying KV blocks", reterr);
	}
	return ORCH_OK;
}
