/*
 * kernels_test.c - every CUDA kernel against its CPU twin on fresh random
 * inputs of several shapes (odd sizes and the real model shapes), outputs
 * poisoned (NaN) before each run, NaN never passing:
 * - dequantization and embedding: bit-identical to dequant_row() for all 14 types;
 * - mat-vec: within fp32 rounding of a double reference, and bit-identical
 *   for a row whatever the batch;
 * - RMSNorm (with the fused residual), RoPE (normal, NEOX, factors, YaRN),
 *   SwiGLU and gpt-oss's clamped SwiGLU;
 * - KV append + attention (F16 and F32 caches, GQA, several KV splits,
 *   sinks, sliding windows over a ring) vs cpu_attn_head, and through
 *   block tables (paged) bit-identical to the slot layout;
 * - sampling: the same token as samp_sample() over 10,000 draws per filter.
 * gpt-oss's experts (MXFP4 integer dots, routing, expert products) are in
 * kernels_moe_test.c; the helpers in kernels_util.c.
 * The test exits 77 where no CUDA device exists.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "base/rng.h"
#include "engine/cpu/cpu.h"
#include "engine/model/model.h"
#include "engine/sampler.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "gguf/quant.h"
#include "kernels.h"
#include "kernels_util.h"
#include "t.h"

static const uint32_t types[] = {GGML_TYPE_F32,   GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0,
                                 GGML_TYPE_Q4_1,  GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0,
                                 GGML_TYPE_MXFP4, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,
                                 GGML_TYPE_Q5_K,  GGML_TYPE_Q6_K};

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
			/* mat-vec of B = 1, 3, 8, 16 and 64 rows against a double reference;
			 * above CUK_MMV_MAX_B in launches of 8 rows, as the backend's
			 * mmv_rows takes a decode batch */
			float *x = malloc(64ull * ne0 * 4), *y = malloc(64ull * rows * 4), y1[64];
			double *ref = malloc(64ull * rows * 8);
			float *dx = dev(64ull * ne0 * 4), *dy = dev(64ull * rows * 4);
			fill(x, 64ull * ne0, 1.0f);
			CK(cudaMemcpy(dx, x, 64ull * ne0 * 4, cudaMemcpyHostToDevice));
			for (uint32_t b = 0; b < 64; b++)
				for (uint32_t i = 0; i < rows; i++) {
					double s = 0;
					for (uint32_t k = 0; k < ne0; k++)
						s += (double)deq[(uint64_t)i * ne0 + k] *
						     (double)x[(uint64_t)b * ne0 + k];
					ref[(uint64_t)b * rows + i] = s;
				}
			static const uint32_t batches[] = {1, 3, 8, 16, 64};
			for (size_t bi = 0; bi < sizeof(batches) / sizeof(batches[0]); bi++) {
				uint32_t B = batches[bi];
				CK(cudaMemset(dy, 0xff, 64ull * rows * 4));
				for (uint32_t t = 0; t < B; t += CUK_MMV_MAX_B)
					CK(cuk_mmv(&w, 0, rows, dx + (uint64_t)t * ne0, ne0,
					           B - t < CUK_MMV_MAX_B ? B - t : CUK_MMV_MAX_B,
					           dy + (uint64_t)t * rows, rows, NULL, 0));
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
		            with_f ? dfac : NULL, NULL, neox, 0));
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

/* YaRN RoPE as gpt-oss sets it (base 150000, factor 32 over 4096, NEOX): bound 1e-5 as for RoPE. */
static void
test_rope_yarn(void)
{
	const uint32_t T = 5, hd = 64, nh = 8, nkv = 2, ld = (nh + 2 * nkv) * hd;
	uint32_t pos[5] = {0, 1, 17, 2047, 30000}, *dpos = dev(sizeof(pos));
	float *q = malloc((uint64_t)T * ld * 4), *qo = malloc((uint64_t)T * ld * 4);
	float *dq = dev((uint64_t)T * ld * 4);
	double *ref = malloc((uint64_t)T * ld * 8);
	struct model_yarn cy;

	model_yarn_params(hd, 150000.0f, 32.0f, 4096, 32.0f, 1.0f, 0.0f, &cy);
	struct cuk_yarn gy = {
	        cy.freq_scale, cy.ext_factor, cy.attn_factor, {cy.corr_dims[0], cy.corr_dims[1]}};
	fill(q, (uint64_t)T * ld, 1.0f);
	CK(cudaMemcpy(dpos, pos, sizeof(pos), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dq, q, (uint64_t)T * ld * 4, cudaMemcpyHostToDevice));
	CK(cuk_rope(dq, ld, T, dpos, nh, nkv, hd, hd, powf(150000.0f, -2.0f / (float)hd), NULL, &gy,
	            true, 0));
	CK(cudaMemcpy(qo, dq, (uint64_t)T * ld * 4, cudaMemcpyDeviceToHost));
	for (uint32_t t = 0; t < T; t++)
		cpu_rope_yarn(q + (uint64_t)t * ld, nh + nkv, hd, hd, pos[t], 150000.0f, true, &cy);
	for (uint64_t i = 0; i < (uint64_t)T * ld; i++)
		ref[i] = q[i];
	double e = rel_err(qo, ref, (uint64_t)T * ld);
	printf("rope yarn rel err %.2e (bound 1e-5)\n", e);
	T_TRUE(e <= 1e-5);
	cudaFree(dpos), cudaFree(dq);
	free(q), free(qo), free(ref);
}

