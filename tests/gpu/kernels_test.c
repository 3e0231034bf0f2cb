/*
 * kernels_test.c - every CUDA kernel against its CPU twin on fresh random
 * inputs of several shapes (odd sizes and the real model shapes), outputs
 * poisoned (NaN) before each run, NaN never passing:
 * - dequantization and embedding: bit-identical to dequant_row() for all 14 types;
 * - mat-vec: within fp32 rounding of a double reference, and bit-identical
 *   for a row whatever the batch;
 * - RMSNorm (with the fused residual), RoPE (normal, NEOX, factors), SwiGLU;
 * - KV append + attention (F16 and F32 caches, GQA, several KV splits) vs cpu_attn_head;
 * - sampling: the same token as samp_sample() over 10,000 draws per filter.
 * Exits 77 where no CUDA device exists.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "base/rng.h"
#include "engine/cpu/cpu.h"
#include "engine/sampler.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "gguf/quant.h"
#include "kernels.h"
#include "t.h"

static struct rng r;

#define CK(call) T_TRUE((call) == cudaSuccess)

static void *
dev(size_t bytes)
{
	void *p = NULL;

	if (cudaMalloc(&p, bytes) != cudaSuccess)
		return NULL;
	cudaMemset(p, 0xff, bytes); /* NaN for floats: unwritten outputs show */
	return p;
}

static void
fill(float *x, size_t n, float scale)
{
	for (size_t i = 0; i < n; i++)
		x[i] = rng_normalish(&r) * scale;
}

/* ‖a − b‖ / ‖b‖, NaN when any element of a is not finite. */
static double
rel_err(const float *a, const double *b, size_t n)
{
	double num = 0, den = 0;

	for (size_t i = 0; i < n; i++) {
		if (!isfinite(a[i]))
			return NAN;
		num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		den += b[i] * b[i];
	}
	return sqrt(num / (den > 0 ? den : 1));
}

static const uint32_t types[] = {GGML_TYPE_F32,   GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0,
                                 GGML_TYPE_Q4_1,  GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0,
                                 GGML_TYPE_MXFP4, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,
                                 GGML_TYPE_Q5_K,  GGML_TYPE_Q6_K};

/* A random @rows × @ne0 matrix of @type on the device, and its exact dequantized values. */
static void *
make_mat(uint32_t type, uint32_t rows, uint32_t ne0, struct cuk_mat *w, float *deq)
{
	uint64_t rb = 0;
	float *x = malloc(ne0 * sizeof(float));

	ggml_row_bytes(type, ne0, &rb);
	uint8_t *q = malloc(rb * rows);
	void *d = dev(rb * rows);
	for (uint32_t i = 0; i < rows; i++) {
		fill(x, ne0, 0.5f);
		quant_row(type, x, q + i * rb, ne0);
		dequant_row(type, q + i * rb, deq + (uint64_t)i * ne0, ne0);
	}
	cudaMemcpy(d, q, rb * rows, cudaMemcpyHostToDevice);
	*w = (struct cuk_mat){d, type, ne0, rows, rb};
	free(x);
	free(q);
	return d;
}

