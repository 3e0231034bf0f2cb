/*
 * sampler_bench.c - the cost of one samp_sample() call at temperature 1 over
 * a 151,936-token vocabulary (Qwen2's size): logits drawn flat (a
 * random-weight model: every token nearly as likely) and peaked (a trained
 * model: a few tokens hold the mass), under OpenAI's defaults (no top-k,
 * top-p or min-p), llama.cpp's (top-k 40, top-p 0.95, min-p 0.05) and
 * top-p 0.9 alone. Also checks that a fixed seed gives the same tokens on
 * every run of this build (prints a digest of them).
 * usage: sampler_bench [N_VOCAB]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"
#include "engine/sampler.h"

/* A standard normal draw (Box-Muller) from a small LCG: the same logits every run. */
static double
normal(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	double u1 = ((double)(*s >> 11) + 1.0) / 9007199254740993.0;
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	double u2 = (double)(*s >> 11) / 9007199254740992.0;
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int
main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)atoi(argv[1]) : 151936;
	float *lg = malloc((size_t)n * sizeof(*lg));
	struct samp_cand *work = malloc((size_t)n * sizeof(*work));
	static const struct {
		const char *name;
		double scale;
	} shapes[] = {{"flat (std 1)", 1.0}, {"peaked (std 4)", 4.0}};
	static const struct {
		const char *name;
		uint32_t top_k;
		float top_p, min_p;
	} cfgs[] = {{"none (OpenAI)", 0, 1.0f, 0.0f},
	            {"k40 p.95 m.05 (llama.cpp)", 40, 0.95f, 0.05f},
	            {"top-p 0.9", 0, 0.9f, 0.0f}};

	if (lg == NULL || work == NULL)
		return 1;
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint64_t st = 42;
		for (uint32_t i = 0; i < n; i++)
			lg[i] = (float)(normal(&st) * shapes[s].scale);
		for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
			struct samp_params p = samp_defaults();
			p.temperature = 1.0f;
			p.top_k = (int32_t)cfgs[c].top_k;
			p.top_p = cfgs[c].top_p;
			p.min_p = cfgs[c].min_p;
			p.seed = 7;
			enum { CALLS = 40 };
			uint64_t digest = 1469598103934665603ull, t0 = orch_mono_ns();
			for (uint64_t k = 0; k < CALLS; k++)
				digest = (digest ^ (uint64_t)(uint32_t)samp_sample(&p, lg, n, NULL,
				                                                   0, k, work)) *
				         1099511628211ull;
			double us = (double)(orch_mono_ns() - t0) / 1e3 / CALLS;
			printf("%-15s %-27s %8.0f us/token  tokens digest %016llx\n",
			       shapes[s].name, cfgs[c].name, us, (unsigned long long)digest);
		}
	}
	free(lg);
	free(work);
	return 0;
}
