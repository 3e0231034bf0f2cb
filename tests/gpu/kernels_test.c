/*
 * kernels_test.c - every CUDA kernel against its CPU twin on fresh random
 * inputs of several shapes (odd sizes and the real model shapes), outputs
 * poisoned (NaN) before each run, NaN never passing:
 * - dequantization and embedding: bit-identical to dequant_row() for all 14 types;
 * - mat-vec: within fp32 rounding of a double reference, and bit-identical
 *   for a row whatever the batch;
 * - MXFP4 integer dots: activation quantization bit-identical to
 *   cpu_quant_q8b, mat-vecs vs cpu_qdot_scalar;
 * - RMSNorm (with the fused residual), RoPE (normal, NEOX, factors, YaRN),
 *   SwiGLU and gpt-oss's clamped SwiGLU;
 * - mixture of experts: routing vs route_tokens, the chosen experts'
 *   products (MXFP4, F32) with biases, the weighted sum;
 * - KV append + attention (F16 and F32 caches, GQA, several KV splits,
 *   sinks, sliding windows over a ring) vs cpu_attn_head;
 * - sampling: the same token as samp_sample() over 10,000 draws per filter.
 * The test exits 77 where no CUDA device exists.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "base/rng.h"
#include "engine/cpu/cpu.h"
#include "engine/model/model.h"
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

	model_yarn_params(hd, 150000.0f, 32.0f, 4096, 32.0f, 1.0f, &cy);
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

/* x quantized by cuk_quant_q8 on the device, row by row as struct cpu_q8b blocks. */
static bool
q8_from_device(const void *dxq, uint64_t xq_ld, uint32_t n, uint32_t rows, struct cpu_q8b *out)
{
	uint32_t nb = n / 32;
	uint8_t *h = malloc(xq_ld * rows);
	bool ok = cudaMemcpy(h, dxq, xq_ld * rows, cudaMemcpyDeviceToHost) == cudaSuccess;

	for (uint32_t i = 0; ok && i < rows; i++)
		for (uint32_t c = 0; c < nb; c++) {
			struct cpu_q8b *b = &out[(uint64_t)i * nb + c];
			memcpy(&b->d, h + i * xq_ld + 4 * c, 4);
			memcpy(b->q, h + i * xq_ld + (4 * nb + 15) / 16 * 16 + 32 * c, 32);
		}
	free(h);
	return ok;
}

/*
 * MXFP4 integer dots: activations quantized on the device equal
 * cpu_quant_q8b's (scales and codes, a zero block included); cuk_mmv_q8 at
 * B = 1 and 8 (from row 2, with a bias) against cpu_qdot_scalar + bias on
 * the same blocks. The integer sums are the same; only the float sum of the
 * blocks' terms runs in another order (bound 1e-5 on ‖Δ‖/‖ref‖); a row's
 * result is bit-identical whatever B.
 */
