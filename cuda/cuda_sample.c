/*
 * cuda_sample.c - forward_sample: a step, then samp_sample()'s pipeline on
 * the device (kernels/sample.cu); only the sampled ids come back, into
 * pinned memory. Afterwards the device advances the next decode step's
 * inputs itself (token = the sampled id, position + 1, Philox counter + 1,
 * the id appended to the slot's history), and the host mirror does the
 * same, so the next steady decode step has nothing to upload.
 *
 * A job's history (prompt and generated tokens, for the penalties) is sent
 * once, when the job first samples; after that the device appends what it
 * samples. Its logit_bias entries go up with the parameters when they
 * change (all rows' in one array), a grammar's mask every step it has one
 * (a bit a token: 19 KB for a 151,936-token vocabulary).
 */
#include <string.h>

#include "cuda_int.h"

/* Row @o's logit_bias entries staged from b->n_bias on; false when there are too many. */
static bool
stage_bias(struct be_model *b, const struct samp_params *sp, struct cuk_samp *row)
{
	if (sp->n_bias > BE_SAMPLE_MAX_BIAS)
		return false;
	row->bias0 = b->n_bias;
	row->n_bias = sp->n_bias;
	for (uint32_t k = 0; k < sp->n_bias; k++)
		b->h_bias[b->n_bias++] = (struct cuk_bias){sp->bias[k].id, sp->bias[k].bias};
	return true;
}

/* The staged bias entries and @n_mask rows of masks to the device (bias only when changed). */
static cudaError_t
upload_pre(struct be_model *b, uint32_t n_mask)
{
	cudaError_t ce;

	if (b->n_bias > 0 &&
	    (b->n_bias != b->mir_n_bias ||
	     memcmp(b->h_bias, b->mir_bias, b->n_bias * sizeof(*b->h_bias)) != 0)) {
		memcpy(b->mir_bias, b->h_bias, b->n_bias * sizeof(*b->h_bias));
		b->mir_n_bias = b->n_bias;
		if ((ce = cudaMemcpyAsync(b->d_bias, b->h_bias, b->n_bias * sizeof(*b->h_bias),
		                          cudaMemcpyHostToDevice, b->st)) != cudaSuccess)
			return ce;
	}
	if (n_mask == 0)
		return cudaSuccess;
	return cudaMemcpyAsync(b->d_mask, b->h_mask, (uint64_t)n_mask * b->mask_words * 4,
	                       cudaMemcpyHostToDevice, b->st);
}

static cudaError_t
stage(struct be_model *b, const struct be_seq *seqs, uint32_t n, const struct be_sample *samp,
      bool *ret_any_random, struct cuk_sample_pre *pre, struct orch_errinfo *reterr, orch_err *rv)
{
	uint32_t o = 0, n_mask = 0;
	cudaError_t ce;

	*ret_any_random = false;
	*pre = (struct cuk_sample_pre){b->d_bias, b->d_mask, b->mask_words, false};
	b->n_bias = 0;
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
		struct cuk_samp *row = &b->h_samp[o];
		*row = (struct cuk_samp){.temperature = s->sp->temperature,
		                         .top_p = s->sp->top_p,
		                         .min_p = s->sp->min_p,
		                         .repeat_penalty = s->sp->repeat_penalty,
		                         .top_k = s->sp->top_k,
		                         .repeat_last_n = s->sp->repeat_last_n,
		                         .seed = s->sp->seed,
		                         .index = s->index,
		                         .slot = slot,
		                         .n_hist = s->n_hist,
		                         .presence = s->sp->presence_penalty,
		                         .frequency = s->sp->frequency_penalty,
		                         .mask = CUK_NO_MASK};
		if (!stage_bias(b, s->sp, row)) {
			*rv = orch_errf(reterr, ORCH_EINVAL, "%u logit_bias entries exceed %u",
			                s->sp->n_bias, BE_SAMPLE_MAX_BIAS);
			return cudaErrorInvalidValue;
		}
		if (s->mask != NULL) {
			memcpy(b->h_mask + (uint64_t)n_mask * b->mask_words, s->mask,
			       b->mask_words * 4ull);
			row->mask = n_mask++;
		}
		*ret_any_random = *ret_any_random || s->sp->temperature > 0.0f;
		pre->any = pre->any || row->n_bias > 0 || row->mask != CUK_NO_MASK ||
		           (s->sp->repeat_penalty != 1.0f && s->sp->repeat_penalty > 0.0f) ||
		           row->presence != 0.0f || row->frequency != 0.0f;
		o++;
	}
	if ((ce = upload_pre(b, n_mask)) != cudaSuccess)
		return ce;
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
	bool any_random, decode = true;
	struct cuk_sample_pre pre;
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
	if ((ce = stage(b, seqs, n, samp, &any_random, &pre, reterr, &rv)) != cudaSuccess) {
		b->mir_samp_n = 0;
		b->mir_n_bias = 0;
		return rv == ORCH_EINVAL ? rv : cu_fail(b, ce, "staging sampling", reterr);
	}
	if ((ce = cuk_sample(b->logits, n_out, b->m->hp.n_vocab, b->d_samp, b->d_hist, b->hist_cap,
	                     any_random, &pre, b->sort_tmp, b->sort_tmp_bytes, b->d_keys, b->d_vals,
	                     b->d_probs, b->d_seg, b->d_ids, b->st)) != cudaSuccess ||
	    (ce = cuk_advance(n_out, b->d_ids, b->d.tok, b->d.pos, b->d_samp, b->d_hist,
	                      b->hist_cap, b->st)) != cudaSuccess ||
	    (ce = cudaMemcpyAsync(b->h_ids, b->d_ids, n_out * 4ull, cudaMemcpyDeviceToHost,
	                          b->st)) != cudaSuccess ||
	    (ce = cudaStreamSynchronize(b->st)) != cudaSuccess) {
		b->mir_T = 0;
		b->mir_samp_n = 0;
		b->mir_n_bias = 0;
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
			b->mir.tok[o] = b->h_ids[o] < 0 ? 0 : b->h_ids[o]; /* as cuk_advance */
			b->mir.pos[o]++;
		}
	} else {
		b->mir_T = 0; /* the advance wrote over a mixed step's inputs */
	}
	return ORCH_OK;
}