/* gpt-oss's clamped SwiGLU, values past the limit of 7 included: bound 1e-6 (expf's last bits). */
static void
test_swiglu_oai(void)
{
	const uint32_t T = 5, n = 768;
	float *g = malloc(2ull * T * n * 4), *go = malloc(2ull * T * n * 4);
	float *dg = dev(2ull * T * n * 4);
	double *ref = malloc((uint64_t)T * n * 8);

	fill(g, 2ull * T * n, 5.0f);
	CK(cudaMemcpy(dg, g, 2ull * T * n * 4, cudaMemcpyHostToDevice));
	CK(cuk_swiglu_oai(dg, dg + n, 2 * n, n, T, 1.702f, 7.0f, 0));
	CK(cudaMemcpy(go, dg, 2ull * T * n * 4, cudaMemcpyDeviceToHost));
	for (uint32_t t = 0; t < T; t++) {
		cpu_swiglu_oai(g + 2ull * t * n, g + 2ull * t * n + n, n, 1.702f, 7.0f);
		for (uint32_t i = 0; i < n; i++) {
			ref[(uint64_t)t * n + i] = g[2ull * t * n + i];
			go[(uint64_t)t * n + i] = go[2ull * t * n + i];
		}
	}
	double e = rel_err(go, ref, (uint64_t)T * n);
	printf("swiglu_oai rel err %.2e (bound 1e-6)\n", e);
	T_TRUE(e <= 1e-6);
	cudaFree(dg);
	free(g), free(go), free(ref);
}

/*
 * One attention case: P tokens at positions 0..P-1 appended and attended
 * @chunk at a time (cells: n_ctx without a window, else window + chunk, a
 * ring that wraps), against cpu_attn_head over the same K/V (rounded as the
 * cache stores them) for the first and last token of every chunk and the
 * tokens at 255 and 256. The worst relative error; every output into @ret_out
 * ([P][nh][d]) when not NULL.
 *
 * With @bt, the cache is paged: a pool of ceil(P / bt) + 1 blocks of bt rows,
 * the sequence's table the blocks in reverse order (block 0 unused; rows are
 * NaN until written), each chunk's table uploaded as the CUDA backend stages
 * one: with a window only from the first block the chunk reads, the tokens'
 * start moved back by as many entries (uint32 arithmetic that wraps below 0).
 */
struct attn_case {
	uint32_t d, nh, nkv, window, chunk;
	bool f16, sinks;
	uint32_t bt; /* 0: slots */
	uint32_t P;  /* tokens: 613, or fewer in quick mode */
};

/* Paged: chunk [t0, t0 + n)'s table (kernels.h, cuk_kv) into @dtab and its start into @dtbl. */
static bool
attn_stage_table(const struct attn_case *c, uint32_t t0, uint32_t n, uint32_t nblk, uint32_t *dtab,
                 uint32_t *dtbl)
{
	uint32_t need = (t0 + n + c->bt - 1) / c->bt, read = 0, tab[700], tbl[700];

	if (c->window && t0 + 1 > c->window)
		read = t0 + 1 - c->window;
	uint32_t first = read / c->bt;
	for (uint32_t i = first; i < need; i++)
		tab[i - first] = nblk - 1 - i; /* the pool's blocks in reverse order */
	for (uint32_t k = 0; k < n; k++)
		tbl[k] = 0u - first; /* entry i at tab[tbl + i], i ≥ first */
	return cudaMemcpy(dtab, tab, (need - first) * 4ull, cudaMemcpyHostToDevice) ==
	               cudaSuccess &&
	       cudaMemcpy(dtbl, tbl, n * 4ull, cudaMemcpyHostToDevice) == cudaSuccess;
}

