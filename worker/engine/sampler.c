/*
 * sampler.c - the sampling pipeline and Philox4x32-10.
 *
 * Every step works on the candidates sorted by logit (descending, ties by
 * id), so top-k is a prefix, top-p and min-p are prefixes of what is left,
 * and the draw walks the prefix accumulating probabilities. The
 * repetition penalty is llama.cpp's: a positive logit is divided by it, a
 * negative one multiplied, once per distinct token of the last N. The
 * presence and frequency penalties are OpenAI's, over the generated tokens
 * only (vLLM's reading: the prompt is not "the text so far" of the answer).
 * A logit bias of -100 or less bans its token (-inf), as OpenAI describes
 * it; any other is added.
 */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

struct samp_params
samp_defaults(void)
{
	return (struct samp_params){.temperature = 0.8f,
	                            .top_k = 40,
	                            .top_p = 0.95f,
	                            .min_p = 0.05f,
	                            .repeat_penalty = 1.0f,
	                            .repeat_last_n = 64,
	                            .presence_penalty = 0.0f,
	                            .frequency_penalty = 0.0f,
	                            .bias = NULL,
	                            .n_bias = 0,
	                            .seed = 0};
}

static void
mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
	uint64_t p = (uint64_t)a * b;

	*hi = (uint32_t)(p >> 32);
	*lo = (uint32_t)p;
}

void
samp_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];

	for (int r = 0; r < 10; r++) {
		uint32_t hi0, lo0, hi1, lo1;
		mulhilo(0xD2511F53u, c0, &hi0, &lo0);
		mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
		c0 = hi1 ^ c1 ^ k0;
		c1 = lo1;
		c2 = hi0 ^ c3 ^ k1;
		c3 = lo0;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

double
samp_uniform(uint64_t seed, uint64_t index)
{
	uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32), 0, 0};
	uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, out[4];

	samp_philox(ctr, key, out);
	return (double)out[0] / 4294967296.0;
}

uint64_t
samp_random_seed(void)
{
	uint64_t s;

	if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s))
		s = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
	return s & 0xffffffffffffull; /* 48 bits: exact in a JSON number */
}

static int
by_logit(const void *x, const void *y)
{
	const struct samp_cand *a = x, *b = y;

	if (a->logit != b->logit)
		return a->logit > b->logit ? -1 : 1;
	return (a->id > b->id) - (a->id < b->id);
}

bool
samp_host_only(const struct samp_params *p)
{
	return p->n_bias > 0 || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f;
}

static void
bias(const struct samp_params *p, struct samp_cand *c, uint32_t n_vocab)
{
	for (uint32_t i = 0; i < p->n_bias; i++) {
		int32_t id = p->bias[i].id;
		if (id < 0 || (uint32_t)id >= n_vocab)
			continue;
		c[id].logit =
		        p->bias[i].bias <= -100.0f ? -INFINITY : c[id].logit + p->bias[i].bias;
	}
}

/* OpenAI's penalties over the @n generated tokens @gen (c[].p marks a token seen, then is 0). */
static void
presence_frequency(const struct samp_params *p, const int32_t *gen, size_t n, struct samp_cand *c,
                   uint32_t n_vocab)
{
	for (size_t i = 0; i < n; i++) {
		int32_t id = gen[i];
		if (id < 0 || (uint32_t)id >= n_vocab)
			continue;
		if (c[id].p == 0.0f) {
			c[id].logit -= p->presence_penalty;
			c[id].p = 1.0f;
		}
		c[id].logit -= p->frequency_penalty;
	}
	for (size_t i = 0; i < n; i++)
		if (gen[i] >= 0 && (uint32_t)gen[i] < n_vocab)
			c[gen[i]].p = 0.0f;
}

static void
penalize(const struct samp_params *p, const int32_t *hist, size_t n_hist, struct samp_cand *c,
         uint32_t n_vocab)
{
	size_t from = n_hist > p->repeat_last_n ? n_hist - p->repeat_last_n : 0;

	for (size_t i = from; i < n_hist; i++) {
		int32_t id = hist[i];
		bool seen = false;
		for (size_t k = from; k < i && !seen; k++)
			seen = hist[k] == id;
		if (seen || id < 0 || (uint32_t)id >= n_vocab)
			continue;
		c[id].logit = c[id].logit > 0 ? c[id].logit / p->repeat_penalty
		                              : c[id].logit * p->repeat_penalty;
	}
}

int32_t
samp_sample(const struct samp_params *p, const float *logits, uint32_t n_vocab, const int32_t *hist,
            size_t n_hist, uint64_t index, struct samp_cand *c)
{
	uint32_t n = n_vocab;

	for (uint32_t i = 0; i < n_vocab; i++)
		c[i] = (struct samp_cand){(int32_t)i, isnan(logits[i]) ? -INFINITY : logits[i],
		                          0.0f};
	bias(p, c, n_vocab);
	if (p->repeat_penalty != 1.0f && p->repeat_penalty > 0.0f)
		penalize(p, hist, n_hist, c, n_vocab);
	if (p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f) {
		size_t gen = index < n_hist ? (size_t)index : n_hist;
		presence_frequency(p, hist + n_hist - gen, gen, c, n_vocab);
	}
	if (p->temperature <= 0.0f) { /* greedy: the first maximum */
		uint32_t best = 0;
		for (uint32_t i = 1; i < n_vocab; i++)
			if (c[i].logit > c[best].logit)
				best = i;
		return c[best].id;
	}
	for (uint32_t i = 0; i < n; i++)
		c[i].logit /= p->temperature;
	qsort(c, n, sizeof(*c), by_logit);
	if (p->top_k > 0 && (uint32_t)p->top_k < n)
		n = (uint32_t)p->top_k;
	double sum = 0.0;
	for (uint32_t i = 0; i < n; i++) {
		/* exp in double, rounded once: what the GPU sampler computes too */
		c[i].p = (float)exp((double)(c[i].logit - c[0].logit));
		sum += (double)c[i].p;
	}
	if (p->top_p < 1.0f) {
		double cum = 0.0;
		uint32_t k = 0;
		while (k < n && (k == 0 || cum < (double)p->top_p * sum))
			cum += (double)c[k++].p;
		n = k;
	}
	if (p->min_p > 0.0f) {
		uint32_t k = 1;
		while (k < n && c[k].p >= p->min_p * c[0].p)
			k++;
		n = k;
	}
	sum = 0.0;
	for (uint32_t i = 0; i < n; i++)
		sum += (double)c[i].p;
	double u = samp_uniform(p->seed, index) * sum, cum = 0.0;
	for (uint32_t i = 0; i < n; i++) {
		cum += (double)c[i].p;
		if (u < cum)
			return c[i].id;
	}
	return c[n - 1].id;
}
