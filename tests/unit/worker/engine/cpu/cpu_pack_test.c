/*
 * cpu_pack_test.c - packed weights (engine/cpu/cpu_pack.c): every kernel
 * this CPU runs, and the scalar twin, give for each (row, token) the bits
 * of a reference computed from the file's own blocks, Σ_b fma(isum_b,
 * dw·dx, acc) with isum_b the exact integer dot, whatever the number of
 * tokens; and that reference is the float dot within the quantization's
 * error.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/rng.h"
#include "engine/cpu/cpu.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "gguf/quant.h"
#include "t.h"

#define K   352 /* elements per row: eleven blocks, so each type's last chunk is short */
#define NB  (K / 32)
#define TOK 19 /* tokens: two tiles of eight and a remainder */

/* The bytes of one file block of @type. */
static uint64_t
file_block_bytes(uint32_t type)
{
	return type == GGML_TYPE_Q8_0   ? 34
	       : type == GGML_TYPE_Q4_0 ? 18
	       : type == GGML_TYPE_Q5_0 ? 22
	       : type == GGML_TYPE_Q4_1 ? 20
	       : type == GGML_TYPE_Q5_1 ? 24
	                                : 17;
}

/* Whether @type's values are code·d + m (Q4_1, Q5_1). */
static bool
affine(uint32_t type)
{
	return type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1;
}

/*
 * Row @w's block @b's code of element @e as a signed value (code − offset;
 * MXFP4: its E2M1 value times two, from the OCP MX table; Q4_1, Q5_1: the
 * code, 0..31).
 */
static int32_t
file_code(uint32_t type, const uint8_t *w, uint64_t b, uint32_t e)
{
	static const int32_t e2m1_x2[8] = {0, 1, 2, 3, 4, 6, 8, 12};

	if (type == GGML_TYPE_Q8_0)
		return (int8_t)w[34 * b + 2 + e];
	const uint8_t *blk = w + b * file_block_bytes(type);
	/* Q4_0: d, qs; Q5_0: d, qh, qs; Q4_1: d, m, qs; Q5_1: d, m, qh, qs */
	const uint8_t *qs = blk + (type == GGML_TYPE_Q5_0    ? 6
	                           : type == GGML_TYPE_Q5_1  ? 8
	                           : type == GGML_TYPE_Q4_1  ? 4
	                           : type == GGML_TYPE_MXFP4 ? 1
	                                                     : 2);
	int32_t v = (qs[e % 16] >> (4 * (e / 16))) & 15;
	if (type == GGML_TYPE_MXFP4)
		return v & 8 ? -e2m1_x2[v & 7] : e2m1_x2[v];
	if (type == GGML_TYPE_Q4_0)
		return v - 8;
	if (type == GGML_TYPE_Q4_1)
		return v;
	uint32_t qh = (uint32_t)qs[-4] | (uint32_t)qs[-3] << 8 | (uint32_t)qs[-2] << 16 |
	              (uint32_t)qs[-1] << 24;
	return (v | (int32_t)((qh >> e) & 1) << 4) - (type == GGML_TYPE_Q5_0 ? 16 : 0);
}

/*
 * The reference from the file's blocks: exact integer sums, one fma per
 * block; Q4_1/Q5_1's mins m a second sum of m·dx times the codes' sum s.
 */
static float
reference(uint32_t type, const uint8_t *w, const struct cpu_q8b *x)
{
	uint64_t bb = file_block_bytes(type);
	float acc = 0.0f, accm = 0.0f;

	for (uint64_t b = 0; b < NB; b++) {
		int32_t s = 0;
		for (uint32_t e = 0; e < 32; e++)
			s += file_code(type, w, b, e) * x[b].q[e];
		/* MXFP4: 2^(e - 127) for the doubled values, halved */
		float dw = type == GGML_TYPE_MXFP4
		                   ? ldexpf(1.0f, (int)w[bb * b] - 128)
		                   : fp16_to_f32((uint16_t)(w[bb * b] | w[bb * b + 1] << 8));
		acc = fmaf((float)s, dw * x[b].d, acc);
		if (affine(type)) {
			int32_t xs = 0;
			for (uint32_t e = 0; e < 32; e++)
				xs += x[b].q[e];
			float m = fp16_to_f32((uint16_t)(w[bb * b + 2] | w[bb * b + 3] << 8));
			accm = fmaf((float)xs, m * x[b].d, accm);
		}
	}
	return affine(type) ? acc + accm : acc;
}

