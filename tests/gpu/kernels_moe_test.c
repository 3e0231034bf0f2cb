/*
 * kernels_moe_test.c - the expert kernels (gpt-oss, qwen3moe) against their CPU twins
 * on fresh random inputs, outputs poisoned (NaN) before each run:
 * - MXFP4 integer dots: activation quantization bit-identical to
 *   cpu_quant_q8b, mat-vecs vs cpu_qdot_scalar;
 * - mixture of experts: routing vs route_tokens (gpt-oss's softmax over the
 *   chosen logits; qwen3moe's over all, renormalized or not), the chosen
 *   experts' products (MXFP4, F32; Q8_0, Q4_K, Q6_K integer dots) with biases,
 *   the weighted sum.
 * The test exits 77 where no CUDA device exists.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "base/rng.h"
#include "engine/cpu/cpu.h"
#include "engine/model/model.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "gguf/quant.h"
#include "kernels.h"
#include "kernels_util.h"
#include "t.h"

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
	CK(cuk_moe_route(dlg, NE, T, K, false, false, dsel, dw, 0));
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
		sel[i] = (int32_t)(rng_next(&kt_rng) % NE);
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
 * qwen3moe's routing (route_tokens with MODEL_MOE_SOFTMAX_ALL) for one token: a softmax over
 * all of @lg in place, the top @K probabilities, with @norm divided by their sum.
 */
static void
route_all_ref(float *lg, uint32_t n_expert, uint32_t K, bool norm, int32_t *sel, float *w)
{
	float max = -INFINITY;
	double sum = 0.0;

	for (uint32_t e = 0; e < n_expert; e++)
		max = lg[e] > max ? lg[e] : max;
	for (uint32_t e = 0; e < n_expert; e++) {
		lg[e] = expf(lg[e] - max);
		sum += (double)lg[e];
	}
	for (uint32_t e = 0; e < n_expert; e++)
		lg[e] *= (float)(1.0 / sum);
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
	}
	sum = 0.0;
	for (uint32_t k = 0; norm && k < K; k++)
		sum += (double)w[k];
	for (uint32_t k = 0; norm && k < K; k++)
		w[k] /= (float)sum;
}

/*
 * qwen3moe's routing at Qwen3-30B-A3B's width (128 experts, 8 used) and the tiny one's (8,
 * 2), 37 tokens, renormalized or not: the experts equal route_all_ref's (a tie included:
 * the lower index first), the weights and the probabilities written over the logits
 * within expf's last bits (bound 1e-6).
 */
