/*
 * model_mistral3_test.c - mistral3 on cuda:0 end to end, through the scheduler
 * (paged, blocks of 16, context 512, chunk 64), against the CPU backend and
 * llama.cpp:
 * - the shipped tiny files (tests/data/models/SOURCE-mistral3.md: 3 layers, F32
 *   as Ministral 3 with YaRN by 4 over an original context of 16 and the query
 *   temperature 0.1 stepping every 16 positions; Q8_0 as Mistral Small 3.x), their
 *   three golden prompts (5, 188 and 19 tokens, each past 16 positions): the
 *   greedy tokens equal llama.cpp's (up to a near-tie) and the CPU's, the logits
 *   within the CPU's own bounds of the goldens and within a bound of the CPU's at
 *   every step; the device sampler's tokens are the host sampler's; the Q8_0 file
 *   both with prompts in integer-dot chunks of 8 and through the prefill GEMMs;
 * - orch-synth's tiny-mistral3 (Q4_K_M, 256 wide, YaRN by 4 over 64, temperature
 *   0.1 every 64 positions) on a prompt of 150 tokens: integer dots and float
 *   mat-vecs against the CPU, tokens equal with and without CUDA graphs.
 * Exits 77 where no CUDA device exists.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>

#include "engine/backend.h"
#include "engine/engine.h"
#include "engine/model/model.h"
#include "model_util.h"
#include "t.h"

#define STEPS 16u

/* max |a - b| / max |b| of @n logits against a golden JSON array. */
static double
rel_json(const float *a, const cJSON *b, uint32_t n)
{
	double scale = 0, diff = 0;
	const cJSON *it = b ? b->child : NULL;

	for (uint32_t i = 0; i < n && it != NULL; i++, it = it->next) {
		if (!isfinite(a[i]))
			return (double)INFINITY;
		double w = it->valuedouble, d = fabs(w - (double)a[i]);
		scale = fabs(w) > scale ? fabs(w) : scale;
		diff = d > diff ? d : diff;
	}
	return diff / scale;
}

/*
 * One golden case on @gpu and @cpu: *@ret_gold the device's logits against
 * llama.cpp's at steps 0 and 1 (the goldens' full rows; the others have the top
 * 5), *@ret_cpu against the CPU's over
 * the steps whose tokens agreed. Tokens: the device's equal llama.cpp's up to
 * the first near-tie (a top-1 margin within twice @gold_bound of step 0's max
 * |logit|) and the CPU's (or differ at a near-tie of the CPU's), and the
 * device sampler's equal the host-sampled ones.
 */
static void
golden_case(struct eng *gpu, struct eng *cpu, const cJSON *c, double gold_bound, double cpu_bound,
            double *ret_gold, double *ret_cpu)
{
	const cJSON *pt = cJSON_GetObjectItem(c, "prompt_tokens");
	const cJSON *want = cJSON_GetObjectItem(c, "generated_tokens");
	const cJSON *steps = cJSON_GetObjectItem(c, "steps");
	uint32_t np = (uint32_t)cJSON_GetArraySize(pt), V = cpu->m->hp.n_vocab, upto = STEPS;
	int32_t *prompt = malloc(np * 4);
	float *lg = malloc(STEPS * V * 4), *lc = malloc(STEPS * V * 4);
	struct out *og = calloc(1, sizeof(*og)), *oc = calloc(1, sizeof(*oc)),
	           *od = calloc(1, sizeof(*od));

	for (uint32_t i = 0; i < np; i++)
		prompt[i] = cJSON_GetArrayItem(pt, (int)i)->valueint;
	T_OK(generate(gpu, prompt, np, STEPS, lg, STEPS, og));
	T_OK(generate(cpu, prompt, np, STEPS, lc, STEPS, oc));
	T_OK(generate(gpu, prompt, np, STEPS, NULL, 0, od));
	T_TRUE(og->n == STEPS && oc->n == STEPS && od->n == STEPS);
	if (memcmp(od->ids, og->ids, STEPS * 4) != 0)
		T_FAIL_("%u-token prompt: the device sampler's tokens differ from the host's", np);
	double scale = 0; /* max |logit| of step 0: the margins' scale */
	const cJSON *l0 = cJSON_GetObjectItem(cJSON_GetArrayItem(steps, 0), "logits"), *it;
	cJSON_ArrayForEach(it, l0) scale =
	        fabs(it->valuedouble) > scale ? fabs(it->valuedouble) : scale;
	for (uint32_t s = 0; s < STEPS && upto == STEPS; s++) {
		const cJSON *st = cJSON_GetArrayItem(steps, (int)s);
		const cJSON *top5 = cJSON_GetObjectItem(st, "top5");
		double m = (cJSON_GetArrayItem(cJSON_GetArrayItem(top5, 0), 1)->valuedouble -
		            cJSON_GetArrayItem(cJSON_GetArrayItem(top5, 1), 1)->valuedouble) /
		           scale;
		if (m <= 2 * gold_bound)
			upto = s;
		if (s < 2) { /* the goldens' full logits: steps 0 and 1 */
			double d = rel_json(lg + (uint64_t)s * V, cJSON_GetObjectItem(st, "logits"),
			                    V);
			*ret_gold = d > *ret_gold ? d : *ret_gold;
		}
		if (s < upto && og->ids[s] != cJSON_GetArrayItem(want, (int)s)->valueint) {
			T_FAIL_("%u-token prompt on cuda:0: token %u is %d, llama.cpp has %d", np,
			        s, og->ids[s], cJSON_GetArrayItem(want, (int)s)->valueint);
			break;
		}
	}
	uint32_t same = 0;
	while (same < STEPS && og->ids[same] == oc->ids[same])
		same++;
	for (uint32_t s = 0; s < STEPS && s <= same; s++) {
		double d = max_rel(lg + (uint64_t)s * V, lc + (uint64_t)s * V, V);
		*ret_cpu = d > *ret_cpu ? d : *ret_cpu;
	}
	if (same < STEPS && top_margin(lc + (uint64_t)same * V, V, NULL) > 2 * cpu_bound)
		T_FAIL_("%u-token prompt: the device's token %u is %d, the CPU's %d (not a near-tie)",
		        np, same, og->ids[same], oc->ids[same]);
	printf("  %3u-token prompt: %u of %u tokens compared with llama.cpp, %u equal the CPU's\n",
	       np, upto, STEPS, same);
	free(prompt), free(lg), free(lc), free(og), free(oc), free(od);
}

