/*
 * kernels_gemma_test.c - gemma3's kernels against their CPU twins, outputs
 * poisoned (NaN) before each run:
 * - GeGLU (cuk_geglu vs cpu_geglu, both with model_gelu_table): every F16
 *   value between -12 and 12 and random floats, bit for bit;
 * - the embedding and query scale (cuk_scale), exact, the row's rest untouched;
 * - the logit soft-cap (cuk_softcap) vs cpu_forward's expression;
 * - the post-norms: cuk_rmsnorm in place, as cpu_rmsnorm runs in place;
 * - a global layer's linear RoPE (cuk_rope with YaRN's numbers, no ramp) vs
 *   cpu_rope_yarn as rope_store calls it;
 * - attention with the queries scaled before and the scores by 1
 *   (cuk_attention's scale vs cpu_attn.scale), over a sliding window's ring.
 * Exits 77 where no CUDA device exists.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine/cpu/cpu.h"
#include "engine/model/model.h"
#include "gguf/fp16.h"
#include "kernels.h"
#include "kernels_util.h"
#include "t.h"

/*
 * GeGLU on [gate | up] rows (ld = 2n): the gates every finite F16 value of
 * magnitude below 12 (both sides of the ±10 cut included), ±10 exactly, then
 * random floats; bit for bit, the table being the CPU's. (GELU computed on the
 * device instead, tanhf and all, differed in 1,574 of these 40,040, by up to
 * several F16 ulps where 1 + tanh cancels: see elementwise.cu.)
 */
static void
test_geglu(void)
{
	const uint32_t n = 1001, T = 40, ld = 2 * n;
	uint64_t N = (uint64_t)n * T, k = 0;
	float *g = malloc(N * 2 * 4), *go = malloc(N * 2 * 4), *tab = malloc(65536 * 4);
	float *dg = dev(N * 2 * 4), *dtab = dev(65536 * 4);
	uint64_t differ = 0;

	fill(g, N * 2, 1.0f);
	for (uint32_t h = 0; h < 65536 && k < N; h++) {
		float v = fp16_to_f32((uint16_t)h);
		if (isfinite(v) && fabsf(v) < 12.0f)
			g[(k / n) * ld + k % n] = v, k++;
	}
	g[(k / n) * ld + k % n] = -10.0f, k++;
	g[(k / n) * ld + k % n] = 10.0f, k++;
	for (; k < N; k++)
		g[(k / n) * ld + k % n] = rng_normalish(&kt_rng) * 4.0f;
	CK(cudaMemcpy(dg, g, N * 2 * 4, cudaMemcpyHostToDevice));
	float *g0 = malloc(N * 2 * 4);
	memcpy(g0, g, N * 2 * 4);
	model_gelu_table(tab);
	CK(cudaMemcpy(dtab, tab, 65536 * 4, cudaMemcpyHostToDevice));
	CK(cuk_geglu(dg, dg + n, ld, n, T, dtab, 0));
	CK(cudaMemcpy(go, dg, N * 2 * 4, cudaMemcpyDeviceToHost));
	for (uint32_t t = 0; t < T; t++)
		cpu_geglu(g + (uint64_t)t * ld, g + (uint64_t)t * ld + n, n, tab);
	for (uint64_t i = 0; i < N; i++) {
		float a = go[(i / n) * ld + i % n], b = g[(i / n) * ld + i % n];
		if (memcmp(&a, &b, 4) == 0)
			continue;
		if (differ++ < 8)
			printf("  gate %.9g up %.9g: device %.9g, cpu %.9g\n",
			       (double)g0[(i / n) * ld + i % n],
			       (double)g0[(i / n) * ld + n + i % n], (double)a, (double)b);
	}
	printf("geglu: %llu of %llu differ from cpu_geglu's bits (bound 0)\n",
	       (unsigned long long)differ, (unsigned long long)N);
	T_EQ(differ, 0);
	if (memcmp(go + n, g + n, n * 4ull) != 0) /* up untouched */
		T_FAIL_("geglu wrote into the up half");
	cudaFree(dg), cudaFree(dtab);
	free(g), free(g0), free(go), free(tab);
}