static void
check_type(uint32_t type, struct rng *r)
{
	static float wf[CPU_PACK_ROWS][K], xf[TOK][K], y[TOK][CPU_PACK_ROWS];
	static uint8_t rows[CPU_PACK_ROWS * NB * 34], g[CPU_PACK_ROWS * NB * 34];
	static struct cpu_q8b xq[TOK][NB];
	uint64_t rb = file_block_bytes(type) * NB;
	float bias[CPU_PACK_ROWS];
	enum cpu_isa best = cpu_isa_best();

	for (int rep = 0; rep < 30; rep++) {
		for (int i = 0; i < CPU_PACK_ROWS; i++) {
			bias[i] = rng_normalish(r);
			for (int k = 0; k < K; k++)
				wf[i][k] = rng_normalish(r) * (rep % 2 ? 0.01f : 3.0f);
			T_OK(quant_row(type, wf[i], rows + (uint64_t)i * rb, K));
		}
		for (int i = 0; i < 64; i++) /* arbitrary codes too: Q8_0's -128, every high bit */
			rows[rng_next(r) % (CPU_PACK_ROWS * rb)] ^= (uint8_t)rng_next(r);
		for (int i = 0; i < CPU_PACK_ROWS; i++) /* scales kept finite */
			for (uint64_t b = 0; b < NB; b++) {
				uint8_t *blk = rows + (uint64_t)i * rb + b * (rb / NB);
				if (type != GGML_TYPE_MXFP4) {
					blk[1] &= 0xbf; /* |d| < 4 */
					if (affine(type))
						blk[3] &= 0xbf; /* |m| < 4 */
				} else /* 2^-28..2^21; each fifth round e 0..2 (subnormal) */
					blk[0] = (uint8_t)(rep % 5 && rng_next(r) % 8
					                           ? 100 + rng_next(r) % 50
					                           : rng_next(r) % 3);
			}
		for (int t = 0; t < TOK; t++) {
			for (int k = 0; k < K; k++)
				xf[t][k] = rng_normalish(r) * (t % 3 ? 1.0f : 1e-3f);
			cpu_quant_act(GGML_TYPE_Q8_0, xf[t], xq[t], K, false);
		}
		cpu_pack_group(type, rows, rb, NB, g);
		if (type == GGML_TYPE_Q8_0) /* cpu.h's chunks: 4 blocks' scales, their codes */
			for (uint32_t i = 0; i < CPU_PACK_ROWS; i++)
				for (uint32_t e = 0; e < 4; e++) {
					const uint8_t *r0 = rows + i * rb, *r8 = r0 + 8 * 34;
					T_TRUE(g[2 * i + e % 2] == r0[e % 2] &&
					       g[16 + 2 * i + e % 2] == r0[34 + e % 2] &&
					       g[64 + 4 * i + e] == (r0[2 + e] ^ 0x80));
					/* the last chunk: blocks 8..10 at 8 · 272 */
					T_TRUE(g[2176 + 2 * i + e % 2] == r8[e % 2] &&
					       g[2176 + 48 + 4 * i + e] == (r8[2 + e] ^ 0x80));
				}
		for (enum cpu_isa isa = CPU_ISA_SCALAR; isa <= best; isa++)
			for (uint32_t nt = 1; nt <= TOK; nt += (nt < 9 ? 1 : 5)) {
				const float *bp = nt % 2 ? bias : NULL;
				memset(y, 0xff, sizeof(y));
				cpu_pack_mm(isa, type, g, NB, xq, NB, nt, &y[0][0], CPU_PACK_ROWS,
				            bp);
				for (uint32_t t = nt; t < TOK; t++) /* nothing written past nt */
					T_TRUE(memcmp(y[t], y[TOK - 1], sizeof(y[t])) == 0 &&
					       isnan(y[t][0]));
				for (uint32_t t = 0; t < nt; t++)
					for (int i = 0; i < CPU_PACK_ROWS; i++) {
						float want = reference(
						        type, rows + (uint64_t)i * rb, xq[t]);
						want = bp != NULL ? want + bp[i] : want;
						if (memcmp(&y[t][i], &want, sizeof(want)) != 0)
							T_FAIL_("%s isa %d nt %u: row %d token %u: "
							        "%.9g, want %.9g",
							        ggml_type_name(type), (int)isa, nt,
							        i, t, (double)y[t][i],
							        (double)want);
						if (t_failed_checks)
							return;
					}
			}
	}
}

