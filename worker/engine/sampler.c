/*
 * sampler.c - the sampling pipeline and Philox4x32-10.
 *
 * Every step works on the candidates in one order, by logit (descending,
 * ties by id): top-k is a prefix, top-p and min-p are prefixes of what is
 * left, and the draw walks the prefix accumulating probabilities. The order
 * is never sorted out in full (a sort of 151,936 candidates cost 23-27 ms a
 * token on the 2-core VM, as much as the model's step): quickselect finds
 * top-k's prefix, and a weighted quickselect finds where a running sum
 * crosses top-p's mass or the draw, in O(n) expected; partial sums are
 * added in partition order, which can move a crossing only when the draw
 * lands within rounding (~1e-16) of a boundary, as the GPU's parallel
 * sums can. The
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

/* @a comes before @b in the walk's order: a higher logit, or the same and a lower id. */
static inline bool
before(const struct samp_cand *a, const struct samp_cand *b)
{
	return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static inline void
swap(struct samp_cand *a, struct samp_cand *b)
{
	struct samp_cand t = *a;
	*a = *b;
	*b = t;
}

/*
 * Partition c[lo, hi) (hi - lo >= 3) around the median of three: the pivot
 * ends at the returned index m, everything before it in order in [lo, m),
 * the rest in (m, hi); *@mass is the sum of p over [lo, m).
 */
static uint32_t
partition(struct samp_cand *c, uint32_t lo, uint32_t hi, double *mass)
{
	uint32_t mid = lo + (hi - lo) / 2, last = hi - 1;

	if (before(&c[mid], &c[lo]))
		swap(&c[mid], &c[lo]);
	if (before(&c[last], &c[lo]))
		swap(&c[last], &c[lo]);
	if (before(&c[mid], &c[last]))
		swap(&c[mid], &c[last]); /* the median at last */
	uint32_t m = lo;
	double sum = 0.0;
	for (uint32_t i = lo; i < last; i++)
		if (before(&c[i], &c[last])) {
			sum += (double)c[i].p;
			swap(&c[i], &c[m++]);
		}
	swap(&c[m], &c[last]);
	*mass = sum;
	return m;
}

/* Insertion sort of c[lo, hi) into the walk's order (short ranges). */
static void
sort_small(struct samp_cand *c, uint32_t lo, uint32_t hi)
{
	for (uint32_t i = lo + 1; i < hi; i++) {
		struct samp_cand x = c[i];
		uint32_t j = i;
		for (; j > lo && before(&x, &c[j - 1]); j--)
			c[j] = c[j - 1];
		c[j] = x;
	}
}

/* Move the first @k of c[0, n) in the walk's order to c[0, k), in any order. */
static void
select_first(struct samp_cand *c, uint32_t n, uint32_t k)
{
	uint32_t lo = 0, hi = n;
	double unused;

	while (hi - lo > 16) {
		uint32_t m = partition(c, lo, hi, &unused);
		if (m == k || m + 1 == k)
			return;
		if (m > k)
			hi = m;
		else
			lo = m + 1;
	}
	sort_small(c, lo, hi);
}

/* The element last in the walk's order among c[0, n). */
static uint32_t
last_in_order(const struct samp_cand *c, uint32_t n)
{
	uint32_t w = 0;

	for (uint32_t i = 1; i < n; i++)
		if (before(&c[w], &c[i]))
			w = i;
	return w;
}

/*
 * Walking c[0, n) in order and adding p, the first element at which the sum
 * reaches @thr (@strict: exceeds it): its index, with the elements before it
 * in order moved to c[0, index); UINT32_MAX when none does (rounding).
 */
static uint32_t
find_crossing(struct samp_cand *c, uint32_t n, double thr, bool strict)
{
	uint32_t lo = 0, hi = n;
	double acc = 0.0, mass;

	while (hi - lo > 16) {
		uint32_t m = partition(c, lo, hi, &mass);
		if (strict ? thr < acc + mass : acc + mass >= thr) {
			hi = m;
			continue;
		}
		acc += mass + (double)c[m].p;
		if (strict ? thr < acc : acc >= thr)
			return m;
		lo = m + 1;
	}
	sort_small(c, lo, hi);
	for (uint32_t i = lo; i < hi; i++) {
		acc += (double)c[i].p;
		if (strict ? thr < acc : acc >= thr)
			return i;
	}
	return UINT32_MAX;
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

/* Temperature, top-k, top-p, min-p and the draw over the @n candidates @c (taken apart). */
static int32_t
draw(const struct samp_params *p, struct samp_cand *c, uint32_t n, uint64_t index)
{
	uint32_t first = 0;

	for (uint32_t i = 0; i < n; i++) {
		c[i].logit /= p->temperature;
		if (before(&c[i], &c[first]))
			first = i;
	}
	float top = c[first].logit;
	if (top == -INFINITY)
		return SAMP_NONE;
	if (p->top_k > 0 && (uint32_t)p->top_k < n) {
		select_first(c, n, (uint32_t)p->top_k);
		n = (uint32_t)p->top_k;
	}
	double sum = 0.0;
	for (uint32_t i = 0; i < n; i++) {
		/* exp in double, rounded once: what the GPU sampler computes too */
		c[i].p = (float)exp((double)(c[i].logit - top));
		sum += (double)c[i].p;
	}
	if (p->top_p < 1.0f) { /* the shortest prefix (at least one) whose mass reaches top_p */
		uint32_t k = find_crossing(c, n, (double)p->top_p * sum, false);
		n = k == UINT32_MAX ? n : k + 1;
	}
	if (p->min_p > 0.0f) { /* a prefix too: p falls along the order; the first has p 1 */
		uint32_t k = 0;
		for (uint32_t i = 0; i < n; i++)
			if (c[i].p >= p->min_p || c[i].logit == top)
				swap(&c[i], &c[k++]);
		n = k;
	}
	sum = 0.0;
	for (uint32_t i = 0; i < n; i++)
		sum += (double)c[i].p;
	uint32_t k = find_crossing(c, n, samp_uniform(p->seed, index) * sum, true);
	return c[k == UINT32_MAX ? last_in_order(c, n) : k].id;
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
		return c[best].logit == -INFINITY ? SAMP_NONE : c[best].id;
	}
	return draw(p, c, n, index);
}
