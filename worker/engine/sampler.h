#pragma once
/*
 * sampler.h - next-token selection, in this order: logit bias, repetition
 * penalty, presence and frequency penalties, temperature (0 = greedy
 * argmax), top-k, top-p, min-p, then a draw.
 *
 * The draw uses Philox4x32-10 keyed by the job's seed with the token index
 * as the counter, so the same seed gives the same tokens in any batch, on
 * any thread, and on a GPU sampler that implements the same steps. Ties in
 * ordering are broken by the lower token id.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* One logit_bias entry: @bias added to token @id's logit (-100 or less: the token is banned). */
struct samp_bias {
	int32_t id;
	float bias;
};

struct samp_params {
	float temperature;      /* 0: greedy */
	int32_t top_k;          /* <= 0: off */
	float top_p;            /* >= 1: off */
	float min_p;            /* <= 0: off */
	float repeat_penalty;   /* 1: off */
	uint32_t repeat_last_n; /* tokens the penalty looks back over (64 by default) */
	/* OpenAI's, over the tokens generated so far: a token seen c times loses
	 * c · frequency_penalty + (c > 0) · presence_penalty; 0: off */
	float presence_penalty, frequency_penalty;
	const struct samp_bias *bias; /* logit_bias: n_bias entries (ids in the vocabulary) */
	uint32_t n_bias;
	uint64_t seed;
};

/* samp_defaults - temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, penalty 1, last 64
 * (llama.cpp's). */
struct samp_params samp_defaults(void);

/* A candidate: token and logit; the sampler's working array. */
struct samp_cand {
	int32_t id;
	float logit, p;
};

/*
 * samp_sample - the next token from @logits (@n_vocab) given the job's
 * previous tokens @hist (@n_hist, prompt and generated, for the penalties:
 * the last @index of them are the generated ones) and the index of the
 * token being generated (@index, the Philox counter).
 * @work holds n_vocab candidates. NaN logits are ignored; SAMP_NONE when no
 * candidate is left above -inf (every logit NaN or -inf: a model whose numbers
 * broke, or a logit_bias that banned every token): no token to give.
 */
#define SAMP_NONE (-1)
int32_t samp_sample(const struct samp_params *p, const float *logits, uint32_t n_vocab,
                    const int32_t *hist, size_t n_hist, uint64_t index, struct samp_cand *work);

/* samp_philox - Philox4x32-10 of counter @ctr with key @key, into @out. */
void samp_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* samp_uniform - the draw for (@seed, @index): the first Philox word / 2^32, in [0, 1). */
double samp_uniform(uint64_t seed, uint64_t index);

/* samp_random_seed - a seed from the system's entropy, for jobs that gave none. */
uint64_t samp_random_seed(void);
