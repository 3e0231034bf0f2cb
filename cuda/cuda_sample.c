/*
 * cuda_sample.c - forward_sample: a step, then samp_sample()'s pipeline on
 * the device (kernels/sample.cu); only the sampled ids come back, into
 * pinned memory. Afterwards the device advances the next decode step's
 * inputs itself (token = the sampled id, position + 1, Philox counter + 1,
 * the id appended to the slot's history), and the host mirror does the
 * same, so the next steady decode step has nothing to upload.
 *
 * A job's history (prompt and generated tokens, for the repetition
 * penalty) is sent once, when the job first samples; after that the device
 * appends what it samples.
 */
#include <string.h>

#include "cuda_int.h"

static cudaError_t
stage(struct be_model *b, const struct be_seq *seqs, uint32_t n, const struct be_sample *samp,
      bool *ret_any_random, bool *ret_any_penalty, struct orch_errinfo *reterr, orch_err *rv)
{
	uint32_t o = 0;
	cudaError_t ce;

	*ret_any_random = false;
	*ret_any_penalty = false;
	for (uint32_t i = 0; i < n; i++) {
		if (!seqs[i].want_logits)
			continue;
		const struct be_sample *s = &samp[i];
		uint32_t slot = seqs[i].slot;
		if (s->n_hist > b->hist_cap) {
			*rv = orch_errf(reterr, ORCH_EINVAL, "history of %u tokens exceeds %u",
			                s->n_hist, b->hist_cap);
			return cudaErrorInvalidValue;
		}
		if (b->hist_dev[slot] > s->n_hist)
			b->hist_dev[slot] = 0;
		if (b->hist_dev[slot] < s->n_hist) {
			/* pageable source: the call returns once the bytes are staged */
			if ((ce = cudaMemcpyAsync(b->d_hist + (uint64_t)slot * b->hist_cap +
			                                  b->hist_dev[slot],
			                          s->hist + b->hist_dev[slot],
			                          (uint64_t)(s->n_hist - b->hist_dev[slot]) * 4,
			                          cudaMemcpyHostToDevice, b->st)) != cudaSuccess)
				return ce;
			b->hist_dev[slot] = s->n_hist;
		}
		b->h_samp[o++] = (struct cuk_samp){.temperature = s->sp->temperature,
		                                   .top_p = s->sp->top_p,
		                                   .min_p = s->sp->min_p,
		                                   .repeat_penalty = s->sp->repeat_penalty,
		                                   .top_k = s->sp->top_k,
		                                   .repeat_last_n = s->sp->repeat_last_n,
		                                   .seed = s->sp->seed,
		                                   .index = s->index,
		                                   .slot = slot,
		                                   .n_hist = s->n_hist};
		*ret_any_random = *ret_any_random || s->sp->temperature > 0.0f;
		*ret_any_penalty = *ret_any_penalty ||
		                   (s->sp->repeat_penalty != 1.0f && s->sp->repeat_penalty > 0.0f);
	}
	if (b->mir_samp_n == o && memcmp(b->h_samp, b->mir_samp, o * sizeof(struct cuk_samp)) == 0)
		return cudaSuccess;
	memcpy(b->mir_samp, b->h_samp, o * sizeof(struct cuk_samp));
	b->mir_samp_n = o;
	return cudaMemcpyAsync(b->d_samp, b->h_samp, o * sizeof(struct cuk_samp),
	                       cudaMemcpyHostToDevice, b->st);
}

orch_err
cu_forward_sample(struct be_model *b, const struct be_seq *seqs, uint32_t n,
                  const struct be_sample *samp, int32_t *ret_ids, struct orch_errinfo *reterr)
{
	uint32_t n_out = 0, T = 0;
	bool any_random, any_penalty, decode = true;
	cudaError_t ce;
	orch_err rv = cu_step(b, seqs, n, &n_out, reterr);

	if (rv != ORCH_OK)
		return rv;
	if (n_out == 0)
		return ORCH_OK;
	for (uint32_t i = 0; i < n; i++) {
		T += seqs[i].n_tokens;
		decode = decode && seqs[i].n_tokens == 1 && seqs[i].want_logits;
	}
	rv = ORCH_ECUDA;
	if ((ce = stage(b, seqs, n, samp, &any_random, &any_penalty, reterr, &rv)) != cudaSuccess) {
		b->mir_samp_n = 0;
		return rv == ORCH_EINVAL ? rv : cu_fail(b, ce, "staging sampling", reterr);
	}
	if ((ce = cuk_sample(b->logits, n_out, b->m->hp.n_vocab, b->d_samp, b->d_hist, b->hist_cap,
	                     any_random, any_penalty, b->sort_tmp, b->sort_tmp_bytes, b->d_keys,
	                     b->d_vals, b->d_probs, b->d_seg, b->d_ids, b->st)) != cudaSuccess ||
	    (ce = cuk_advance(n_out, b->d_ids, b->d.tok, b->d.pos, b->d_samp, b->d_hist,
	                      b->hist_cap, b->st)) != cudaSuccess ||
	    (ce = cudaMemcpyAsync(b->h_ids, b->d_ids, n_out * 4ull, cudaMemcpyDeviceToHost,
	                          b->st)) != cudaSuccess ||
	    (ce = cudaStreamSynchronize(b->st)) != cudaSuccess) {
		b->mir_T = 0;
		b->mir_samp_n = 0;
		return cu_fail(b, ce, "sampling", reterr);
	}
	/* what cuk_advance did, on the mirror */
	for (uint32_t o = 0; o < n_out; o++) {
		struct cuk_samp *m = &b->mir_samp[o];
		if (b->hist_dev[m->slot] == m->n_hist)
			b->hist_dev[m->slot]++;
		m->index++;
		m->n_hist++;
		ret_ids[o] = b->h_ids[o];
	}
	if (decode && b->mir_T >= n) {
		for (uint32_t o = 0; o < n; o++) {
			b->mir.tok[o] = b->h_ids[o];
			b->mir.pos[o]++;
		}
	} else {
		b->mir_T = 0; /* the advance wrote over a mixed step's inputs */
	}
	return ORCH_OK;
}