static double
attn_run(const struct attn_case *c, float *ret_out)
{
	uint32_t d = c->d, nh = c->nh, nkv = c->nkv, P = c->P, n_ctx = 700, kvd = nkv * d;
	uint32_t ld = (nh + 2 * nkv) * d, cells = c->window ? c->window + c->chunk : n_ctx;
	uint32_t nblk = c->bt ? (P + c->bt - 1) / c->bt + 1 : 0;
	uint32_t seen = c->window ? c->window : n_ctx;
	uint32_t n_split = (seen + CUK_ATTN_SPLIT - 1) / CUK_ATTN_SPLIT;
	size_t es = c->f16 ? 2 : 4;
	float *qkv = malloc((uint64_t)P * ld * 4), *out = malloc((uint64_t)P * nh * d * 4), sk[64];
	float *dqkv = dev((uint64_t)P * ld * 4), *dout = dev((uint64_t)P * nh * d * 4);
	float *dsk = dev(sizeof(sk));
	float *part = dev(cuk_attention_part_floats(c->chunk, nh, d, n_split) * 4);
	if (c->bt)
		cells = nblk * c->bt;
	void *kb = dev((uint64_t)cells * kvd * es), *vb = dev((uint64_t)cells * kvd * es);
	void **tab = dev(2 * sizeof(void *)), *ptrs[2] = {kb, vb};
	uint32_t *slot = dev(P * 4), *pos = dev(P * 4), *hp = malloc(P * 4);
	uint32_t *dtab = dev(700 * 4), *dtbl = dev(700 * 4);

	for (uint32_t i = 0; i < P; i++)
		hp[i] = i;
	fill(qkv, (uint64_t)P * ld, 1.0f);
	fill(sk, 64, 2.0f);
	cudaMemcpy(dqkv, qkv, (uint64_t)P * ld * 4, cudaMemcpyHostToDevice);
	cudaMemcpy(dsk, sk, sizeof(sk), cudaMemcpyHostToDevice);
	cudaMemcpy(tab, ptrs, sizeof(ptrs), cudaMemcpyHostToDevice);
	cudaMemcpy(pos, hp, P * 4, cudaMemcpyHostToDevice);
	cudaMemset(slot, 0, P * 4);
	struct cuk_kv kv = {.k_base = (void *const *)tab,
	                    .v_base = (void *const *)tab + 1,
	                    .layer_off = 0,
	                    .cells = cells,
	                    .kv_dim = kvd,
	                    .window = c->window,
	                    .f16 = c->f16};
	if (c->bt)
		kv = (struct cuk_kv){.layer_off = 0,
		                     .cells = cells,
		                     .kv_dim = kvd,
		                     .window = c->window,
		                     .f16 = c->f16,
		                     .k_pool = kb,
		                     .v_pool = vb,
		                     .blocks = dtab,
		                     .tbl = dtbl,
		                     .bt = c->bt};
	bool ok = true;
	for (uint32_t t0 = 0; t0 < P && ok; t0 += c->chunk) {
		uint32_t n = P - t0 < c->chunk ? P - t0 : c->chunk;
		ok = (!c->bt || attn_stage_table(c, t0, n, nblk, dtab, dtbl)) &&
		     cuk_kv_append(&kv, dqkv + (uint64_t)t0 * ld, ld, (uint64_t)nh * d, n, slot,
		                   pos + t0, 0) == cudaSuccess &&
		     cuk_attention(&kv, dqkv + (uint64_t)t0 * ld, ld, n, slot, pos + t0, nh, nkv, d,
		                   n_split, c->sinks ? dsk : NULL, 0.0f, part,
		                   dout + (uint64_t)t0 * nh * d, (uint64_t)nh * d,
		                   0) == cudaSuccess;
	}
	ok = ok &&
	     cudaMemcpy(out, dout, (uint64_t)P * nh * d * 4, cudaMemcpyDeviceToHost) == cudaSuccess;
	/* the reference cache, linear: position p's K and V as the cache stores them */
	uint8_t *kc = malloc((uint64_t)P * kvd * es), *vc = malloc((uint64_t)P * kvd * es);
	for (uint64_t p = 0; p < P; p++)
		for (uint32_t i = 0; i < kvd; i++) {
			float k = qkv[p * ld + (uint64_t)nh * d + i],
			      v = qkv[p * ld + (nh + nkv) * d + i];
			if (c->f16) {
				uint16_t hk = fp16_from_f32(k), hv = fp16_from_f32(v);
				memcpy(kc + (p * kvd + i) * 2, &hk, 2);
				memcpy(vc + (p * kvd + i) * 2, &hv, 2);
			} else {
				memcpy(kc + (p * kvd + i) * 4, &k, 4);
				memcpy(vc + (p * kvd + i) * 4, &v, 4);
			}
		}
	if (c->bt && ok) { /* every position's K and V in its block's row; block 0 untouched */
		uint64_t row = (uint64_t)kvd * es, nb = (uint64_t)cells * row;
		uint8_t *kh = malloc(nb), *vh = malloc(nb);
		ok = cudaMemcpy(kh, kb, nb, cudaMemcpyDeviceToHost) == cudaSuccess &&
		     cudaMemcpy(vh, vb, nb, cudaMemcpyDeviceToHost) == cudaSuccess;
		for (uint32_t p = 0; p < P && ok; p++) {
			uint64_t r = (uint64_t)(nblk - 1 - p / c->bt) * c->bt + p % c->bt;
			ok = memcmp(kh + r * row, kc + p * row, row) == 0 &&
			     memcmp(vh + r * row, vc + p * row, row) == 0;
		}
		for (uint64_t i = 0; i < c->bt * row && ok; i++)
			ok = kh[i] == 0xff && vh[i] == 0xff;
		if (!ok)
			printf("  paged, blocks of %u: a row is not where its table puts it\n",
			       c->bt);
		free(kh);
		free(vh);
	}
	float *sc = malloc(P * 4), *o = malloc(d * 4);
	double *ref = malloc((uint64_t)nh * d * 8), worst = ok ? 0 : NAN;
	for (uint32_t t0 = 0; t0 < P && ok; t0 += c->chunk) {
		uint32_t last = t0 + c->chunk - 1 < P - 1 ? t0 + c->chunk - 1 : P - 1;
		uint32_t check[4] = {t0, last, 255, 256}; /* and both sides of one part's end */
		for (int ci = 0; ci < 4; ci++) {
			uint32_t t = check[ci];
			if (t < t0 || t > last)
				continue;
			uint32_t first = c->window && t + 1 > c->window ? t + 1 - c->window : 0;
			for (uint32_t h = 0; h < nh; h++) {
				uint64_t off = ((uint64_t)first * kvd + (h / (nh / nkv)) * d) * es;
				struct cpu_attn a = {.k = kc + off,
				                     .v = vc + off,
				                     .stride = kvd,
				                     .d = d,
				                     .f16 = c->f16,
				                     .simd = false,
				                     .has_sink = c->sinks,
				                     .sink = sk[h]};
				cpu_attn_head(&a, qkv + (uint64_t)t * ld + (uint64_t)h * d,
				              t + 1 - first, sc, o);
				for (uint32_t i = 0; i < d; i++)
					ref[h * d + i] = o[i];
			}
			double e = rel_err(out + (uint64_t)t * nh * d, ref, (uint64_t)nh * d);
			worst = !(e <= worst) ? e : worst;
		}
	}
	if (ret_out != NULL)
		memcpy(ret_out, out, (uint64_t)P * nh * d * 4);
	cudaFree(dqkv), cudaFree(dout), cudaFree(dsk), cudaFree(part), cudaFree(kb), cudaFree(vb),
	        cudaFree(tab), cudaFree(slot), cudaFree(pos), cudaFree(dtab), cudaFree(dtbl);
	free(qkv), free(out), free(hp), free(kc), free(vc), free(sc), free(o), free(ref);
	return worst;
}

