/*
 * cpu_pack_f_test.c - packed F32, F16 and BF16 weights
 * (engine/cpu/cpu_pack_f.c): the AVX2 kernel and the scalar twin give for
 * each (row, token) the bits of one fma chain in element order over the
 * file's own row, whatever the number of tokens and groups per call, with a
 * bias or without; and that chain is the exact dot within float rounding.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/rng.h"
#include "engine/cpu/cpu.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "t.h"

#define NG     13 /* groups: 104 rows, so decode's tiles of 8, 4, 2 and 1 groups all run */
#define ROWS   (NG * CPU_PACK_ROWS)
#define TOK    19  /* tokens: two tiles of eight and a remainder */
#define MAXN   172 /* elements a row, at most */
#define ES_MAX 4

static uint8_t file[ROWS * MAXN * ES_MAX], packed[ROWS * MAXN * ES_MAX];
static float x[TOK * MAXN], bias[ROWS], want[TOK][ROWS], got[TOK][ROWS];

/* Element @k of file row @r of @type (@n elements a row), as a float. */
static float
file_elem(uint32_t type, uint32_t r, uint64_t k, uint64_t n)
{
	float f;

	switch (type) {
	case GGML_TYPE_F32:
		memcpy(&f, file + 4 * (r * n + k), 4);
		return f;
	case GGML_TYPE_F16:
		return fp16_load(file + 2 * (r * n + k));
	default: {
		uint16_t b;
		memcpy(&b, file + 2 * (r * n + k), 2);
		return bf16_to_f32(b);
	}
	}
}

/* @type's random rows of @n elements, into file[] (the file's bytes). */
static void
make_rows(uint32_t type, uint64_t n, struct rng *rg)
{
	for (uint64_t i = 0; i < ROWS * n; i++) {
		float v = rng_normalish(rg);
		if (type == GGML_TYPE_F32) {
			memcpy(file + 4 * i, &v, 4);
		} else {
			uint16_t h = type == GGML_TYPE_F16 ? fp16_from_f32(v) : bf16_from_f32(v);
			memcpy(file + 2 * i, &h, 2);
		}
	}
}

/* Every (row, token) against the fma chain; returns false at the first mismatch. */
static bool
same_bits(const char *what, uint32_t type, uint64_t n)
{
	for (uint32_t t = 0; t < TOK; t++)
		for (uint32_t r = 0; r < ROWS; r++)
			if (memcmp(&got[t][r], &want[t][r], sizeof(float)) != 0) {
				T_FAIL_("%s: type %u, n %llu, row %u, token %u: %.9g, want %.9g",
				        what, type, (unsigned long long)n, r, t, (double)got[t][r],
				        (double)want[t][r]);
				return false;
			}
	return true;
}

