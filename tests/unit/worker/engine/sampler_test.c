/*
 * sampler_test - samp_sample() without a full sort gives the token the
 * plain algorithm gives: the candidates sorted by logit (descending, ties
 * by id), top-k, top-p and min-p as prefixes, the draw walking the prefix.
 * The reference below is that algorithm as written before the selection
 * (a qsort a token); vocabularies of 5, 37, 1000 and 20,000 tokens, logits
 * flat, peaked, with ties and with banned (-inf) tokens, every filter alone
 * and together, 300 draws each (the reference sorts once for its 300);
 * and logit_bias and OpenAI's presence and frequency penalties by hand.
 */
#include <math.h>
#include <stdlib.h>

#include "base/rng.h"
#include "engine/sampler.h"
#include "t.h"

static int
by_logit(const void *x, const void *y)
{
	const struct samp_cand *a = x, *b = y;

	if (a->logit != b->logit)
		return a->logit > b->logit ? -1 : 1;
	return (a->id > b->id) - (a->id < b->id);
}

/*
 * The reference: temperature, then the sorted candidates cut by the filters,
 * into @c; how many are left. The draw (reference_draw) is the walk.
 */
static uint32_t
reference(const struct samp_params *p, const float *logits, uint32_t n, struct samp_cand *c)
{
	for (uint32_t i = 0; i < n; i++)
		c[i] = (struct samp_cand){(int32_t)i, logits[i] / p->temperature, 0.0f};
	qsort(c, n, sizeof(*c), by_logit);
	if (p->top_k > 0 && (uint32_t)p->top_k < n)
		n = (uint32_t)p->top_k;
	double sum = 0.0;
	for (uint32_t i = 0; i < n; i++) {
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
	return n;
}

/* The reference's draw @index among the @n candidates reference() left in @c. */
static int32_t
reference_draw(const struct samp_params *p, const struct samp_cand *c, uint32_t n, uint64_t index)
{
	double sum = 0.0;
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

static void
fill(float *lg, uint32_t n, int shape, struct rng *r)
{
	for (uint32_t i = 0; i < n; i++) {
		float x = rng_normalish(r);
		switch (shape) {
		case 0:
			lg[i] = x;
			break; /* flat */
		case 1:
			lg[i] = 6.0f * x;
			break; /* peaked */
		case 2:
			lg[i] = (float)(int)(2.0f * x);
			break; /* many ties */
		default:
			lg[i] = i % 3 == 0 ? -INFINITY : 3.0f * x; /* banned tokens */
		}
	}
}

static void
test_same_tokens(void)
{
	static const uint32_t sizes[] = {5, 37, 1000, 20000};
	static const struct {
		int32_t top_k;
		float top_p, min_p, temp;
	} cfg[] = {{0, 1.0f, 0.0f, 1.0f},  {40, 1.0f, 0.0f, 1.0f},   {0, 0.9f, 0.0f, 1.0f},
	           {0, 1.0f, 0.05f, 1.0f}, {40, 0.95f, 0.05f, 0.8f}, {3, 0.5f, 0.2f, 1.3f},
	           {0, 0.0f, 0.0f, 1.0f},  {1, 1.0f, 0.0f, 1.0f},    {100000, 0.99f, 0.9f, 0.5f}};
	struct rng r;
	uint32_t mismatches = 0, draws = 0;

	rng_seed(&r, 2026);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t n = sizes[s];
		float *lg = malloc(n * sizeof(*lg));
		struct samp_cand *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
		T_TRUE(lg && a && b);
		for (int shape = 0; shape < 4 && lg && a && b; shape++) {
			fill(lg, n, shape, &r);
			for (size_t k = 0; k < sizeof(cfg) / sizeof(cfg[0]); k++) {
				struct samp_params p = samp_defaults();
				p.top_k = cfg[k].top_k;
				p.top_p = cfg[k].top_p;
				p.min_p = cfg[k].min_p;
				p.temperature = cfg[k].temp;
				p.seed = 100 + k;
				uint32_t kept =
				        reference(&p, lg, n, b); /* the sort is the draws' */
				for (uint64_t i = 0; i < 300; i++, draws++)
					mismatches += samp_sample(&p, lg, n, NULL, 0, i, a) !=
					              reference_draw(&p, b, kept, i);
			}
		}
		free(lg);
		free(a);
		free(b);
	}
	T_EQ(draws, 4u * 4u * 9u * 300u);
	T_EQ(mismatches, 0);
}

/* logit_bias (-100 bans, else adds), and OpenAI's penalties over the generated tokens only. */
static void
test_sampler_openai(void)
{
	struct samp_cand work[8];
	float lg[8] = {1, 5, 3, 5, -2, 0, 2, 4};
	struct samp_params p = samp_defaults();
	struct samp_bias ban1[] = {{1, -100}}, lift4[] = {{4, 8}}, ban13[] = {{1, -100}, {3, -150}};
	int32_t h1[] = {1, 1, 1, 3}, h2[] = {1, 3, 3, 3}, h3[] = {9, 1, 1}, h4[] = {1, 3, 3};

	p.temperature = 0;
	p.bias = ban1, p.n_bias = 1;
	T_EQ(samp_sample(&p, lg, 8, NULL, 0, 0, work), 3); /* 1 banned: the other 5 */
	p.bias = lift4;
	T_EQ(samp_sample(&p, lg, 8, NULL, 0, 0, work), 4); /* -2 + 8 */
	p.bias = ban13, p.n_bias = 2;
	T_EQ(samp_sample(&p, lg, 8, NULL, 0, 0, work), 7);
	p.n_bias = 0;
	p.presence_penalty = 2;
	T_EQ(samp_sample(&p, lg, 8, h1, 4, 0, work), 1); /* the prompt's 1s are not counted */
	T_EQ(samp_sample(&p, lg, 8, h1, 4, 1, work), 1); /* generated {3}: 3 falls to 3 */
	T_EQ(samp_sample(&p, lg, 8, h1, 4, 4, work), 7); /* generated {1,1,1,3}: both fall */
	p.presence_penalty = 0;
	p.frequency_penalty = 0.6f;
	T_EQ(samp_sample(&p, lg, 8, h3, 3, 2, work), 3); /* 1: 5 - 2 · 0.6 = 3.8 */
	T_EQ(samp_sample(&p, lg, 8, h2, 4, 3, work), 1); /* 3: 5 - 3 · 0.6 */
	p.presence_penalty = 1;
	p.frequency_penalty = 0.5f;
	T_EQ(samp_sample(&p, lg, 8, h4, 3, 3, work), 7); /* 1: 3.5, 3: 3.0, 7: 4 */
	T_EQ(samp_sample(&p, lg, 8, h4, 3, 3, work), 7); /* the marks were cleared */
}

/* No candidate above -inf (a model whose numbers broke, or every token banned): no token. */
static void
test_sampler_none(void)
{
	struct samp_cand work[8];
	float nan8[8], lg[8] = {1, 5, 3, 5, -2, 0, 2, 4};
	struct samp_params p = samp_defaults();
	struct samp_bias all[8];

	for (int i = 0; i < 8; i++) {
		nan8[i] = i == 3 ? -INFINITY : NAN;
		all[i] = (struct samp_bias){i, -100};
	}
	p.temperature = 0;
	T_EQ(samp_sample(&p, nan8, 8, NULL, 0, 0, work), SAMP_NONE);
	p.temperature = 0.8f;
	T_EQ(samp_sample(&p, nan8, 8, NULL, 0, 0, work), SAMP_NONE);
	p.bias = all, p.n_bias = 8;
	T_EQ(samp_sample(&p, lg, 8, NULL, 0, 0, work), SAMP_NONE);
	p.temperature = 0;
	T_EQ(samp_sample(&p, lg, 8, NULL, 0, 0, work), SAMP_NONE);
	p.n_bias = 7; /* one left: that one */
	T_EQ(samp_sample(&p, lg, 8, NULL, 0, 0, work), 7);
}

int
main(void)
{
	T_RUN(test_same_tokens);
	T_RUN(test_sampler_openai);
	T_RUN(test_sampler_none);
	return t_done();
}