/*
 * cuk_scale on n of each row of ld (gemma3-1b's 1152 wide embedding times √1152; the
 * queries of 4 heads of 256 in a row of 1536), exact; cuk_softcap with a cap of 30 on
 * logits up to ±150 (tanhf's last bit: bound 1e-6, relative).
 */
static void
test_scale_softcap(void)
{
	const uint32_t T = 5, n = 1024, ld = 1536;
	float *x = malloc(T * ld * 4), *xo = malloc(T * ld * 4), s = sqrtf(1152.0f);
	float *dx = dev(T * ld * 4);
	double *ref = malloc(T * ld * 8);

	fill(x, T * ld, 2.0f);
	CK(cudaMemcpy(dx, x, T * ld * 4, cudaMemcpyHostToDevice));
	CK(cuk_scale(dx, ld, n, T, s, 0));
	CK(cudaMemcpy(xo, dx, T * ld * 4, cudaMemcpyDeviceToHost));
	for (uint32_t t = 0; t < T; t++)
		for (uint32_t i = 0; i < n; i++)
			x[t * ld + i] *= s;
	if (memcmp(xo, x, T * ld * 4) != 0)
		T_FAIL_("cuk_scale differs from x · s (or wrote past n of a row)");
	printf("scale: exact, the rows' other %u floats untouched\n", ld - n);

	const float cap = 30.0f;
	fill(x, T * ld, 50.0f);
	CK(cudaMemcpy(dx, x, T * ld * 4, cudaMemcpyHostToDevice));
	CK(cuk_softcap(dx, (uint64_t)T * ld, cap, 0));
	CK(cudaMemcpy(xo, dx, T * ld * 4, cudaMemcpyDeviceToHost));
	uint32_t same = 0;
	for (uint32_t i = 0; i < T * ld; i++) {
		float c = tanhf(x[i] * (1.0f / cap)) * cap;
		ref[i] = c;
		same += memcmp(&c, &xo[i], 4) == 0;
	}
	double e = rel_err(xo, ref, T * ld);
	printf("softcap: rel err %.2e (bound 1e-6), %u of %u bit for bit\n", e, same, T * ld);
	T_TRUE(e <= 1e-6);
	T_EQ(cuk_softcap(dx, 1, 0.0f, 0), cudaErrorInvalidValue);
	cudaFree(dx);
	free(x), free(xo), free(ref);
}

/* The post-norms: cuk_rmsnorm with out = x, as cpu_rmsnorm in place (bound 1e-6 as for RMSNorm). */
static void
test_post_norm(void)
{
	const uint32_t T = 3, n = 1152;
	float *x = malloc(T * n * 4), *xo = malloc(T * n * 4), *w = malloc(n * 4);
	float *dx = dev(T * n * 4), *dw = dev(n * 4);
	double *ref = malloc(T * n * 8);

	fill(x, T * n, 3.0f);
	fill(w, n, 1.0f);
	CK(cudaMemcpy(dx, x, T * n * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dw, w, n * 4, cudaMemcpyHostToDevice));
	CK(cuk_rmsnorm(dx, NULL, dw, n, 1e-6f, T, NULL, dx, 0));
	CK(cudaMemcpy(xo, dx, T * n * 4, cudaMemcpyDeviceToHost));
	for (uint32_t t = 0; t < T; t++)
		cpu_rmsnorm(x + t * n, w, n, 1e-6f, x + t * n);
	for (uint32_t i = 0; i < T * n; i++)
		ref[i] = x[i];
	double e = rel_err(xo, ref, T * n);
	printf("post-norm (rmsnorm in place) rel err %.2e (bound 1e-6)\n", e);
	T_TRUE(e <= 1e-6);
	cudaFree(dx), cudaFree(dw);
	free(x), free(xo), free(w), free(ref);
}

/*
 * A global layer's RoPE in gemma3-12b (base 1e6, linear scaling by 8, NEOX, heads of
 * 256) and a local layer's (base 1e4, unscaled): bound 1e-5 as for RoPE.
 */