/* Every kernel gives the reference's bits, for any number of tokens. */
static void
test_pack_kernels(void)
{
	static const uint32_t types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q5_0,
	                                 GGML_TYPE_Q4_1, GGML_TYPE_Q5_1, GGML_TYPE_MXFP4};
	struct rng r;

	if (cpu_isa_best() != CPU_ISA_VNNI)
		printf("SKIP: no %s here; only the kernels below it are tested\n",
		       cpu_isa_best() == CPU_ISA_AVX2 ? "AVX-512 VNNI" : "AVX2 or VNNI");
	rng_seed(&r, 17);
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]) && !t_failed_checks; k++) {
		T_TRUE(cpu_pack_supported(types[k]));
		check_type(types[k], &r);
	}
}

#define KK  512 /* K-quant rows: two super-blocks */
#define KNB (KK / 256)

/* The bytes of one file super-block of @type. */
static uint64_t
k_block_bytes(uint32_t type)
{
	return type == GGML_TYPE_Q2_K   ? 84
	       : type == GGML_TYPE_Q3_K ? 110
	       : type == GGML_TYPE_Q4_K ? 144
	       : type == GGML_TYPE_Q5_K ? 176
	                                : 210;
}

/*
 * Random K-quant rows, every byte of their codes and scales arbitrary but
 * for the F16 scales' top exponent bit (|d| < 4, kept finite).
 */
static void
k_rows(uint32_t type, struct rng *r, int rep, uint8_t *rows, uint64_t rb)
{
	static float wf[KK];
	uint64_t bb = k_block_bytes(type);

	for (int i = 0; i < CPU_PACK_ROWS; i++) {
		for (int k = 0; k < KK; k++)
			wf[k] = rng_normalish(r) * (rep % 2 ? 0.01f : 3.0f);
		T_OK(quant_row(type, wf, rows + (uint64_t)i * rb, KK));
	}
	for (int i = 0; i < 200; i++)
		rows[rng_next(r) % (CPU_PACK_ROWS * rb)] ^= (uint8_t)rng_next(r);
	for (int i = 0; i < CPU_PACK_ROWS; i++)
		for (uint64_t b = 0; b < KNB; b++) {
			uint8_t *blk = rows + (uint64_t)i * rb + b * bb;
			if (type == GGML_TYPE_Q2_K) { /* d, dmin at 80 */
				blk[81] &= 0xbf;
				blk[83] &= 0xbf;
			} else if (type == GGML_TYPE_Q3_K) { /* d at 108 */
				blk[109] &= 0xbf;
			} else if (type != GGML_TYPE_Q6_K) {
				blk[1] &= 0xbf;
				blk[3] &= 0xbf;
			} else {
				blk[209] &= 0xbf;
			}
		}
}

/*
 * Packed K-quants: every kernel gives, for each (row, token), the bits
 * of the row dot cpu_qdot_k_scalar computes from the file's super-blocks,
 * for any number of tokens, with and without bias.
 */