static void
check(uint32_t type, uint64_t n, bool simd, bool with_bias, struct rng *rg)
{
	const float *b = with_bias ? bias : NULL;
	uint64_t row_bytes = n * (type == GGML_TYPE_F32 ? 4 : 2), gb = CPU_PACK_ROWS * row_bytes;

	make_rows(type, n, rg);
	for (uint64_t i = 0; i < TOK * n; i++)
		x[i] = rng_normalish(rg);
	for (uint32_t r = 0; r < ROWS; r++)
		bias[r] = rng_normalish(rg);
	for (uint32_t g = 0; g < NG; g++)
		cpu_pack_group(type, file + g * gb, row_bytes, n, packed + g * gb);
	for (uint32_t t = 0; t < TOK; t++)
		for (uint32_t r = 0; r < ROWS; r++) {
			float acc = 0.0f;
			for (uint64_t k = 0; k < n; k++)
				acc = fmaf(file_elem(type, r, k, n), x[t * n + k], acc);
			want[t][r] = b != NULL ? acc + bias[r] : acc;
		}
	const char *k = simd ? "avx2" : "scalar";
	/* all groups and tokens in one call */
	memset(got, 0xff, sizeof(got));
	cpu_pack_mmf(simd, type, packed, NG, n, x, n, TOK, &got[0][0], ROWS, b);
	if (!same_bits(k, type, n))
		return;
	/* one token and one group a call, then every split of tokens */
	for (uint32_t per = 1; per <= 9; per++) {
		memset(got, 0xff, sizeof(got));
		for (uint32_t t = 0; t < TOK; t += per)
			for (uint32_t g = 0; g < NG; g += per % 2 ? 1 : 3) {
				uint32_t nt = TOK - t < per ? TOK - t : per;
				uint32_t ng = per % 2 ? 1 : NG - g < 3 ? NG - g : 3;
				cpu_pack_mmf(simd, type, packed + g * gb, ng, n, x + t * n, n, nt,
				             &got[t][CPU_PACK_ROWS * g], ROWS,
				             b != NULL ? b + CPU_PACK_ROWS * g : NULL);
			}
		if (!same_bits(k, type, n))
			return;
	}
	/* decode's tiles (one or two tokens): groups [0, m) in one call, the rest in another */
	for (uint32_t nt = 1; nt <= 2; nt++)
		for (uint32_t m = 1; m <= NG; m++) {
			memset(got, 0xff, sizeof(got));
			for (uint32_t t = 0; t < TOK; t += nt) {
				uint32_t tn = TOK - t < nt ? TOK - t : nt;
				cpu_pack_mmf(simd, type, packed, m, n, x + t * n, n, tn, &got[t][0],
				             ROWS, b);
				if (m < NG)
					cpu_pack_mmf(simd, type, packed + m * gb, NG - m, n,
					             x + t * n, n, tn, &got[t][CPU_PACK_ROWS * m],
					             ROWS,
					             b != NULL ? b + CPU_PACK_ROWS * m : NULL);
			}
			if (!same_bits(k, type, n))
				return;
		}
	/* the chain is the dot within float rounding: n · 2^-24 of Σ|w·x| */
	for (uint32_t t = 0; t < TOK; t++)
		for (uint32_t r = 0; r < ROWS; r++) {
			double ref = b != NULL ? (double)bias[r] : 0.0, mag = fabs(ref);
			for (uint64_t e = 0; e < n; e++) {
				double p = (double)file_elem(type, r, e, n) * (double)x[t * n + e];
				ref += p;
				mag += fabs(p);
			}
			T_NEAR((double)want[t][r], ref, mag * (double)(n + 1) * 0x1p-24 + 1e-30);
		}
}

static void
test_pack_float(void)
{
	static const uint32_t types[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16};
	static const uint64_t ns[] = {1, 7, 64, 172};
	bool simd = cpu_has_avx2();
	struct rng rg;

	if (!simd)
		printf("SKIP: no AVX2/FMA/F16C here; only the scalar twin is tested\n");
	rng_seed(&rg, 31);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]) && !t_failed_checks; i++) {
		T_TRUE(cpu_pack_supported(types[i]) && cpu_pack_float(types[i]));
		T_TRUE(cpu_pack_block_elems(types[i]) == 1);
		for (size_t j = 0; j < sizeof(ns) / sizeof(ns[0]) && !t_failed_checks; j++)
			for (int v = 0; v < 4 && !t_failed_checks; v++)
				if (v < 2 || simd)
					check(types[i], ns[j], v >= 2, v % 2 == 1, &rg);
	}
	T_TRUE(!cpu_pack_float(GGML_TYPE_Q8_0));
}

/* The packed layout: row r's element k at 8k + r, the file's bytes; a row read back. */
static void
test_pack_layout(void)
{
	uint64_t n = 7, rb = 2 * n;
	struct rng rg;

	rng_seed(&rg, 5);
	make_rows(GGML_TYPE_F16, n, &rg);
	cpu_pack_group(GGML_TYPE_F16, file, rb, n, packed);
	for (uint32_t r = 0; r < CPU_PACK_ROWS; r++)
		for (uint64_t k = 0; k < n; k++)
			T_TRUE(memcmp(packed + 2 * (CPU_PACK_ROWS * k + r), file + r * rb + 2 * k,
			              2) == 0);
	for (uint32_t r = 0; r < CPU_PACK_ROWS; r++) { /* a row read back, as the embedding is */
		float y[7];
		cpu_pack_row_f(GGML_TYPE_F16, packed, n, r, y);
		for (uint64_t k = 0; k < n; k++)
			T_TRUE(memcmp(&y[k], &(float){file_elem(GGML_TYPE_F16, r, k, n)}, 4) == 0);
	}
	T_TRUE(cpu_pack_block_bytes(GGML_TYPE_F16) == 2 * CPU_PACK_ROWS);
	T_TRUE(cpu_pack_block_bytes(GGML_TYPE_BF16) == 2 * CPU_PACK_ROWS);
	T_TRUE(cpu_pack_block_bytes(GGML_TYPE_F32) == 4 * CPU_PACK_ROWS);
}

int
main(void)
{
	T_RUN(test_pack_float);
	T_RUN(test_pack_layout);
	return t_done();
}
