/*
 * backend_batch.c - the batch checks every backend makes before a forward
 * step (compiled into the engine and into the CUDA module).
 */
#include "backend.h"

/*
 * Paged: @s's table covers positions 0 .. pos + n_tokens with blocks of the
 * pool. Only full-attention layers are paged, and they read from position 0,
 * so no entry may have been dropped yet (first_block 0).
 */
static orch_err
check_table(const struct be_config *cfg, const struct be_seq *s, struct orch_errinfo *reterr)
{
	uint64_t need =
	        ((uint64_t)s->pos + s->n_tokens + cfg->kv_block_tokens - 1) / cfg->kv_block_tokens;

	if (s->blocks == NULL || s->n_blocks < need || s->first_block != 0)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "slot %u: a block table of %u entries (first %u) for positions "
		                 "up to %llu",
		                 s->slot, s->n_blocks, s->first_block,
		                 (unsigned long long)s->pos + s->n_tokens);
	for (uint32_t i = 0; i < need; i++)
		if (s->blocks[i] >= cfg->kv_blocks)
			return orch_errf(reterr, ORCH_EINVAL,
			                 "slot %u: block %u of %u is not in the pool", s->slot,
			                 s->blocks[i], cfg->kv_blocks);
	return ORCH_OK;
}

orch_err
be_check_batch(const struct be_config *cfg, uint32_t n_vocab, const struct be_seq *seqs, uint32_t n,
               uint32_t *ret_T, struct orch_errinfo *reterr)
{
	uint64_t T = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct be_seq *s = &seqs[i];
		if (s->slot >= cfg->slots || s->n_tokens == 0)
			return orch_errf(reterr, ORCH_EINVAL,
			                 "sequence %u: bad slot %u or no tokens", i, s->slot);
		for (uint32_t k = 0; k < i; k++)
			if (seqs[k].slot == s->slot)
				return orch_errf(reterr, ORCH_EINVAL,
				                 "slot %u appears twice in one batch", s->slot);
		if ((uint64_t)s->pos + s->n_tokens > cfg->n_ctx)
			return orch_errf(
			        reterr, ORCH_ECONTEXT,
			        "sequence in slot %u needs %llu positions, the context holds %u",
			        s->slot, (unsigned long long)s->pos + s->n_tokens, cfg->n_ctx);
		orch_err rv = cfg->kv_blocks > 0 ? check_table(cfg, s, reterr) : ORCH_OK;
		if (rv != ORCH_OK)
			return rv;
		for (uint32_t k = 0; k < s->n_tokens; k++)
			if (s->tokens[k] < 0 || (uint32_t)s->tokens[k] >= n_vocab)
				return orch_errf(reterr, ORCH_EINVAL,
				                 "token id %d is outside the vocabulary",
				                 s->tokens[k]);
		T += s->n_tokens;
	}
	if (T > cfg->max_batch_tokens)
		return orch_errf(reterr, ORCH_EINVAL, "batch of %llu tokens exceeds %u",
		                 (unsigned long long)T, cfg->max_batch_tokens);
	*ret_T = (uint32_t)T;
	return ORCH_OK;
}
