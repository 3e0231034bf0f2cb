/*
 * backend_batch.c - the batch checks every backend makes before a forward
 * step (compiled into the engine and into the CUDA module).
 */
#include "backend.h"

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