/*
 * KV append + attention: head dims 8 to 128 over 613 positions (past two
 * parts) in one step; then gpt-oss's shape with sinks and a sliding window
 * whose ring wraps (window 128, 64 tokens a step: 192 cells), a window
 * wider than a part (300, 7 tokens a step), and sinks alone.
 *
 * Bounds: the kernels give the CPU's weights (normalized first; with an F16
 * cache rounded to F16) and differ only in the order of float sums: the
 * dot products (fused multiply-adds here), the softmax's sum (double on
 * both sides; a many-part token's is rescaled from the parts') and Σ w·V.
 * ‖Δ‖/‖ref‖ from that is of order √n·2^-24 ≈ 1e-6 (bound 1e-5). With an F16
 * cache a weight that moves by an ulp can round to the neighbouring F16
 * value (about one weight in 10^3-10^4, each by 2^-11 of itself): bound
 * 1e-4. (Before the weights were rounded as the CPU rounds them, the F16
 * difference reached ~1e-3.)
 *
 * Each case runs again paged (blocks of 16, and of 1 and 7 for two of them):
 * only where a row lives changes, so every output equals the slots' bit for bit.
 *
 * Quick mode (and the simulated device, where a GPU's second is minutes) runs
 * 320 tokens (still two parts past position 256, and a 300-token window that
 * slides) and 8 heads where the case has 32.
 */
