/*
 * kernels_mistral_test.c - mistral3's kernels against their CPU twins, outputs
 * poisoned (NaN) before each run:
 * - the query temperature (cuk_attn_temp vs cpu_forward's q · model_attn_temp):
 *   positions either side of each step's start and 0 .. 2^18 - 1 (0 .. 32799
 *   under ORCH_KT_QUICK, the simulated device's default), temperature lengths 1,
 *   16, 64 and Ministral 3's 16384, the rows' other floats untouched;
 * - Ministral 3's RoPE (cuk_rope in normal mode with YaRN's numbers and llama.cpp's
 *   magnitude, model_yarn_attn_factor with the log multiplier) vs cpu_rope_yarn.
 * Exits 77 where no CUDA device exists.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine/cpu/cpu.h"
#include "engine/model/model.h"
#include "kernels.h"
#include "kernels_util.h"
#include "t.h"

#define NPOS 4099u /* positions a run: odd, not a multiple of the block */

/* Token t's position in run @r: run 0 either side of steps, then consecutive positions. */
static uint32_t
pos_of(uint32_t r, uint32_t t, uint32_t len)
{
	if (r == 0) /* either side of the first steps of @len */
		return t % 8 < 4 ? (t / 8) * len + t % 8 : (t / 8 + 1) * len - 1 - t % 4;
	return (r * NPOS + t) % (1u << 18);
}

/*
 * One temperature length over 64 runs (8 quick) of NPOS tokens, a row of n = 130 (of a
 * query) in rows of ld = 200: every float equal to the CPU's q · model_attn_temp. The
 * simulated device's log has CUDA's error (1 ulp of a double), so a factor rounded to
 * float could in principle differ by 1 ulp: none did; the bound is 0 and a miss prints.
 */
static void
temp_len(uint32_t len, float scale, float *q, float *qo, float *dq, uint32_t *hpos, uint32_t *dpos,
         uint64_t *ret_differ)
{
	const uint32_t n = 130, ld = 200, runs = kt_quick ? 8 : 64;
	struct model_hparams hp = {.attn_temp_scale = scale, .attn_temp_floor = len};
	uint64_t differ = 0;

	*ret_differ = UINT64_MAX;
	for (uint32_t r = 0; r < runs; r++) {
		for (uint32_t t = 0; t < NPOS; t++)
			hpos[t] = pos_of(r, t, len);
		fill(q, (uint64_t)NPOS * ld, 1.0f);
		CK(cudaMemcpy(dpos, hpos, NPOS * 4, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(dq, q, (uint64_t)NPOS * ld * 4, cudaMemcpyHostToDevice));
		CK(cuk_attn_temp(dq, ld, n, NPOS, dpos, scale, len, 0));
		CK(cudaMemcpy(qo, dq, (uint64_t)NPOS * ld * 4, cudaMemcpyDeviceToHost));
		for (uint32_t t = 0; t < NPOS; t++) {
			float temp = model_attn_temp(&hp, hpos[t]);
			for (uint32_t i = 0; i < ld; i++) {
				float want = q[t * ld + i] * (i < n ? temp : 1.0f);
				if (memcmp(&want, &qo[t * ld + i], 4) == 0)
					continue;
				if (differ++ < 4)
					printf("  len %u pos %u [%u]: device %.9g, cpu %.9g\n", len,
					       hpos[t], i, (double)qo[t * ld + i], (double)want);
			}
		}
	}
	*ret_differ = differ;
}

static void
test_attn_temp(void)
{
	const uint32_t lens[] = {1, 16, 64, 16384}, ld = 200;
	float *q = malloc((uint64_t)NPOS * ld * 4), *qo = malloc((uint64_t)NPOS * ld * 4);
	float *dq = dev((uint64_t)NPOS * ld * 4);
	uint32_t *hpos = malloc(NPOS * 4), *dpos = dev(NPOS * 4);

	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		float scale = k % 2 ? 0.1f : 0.37f; /* Ministral 3's beta, and another */
		uint64_t differ = 0;
		temp_len(lens[k], scale, q, qo, dq, hpos, dpos, &differ);
		printf("attn_temp len %u scale %g: %llu floats differ from the CPU's (bound 0)\n",
		       lens[k], (double)scale, (unsigned long long)differ);
		T_EQ(differ, 0);
	}
	T_EQ(cuk_attn_temp(dq, ld, 1, 1, dpos, 0.1f, 0, 0), cudaErrorInvalidValue);
	CK(cuk_attn_temp(dq, ld, 1, 0, dpos, 0.1f, 16, 0)); /* no tokens: nothing launched */
	cudaFree(dq), cudaFree(dpos);
	free(q), free(qo), free(hpos);
}

/*
 * Ministral 3 3B's RoPE: heads of 128 (32 query, 8 KV), base 1e6, YaRN by 16 over
 * 16384 with betas 32 / 1 and log multiplier 1 (magnitude 1 / (1 + 0.1 ln 16) before
 * ggml's own factor), normal mode, positions either side of the original context;
 * and the same without the log multiplier (Mistral's own format can write 0). Bound
 * 1e-5 as kernels_gemma_test's RoPE.
 */
static void
test_rope_ministral(void)
{
	const uint32_t T = 6, hd = 128, nh = 32, nkv = 8, ld = (nh + 2 * nkv) * hd;
	uint32_t pos[6] = {0, 1, 16383, 16384, 70000, 262143}, *dpos = dev(sizeof(pos));
	float *q = malloc(T * ld * 4), *qo = malloc(T * ld * 4), *dq = dev(T * ld * 4);
	double *ref = malloc(T * ld * 8);
	const float base = 1e6f;

	CK(cudaMemcpy(dpos, pos, sizeof(pos), cudaMemcpyHostToDevice));
	for (int log_mul = 1; log_mul >= 0; log_mul--) {
		struct model_yarn y;
		model_yarn_params(hd, base, 16.0f, 16384, 32.0f, 1.0f,
		                  model_yarn_attn_factor(16.0f, (float)log_mul, 1.0f), &y);
		struct cuk_yarn cy = {y.freq_scale,
		                      y.ext_factor,
		                      y.attn_factor,
		                      {y.corr_dims[0], y.corr_dims[1]}};
		fill(q, T * ld, 1.0f);
		CK(cudaMemcpy(dq, q, T * ld * 4, cudaMemcpyHostToDevice));
		CK(cuk_rope(dq, ld, T, dpos, nh, nkv, hd, hd, powf(base, -2.0f / (float)hd), NULL,
		            &cy, false, 0));
		CK(cudaMemcpy(qo, dq, T * ld * 4, cudaMemcpyDeviceToHost));
		for (uint32_t t = 0; t < T; t++)
			cpu_rope_yarn(q + t * ld, nh + nkv, hd, hd, pos[t], base, false, &y);
		for (uint32_t i = 0; i < T * ld; i++)
			ref[i] = (double)q[i];
		double e = rel_err(qo, ref, T * ld);
		printf("rope ministral3 (YaRN 16, magnitude %.9g, normal mode) rel err %.2e "
		       "(bound 1e-5)\n",
		       (double)y.attn_factor, e);
		T_TRUE(e <= 1e-5);
	}
	cudaFree(dpos), cudaFree(dq);
	free(q), free(qo), free(ref);
}

int
main(void)
{
	int rc = kt_start();

	if (rc >= 0)
		return rc;
	T_RUN(test_attn_temp);
	T_RUN(test_rope_ministral);
	return t_done();
}