/*
 * A shipped file on cuda:0, prompts fed @chunk tokens a step, against its goldens and
 * the CPU (bounds: test_shipped).
 */
static void
shipped(const char *model, const char *gold, uint32_t chunk, double gold_bound, double cpu_bound)
{
	size_t n;
	char *g = t_read_file(t_repo(gold), &n);
	cJSON *root = g ? cJSON_ParseWithLength(g, n) : NULL;
	struct eng gpu, cpu;
	struct orch_errinfo err = {0};
	struct eng_opts o = {.chunk = chunk};
	const cJSON *c;
	double wg = 0, wc = 0;

	free(g);
	T_TRUE(root != NULL);
	T_OK(eng_open_opts(&gpu, &be_cuda_ops, t_repo(model), 1, true, &o, &err));
	T_OK(eng_open(&cpu, &be_cpu_ops, t_repo(model), 1, false, &err));
	printf("%s, prompts %u tokens a step:\n", model, chunk);
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases"))
	        golden_case(&gpu, &cpu, c, gold_bound, cpu_bound, &wg, &wc);
	printf("%s on cuda:0 (chunk %u): logits vs llama.cpp max %.2e (bound %.1e), vs the CPU "
	       "max %.2e (bound %.1e)\n",
	       model, chunk, wg, gold_bound, wc, cpu_bound);
	T_TRUE(wg <= gold_bound);
	T_TRUE(wc <= cpu_bound);
	eng_close(&gpu), eng_close(&cpu);
	cJSON_Delete(root);
}

/*
 * Bounds. F32, prompts in chunks of 64 (prefill GEMMs, SGEMM without TF32): the device
 * differs from the CPU by the order of float sums, which can move a value across an F16
 * rounding boundary where both round (K, V and the softmax weights of the F16 cache):
 * the kind of difference between the CPU and llama.cpp, so the bound is mistral3_test's,
 * 1e-3. Q8_0 in chunks of 8 (CU_MMV_MAX_TOKENS: every product an integer dot over
 * activations quantized as the CPU quantizes them): a sum-order difference at a Q8
 * rounding boundary flips a code, as between the CPU and llama.cpp (3.4e-2 there): 5e-2.
 */
static void
test_shipped(void)
{
	shipped("models/mistral3-tiny-f32.gguf", "models/golden-mistral3-tiny-f32.json", 64, 1e-3,
	        1e-3);
	shipped("models/mistral3-tiny-q8_0.gguf", "models/golden-mistral3-tiny-q8_0.json", 8, 5e-2,
	        5e-2);
}

/*
 * The Q8_0 file with prompts in chunks of 64: a prompt past 8 tokens runs through F16
 * GEMMs, whose activations are rounded to F16, not quantized to Q8_0 as on the CPU and in
 * llama.cpp (docs/DECISIONS.md, issue 13). This file is sensitive to that: llama.cpp's
 * own logits for its weights dequantized into an F32 file (not shipped) are 4.2e-2 to
 * 1.05e-1 from its Q8_0 goldens at steps 0 and 1. Bound 1.5e-1 (that spread and half
 * again): a check of the path, not of its precision, which the chunks of 8 above hold
 * to 5e-2; NEOX RoPE is 0.81 away (mistral3_test).
 */