static void
test_attention(void)
{
	static const struct attn_case cases[] = {
	        {8, 8, 4, 0, 613, false, false, 0, 613},
	        {64, 14, 2, 0, 613, false, false, 1, 613},
	        {96, 32, 32, 0, 613, false, false, 0, 613},
	        {128, 8, 2, 0, 613, false, false, 0, 613},
	        {64, 8, 2, 128, 64, false, true, 7, 613},
	        {64, 8, 2, 300, 7, false, true, 0, 613},
	        {96, 32, 32, 0, 100, false, true, 0, 613},
	};
	float *slots = malloc(613ull * 32 * 128 * 4), *paged = malloc(613ull * 32 * 128 * 4);

	for (int f16 = 0; f16 < 2; f16++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct attn_case c = cases[i];
			c.f16 = f16;
			c.bt = 0;
			if (kt_quick)
				c.P = 320;
			if (kt_quick && c.nh == 32)
				c.nh = c.nkv = 8;
			if (c.chunk == 613)
				c.chunk = c.P;
			/* the paged runs below draw the same inputs */
			struct rng inputs = kt_rng;
			/* F16 cache: each K, V and normalized weight is rounded once to F16,
			 * whose unit roundoff is 2^-11 = 4.9e-4 */
			double e = attn_run(&c, slots), bound = f16 ? 4.9e-4 : 1e-5;
			printf("attention d=%u heads %u/%u window %u chunk %u sinks %d %s cache: "
			       "rel err %.2e (bound %.0e)\n",
			       c.d, c.nh, c.nkv, c.window, c.chunk, c.sinks, f16 ? "F16" : "F32", e,
			       bound);
			T_TRUE(e <= bound);
			uint32_t bts[2] = {16, cases[i].bt};
			for (int k = 0; k < (bts[1] ? 2 : 1); k++) {
				c.bt = bts[k];
				kt_rng = inputs;
				double ep = attn_run(&c, paged);
				uint64_t n = (uint64_t)c.P * c.nh * c.d;
				bool same = ep == e && memcmp(paged, slots, n * 4) == 0;
				printf("  paged, blocks of %u: rel err %.2e, %s the slots'\n", c.bt,
				       ep, same ? "bit-identical to" : "DIFFERENT from");
				T_TRUE(same);
			}
		}
	}
	free(slots);
	free(paged);
}

/* The CPU sampler's choice for one row of a draw (a thread each: the reference is the slow part).
 */
struct ref_row {
	pthread_t th;
	struct samp_params p;
	const float *lg;
	const int32_t *hist;
	uint32_t V, index;
	struct samp_cand *work;
	int32_t id;
};

static void *
ref_row_run(void *arg)
{
	struct ref_row *r = arg;

	r->id = samp_sample(&r->p, r->lg, r->V, r->hist, 64, r->index, r->work);
	return NULL;
}

/* One sampling filter of test_sampling: which steps its rows take. */
struct samp_filter {
	const char *name;
	float temperature;
	int32_t top_k;
	float top_p, min_p, repeat_penalty, presence, frequency;
	bool bias, mask;
};

enum { SV = 32000, SN = 8, SW = (SV + 31) / 32 };

/*
 * One draw's logit_bias and masks: row s's four entries at (SN - 1 - s) · 4 of
 * @cb (so a kernel that found a row's entries by its row number would read
 * another's): a ban, +3, the same token again +0.7, -2.5, among the histories'
 * ids; the odd rows masked (a random quarter of the tokens), row s by mask
 * s / 2, the reference row @lgm with the others at -inf.
 */
static void
samp_extras(const struct samp_filter *f, const float *lg, struct samp_bias bias[SN][4],
            struct cuk_bias *cb, uint32_t *mask, float *lgm)
{
	static const float add[4] = {-100.0f, 3.0f, 0.7f, -2.5f};