static void
test_dequant_mmv(void)
{
	static const uint32_t shapes[][2] = {{7, 256}, {33, 896}, {5, 4864}, {3, 3072}};

	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		uint32_t type = types[ti];
		const struct ggml_type_info *inf = ggml_type_get(type);
		double worst = 0;
		for (size_t si = 0; si < 5; si++) {
			uint32_t rows = si < 4 ? shapes[si][0] : 9;
			uint32_t ne0 = si < 4 ? shapes[si][1] : (inf->block_size == 1 ? 173 : 0);
			if (ne0 == 0 || ne0 % inf->block_size != 0)
				continue;
			struct cuk_mat w;
			float *deq = malloc((uint64_t)rows * ne0 * 4),
			      *out = malloc((uint64_t)rows * ne0 * 4);
			void *d = make_mat(type, rows, ne0, &w, deq);
			float *dout = dev((uint64_t)rows * ne0 * 4);
			CK(cuk_dequant(&w, 0, rows, dout, ne0, false, 0));
			CK(cudaMemcpy(out, dout, (uint64_t)rows * ne0 * 4, cudaMemcpyDeviceToHost));
			if (memcmp(out, deq, (uint64_t)rows * ne0 * 4) != 0)
				T_FAIL_("%s %ux%u: dequantized values differ from dequant_row",
				        inf->name, rows, ne0);
			/* the embedding kernel reads the same rows by token id */
			int32_t tok[3] = {(int32_t)rows - 1, 0, (int32_t)(rows / 2)},
			        *dtok = dev(12);
			CK(cudaMemcpy(dtok, tok, 12, cudaMemcpyHostToDevice));
			CK(cudaMemset(dout, 0xff, 3ull * ne0 * 4));
			CK(cuk_embed(&w, dtok, 3, dout, 0));
			CK(cudaMemcpy(out, dout, 3ull * ne0 * 4, cudaMemcpyDeviceToHost));
			for (int k = 0; k < 3; k++)
				if (memcmp(out + (uint64_t)k * ne0, deq + (uint64_t)tok[k] * ne0,
				           ne0 * 4ull))
					T_FAIL_("%s: embedding row %d differs", inf->name, tok[k]);
			/* mat-vec at B = 1..8 against a double reference */
			float *x = malloc(8ull * ne0 * 4), *y = malloc(8ull * rows * 4), y1[64];
			double *ref = malloc(8ull * rows * 8);
			float *dx = dev(8ull * ne0 * 4), *dy = dev(8ull * rows * 4);
			fill(x, 8ull * ne0, 1.0f);
			CK(cudaMemcpy(dx, x, 8ull * ne0 * 4, cudaMemcpyHostToDevice));
			for (uint32_t b = 0; b < 8; b++)
				for (uint32_t i = 0; i < rows; i++) {
					double s = 0;
					for (uint32_t k = 0; k < ne0; k++)
						s += (double)deq[(uint64_t)i * ne0 + k] *
						     (double)x[(uint64_t)b * ne0 + k];
					ref[(uint64_t)b * rows + i] = s;
				}
			for (uint32_t B = 1; B <= 8; B += 7) {
				CK(cudaMemset(dy, 0xff, 8ull * rows * 4));
				CK(cuk_mmv(&w, 0, rows, dx, ne0, B, dy, rows, NULL, 0));
				CK(cudaMemcpy(y, dy, (uint64_t)B * rows * 4,
				              cudaMemcpyDeviceToHost));
				double e = rel_err(y, ref, (uint64_t)B * rows);
				worst = !(e <= worst) ? e : worst;
				if (B == 1)
					memcpy(y1, y, (rows < 64 ? rows : 64) * 4);
				else if (memcmp(y1, y, (rows < 64 ? rows : 64) * 4) != 0)
					T_FAIL_("%s: row results depend on the batch size",
					        inf->name);
			}
			cudaFree(d);
			cudaFree(dout);
			cudaFree(dtok);
			cudaFree(dx);
			cudaFree(dy);
			free(deq);
			free(out);
			free(x);
			free(y);
			free(ref);
		}
		printf("%-6s dequant/embed exact, mmv rel err %.2e (bound 1e-5)\n", inf->name,
		       worst);
		T_TRUE(worst <= 1e-5);
	}
}