static void
test_moe_route_all(void)
{
	static const uint32_t shapes[][2] = {{128, 8}, {8, 2}};
	enum { T = 37 };

	for (int si = 0; si < 2; si++)
		for (int norm = 0; norm < 2; norm++) {
			uint32_t NE = shapes[si][0], K = shapes[si][1];
			float *lg = malloc(T * NE * 4), *pr = malloc(T * NE * 4),
			      *gpr = malloc(T * NE * 4), *w = malloc(T * K * 4),
			      *gw = malloc(T * K * 4);
			int32_t *sel = malloc(T * K * 4), *gsel = malloc(T * K * 4);
			float *dlg = dev(T * NE * 4), *dw = dev(T * K * 4);
			int32_t *dsel = dev(T * K * 4);
			double we = 0;

			fill(lg, T * NE, 2.0f);
			lg[3 * NE + 5] = lg[3 * NE + 2] = 9.0f; /* a tie at the top */
			memcpy(pr, lg, T * NE * 4);
			CK(cudaMemcpy(dlg, lg, T * NE * 4, cudaMemcpyHostToDevice));
			CK(cuk_moe_route(dlg, NE, T, K, true, norm, dsel, dw, 0));
			CK(cudaMemcpy(gsel, dsel, T * K * 4, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(gw, dw, T * K * 4, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(gpr, dlg, T * NE * 4, cudaMemcpyDeviceToHost));
			for (uint32_t t = 0; t < T; t++)
				route_all_ref(pr + t * NE, NE, K, norm, sel + t * K, w + t * K);
			for (uint32_t i = 0; i < T * K; i++)
				we = fmax(we, fabs((double)gw[i] - (double)w[i]));
			for (uint32_t i = 0; i < T * NE; i++)
				we = fmax(we, fabs((double)gpr[i] - (double)pr[i]));
			T_TRUE(memcmp(gsel, sel, T * K * 4) == 0 && sel[3 * K] == 2 &&
			       sel[3 * K + 1] == 5);
			printf("moe route, softmax over %u experts, %u used, %s: experts equal, "
			       "weights and probabilities within %.1e (bound 1e-6)\n",
			       NE, K, norm ? "renormalized" : "as they are", we);
			T_TRUE(we <= 1e-6);
			cudaFree(dlg), cudaFree(dw), cudaFree(dsel);
			free(lg), free(pr), free(gpr), free(w), free(gw), free(sel), free(gsel);
		}
}

/*
 * Integer-dot experts (qwen3moe's Q8_0 and Q4_K_M files): gate/up-shaped products (96
 * rows of 256 per expert, 8 experts, each of 37 tokens' 4 choices at random) of Q8_0,
 * Q4_K and Q6_K weights against the rows cuk_quant_act quantized, with a bias: within
 * 1e-5 of cpu_qdot_scalar on cpu_quant_q8b / cpu_quant_q8k's rows, and each product
 * bit for bit cuk_mmvq's result for its expert's row and its token (the same lane sums).
 */
static void
test_moe_mmvq(void)
{
	static const uint32_t qtypes[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K};
	enum { NE = MOE_NE, K = MOE_K, E = 256, F = MOE_F, T = MOE_T, N = MOE_N };
	int32_t sel[N], *dsel = dev(sizeof(sel));
	float *x = malloc(T * E * 4), *bias = malloc(NE * F * 4), *deq = malloc(NE * F * E * 4);
	float *y = malloc(N * F * 4), *ym = malloc((uint64_t)T * NE * F * 4);
	float *dx = dev(T * E * 4), *db = dev(NE * F * 4), *dy = dev(N * F * 4);
	float *dym = dev((uint64_t)T * NE * F * 4);
	double *ref = malloc(N * F * 8);
	uint8_t *cq = malloc((uint64_t)T * E * 2);

	for (uint32_t i = 0; i < N; i++)
		sel[i] = (int32_t)(rng_next(&kt_rng) % NE);
	fill(x, T * E, 1.0f);
	fill(bias, NE * F, 0.5f);
	CK(cudaMemcpy(dsel, sel, sizeof(sel), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dx, x, T * E * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, bias, NE * F * 4, cudaMemcpyHostToDevice));
	for (size_t ti = 0; ti < sizeof(qtypes) / sizeof(qtypes[0]); ti++) {
		uint32_t type = qtypes[ti];
		enum cuk_act fmt = cuk_act_of(type);
		uint64_t xq_ld = cuk_act_row_bytes(fmt, E), rb = 0;
		uint64_t crow = fmt == CUK_ACT_Q8K ? E / 256 * sizeof(struct cpu_q8k)
		                                   : E / 32 * sizeof(struct cpu_q8b);
		struct cuk_mat wm;
		void *d = make_mat(type, NE * F, E, &wm, deq), *dxq = dev(T * xq_ld);
		uint8_t *hw = malloc((uint64_t)NE * F * wm.row_bytes);

		ggml_row_bytes(type, E, &rb);
		CK(cudaMemcpy(hw, wm.data, (uint64_t)NE * F * wm.row_bytes,
		              cudaMemcpyDeviceToHost));
		CK(cuk_quant_act(fmt, dx, E, E, T, dxq, xq_ld, 0));
		for (uint32_t t = 0; t < T; t++) {
			if (fmt == CUK_ACT_Q8K)
				cpu_quant_q8k(x + t * E, (struct cpu_q8k *)(void *)(cq + t * crow),
				              E);
			else
				cpu_quant_q8b(x + t * E, (struct cpu_q8b *)(void *)(cq + t * crow),
				              E);
			CK(cuk_mmvq(&wm, 0, NE * F, (const uint8_t *)dxq + t * xq_ld, xq_ld, 1,
			            dym + (uint64_t)t * NE * F, NE * F, db, 0));
		}
		for (uint32_t p = 0; p < N; p++)
			for (uint32_t i = 0; i < F; i++) {
				uint64_t er = (uint64_t)sel[p] * F + i;
				ref[p * F + i] = (double)(cpu_qdot_scalar(type, hw + er * rb,
				                                          cq + (p / K) * crow, E) +
				                          bias[er]);
			}
		struct cuk_moe_mmv_args a = {.w = &wm,
		                             .rows_e = F,
		                             .sel = dsel,
		                             .n = N,
		                             .x_div = K,
		                             .x = NULL,
		                             .x_ld = E,
		                             .xq = dxq,
		                             .xq_ld = xq_ld,
		                             .y = dy,
		                             .y_ld = F,
		                             .bias = db};
		CK(cudaMemset(dy, 0xff, N * F * 4));
		CK(cuk_moe_mmv(&a, 0));
		CK(cudaMemcpy(y, dy, N * F * 4, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(ym, dym, (uint64_t)T * NE * F * 4, cudaMemcpyDeviceToHost));
		uint32_t differ = 0;
		for (uint32_t p = 0; p < N; p++)
			for (uint32_t i = 0; i < F; i++)
				differ += memcmp(&y[p * F + i],
				                 &ym[(uint64_t)(p / K) * NE * F +
				                     (uint64_t)sel[p] * F + i],
				                 4) != 0;
		double e = rel_err(y, ref, N * F);
		printf("moe mmvq %s: rel err %.2e (bound 1e-5), %u of %u differ from cuk_mmvq's "
		       "bits\n",
		       ggml_type_get(type)->name, e, differ, N * F);
		T_TRUE(e <= 1e-5);
		T_EQ(differ, 0);
		cudaFree(d), cudaFree(dxq);
		free(hw);
	}
	cudaFree(dsel), cudaFree(dx), cudaFree(db), cudaFree(dy), cudaFree(dym);
	free(x), free(bias), free(deq), free(y), free(ym), free(ref), free(cq);
}

int
main(void)
{
	int rc = kt_start();

	if (rc >= 0)
		return rc;
	T_RUN(test_mxfp4_q8);
	T_RUN(test_moe_route);
	T_RUN(test_moe_mmv);
	T_RUN(test_moe_route_all);
	T_RUN(test_moe_mmvq);
	return t_done();
}