static void
test_rope_linear(void)
{
	const uint32_t T = 5, hd = 256, nh = 4, nkv = 2, ld = (nh + 2 * nkv) * hd;
	uint32_t pos[5] = {0, 1, 17, 2047, 30000}, *dpos = dev(sizeof(pos));
	float *q = malloc(T * ld * 4), *qo = malloc(T * ld * 4), *dq = dev(T * ld * 4);
	double *ref = malloc(T * ld * 8);
	struct model_yarn lin = {.freq_scale = 1.0f / 8.0f, .attn_factor = 1.0f};
	struct cuk_yarn gl = {lin.freq_scale, 0.0f, 1.0f, {0.0f, 0.0f}};

	CK(cudaMemcpy(dpos, pos, sizeof(pos), cudaMemcpyHostToDevice));
	for (int global = 1; global >= 0; global--) {
		float base = global ? 1e6f : 1e4f;
		fill(q, T * ld, 1.0f);
		CK(cudaMemcpy(dq, q, T * ld * 4, cudaMemcpyHostToDevice));
		CK(cuk_rope(dq, ld, T, dpos, nh, nkv, hd, hd, powf(base, -2.0f / (float)hd), NULL,
		            global ? &gl : NULL, true, 0));
		CK(cudaMemcpy(qo, dq, T * ld * 4, cudaMemcpyDeviceToHost));
		for (uint32_t t = 0; t < T; t++)
			if (global)
				cpu_rope_yarn(q + t * ld, nh + nkv, hd, hd, pos[t], base, true,
				              &lin);
			else
				cpu_rope(q + t * ld, nh + nkv, hd, hd, pos[t], base, true, NULL);
		for (uint32_t i = 0; i < T * ld; i++)
			ref[i] = q[i];
		double e = rel_err(qo, ref, T * ld);
		printf("rope %s rel err %.2e (bound 1e-5)\n",
		       global ? "global (linear 1/8, base 1e6)" : "local (base 1e4)", e);
		T_TRUE(e <= 1e-5);
	}
	cudaFree(dpos), cudaFree(dq);
	free(q), free(qo), free(ref);
}

/*
 * Attention as gemma3 runs it: queries already times 1/√d (here 1/√256 and, as
 * the 27B, 1/√168), scores by 1; 4 heads of 256 over 1 KV head, an F16 and an
 * F32 cache, a window of 16 as a ring of 16 + 8 cells, 8 tokens a step over 61
 * positions, every token against cpu_attn_head with .scale 1. Bounds: F32, 1e-5
 * as kernels_test's (the order of float sums). F16: a softmax weight that moves
 * by an ulp can round to the neighbouring F16 value, as in kernels_test; over
 * only 16 positions one such weight moves a token's output by up to 2^-11 of it
 * (1.8e-4 seen), where kernels_test's hundreds of positions average it to 1e-4:
 * bound 1e-3, two flips.
 */