static void
test_norm_rope_swiglu(void)
{
	const uint32_t n = 896, T = 5, hd = 64, nh = 14, nkv = 2, ld = (nh + 2 * nkv) * hd;
	float *x = malloc(T * n * 4), *d = malloc(T * n * 4), *w = malloc(n * 4),
	      *out = malloc(T * n * 4);
	double *ref = malloc((uint64_t)T * ld * 8);
	float *dx = dev(T * n * 4), *dd = dev(T * n * 4), *dw = dev(n * 4), *dout = dev(T * n * 4);

	fill(x, T * n, 2.0f);
	fill(d, T * n, 1.0f);
	fill(w, n, 1.0f);
	CK(cudaMemcpy(dx, x, T * n * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dd, d, T * n * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dw, w, n * 4, cudaMemcpyHostToDevice));
	CK(cuk_rmsnorm(dx, dd, dw, n, 1e-6f, T, NULL, dout, 0));
	CK(cudaMemcpy(out, dout, T * n * 4, cudaMemcpyDeviceToHost));
	float *cpu = malloc(T * n * 4);
	for (uint32_t t = 0; t < T; t++) {
		for (uint32_t i = 0; i < n; i++)
			x[t * n + i] += d[t * n + i];
		cpu_rmsnorm(x + t * n, w, n, 1e-6f, cpu + t * n);
	}
	for (uint32_t i = 0; i < T * n; i++)
		ref[i] = cpu[i];
	double e = rel_err(out, ref, T * n);
	printf("rmsnorm (fused add) rel err %.2e\n", e);
	T_TRUE(e <= 1e-6);

	/* RoPE: normal and NEOX, with and without factors, positions up to 30000 */
	float *q = malloc((uint64_t)T * ld * 4), *qo = malloc((uint64_t)T * ld * 4), fac[32];
	uint32_t pos[5] = {0, 1, 17, 2047, 30000}, *dpos = dev(sizeof(pos));
	float *dq = dev((uint64_t)T * ld * 4), *dfac = dev(sizeof(fac));
	for (int k = 0; k < 32; k++)
		fac[k] = 1.0f + (float)k * 0.25f;
	CK(cudaMemcpy(dpos, pos, sizeof(pos), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dfac, fac, sizeof(fac), cudaMemcpyHostToDevice));
	for (int v = 0; v < 4; v++) {
		bool neox = v & 1, with_f = v & 2;
		fill(q, (uint64_t)T * ld, 1.0f);
		CK(cudaMemcpy(dq, q, (uint64_t)T * ld * 4, cudaMemcpyHostToDevice));
		CK(cuk_rope(dq, ld, T, dpos, nh, nkv, hd, hd, powf(1e6f, -2.0f / (float)hd),
		            with_f ? dfac : NULL, neox, 0));
		CK(cudaMemcpy(qo, dq, (uint64_t)T * ld * 4, cudaMemcpyDeviceToHost));
		for (uint32_t t = 0; t < T; t++)
			cpu_rope(q + (uint64_t)t * ld, nh + nkv, hd, hd, pos[t], 1e6f, neox,
			         with_f ? fac : NULL);
		for (uint64_t i = 0; i < (uint64_t)T * ld; i++)
			ref[i] = q[i];
		e = rel_err(qo, ref, (uint64_t)T * ld);
		printf("rope neox=%d factors=%d rel err %.2e\n", neox, with_f, e);
		T_TRUE(e <= 1e-5);
	}
	/* SwiGLU on [gate | up] rows */
	fill(q, (uint64_t)T * ld, 3.0f);
	CK(cudaMemcpy(dq, q, (uint64_t)T * ld * 4, cudaMemcpyHostToDevice));
	CK(cuk_swiglu(dq, dq + ld / 2, ld, ld / 2, T, 0));
	CK(cudaMemcpy(qo, dq, (uint64_t)T * ld * 4, cudaMemcpyDeviceToHost));
	for (uint32_t t = 0; t < T; t++) {
		cpu_swiglu(q + (uint64_t)t * ld, q + (uint64_t)t * ld + ld / 2, ld / 2);
		for (uint32_t i = 0; i < ld / 2; i++) {
			ref[t * ld / 2 + i] = q[(uint64_t)t * ld + i];
			qo[t * ld / 2 + i] = qo[(uint64_t)t * ld + i];
		}
	}
	e = rel_err(qo, ref, (uint64_t)T * ld / 2);
	printf("swiglu rel err %.2e\n", e);
	T_TRUE(e <= 1e-6);
	cudaFree(dx), cudaFree(dd), cudaFree(dw), cudaFree(dout), cudaFree(dpos), cudaFree(dq),
	        cudaFree(dfac);
	free(x), free(d), free(w), free(out), free(ref), free(cpu), free(q), free(qo);
}