static void
test_q8_gemm(void)
{
	shipped("models/mistral3-tiny-q8_0.gguf", "models/golden-mistral3-tiny-q8_0.json", 64,
	        1.5e-1, 1.5e-1);
}

/* @g's STEPS greedy steps of @prompt against the CPU's (@lc, @oc), as gpu_model_test's vs_cpu. */
static bool
vs_cpu(struct eng *g, const char *what, const int32_t *prompt, uint32_t np, const float *lc,
       const struct out *oc, uint32_t V, double bound)
{
	float *lg = malloc((uint64_t)STEPS * V * 4);
	struct out *og = calloc(1, sizeof(*og));
	double worst = 0;
	uint32_t same = 0;
	bool ok = generate(g, prompt, np, STEPS, lg, STEPS, og) == ORCH_OK;

	while (ok && same < STEPS && og->ids[same] == oc->ids[same])
		same++;
	for (uint32_t s = 0; ok && s < STEPS && s <= same; s++) {
		double d = max_rel(lg + (uint64_t)s * V, lc + (uint64_t)s * V, V);
		worst = d > worst ? d : worst;
	}
	printf("%s: GPU vs CPU logits over %u steps, max rel %.2e (bound %.0e)\n", what,
	       same < STEPS ? same + 1 : STEPS, worst, bound);
	if (ok && same < STEPS) {
		double m = top_margin(lc + (uint64_t)same * V, V, NULL);
		printf("%s: tokens differ from step %u, the CPU's top-1 margin %.2e\n", what, same,
		       m);
		ok = m <= 2 * bound;
	}
	free(lg), free(og);
	return ok && worst <= bound;
}

/*
 * tiny-mistral3 Q4_K_M on a 150-token prompt (YaRN's original context and the
 * temperature's step are 64 positions), integer dots and float mat-vecs. Bound 5e-2
 * for both, test_shipped's Q8_0 bound on the same grounds: codes flipped at Q8_K
 * rounding boundaries (integer dots), activations not rounded as the CPU rounds them
 * (float mat-vecs); gpu_model_test's dense models hold 2.5e-2 and 4e-2.
 */
static void
test_synth(void)
{
	char path[256];
	int32_t prompt[150];
	struct eng cpu, gpu, flt, nog;
	struct orch_errinfo err = {0};

	prompt[0] = 1;
	for (int i = 1; i < 150; i++)
		prompt[i] = 300 + (i * 7) % 200;
	T_OK(synth_tmp("tiny-mistral3", "Q4_K_M", 0, "mistral3", path, sizeof(path)));
	T_OK(eng_open(&cpu, &be_cpu_ops, path, 1, false, &err));
	T_OK(eng_open(&gpu, &be_cuda_ops, path, 1, true, &err));
	setenv("ORCH_CUDA_INT_DOTS", "0", 1);
	T_OK(eng_open(&flt, &be_cuda_ops, path, 1, true, &err));
	unsetenv("ORCH_CUDA_INT_DOTS");
	T_OK(eng_open(&nog, &be_cuda_ops, path, 1, false, &err));
	T_TRUE(cpu.m->hp.attn_temp_scale > 0 && cpu.m->hp.attn_temp_floor < 150 &&
	       cpu.m->hp.yarn_factor > 0);
	uint32_t V = cpu.m->hp.n_vocab;
	float *lc = malloc((uint64_t)STEPS * V * 4);
	struct out *oc = calloc(1, sizeof(*oc)), *o2 = calloc(1, sizeof(*o2)),
	           *o3 = calloc(1, sizeof(*o3));
	T_OK(generate(&cpu, prompt, 150, STEPS, lc, STEPS, oc));
	if (!vs_cpu(&gpu, "tiny-mistral3 Q4_K_M, integer dots", prompt, 150, lc, oc, V, 5e-2))
		T_FAIL_("tiny-mistral3, integer dots");
	if (!vs_cpu(&flt, "tiny-mistral3 Q4_K_M, float mat-vecs", prompt, 150, lc, oc, V, 5e-2))
		T_FAIL_("tiny-mistral3, float mat-vecs");
	T_OK(generate(&gpu, prompt, 150, STEPS, NULL, 0, o2));
	T_OK(generate(&nog, prompt, 150, STEPS, NULL, 0, o3));
	if (o2->n != STEPS || o3->n != o2->n || memcmp(o3->ids, o2->ids, o2->n * 4) != 0)
		T_FAIL_("tiny-mistral3: tokens differ with and without CUDA graphs");
	eng_close(&cpu), eng_close(&gpu), eng_close(&flt), eng_close(&nog);
	free(lc), free(oc), free(o2), free(o3);
	unlink(path);
}

int
main(void)
{
	int count = 0;

	if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
		T_SKIP("no CUDA device");
	T_RUN(test_shipped);
	T_RUN(test_q8_gemm);
	T_RUN(test_synth);
	return t_done();
}
