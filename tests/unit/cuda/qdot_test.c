/*
 * qdot_test.c - the integer-dot mat-vec of the CUDA backend (cuk_mmvq,
 * cuk_quant_act; their arithmetic is cuda/kernels/qdot.cuh) checked on the
 * host, without a GPU, through its emulation (qdot_emul.cu runs the same
 * code a lane at a time):
 * - activations quantized bit for bit as cpu_quant_q8b / cpu_quant_q8k
 *   (scales, codes, code sums; a zero block and an outlier included);
 * - every weight type's row dot (random bytes: every code pattern, sane
 *   scales) against cpu_qdot_scalar on the same quantized activations: the
 *   integer sums are the same, only the float order differs (bound 1e-5 on
 *   ‖Δ‖/‖ref‖), at row lengths that end a warp's pass early or late;
 * - a row's result is the same bits at B = 1 and B = 8.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "engine/cpu/cpu.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "t.h"
#include "unit/cuda/qdot_emul.h"

static const uint32_t types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                                 GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};

static void
fill_x(struct rng *r, float *x, uint64_t n, uint32_t row)
{
	for (uint64_t i = 0; i < n; i++)
		x[i] = rng_normalish(r) * 0.7f;
	if (row == 1) /* a zero block (and super-block): scale 0, codes 0 */
		memset(x, 0, 256 * sizeof(float));
	if (row == 2)
		x[n / 2] = 40.0f;
}

/* A random row of @type: random bytes, then sane F16 scales (and mins) where the type has them. */
static void
fill_w(struct rng *r, uint32_t type, uint8_t *w, uint64_t n)
{
	const struct ggml_type_info *t = ggml_type_get(type);
	uint64_t units = n / t->block_size;

	for (uint64_t i = 0; i < units * t->block_bytes; i++)
		w[i] = (uint8_t)rng_next(r);
	for (uint64_t u = 0; u < units; u++) {
		uint8_t *b = w + u * t->block_bytes;
		uint16_t d = fp16_from_f32(0.001f + 0.05f * rng_uniform(r));
		uint16_t m = fp16_from_f32(0.05f * (rng_uniform(r) - 0.5f));
		uint32_t at = type == GGML_TYPE_Q6_K ? 208 : 0;
		memcpy(b + at, &d, 2);
		if (type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1 || type == GGML_TYPE_Q4_K ||
		    type == GGML_TYPE_Q5_K)
			memcpy(b + 2, &m, 2);
	}
}

static bool
same_q8(const uint8_t *row, const struct cpu_q8b *ref, uint32_t n)
{
	for (uint32_t c = 0; c < n / 32; c++) {
		float d;
		int32_t s;
		memcpy(&d, row + 4 * c, 4);
		memcpy(&s, row + cuk_q8_sums_off(n) + 4 * c, 4);
		if (memcmp(&d, &ref[c].d, 4) != 0 || s != ref[c].s ||
		    memcmp(row + cuk_q8_codes_off(n) + 32 * c, ref[c].q, 32) != 0)
			return false;
	}
	return true;
}

static bool
same_q8k(const uint8_t *row, const struct cpu_q8k *ref, uint32_t n)
{
	for (uint32_t u = 0; u < n / 256; u++) {
		float d;
		memcpy(&d, row + 4 * u, 4);
		if (memcmp(&d, &ref[u].d, 4) != 0 ||
		    memcmp(row + cuk_q8k_bsums_off(n) + 32 * u, ref[u].bsums, 32) != 0 ||
		    memcmp(row + cuk_q8k_codes_off(n) + 256 * u, ref[u].q, 256) != 0)
			return false;
	}
	return true;
}