/* KV append + attention for head dims 8, 64, 96, 128 and contexts past one split. */
static void
test_attention(void)
{
	static const uint32_t dims[][3] = {{8, 8, 4}, {64, 14, 2}, {96, 32, 32}, {128, 8, 2}};

	for (int f16 = 0; f16 < 2; f16++) {
		for (size_t di = 0; di < 4; di++) {
			uint32_t d = dims[di][0], nh = dims[di][1], nkv = dims[di][2];
			uint32_t n_ctx = 700, kvd = nkv * d, ld = (nh + 2 * nkv) * d, P = 613;
			size_t es = f16 ? 2 : 4;
			float *qkv = malloc((uint64_t)P * ld * 4),
			      *out = malloc((uint64_t)nh * d * 4);
			double *ref = malloc((uint64_t)nh * d * 8);
			float *dqkv = dev((uint64_t)P * ld * 4),
			      *dout = dev((uint64_t)P * nh * d * 4);
			void *kb = dev((uint64_t)n_ctx * kvd * es),
			     *vb = dev((uint64_t)n_ctx * kvd * es);
			void **tab = dev(2 * sizeof(void *)), *ptrs[2] = {kb, vb};
			uint32_t *slot = dev(P * 4), *pos = dev(P * 4), *hp = malloc(P * 4);
			uint32_t n_split = (n_ctx + CUK_ATTN_SPLIT - 1) / CUK_ATTN_SPLIT;
			float *part = dev((uint64_t)P * nh * n_split * (d + 2) * 4);
			for (uint32_t i = 0; i < P; i++)
				hp[i] = i;
			fill(qkv, (uint64_t)P * ld, 1.0f);
			CK(cudaMemcpy(dqkv, qkv, (uint64_t)P * ld * 4, cudaMemcpyHostToDevice));
			CK(cudaMemcpy(tab, ptrs, sizeof(ptrs), cudaMemcpyHostToDevice));
			CK(cudaMemcpy(pos, hp, P * 4, cudaMemcpyHostToDevice));
			CK(cudaMemset(slot, 0, P * 4));
			struct cuk_kv kv = {
			        (void *const *)tab, (void *const *)tab + 1, n_ctx, kvd, 0, f16};
			CK(cuk_kv_append(&kv, dqkv, ld, (uint64_t)nh * d, P, slot, pos, 0));
			CK(cuk_attention(&kv, dqkv, ld, P, slot, pos, nh, nkv, d, n_split, part,
			                 dout, (uint64_t)nh * d, 0));
			/* the CPU twin over the same cache contents, for three query positions */
			uint8_t *kc = malloc((uint64_t)n_ctx * kvd * es),
			        *vc = malloc((uint64_t)n_ctx * kvd * es);
			float *sc = malloc(n_ctx * 4), *o = malloc(d * 4);
			CK(cudaMemcpy(kc, kb, (uint64_t)P * kvd * es, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(vc, vb, (uint64_t)P * kvd * es, cudaMemcpyDeviceToHost));
			double worst = 0;
			uint32_t qs[3] = {0, 255, P - 1};
			for (int k = 0; k < 3; k++) {
				uint32_t t = qs[k];
				for (uint32_t h = 0; h < nh; h++) {
					uint64_t off = (uint64_t)(h / (nh / nkv)) * d * es;
					struct cpu_attn a = {.k = kc + off,
					                     .v = vc + off,
					                     .stride = kvd,
					                     .d = d,
					                     .f16 = f16,
					                     .simd = false};
					cpu_attn_head(&a, qkv + (uint64_t)t * ld + (uint64_t)h * d,
					              t + 1, sc, o);
					for (uint32_t i = 0; i < d; i++)
						ref[h * d + i] = o[i];
				}
				CK(cudaMemcpy(out, dout + (uint64_t)t * nh * d,
				              (uint64_t)nh * d * 4, cudaMemcpyDeviceToHost));
				double e = rel_err(out, ref, (uint64_t)nh * d);
				worst = !(e <= worst) ? e : worst;
			}
			double bound = f16 ? 3e-3 : 1e-5;
			printf("attention d=%u heads %u/%u %s cache: rel err %.2e (bound %.0e)\n",
			       d, nh, nkv, f16 ? "F16" : "F32", worst, bound);
			T_TRUE(worst <= bound);
			cudaFree(dqkv), cudaFree(dout), cudaFree(kb), cudaFree(vb), cudaFree(tab),
			        cudaFree(slot), cudaFree(pos), cudaFree(part);
			free(qkv), free(out), free(ref), free(hp), free(kc), free(vc), free(sc),
			        free(o);
		}
	}
}

/* Device sampling vs samp_sample: 10,000 draws for each filter on its own and all together. */
static void
test_sampling(void)
{
	enum { V = 32000, N = 8, draws = 10000, cap = 128 };
	float *lg = malloc((uint64_t)N * V * 4), *dlg = dev((uint64_t)N * V * 4);
	struct samp_cand *work = malloc(V * sizeof(*work));
	int32_t hist[N][64], *dhist = dev((uint64_t)N * cap * 4), ids[N], *dids = dev(N * 4);
	struct cuk_samp sp[N], *dsp = dev(sizeof(sp));
	uint32_t seg[N + 1], *dseg = dev(sizeof(seg));
	size_t tmp_bytes = 0;
	float *keys = dev(2ull * N * V * 4), *probs = dev((uint64_t)N * V * 4);
	int32_t *vals = dev(2ull * N * V * 4);

	CK(cuk_sample_tmp_bytes(N, V, &tmp_bytes));
	void *tmp = dev(tmp_bytes);
	for (uint32_t i = 0; i <= N; i++)
		seg[i] = i * V;
	CK(cudaMemcpy(dseg, seg, sizeof(seg), cudaMemcpyHostToDevice));
	for (uint32_t s = 0; s < N; s++)
		for (int k = 0; k < 64; k++)
			hist[s][k] = (int32_t)(rng_next(&r) % 200); /* repeats among the top ids */
	for (uint32_t s = 0; s < N; s++)
		CK(cudaMemcpy(dhist + (uint64_t)s * cap, hist[s], sizeof(hist[s]),
		              cudaMemcpyHostToDevice));
	for (int filt = 0; filt < 6; filt++) {
		struct samp_params p = {.temperature = 0.9f,
		                        .top_k = 0,
		                        .top_p = 1.0f,
		                        .min_p = 0.0f,
		                        .repeat_penalty = 1.0f,
		                        .repeat_last_n = 64};
		const char *name[] = {"greedy",    "temperature", "top-k 40",
		                      "top-p 0.9", "min-p 0.05",  "all + penalty"};
		if (filt == 0)
			p.temperature = 0;
		if (filt == 2 || filt == 5)
			p.top_k = 40;
		if (filt == 3 || filt == 5)
			p.top_p = 0.9f;
		if (filt == 4 || filt == 5)
			p.min_p = 0.05f;
		if (filt == 5)
			p.repeat_penalty = 1.3f;
		uint32_t mismatches = 0;
		for (uint32_t it = 0; it < draws / N; it++) {
			fill(lg, (uint64_t)N * V, 3.0f);
			lg[it % V] = NAN; /* NaN is ignored by both */
			CK(cudaMemcpy(dlg, lg, (uint64_t)N * V * 4, cudaMemcpyHostToDevice));
			for (uint32_t s = 0; s < N; s++) {
				p.seed = 1000 + s;
				sp[s] = (struct cuk_samp){p.temperature,
				                          p.top_p,
				                          p.min_p,
				                          p.repeat_penalty,
				                          p.top_k,
				                          p.repeat_last_n,
				                          p.seed,
				                          it,
				                          s,
				                          64};
			}
			CK(cudaMemcpy(dsp, sp, sizeof(sp), cudaMemcpyHostToDevice));
			CK(cudaMemset(dids, 0xff, N * 4));
			CK(cuk_sample(dlg, N, V, dsp, dhist, cap, p.temperature > 0, tmp, tmp_bytes,
			              keys, vals, probs, dseg, dids, 0));
			CK(cudaMemcpy(ids, dids, N * 4, cudaMemcpyDeviceToHost));
			for (uint32_t s = 0; s < N; s++) {
				p.seed = 1000 + s;
				int32_t want = samp_sample(&p, lg + (uint64_t)s * V, V, hist[s], 64,
				                           it, work);
				mismatches += ids[s] != want;
			}
		}
		printf("sampling %-14s %u draws, %u differ from the CPU sampler\n", name[filt],
		       draws, mismatches);
		T_EQ(mismatches, 0);
	}
	cudaFree(dlg), cudaFree(dhist), cudaFree(dids), cudaFree(dsp), cudaFree(dseg),
	        cudaFree(tmp), cudaFree(keys), cudaFree(probs), cudaFree(vals);
	free(lg), free(work);
}

int
main(void)
{
	int count = 0;
	char why[256];

	if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
		T_SKIP("no CUDA device");
	if (cuk_limits_check(0, why, sizeof(why)) != cudaSuccess) {
		fprintf(stderr, "FAIL: %s\n", why);
		return 1;
	}
	rng_seed(&r, (uint64_t)time(NULL)); /* fresh inputs every run */
	T_RUN(test_dequant_mmv);
	T_RUN(test_norm_rope_swiglu);
	T_RUN(test_attention);
	T_RUN(test_sampling);
	return t_done();
}