static void
test_mxfp4_q8(void)
{
	static const uint32_t shapes[][2] = {{7, 2880}, {33, 96}, {70, 512}};

	for (size_t si = 0; si < 3; si++) {
		uint32_t rows = shapes[si][0], ne0 = shapes[si][1], nb = ne0 / 32, R = rows - 2;
		uint64_t rb = 0, xq_ld = cuk_q8_row_bytes(ne0);
		struct cuk_mat w;
		float *deq = malloc((uint64_t)rows * ne0 * 4), *x = malloc(8ull * ne0 * 4);
		float *bias = malloc(rows * 4), *y = malloc(8ull * rows * 4), y1[64];
		struct cpu_q8b *hq = malloc(8ull * nb * sizeof(*hq)),
		               *gq = malloc(8ull * nb * sizeof(*gq));
		double *ref = malloc(8ull * rows * 8), worst = 0;
		void *d = make_mat(GGML_TYPE_MXFP4, rows, ne0, &w, deq), *dxq = dev(8 * xq_ld);
		float *dx = dev(8ull * ne0 * 4), *dy = dev(8ull * rows * 4), *db = dev(rows * 4);
		uint8_t *hw = malloc((uint64_t)rows * w.row_bytes);

		ggml_row_bytes(GGML_TYPE_MXFP4, ne0, &rb);
		fill(x, 8ull * ne0, 1.0f);
		memset(x + ne0, 0, 32 * 4); /* a block of zeros: scale 0, codes 0 */
		fill(bias, rows, 0.5f);
		CK(cudaMemcpy(dx, x, 8ull * ne0 * 4, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(db, bias, rows * 4, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(hw, w.data, (uint64_t)rows * w.row_bytes, cudaMemcpyDeviceToHost));
		CK(cuk_quant_q8(dx, ne0, ne0, 8, dxq, xq_ld, 0));
		T_TRUE(q8_from_device(dxq, xq_ld, ne0, 8, gq));
		for (uint32_t b = 0; b < 8; b++)
			cpu_quant_q8b(x + (uint64_t)b * ne0, hq + (uint64_t)b * nb, ne0);
		for (uint64_t i = 0; i < 8ull * nb; i++)
			if (memcmp(&gq[i].d, &hq[i].d, 4) != 0 ||
			    memcmp(gq[i].q, hq[i].q, 32) != 0) {
				T_FAIL_("ne0 %u: quantized block %llu differs (scale %g vs %g)",
				        ne0, (unsigned long long)i, (double)gq[i].d,
				        (double)hq[i].d);
				break;
			}
		for (uint32_t b = 0; b < 8; b++)
			for (uint32_t i = 0; i < R; i++)
				ref[b * R + i] =
				        (double)(cpu_qdot_scalar(GGML_TYPE_MXFP4, hw + (i + 2) * rb,
				                                 hq + (uint64_t)b * nb, ne0) +
				                 bias[i + 2]);
		for (uint32_t B = 1; B <= 8; B += 7) {
			CK(cudaMemset(dy, 0xff, 8ull * rows * 4));
			CK(cuk_mmv_q8(&w, 2, R, dxq, xq_ld, B, dy, R, db, 0));
			CK(cudaMemcpy(y, dy, (uint64_t)B * R * 4, cudaMemcpyDeviceToHost));
			double e = rel_err(y, ref, (uint64_t)B * R);
			worst = !(e <= worst) ? e : worst;
			if (B == 1)
				memcpy(y1, y, (R < 64 ? R : 64) * 4);
			else if (memcmp(y1, y, (R < 64 ? R : 64) * 4) != 0)
				T_FAIL_("mxfp4 q8: row results depend on the batch size");
		}
		printf("mxfp4 q8 %ux%u: activations equal cpu_quant_q8b, mmv rel err %.2e (bound "
		       "1e-5)\n",
		       rows, ne0, worst);
		T_TRUE(worst <= 1e-5);
		cudaFree(d), cudaFree(dxq), cudaFree(dx), cudaFree(dy), cudaFree(db);
		free(deq), free(x), free(bias), free(y), free(hq), free(gq), free(ref), free(hw);
	}
}

/* route_tokens of cpu_forward.c for one token: top @K of @lg (lower index on ties), softmax. */
static void
route_ref(const float *lg, uint32_t n_expert, uint32_t K, int32_t *sel, float *w)
{
	float max = -INFINITY;
	double sum = 0.0;

	for (uint32_t k = 0; k < K; k++) {
		uint32_t best = UINT32_MAX;
		for (uint32_t e = 0; e < n_expert; e++) {
			bool taken = false;
			for (uint32_t i = 0; i < k; i++)
				taken |= (uint32_t)sel[i] == e;
			if (!taken && (best == UINT32_MAX || lg[e] > lg[best]))
				best = e;
		}
		sel[k] = (int32_t)best;
		w[k] = lg[best];
		max = w[k] > max ? w[k] : max;
	}
	for (uint32_t k = 0; k < K; k++) {
		w[k] = expf(w[k] - max);
		sum += (double)w[k];
	}
	for (uint32_t k = 0; k < K; k++)
		w[k] *= (float)(1.0 / sum);
}

enum { MOE_NE = 8, MOE_K = 4, MOE_E = 64, MOE_F = 96, MOE_T = 37, MOE_N = MOE_T * MOE_K };

/*
 * Routing and the weighted sum at gpt-oss's tiny shape (8 experts, 4 used),
 * 37 tokens: the experts equal route_tokens' (a tie included: the lower
 * index first), the weights within expf's last bits (bound 1e-6), and the
 * weighted sum bit-identical to moe_block's (the same products and adds).
 */
static void
test_moe_route(void)
{
	enum { NE = MOE_NE, K = MOE_K, F = MOE_F, T = MOE_T, N = MOE_N };
	float lg[T][NE], w[N], gw[N], *dlg = dev(sizeof(lg)), *dw = dev(sizeof(w));
	int32_t sel[N], gsel[N], *dsel = dev(sizeof(sel));
	float *y = malloc(N * F * 4), *out = malloc(T * F * 4), *cout = malloc(T * F * 4);
	float *dy = dev(N * F * 4), *dout = dev(T * F * 4);
	double we = 0;

	fill(&lg[0][0], T * NE, 1.0f);
	lg[3][5] = lg[3][2] = 4.0f;
	CK(cudaMemcpy(dlg, lg, sizeof(lg), cudaMemcpyHostToDevice));
	CK(cuk_moe_route(dlg, NE, T, K, dsel, dw, 0));
	CK(cudaMemcpy(gsel, dsel, sizeof(gsel), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(gw, dw, sizeof(gw), cudaMemcpyDeviceToHost));
	for (uint32_t t = 0; t < T; t++)
		route_ref(lg[t], NE, K, sel + t * K, w + t * K);
	for (uint32_t i = 0; i < N; i++)
		we = fabs((double)gw[i] - (double)w[i]) > we ? fabs((double)gw[i] - (double)w[i])
		                                             : we;
	T_TRUE(memcmp(gsel, sel, sizeof(sel)) == 0 && sel[3 * K] == 2 && sel[3 * K + 1] == 5);
	printf("moe route: experts equal route_tokens', weights within %.1e (bound 1e-6)\n", we);
	T_TRUE(we <= 1e-6);
	fill(y, N * F, 1.0f);
	CK(cudaMemcpy(dy, y, N * F * 4, cudaMemcpyHostToDevice));
	CK(cuk_moe_combine(dy, F, dw, K, F, T, dout, F, 0));
	CK(cudaMemcpy(out, dout, T * F * 4, cudaMemcpyDeviceToHost));
	for (uint32_t t = 0; t < T; t++)
		for (uint32_t c = 0; c < F; c++) {
			float acc = y[(t * K) * F + c] * gw[t * K];
			for (uint32_t k = 1; k < K; k++)
				acc += y[(t * K + k) * F + c] * gw[t * K + k];
			cout[t * F + c] = acc;
		}
	T_TRUE(memcmp(out, cout, T * F * 4) == 0);
	cudaFree(dlg), cudaFree(dw), cudaFree(dsel), cudaFree(dy), cudaFree(dout);
	free(y), free(out), free(cout);
}

/* The reference product of expert row @er with token row @t, plus its bias. */
static double
moe_ref(bool q8, const uint8_t *hw, uint64_t row_bytes, const float *deq, const float *x,
        const struct cpu_q8b *hq, uint64_t er, uint32_t t, float bias)
{
	enum { E = MOE_E };
	double s = 0;

	if (q8)
		return (double)(cpu_qdot_scalar(GGML_TYPE_MXFP4, hw + er * row_bytes,
		                                hq + t * (E / 32), E) +
		                bias);
	for (uint32_t k = 0; k < E; k++)
		s += (double)deq[er * E + k] * (double)x[(uint64_t)t * E + k];
	return (double)((float)s + bias);
}

/*
 * The chosen experts' products with biases (gate/up shape: 96 rows of 64
 * per expert), each token's 4 choices drawn at random: MXFP4 against
 * cpu_qdot_scalar on the same quantized rows, F32 against a double
 * reference; bound 1e-5 as for mmv (only the float sums' order differs).
 */
static void
test_moe_mmv(void)
{
	enum { NE = MOE_NE, K = MOE_K, E = MOE_E, F = MOE_F, T = MOE_T, N = MOE_N };
	int32_t sel[N], *dsel = dev(sizeof(sel));
	uint64_t xq_ld = cuk_q8_row_bytes(E);
	float *x = malloc(T * E * 4), *bias = malloc(NE * F * 4), *deq = malloc(NE * F * E * 4);
	float *y = malloc(N * F * 4), *dx = dev(T * E * 4), *db = dev(NE * F * 4);
	float *dy = dev(N * F * 4);
	double *ref = malloc(N * F * 8);
	void *dxq = dev(T * xq_ld);
	struct cpu_q8b *hq = malloc(T * (E / 32) * sizeof(*hq));

	for (uint32_t i = 0; i < N; i++)
		sel[i] = (int32_t)(rng_next(&r) % NE);
	fill(x, T * E, 1.0f);
	fill(bias, NE * F, 0.5f);
	CK(cudaMemcpy(dsel, sel, sizeof(sel), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dx, x, T * E * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, bias, NE * F * 4, cudaMemcpyHostToDevice));
	CK(cuk_quant_q8(dx, E, E, T, dxq, xq_ld, 0));
	for (uint32_t t = 0; t < T; t++)
		cpu_quant_q8b(x + t * E, hq + t * (E / 32), E);
	for (int q8 = 0; q8 < 2; q8++) {
		struct cuk_mat wm;
		void *d = make_mat(q8 ? GGML_TYPE_MXFP4 : GGML_TYPE_F32, NE * F, E, &wm, deq);
		uint8_t *hw = malloc((uint64_t)NE * F * wm.row_bytes);
		CK(cudaMemcpy(hw, wm.data, (uint64_t)NE * F * wm.row_bytes,
		              cudaMemcpyDeviceToHost));
		for (uint32_t p = 0; p < N; p++)
			for (uint32_t i = 0; i < F; i++) {
				uint64_t er = (uint64_t)sel[p] * F + i;
				ref[p * F + i] = moe_ref(q8, hw, wm.row_bytes, deq, x, hq, er,
				                         p / K, bias[er]);
			}
		struct cuk_moe_mmv_args a = {.w = &wm,
		                             .rows_e = F,
		                             .sel = dsel,
		                             .n = N,
		                             .x_div = K,
		                             .x = dx,
		                             .x_ld = E,
		                             .xq = q8 ? dxq : NULL,
		                             .xq_ld = xq_ld,
		                             .y = dy,
		                             .y_ld = F,
		                             .bias = db};
		CK(cudaMemset(dy, 0xff, N * F * 4));
		CK(cuk_moe_mmv(&a, 0));
		CK(cudaMemcpy(y, dy, N * F * 4, cudaMemcpyDeviceToHost));
		double e = rel_err(y, ref, N * F);
		printf("moe mmv %s: rel err %.2e (bound 1e-5)\n", q8 ? "MXFP4 q8" : "F32", e);
		T_TRUE(e <= 1e-5);
		cudaFree(d);
		free(hw);
	}
	cudaFree(dsel), cudaFree(dx), cudaFree(db), cudaFree(dy), cudaFree(dxq);
	free(x), free(bias), free(deq), free(y), free(ref), free(hq);
}

/*
 * One attention case: P tokens at positions 0..P-1 appended and attended
 * @chunk at a time (cells: n_ctx without a window, else window + chunk, a
 * ring that wraps), against cpu_attn_head over the same K/V (rounded as the
 * cache stores them) for the first and last token of every chunk and the
 * tokens at 255 and 256. The worst relative error.
 */
struct attn_case {
	uint32_t d, nh, nkv, window, chunk;
	bool f16, sinks;
};

static double
attn_run(const struct attn_case *c)
{
	uint32_t d = c->d, nh = c->nh, nkv = c->nkv, P = 613, n_ctx = 700, kvd = nkv * d;
	uint32_t ld = (nh + 2 * nkv) * d, cells = c->window ? c->window + c->chunk : n_ctx;
	uint32_t seen = c->window ? c->window : n_ctx;
	uint32_t n_split = (seen + CUK_ATTN_SPLIT - 1) / CUK_ATTN_SPLIT;
	size_t es = c->f16 ? 2 : 4;
	float *qkv = malloc((uint64_t)P * ld * 4), *out = malloc((uint64_t)P * nh * d * 4), sk[64];
	float *dqkv = dev((uint64_t)P * ld * 4), *dout = dev((uint64_t)P * nh * d * 4);
	float *dsk = dev(sizeof(sk));
	float *part = dev(cuk_attention_part_floats(c->chunk, nh, d, n_split) * 4);
	void *kb = dev((uint64_t)cells * kvd * es), *vb = dev((uint64_t)cells * kvd * es);
	void **tab = dev(2 * sizeof(void *)), *ptrs[2] = {kb, vb};
	uint32_t *slot = dev(P * 4), *pos = dev(P * 4), *hp = malloc(P * 4);

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
	bool ok = true;
	for (uint32_t t0 = 0; t0 < P && ok; t0 += c->chunk) {
		uint32_t n = P - t0 < c->chunk ? P - t0 : c->chunk;
		ok = cuk_kv_append(&kv, dqkv + (uint64_t)t0 * ld, ld, (uint64_t)nh * d, n, slot,
		                   pos + t0, 0) == cudaSuccess &&
		     cuk_attention(&kv, dqkv + (uint64_t)t0 * ld, ld, n, slot, pos + t0, nh, nkv, d,
		                   n_split, c->sinks ? dsk : NULL, part,
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
	cudaFree(dqkv), cudaFree(dout), cudaFree(dsk), cudaFree(part), cudaFree(kb), cudaFree(vb),
	        cudaFree(tab), cudaFree(slot), cudaFree(pos);
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
 */
static void
test_attention(void)
{
	static const struct attn_case cases[] = {
	        {8, 8, 4, 0, 613, false, false},    {64, 14, 2, 0, 613, false, false},
	        {96, 32, 32, 0, 613, false, false}, {128, 8, 2, 0, 613, false, false},
	        {64, 8, 2, 128, 64, false, true},   {64, 8, 2, 300, 7, false, true},
	        {96, 32, 32, 0, 100, false, true},
	};

	for (int f16 = 0; f16 < 2; f16++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct attn_case c = cases[i];
			c.f16 = f16;
			double e = attn_run(&c), bound = f16 ? 1e-4 : 1e-5;
			printf("attention d=%u heads %u/%u window %u chunk %u sinks %d %s cache: "
			       "rel err %.2e (bound %.0e)\n",
			       c.d, c.nh, c.nkv, c.window, c.chunk, c.sinks, f16 ? "F16" : "F32", e,
			       bound);
			T_TRUE(e <= bound);
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
	T_RUN(test_rope_yarn);
	T_RUN(test_swiglu_oai);
	T_RUN(test_mxfp4_q8);
	T_RUN(test_moe_route);
	T_RUN(test_moe_mmv);
	T_RUN(test_attention);
	T_RUN(test_sampling);
	return t_done();
}
