/*
 * backend_batch.c - the batch checks every backend makes before a forward
 * step (compiled into the engine and into the CUDA module).
 */
#include "backend.h"

/*
 * Paged: @s's table (the sliding-window one with @swa) holds, from its first
 * entry on, every position the step reads and writes, on blocks of its pool.
 * Full-attention layers read from position 0, so nothing may have been
 * dropped; a window of @n_swa reads from pos + 1 - n_swa.
 */
static orch_err
check_table(const struct be_config *cfg, const struct be_seq *s, bool swa, uint32_t n_swa,
            struct orch_errinfo *reterr)
{
	const uint32_t *t = swa ? s->swa_blocks : s->blocks;
	uint32_t n_t = swa ? s->n_swa_blocks : s->n_blocks;
	uint32_t first = swa ? s->swa_first_block : s->first_block;
	uint32_t pool = swa ? cfg->kv_swa_blocks : cfg->kv_blocks, bt = cfg->kv_block_tokens;
	uint64_t end = (uint64_t)s->pos + s->n_tokens, need = (end + bt - 1) / bt;
	uint64_t read = swa && s->pos + 1 > n_swa ? s->pos + 1 - n_swa : 0;

	if (t == NULL || n_t < need || (uint64_t)first * bt > read)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "slot %u: a %sblock table of %u entries (first %u) for positions "
		                 "%llu to %llu",
		                 s->slot, swa ? "sliding-window " : "", n_t, first,
		                 (unsigned long long)read, (unsigned long long)end - 1);
	for (uint32_t i = first; i < need; i++)
		if (t[i] >= pool)
			return orch_errf(reterr, ORCH_EINVAL,
			                 "slot %u: block %u of %u is not in the %spool", s->slot,
			                 t[i], pool, swa ? "sliding-window " : "");
	return ORCH_OK;
}

uint32_t
be_logit_rows(const struct be_config *cfg)
{
	return cfg->logit_rows > cfg->slots ? cfg->logit_rows : cfg->slots;
}

orch_err
be_check_batch(const struct be_config *cfg, uint32_t n_vocab, uint32_t n_swa,
               const struct be_seq *seqs, uint32_t n, uint32_t *ret_T, struct orch_errinfo *reterr)
{
	uint64_t T = 0, rows = 0;

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
		orch_err rv =
		        cfg->kv_blocks > 0 ? check_table(cfg, s, false, n_swa, reterr) : ORCH_OK;
		if (rv == ORCH_OK && cfg->kv_blocks > 0 && cfg->kv_swa_blocks > 0)
			rv = check_table(cfg, s, true, n_swa, reterr);
		if (rv != ORCH_OK)
			return rv;
		for (uint32_t k = 0; k < s->n_tokens; k++)
			if (s->tokens[k] < 0 || (uint32_t)s->tokens[k] >= n_vocab)
				return orch_errf(reterr, ORCH_EINVAL,
				                 "token id %d is outside the vocabulary",
				                 s->tokens[k]);
		T += s->n_tokens;
		rows += s->want_logits ? (s->all_logits ? s->n_tokens : 1) : 0;
	}
	if (rows > be_logit_rows(cfg))
		return orch_errf(reterr, ORCH_EINVAL, "a step of %llu logit rows exceeds %u",
		                 (unsigned long long)rows, be_logit_rows(cfg));
	if (T > cfg->max_batch_tokens)
		return orch_errf(reterr, ORCH_EINVAL, "batch of %llu tokens exceeds %u",
		                 (unsigned long long)T, cfg->max_batch_tokens);
	*ret_T = (uint32_t)T;
	return ORCH_OK;
}