static void
check_type_k(uint32_t type, struct rng *r)
{
	static float xf[KK], y[TOK][CPU_PACK_ROWS];
	static uint8_t rows[CPU_PACK_ROWS * KNB * 210], g[KNB * 1680];
	static struct cpu_q8k xq[TOK][KNB];
	uint64_t rb = k_block_bytes(type) * KNB;
	float bias[CPU_PACK_ROWS];
	enum cpu_isa best = cpu_isa_best();

	T_TRUE(cpu_pack_supported(type) && cpu_pack_block_elems(type) == 256);
	for (int rep = 0; rep < 20 && !t_failed_checks; rep++) {
		k_rows(type, r, rep, rows, rb);
		for (int i = 0; i < CPU_PACK_ROWS; i++)
			bias[i] = rng_normalish(r);
		for (int t = 0; t < TOK; t++) {
			for (int k = 0; k < KK; k++)
				xf[k] = rng_normalish(r) * (t % 3 ? 1.0f : 1e-3f);
			if (t % 5 == 4) /* a saturated code: -127 and 127 */
				xf[t] = 1e3f, xf[t + 1] = -1e3f;
			cpu_quant_act(type, xf, xq[t], KK, false);
		}
		cpu_pack_group(type, rows, rb, KNB, g);
		for (enum cpu_isa isa = CPU_ISA_SCALAR; isa <= best; isa++)
			for (uint32_t nt = 1; nt <= TOK; nt += (nt < 9 ? 1 : 5)) {
				const float *bp = nt % 2 ? bias : NULL;
				memset(y, 0xff, sizeof(y));
				cpu_pack_mm(isa, type, g, KNB, xq, KNB, nt, &y[0][0], CPU_PACK_ROWS,
				            bp);
				for (uint32_t t = nt; t < TOK; t++)
					T_TRUE(isnan(y[t][0]) && isnan(y[t][CPU_PACK_ROWS - 1]));
				for (uint32_t t = 0; t < nt && !t_failed_checks; t++)
					for (int i = 0; i < CPU_PACK_ROWS; i++) {
						float want = cpu_qdot_k_scalar(
						        type, rows + (uint64_t)i * rb, xq[t], KK);
						want = bp != NULL ? want + bp[i] : want;
						if (memcmp(&y[t][i], &want, sizeof(want)) != 0) {
							T_FAIL_("%s isa %d nt %u: row %d token %u: "
							        "%.9g, want %.9g",
							        ggml_type_name(type), (int)isa, nt,
							        i, t, (double)y[t][i],
							        (double)want);
							return;
						}
					}
			}
	}
}

static void
test_pack_kernels_k(void)
{
	struct rng r;

	rng_seed(&r, 29);
	T_TRUE(cpu_pack_block_bytes(GGML_TYPE_Q6_K) == 8 * 210); /* the file's bytes */
	T_TRUE(cpu_pack_block_bytes(GGML_TYPE_Q2_K) == 8 * 84);
	check_type_k(GGML_TYPE_Q2_K, &r);
	check_type_k(GGML_TYPE_Q3_K, &r);
	check_type_k(GGML_TYPE_Q4_K, &r);
	check_type_k(GGML_TYPE_Q5_K, &r);
	check_type_k(GGML_TYPE_Q6_K, &r);
}

/* The reference is the float dot of the dequantized rows within the quantization's error. */
static void
test_pack_reference(void)
{
	static float w[K], x[K], dw[K];
	static uint8_t row[NB * 34];
	static struct cpu_q8b xq[NB];
	struct rng r;

	rng_seed(&r, 23);
	for (int rep = 0; rep < 60; rep++) {
		uint32_t type = rep % 6 == 0   ? GGML_TYPE_Q8_0
		                : rep % 6 == 1 ? GGML_TYPE_Q4_0
		                : rep % 6 == 2 ? GGML_TYPE_Q5_0
		                : rep % 6 == 3 ? GGML_TYPE_Q4_1
		                : rep % 6 == 4 ? GGML_TYPE_Q5_1
		                               : GGML_TYPE_MXFP4;
		double ref = 0, mag = 0;
		for (int k = 0; k < K; k++) {
			w[k] = rng_normalish(&r);
			x[k] = rng_normalish(&r);
		}
		T_OK(quant_row(type, w, row, K));
		T_TRUE(cpu_dequant_row(type, row, dw, K, false));
		cpu_quant_act(GGML_TYPE_Q8_0, x, xq, K, false);
		for (int k = 0; k < K; k++) {
			ref += (double)dw[k] * (double)x[k];
			mag += fabs((double)dw[k] * (double)x[k]);
		}
		/* the activations' Q8_0 rounding: half a step of amax/127 per element */
		T_NEAR((double)reference(type, row, xq), ref, mag * 0.02 + 1e-6);
	}
}

int
main(void)
{
	T_RUN(test_pack_kernels);
	T_RUN(test_pack_kernels_k);
	T_RUN(test_pack_reference);
	return t_done();
}