	for (uint32_t s = 0; s < SN && f->bias; s++)
		for (int k = 0; k < 4; k++) {
			int32_t id = k == 2 ? bias[s][1].id : (int32_t)(rng_next(&kt_rng) % 200);
			bias[s][k] = (struct samp_bias){id, add[k]};
			cb[(SN - 1 - s) * 4 + (uint32_t)k] = (struct cuk_bias){id, add[k]};
		}
	for (uint32_t r = 0; r < SN / 2 && f->mask; r++) {
		for (uint32_t w = 0; w < SW; w++)
			mask[r * SW + w] =
			        (uint32_t)rng_next(&kt_rng) & (uint32_t)rng_next(&kt_rng);
		const float *row = lg + (uint64_t)(2 * r + 1) * SV;
		for (uint32_t i = 0; i < SV; i++)
			lgm[(uint64_t)r * SV + i] =
			        (mask[r * SW + i / 32] >> (i % 32)) & 1 ? row[i] : -INFINITY;
	}
}

/*
 * Device sampling vs samp_sample: 10,000 draws for each filter on its own and
 * all together; then logit_bias (a ban, a token listed twice) with the
 * presence and frequency penalties, a grammar's mask on every other row, and
 * all of them with the repetition penalty, at random and greedy
 * (samp_extras). The reference samples the masked row.
 */
static void
test_sampling(void)
{
	static const struct samp_filter filters[] = {
	        {"greedy", 0, 0, 1, 0, 1, 0, 0, false, false},
	        {"temperature", 0.9f, 0, 1, 0, 1, 0, 0, false, false},
	        {"top-k 40", 0.9f, 40, 1, 0, 1, 0, 0, false, false},
	        {"top-p 0.9", 0.9f, 0, 0.9f, 0, 1, 0, 0, false, false},
	        {"min-p 0.05", 0.9f, 0, 1, 0.05f, 1, 0, 0, false, false},
	        {"all + penalty", 0.9f, 40, 0.9f, 0.05f, 1.3f, 0, 0, false, false},
	        {"greedy + penalty", 0, 0, 1, 0, 1.3f, 0, 0, false, false},
	        {"bias + pres/freq", 0.9f, 40, 1, 0, 1, 0.4f, 0.25f, true, false},
	        {"greedy + bias + pf", 0, 0, 1, 0, 1, 0.4f, 0.25f, true, false},
	        {"mask", 0.9f, 0, 1, 0, 1, 0, 0, false, true},
	        {"greedy + mask + bias", 0, 0, 1, 0, 1, 0, 0, true, true},
	        {"all of them", 0.9f, 40, 0.9f, 0.05f, 1.3f, 0.4f, 0.25f, true, true},
	        {"greedy, all of them", 0, 0, 1, 0, 1.3f, 0.4f, 0.25f, true, true},
	};
	enum { V = SV, N = SN, cap = 128 };
	const uint32_t draws = kt_quick ? 400 : 10000;
	float *lg = malloc((uint64_t)N * V * 4), *dlg = dev((uint64_t)N * V * 4);
	float *lgm = malloc((uint64_t)N / 2 * V * 4);
	uint32_t *mask = malloc((uint64_t)N / 2 * SW * 4), *dmask = dev((uint64_t)N / 2 * SW * 4);
	struct samp_bias bias[N][4];
	struct cuk_bias cb[N * 4], *dbias = dev(sizeof(cb));
	struct samp_cand *work = malloc((uint64_t)N * V * sizeof(*work));
	struct ref_row ref[N];
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
			hist[s][k] =
			        (int32_t)(rng_next(&kt_rng) % 200); /* repeats among the top ids */
	for (uint32_t s = 0; s < N; s++)
		CK(cudaMemcpy(dhist + (uint64_t)s * cap, hist[s], sizeof(hist[s]),
		              cudaMemcpyHostToDevice));
	for (size_t fi = 0; fi < sizeof(filters) / sizeof(filters[0]); fi++) {
		const struct samp_filter *f = &filters[fi];
		struct samp_params p = {.temperature = f->temperature,
		                        .top_k = f->top_k,
		                        .top_p = f->top_p,
		                        .min_p = f->min_p,
		                        .repeat_penalty = f->repeat_penalty,
		                        .repeat_last_n = 64,
		                        .presence_penalty = f->presence,
		                        .frequency_penalty = f->frequency};
		struct cuk_sample_pre pre = {dbias, dmask, SW,
		                             f->repeat_penalty != 1.0f || f->bias || f->mask ||
		                                     f->presence != 0 || f->frequency != 0};
		uint32_t mismatches = 0;
		for (uint32_t it = 0; it < draws / N; it++) {
			fill(lg, (uint64_t)N * V, 3.0f);
			lg[it % V] = NAN; /* NaN is ignored by both */
			samp_extras(f, lg, bias, cb, mask, lgm);
			CK(cudaMemcpy(dlg, lg, (uint64_t)N * V * 4, cudaMemcpyHostToDevice));
			CK(cudaMemcpy(dbias, cb, sizeof(cb), cudaMemcpyHostToDevice));
			CK(cudaMemcpy(dmask, mask, (uint64_t)N / 2 * SW * 4,
			              cudaMemcpyHostToDevice));
			for (uint32_t s = 0; s < N; s++)
				sp[s] = (struct cuk_samp){.temperature = p.temperature,
				                          .top_p = p.top_p,
				                          .min_p = p.min_p,
				                          .repeat_penalty = p.repeat_penalty,
				                          .top_k = p.top_k,
				                          .repeat_last_n = p.repeat_last_n,
				                          .seed = 1000 + s,
				                          .index = it,
				                          .slot = s,
				                          .n_hist = 64,
				                          .presence = p.presence_penalty,
				                          .frequency = p.frequency_penalty,
				                          .bias0 = (N - 1 - s) * 4,
				                          .n_bias = f->bias ? 4 : 0,
				                          .mask = f->mask && s % 2 ? s / 2
				                                                   : CUK_NO_MASK};
			CK(cudaMemcpy(dsp, sp, sizeof(sp), cudaMemcpyHostToDevice));
			CK(cudaMemset(dids, 0xff, N * 4));
			CK(cuk_sample(dlg, N, V, dsp, dhist, cap, p.temperature > 0, &pre, tmp,
			              tmp_bytes, keys, vals, probs, dseg, dids, 0));
			CK(cudaMemcpy(ids, dids, N * 4, cudaMemcpyDeviceToHost));
			for (uint32_t s = 0; s < N; s++) {
				bool m = f->mask && s % 2;
				ref[s] = (struct ref_row){.p = p,
				                          .lg = m ? lgm + (uint64_t)(s / 2) * V
				                                  : lg + (uint64_t)s * V,
				                          .hist = hist[s],
				                          .V = V,
				                          .index = it,
				                          .work = work + (uint64_t)s * V};
				ref[s].p.seed = 1000 + s;
				ref[s].p.bias = f->bias ? bias[s] : NULL;
				ref[s].p.n_bias = f->bias ? 4 : 0;
				T_TRUE(pthread_create(&ref[s].th, NULL, ref_row_run, &ref[s]) == 0);
			}
			for (uint32_t s = 0; s < N; s++) {
				pthread_join(ref[s].th, NULL);
				mismatches += ids[s] != ref[s].id;
			}
		}
		printf("sampling %-20s %u draws, %u differ from the CPU sampler\n", f->name, draws,
		       mismatches);
		T_EQ(mismatches, 0);
	}
	cudaFree(dlg), cudaFree(dhist), cudaFree(dids), cudaFree(dsp), cudaFree(dseg),
	        cudaFree(tmp), cudaFree(keys), cudaFree(probs), cudaFree(vals), cudaFree(dmask),
	        cudaFree(dbias);
	free(lg), free(lgm), free(mask), free(work);
}