static void
test_attention_scale(void)
{
	const uint32_t d = 256, nh = 4, nkv = 1, P = 61, W = 16, C = 8, cells = W + C;
	const uint32_t ld = (nh + 2 * nkv) * d, kvd = nkv * d;
	float *qkv = malloc(P * ld * 4), *out = malloc(P * nh * d * 4), sc[64], o[256];
	float *dqkv = dev(P * ld * 4), *dout = dev(P * nh * d * 4);
	float *part = dev(cuk_attention_part_floats(C, nh, d, 1) * 4);
	void *kb = dev((uint64_t)cells * kvd * 4), *vb = dev((uint64_t)cells * kvd * 4);
	void **tab = dev(2 * sizeof(void *)), *ptrs[2] = {kb, vb};
	uint32_t *slot = dev(P * 4), *pos = dev(P * 4), hp[61];
	uint16_t *kc = malloc(P * kvd * 4), *vc = malloc(P * kvd * 4);
	double *ref = malloc(nh * d * 8);

	for (uint32_t i = 0; i < P; i++)
		hp[i] = i;
	CK(cudaMemcpy(tab, ptrs, sizeof(ptrs), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(pos, hp, P * 4, cudaMemcpyHostToDevice));
	CK(cudaMemset(slot, 0, P * 4));
	struct cuk_kv kv = {.k_base = (void *const *)tab,
	                    .v_base = (void *const *)tab + 1,
	                    .cells = cells,
	                    .kv_dim = kvd,
	                    .window = W,
	                    .f16 = true};
	for (int v = 0; v < 4; v++) {
		float qs = 1.0f / sqrtf(v & 1 ? 168.0f : 256.0f);
		kv.f16 = !(v & 2);
		double worst = 0;
		fill(qkv, P * ld, 1.0f);
		for (uint32_t p = 0; p < P; p++)
			for (uint32_t i = 0; i < nh * d; i++)
				qkv[p * ld + i] *= qs;
		CK(cudaMemcpy(dqkv, qkv, P * ld * 4, cudaMemcpyHostToDevice));
		for (uint32_t t0 = 0; t0 < P; t0 += C) {
			uint32_t n = P - t0 < C ? P - t0 : C;
			CK(cuk_kv_append(&kv, dqkv + t0 * ld, ld, nh * d, n, slot, pos + t0, 0));
			CK(cuk_attention(&kv, dqkv + t0 * ld, ld, n, slot, pos + t0, nh, nkv, d, 1,
			                 NULL, 1.0f, part, dout + t0 * nh * d, nh * d, 0));
		}
		CK(cudaMemcpy(out, dout, P * nh * d * 4, cudaMemcpyDeviceToHost));
		for (uint32_t p = 0; p < P; p++)
			for (uint32_t i = 0; i < kvd; i++) {
				float k = qkv[p * ld + nh * d + i],
				      vv = qkv[p * ld + (nh + nkv) * d + i];
				if (kv.f16) {
					kc[p * kvd + i] = fp16_from_f32(k);
					vc[p * kvd + i] = fp16_from_f32(vv);
				} else {
					memcpy((float *)(void *)kc + p * kvd + i, &k, 4);
					memcpy((float *)(void *)vc + p * kvd + i, &vv, 4);
				}
			}
		for (uint32_t t = 0; t < P; t++) {
			uint32_t first = t + 1 > W ? t + 1 - W : 0;
			for (uint32_t h = 0; h < nh; h++) {
				size_t off = (size_t)first * kvd * (kv.f16 ? 2 : 4);
				struct cpu_attn a = {.k = (uint8_t *)kc + off,
				                     .v = (uint8_t *)vc + off,
				                     .stride = kvd,
				                     .d = d,
				                     .f16 = kv.f16,
				                     .scale = 1.0f};
				cpu_attn_head(&a, qkv + t * ld + h * d, t + 1 - first, sc, o);
				for (uint32_t i = 0; i < d; i++)
					ref[h * d + i] = o[i];
			}
			double e = rel_err(out + t * nh * d, ref, nh * d);
			worst = !(e <= worst) ? e : worst;
		}
		double bound = kv.f16 ? 1e-3 : 1e-5;
		printf("attention, queries times 1/sqrt(%s), scores by 1, %s cache, window 16 "
		       "(ring): rel err %.2e (bound %.0e)\n",
		       v & 1 ? "168" : "256", kv.f16 ? "F16" : "F32", worst, bound);
		T_TRUE(worst <= bound);
	}
	cudaFree(dqkv), cudaFree(dout), cudaFree(part), cudaFree(kb), cudaFree(vb), cudaFree(tab),
	        cudaFree(slot), cudaFree(pos);
	free(qkv), free(out), free(kc), free(vc), free(ref);
}

int
main(void)
{
	int rc = kt_start();

	if (rc >= 0)
		return rc;
	T_RUN(test_geglu);
	T_RUN(test_scale_softcap);
	T_RUN(test_post_norm);
	T_RUN(test_rope_linear);
	T_RUN(test_attention_scale);
	return t_done();
}