static void
test_quant(void)
{
	static const uint32_t ns[] = {256, 512, 3072, 4864};
	struct rng r;

	rng_seed(&r, 17);
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		uint32_t n = ns[i];
		float *x = malloc(n * sizeof(float));
		uint8_t *row = malloc(cuk_q8_row_bytes(n) + cuk_q8k_row_bytes(n));
		struct cpu_q8b *qb = malloc(n / 32 * sizeof(*qb));
		struct cpu_q8k *qk = malloc(n / 256 * sizeof(*qk));
		for (uint32_t t = 0; t < 3; t++) {
			fill_x(&r, x, n, t);
			cpu_quant_q8b(x, qb, n);
			cpu_quant_q8k(x, qk, n);
			T_TRUE(qdot_emul_quant(CUK_ACT_Q8, x, n, row));
			if (!same_q8(row, qb, n))
				T_FAIL_("n %u row %u: Q8 activations differ from cpu_quant_q8b", n,
				        t);
			T_TRUE(qdot_emul_quant(CUK_ACT_Q8K, x, n, row));
			if (!same_q8k(row, qk, n))
				T_FAIL_("n %u row %u: Q8K activations differ from cpu_quant_q8k", n,
				        t);
		}
		free(x), free(row), free(qb), free(qk);
	}
}

/* One type at one row length: R rows × 8 activation rows. */
static double
dot_case(struct rng *r, uint32_t type, uint32_t n, bool *same_bits)
{
	enum { R = 6, NB = 8 };
	const struct ggml_type_info *t = ggml_type_get(type);
	enum cuk_act fmt = cuk_act_of(type);
	uint64_t rb = n / t->block_size * t->block_bytes, xq_ld = cuk_act_row_bytes(fmt, n);
	uint64_t cpu_row = fmt == CUK_ACT_Q8K ? n / 256 * sizeof(struct cpu_q8k)
	                                      : n / 32 * sizeof(struct cpu_q8b);
	uint8_t *w = aligned_alloc(16, (R * rb + 15) / 16 * 16),
	        *xq = aligned_alloc(16, NB * xq_ld);
	void *cq = malloc(NB * cpu_row);
	float *x = malloc((uint64_t)NB * n * sizeof(float)), y8[NB], y1;
	double num = 0, den = 0;

	for (uint32_t b = 0; b < NB; b++) {
		fill_x(r, x + (uint64_t)b * n, n, b);
		qdot_emul_quant(fmt, x + (uint64_t)b * n, n, xq + b * xq_ld);
		if (fmt == CUK_ACT_Q8K)
			cpu_quant_q8k(x + (uint64_t)b * n, (struct cpu_q8k *)cq + b * (n / 256), n);
		else
			cpu_quant_q8b(x + (uint64_t)b * n, (struct cpu_q8b *)cq + b * (n / 32), n);
	}
	for (uint32_t i = 0; i < R; i++) {
		uint8_t *wr = w + i * rb;
		fill_w(r, type, wr, n);
		if (!qdot_emul_row(type, wr, n, xq, xq_ld, NB, y8))
			return (double)INFINITY;
		for (uint32_t b = 0; b < NB; b++) {
			double ref =
			        cpu_qdot_scalar(type, wr, (const uint8_t *)cq + b * cpu_row, n);
			double got = y8[b];
			num += (got - ref) * (got - ref);
			den += ref * ref;
			if (!isfinite(got - ref))
				num = (double)INFINITY;
			qdot_emul_row(type, wr, n, xq + b * xq_ld, xq_ld, 1, &y1);
			*same_bits = *same_bits && memcmp(&y1, &y8[b], 4) == 0;
		}
	}
	free(w), free(xq), free(cq), free(x);
	return den > 0 ? sqrt(num / den) : (double)INFINITY;
}

static void
test_dots(void)
{
	static const uint32_t ns[] = {256, 896, 1024 + 32, 3072, 4864, 8192};
	struct rng r;

	rng_seed(&r, 29);
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		uint32_t type = types[ti];
		double worst = 0;
		bool same = true;
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
			if (ns[i] % ggml_type_get(type)->block_size != 0)
				continue;
			double e = dot_case(&r, type, ns[i], &same);
			worst = !(e <= worst) ? e : worst;
		}
		printf("%-5s emulated mmvq vs cpu_qdot_scalar: rel err %.2e (bound 1e-5)%s\n",
		       ggml_type_get(type)->name, worst, same ? "" : ", B=1 and B=8 DIFFER");
		T_TRUE(worst <= 1e-5);
		T_TRUE(same);
	}
}

int
main(void)
{
	T_RUN(test_quant);
	T_RUN(test_dots);
	return t_done();
}