/*
 * qwen3's per-head RMSNorm in place, on the query heads (from the row's start) and
 * the key heads (from q_dim) of rows qkv_dim apart, as cpu_forward.c norms them:
 * the same floats.
 */
static void
test_head_rmsnorm(void)
{
	const uint32_t T = 3, hd = 128, nh = 16, nkv = 8, qd = nh * hd, ld = (nh + 2 * nkv) * hd;
	float *x = malloc((uint64_t)T * ld * 4), *out = malloc((uint64_t)T * ld * 4);
	float *wq = malloc(hd * 4), *wk = malloc(hd * 4);
	float *dx = dev((uint64_t)T * ld * 4), *dwq = dev(hd * 4), *dwk = dev(hd * 4);

	fill(x, (uint64_t)T * ld, 3.0f);
	fill(wq, hd, 1.0f);
	fill(wk, hd, 2.0f);
	CK(cudaMemcpy(dx, x, (uint64_t)T * ld * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dwq, wq, hd * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dwk, wk, hd * 4, cudaMemcpyHostToDevice));
	CK(cuk_head_rmsnorm(dx, ld, T, nh, hd, dwq, 1e-6f, 0));
	CK(cuk_head_rmsnorm(dx + qd, ld, T, nkv, hd, dwk, 1e-6f, 0));
	CK(cudaMemcpy(out, dx, (uint64_t)T * ld * 4, cudaMemcpyDeviceToHost));
	uint32_t differ = 0;
	for (uint32_t t = 0; t < T; t++) {
		float *r = x + (uint64_t)t * ld;
		for (uint32_t h = 0; h < nh; h++)
			cpu_rmsnorm(r + h * hd, wq, hd, 1e-6f, r + h * hd);
		for (uint32_t h = 0; h < nkv; h++)
			cpu_rmsnorm(r + qd + h * hd, wk, hd, 1e-6f, r + qd + h * hd);
	}
	for (uint64_t i = 0; i < (uint64_t)T * ld; i++) /* the values (V) are left as they were */
		differ += memcmp(&out[i], &x[i], 4) != 0;
	printf("head rmsnorm: %u of %u floats differ from the CPU's\n", differ, T * ld);
	T_EQ(differ, 0);
	cudaFree(dx), cudaFree(dwq), cudaFree(dwk);
	free(x), free(out), free(wq), free(wk);
}

/*
 * A row with no candidate above -inf (every logit NaN or -inf) gets id -1 on the
 * device, as samp_sample gives SAMP_NONE: greedy on the argmax path and on the
 * prep path (a penalty), and at random; the other rows keep their tokens.
 */
static void
test_sampling_none(void)
{
	enum { V = 1000, N = 4, cap = 8 };
	float *lg = malloc((uint64_t)N * V * 4), *dlg = dev((uint64_t)N * V * 4);
	float *keys = dev(2ull * N * V * 4), *probs = dev((uint64_t)N * V * 4);
	int32_t *vals = dev(2ull * N * V * 4), *dhist = dev((uint64_t)N * cap * 4), ids[N];
	int32_t *dids = dev(N * 4);
	struct cuk_samp sp[N], *dsp = dev(sizeof(sp));
	uint32_t seg[N + 1], *dseg = dev(sizeof(seg));
	size_t tmp_bytes = 0;

	CK(cuk_sample_tmp_bytes(N, V, &tmp_bytes));
	void *tmp = dev(tmp_bytes);
	for (uint32_t i = 0; i <= N; i++)
		seg[i] = i * V;
	CK(cudaMemcpy(dseg, seg, sizeof(seg), cudaMemcpyHostToDevice));
	CK(cudaMemset(dhist, 0, (uint64_t)N * cap * 4));
	for (int mode = 0; mode < 3; mode++) { /* greedy argmax, greedy + penalty, random */
		float temp = mode == 2 ? 0.8f : 0.0f, pen = mode == 1 ? 1.3f : 1.0f;
		struct cuk_sample_pre pre = {NULL, NULL, 0, mode == 1};
		fill(lg, (uint64_t)N * V, 3.0f);
		for (uint32_t i = 0; i < V; i++) { /* rows 1 and 3: nothing above -inf */
			lg[1 * V + i] = NAN;
			lg[3 * V + i] = i % 2 ? -INFINITY : NAN;
		}
		CK(cudaMemcpy(dlg, lg, (uint64_t)N * V * 4, cudaMemcpyHostToDevice));
		for (uint32_t r = 0; r < N; r++)
			sp[r] = (struct cuk_samp){.temperature = temp,
			                          .top_p = 1,
			                          .repeat_penalty = pen,
			                          .repeat_last_n = 8,
			                          .seed = 7 + r,
			                          .slot = r,
			                          .mask = CUK_NO_MASK};
		CK(cudaMemcpy(dsp, sp, sizeof(sp), cudaMemcpyHostToDevice));
		CK(cudaMemset(dids, 0x7f, N * 4));
		CK(cuk_sample(dlg, N, V, dsp, dhist, cap, temp > 0, &pre, tmp, tmp_bytes, keys,
		              vals, probs, dseg, dids, 0));
		CK(cudaMemcpy(ids, dids, N * 4, cudaMemcpyDeviceToHost));
		T_EQ(ids[1], -1);
		T_EQ(ids[3], -1);
		T_TRUE(ids[0] >= 0 && ids[0] < V && ids[2] >= 0 && ids[2] < V);
	}
	cudaFree(dlg), cudaFree(keys), cudaFree(probs), cudaFree(vals), cudaFree(dhist),
	        cudaFree(dids), cudaFree(dsp), cudaFree(dseg), cudaFree(tmp);
	free(lg);
}

int
main(void)
{
	int rc = kt_start();

	if (rc >= 0)
		return rc;
	T_RUN(test_dequant_mmv);
	T_RUN(test_norm_rope_swiglu);
	T_RUN(test_sampling_none);
	T_RUN(test_head_rmsnorm);
	T_RUN(test_rope_yarn);
	T_RUN(test_swiglu_oai);
	T_RUN(test_attention);
	T_RUN(test_sampling);
	return t_done();
}
