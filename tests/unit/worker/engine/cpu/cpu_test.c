/*
 * cpu_test.c - the CPU backend's kernels (engine/cpu): each SIMD path
 * against its scalar twin — the dot product, the dequantizers, the
 * integer dots of every weight type, attention.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "engine/cpu/cpu.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "gguf/quant.h"
#include "t.h"

/* The AVX2/FMA dot and its scalar twin agree (atol 1e-5 + rtol 1e-5 · Σ|a·b|). */
static void
test_simd_twins(void)
{
	struct rng r;
	float a[1031], b[1031];
	cpu_dot_fn simd = cpu_dot_select(true), scalar = cpu_dot_select(false);

	if (!cpu_has_avx2())
		printf("SKIP: no AVX2 here; only the scalar dot is tested\n");
	rng_seed(&r, 5);
	for (uint64_t n = 1; n <= 1031; n += (n < 40 ? 1 : 97)) {
		double mag = 0;
		for (uint64_t i = 0; i < n; i++) {
			a[i] = rng_normalish(&r);
			b[i] = rng_normalish(&r);
			mag += fabs((double)a[i] * (double)b[i]);
		}
		double x = (double)simd(a, b, n), y = (double)scalar(a, b, n);
		T_NEAR(x, y, 1e-5 + 1e-5 * mag);
	}
}

/* The AVX2 dequantizers give exactly the scalar reference's floats, on random blocks. */
static void
test_dequant_twins(void)
{
	static const uint32_t types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q5_0,
	                                 GGML_TYPE_Q4_K, GGML_TYPE_Q6_K, GGML_TYPE_Q5_K,
	                                 GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_1,
	                                 GGML_TYPE_Q5_1, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K};
	static float x[1024], a[1024], b[1024];
	static uint8_t blk[1024 * 4];
	struct rng r;

	if (!cpu_has_avx2()) {
		printf("SKIP: no AVX2 here; the AVX2 dequantizers are not tested\n");
		return;
	}
	rng_seed(&r, 3);
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
		for (int rep = 0; rep < 20; rep++) {
			for (int i = 0; i < 1024; i++)
				x[i] = rng_normalish(&r) * (rep % 2 ? 0.01f : 3.0f);
			T_OK(quant_row(types[k], x, blk, 1024));
			for (int i = 0; i < 64; i++) /* also arbitrary bits in the codes */
				blk[(rng_next(&r) % 1024) + 4] ^= (uint8_t)rng_next(&r);
			T_TRUE(cpu_dequant_row(types[k], blk, a, 1024, true));
			T_TRUE(cpu_dequant_row(types[k], blk, b, 1024, false));
			for (int i = 0; i < 1024; i++)
				if (a[i] != b[i] &&
				    !(isnan(a[i]) && isnan(b[i]))) /* ±0 compare equal */
					T_FAIL_("%s: element %d: AVX2 %.9g, scalar %.9g",
					        ggml_type_name(types[k]), i, (double)a[i],
					        (double)b[i]);
			if (t_failed_checks)
				return;
		}
	}
}

/*
 * The integer dots (Q8_0/Q4_0/Q5_0/MXFP4 weights × Q8_0 activations, K-quants ×
 * cpu_q8k activations): AVX2 and scalar agree, and both equal the dot of the
 * dequantized rows.
 */
static void
test_qdot_twins(void)
{
	static const uint32_t types[] = {GGML_TYPE_Q8_0,  GGML_TYPE_Q4_0, GGML_TYPE_Q5_0,
	                                 GGML_TYPE_MXFP4, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K,
	                                 GGML_TYPE_Q6_K,  GGML_TYPE_Q4_1, GGML_TYPE_Q5_1,
	                                 GGML_TYPE_Q2_K,  GGML_TYPE_Q3_K};
	static float x[2048], w[2048], dx[2048], dw[2048];
	static uint8_t wq[2048 * 2], xq[2048 / 32 * 40];
	struct rng r;

	if (!cpu_has_avx2())
		printf("SKIP: no AVX2 here; only the scalar integer dots are tested\n");
	rng_seed(&r, 11);
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
		bool kq = cpu_qdot_act(types[k]) == CPU_ACT_Q8K;
		T_TRUE(cpu_qdot_supported(types[k]));
		for (int rep = 0; rep < 20; rep++) {
			uint64_t n = (kq ? 256u : 32u) * (1u + rng_next(&r) % 8u);
			for (uint64_t i = 0; i < n; i++) {
				x[i] = rng_normalish(&r) * (rep % 2 ? 0.01f : 3.0f);
				w[i] = rng_normalish(&r) +
				       (rep % 3 ? 0.0f : 1.0f); /* mins in use */
			}
			T_OK(quant_row(types[k], w, wq, n));
			cpu_quant_act(types[k], x, xq, n, false);
			T_TRUE(cpu_dequant_row(types[k], wq, dw, n, false));
			if (kq) { /* x ≈ d·q, and the block sums are the codes' sums */
				const struct cpu_q8k *a = (const struct cpu_q8k *)(const void *)xq;
				for (uint64_t i = 0; i < n; i++)
					dx[i] = a[i / 256].d * (float)a[i / 256].q[i % 256];
				for (uint64_t g = 0; g < n / 16; g++) {
					int sum = 0;
					for (uint64_t i = 16 * g; i < 16 * g + 16; i++)
						sum += a[i / 256].q[i % 256];
					T_EQ(a[g / 16].bsums[g % 16], sum);
				}
			} else { /* Q8_0's codes and scale, and the block code sums */
				const struct cpu_q8b *a = (const struct cpu_q8b *)(const void *)xq;
				uint8_t q8[34];
				for (uint64_t b = 0; b < n / 32; b++) {
					int sum = 0;
					T_OK(quant_row(GGML_TYPE_Q8_0, x + 32 * b, q8, 32));
					T_TRUE(memcmp(q8 + 2, a[b].q, 32) == 0);
					T_TRUE(fp16_to_f32((uint16_t)(q8[0] | q8[1] << 8)) ==
					       a[b].d);
					for (int i = 0; i < 32; i++) {
						dx[32 * b + (uint64_t)i] =
						        a[b].d * (float)a[b].q[i];
						sum += a[b].q[i];
					}
					T_EQ(a[b].s, sum);
				}
			}
			double ref = 0, mag = 0, xerr = 0, xmax = 0;
			for (uint64_t i = 0; i < n; i++) {
				ref += (double)dw[i] * (double)dx[i];
				mag += fabs((double)dw[i] * (double)dx[i]);
				xerr = fmax(xerr, fabs((double)(dx[i] - x[i])));
				xmax = fmax(xmax, fabs((double)x[i]));
			}
			/* half a step, plus 127 × the rounding of Q8_0's F16 scale */
			T_TRUE(xerr <= xmax / 127.0 * 0.6);
			double s = (double)cpu_qdot_scalar(types[k], wq, xq, n);
			T_NEAR(s, ref, 1e-5 * mag + 1e-30);
			if (cpu_has_avx2())
				T_NEAR((double)cpu_qdot(types[k], wq, xq, n, true), s,
				       1e-5 * mag + 1e-30);
		}
	}
	T_TRUE(!cpu_qdot_supported(GGML_TYPE_BF16));
	T_TRUE(!cpu_qdot_supported(GGML_TYPE_F16));
}

/*
 * The AVX2 activation quantizers give the scalar ones' bytes: scales, codes
 * rounded half to even (ties placed on purpose), code sums; zero rows too.
 */
static void
test_quant_twins(void)
{
	static float x[2048];
	static uint8_t a[2048 / 32 * 40], b[2048 / 32 * 40];
	struct rng r;

	if (!cpu_has_avx2()) {
		printf("SKIP: no AVX2 here; the quantizers' twins are not compared\n");
		return;
	}
	rng_seed(&r, 13);
	for (int rep = 0; rep < 60; rep++) {
		uint64_t n = 256u * (1u + rng_next(&r) % 8u);
		uint32_t type = rep % 2 ? GGML_TYPE_Q8_0 : GGML_TYPE_Q4_K;
		for (uint64_t i = 0; i < n; i++)
			x[i] = rep % 5 == 4 ? 0.0f : rng_normalish(&r) * (rep % 3 ? 0.05f : 40.0f);
		for (uint64_t i = 0; i + 32 <= n && rep % 7 == 1; i += 32) { /* ties: k + 0.5 */
			x[i] = 127.0f;
			x[i + 1] = 2.5f;
			x[i + 2] = -3.5f;
			x[i + 3] = 0.5f;
		}
		memset(a, 0, sizeof(a));
		memset(b, 0, sizeof(b));
		cpu_quant_act(type, x, a, n, false);
		cpu_quant_act(type, x, b, n, true);
		T_TRUE(memcmp(a, b, cpu_act_row_bytes(type, n)) == 0);
	}
}

/* Tokens test_qdot_groups gives cpu_qdot_n: two groups of CPU_QDOT_N and a tail. */
#define QDOT_TOK (2 * CPU_QDOT_N + 1)

/*
 * cpu_qdot_n gives each of 1..QDOT_TOK tokens the bits cpu_qdot gives it
 * alone, on every kernel this CPU runs, and the AVX2 and VNNI kernels the
 * same bits: prefill's token groups and the CPU's VNNI change no result.
 */
static void
test_qdot_groups(void)
{
	static const uint32_t types[] = {GGML_TYPE_Q8_0,  GGML_TYPE_Q4_0, GGML_TYPE_Q5_0,
	                                 GGML_TYPE_MXFP4, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K,
	                                 GGML_TYPE_Q6_K,  GGML_TYPE_Q4_1, GGML_TYPE_Q5_1,
	                                 GGML_TYPE_Q2_K,  GGML_TYPE_Q3_K};
	static float x[QDOT_TOK][1824], w[1824];
	static uint8_t wq[1824 * 2], xq[QDOT_TOK * 1824 / 32 * 40];
	struct rng r;

	rng_seed(&r, 12);
	if (cpu_isa_best() != CPU_ISA_VNNI)
		printf("SKIP: no AVX-512 VNNI here; its kernels are not compared\n");
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
		/* an odd number of blocks (the loops' tail), rows packed */
		bool kq = cpu_qdot_act(types[k]) == CPU_ACT_Q8K;
		uint64_t n = kq ? 1792 : 1824, row = cpu_act_row_bytes(types[k], n);
		for (uint64_t i = 0; i < n; i++)
			w[i] = rng_normalish(&r) + (k % 2 ? 0.0f : 0.5f);
		T_OK(quant_row(types[k], w, wq, n));
		for (uint32_t t = 0; t < QDOT_TOK; t++) {
			for (uint64_t i = 0; i < n; i++)
				x[t][i] = rng_normalish(&r) * (t % 2 ? 0.02f : 2.0f);
			cpu_quant_act(types[k], x[t], xq + t * row, n, cpu_has_avx2());
		}
		for (int i = CPU_ISA_SCALAR; i <= (int)cpu_isa_best(); i++)
			for (uint32_t nt = 1; nt <= QDOT_TOK; nt++) {
				enum cpu_isa isa = (enum cpu_isa)i;
				float out[QDOT_TOK], one;
				cpu_qdot_n(isa, types[k], wq, xq, row, n, nt, out);
				for (uint32_t t = 0; t < nt;
				     t++) { /* AVX2 and VNNI: the same bits */
					one = cpu_qdot(types[k], wq, xq + t * row, n,
					               isa != CPU_ISA_SCALAR);
					T_TRUE(memcmp(&one, &out[t], sizeof(one)) == 0);
				}
			}
	}
}

/* The AVX2 attention of one head agrees with the scalar twin, F16 and F32 caches. */
static void
test_attn_twins(void)
{
	static float q[64], k32[50 * 64], v32[50 * 64], sc[50], o1[64], o2[64];
	static uint16_t k16[50 * 64], v16[50 * 64];
	struct rng r;

	if (!cpu_has_avx2()) {
		printf("SKIP: no AVX2 here; the AVX2 attention is not tested\n");
		return;
	}
	rng_seed(&r, 13);
	for (int i = 0; i < 50 * 64; i++) {
		k32[i] = rng_normalish(&r);
		v32[i] = rng_normalish(&r);
		k16[i] = fp16_from_f32(k32[i]);
		v16[i] = fp16_from_f32(v32[i]);
	}
	for (int i = 0; i < 64; i++)
		q[i] = rng_normalish(&r);
	for (int f16 = 0; f16 < 2; f16++) {
		for (uint32_t n = 1; n <= 50; n += 7) {
			struct cpu_attn a = {.k = f16 ? (const void *)k16 : k32,
			                     .v = f16 ? (const void *)v16 : v32,
			                     .stride = 64,
			                     .d = 64,
			                     .f16 = f16 != 0,
			                     .simd = true};
			cpu_attn_head(&a, q, n, sc, o1);
			a.simd = false;
			cpu_attn_head(&a, q, n, sc, o2);
			for (int i = 0; i < 64; i++)
				T_NEAR((double)o1[i], (double)o2[i], 1e-5);
		}
	}
}

/*
 * A ring read (a sliding-window layer's cache) equals, bit for bit, the same
 * positions read from contiguous cells, wherever the read starts and wraps.
 */
static void
test_attn_ring(void)
{
	enum { CELLS = 13, D = 64 };
	static float q[D], ring[CELLS * D], line[CELLS * D], sc[CELLS], o1[D], o2[D];
	static uint16_t ring16[CELLS * D], line16[CELLS * D];
	struct rng r;

	rng_seed(&r, 17);
	for (int i = 0; i < CELLS * D; i++) {
		ring[i] = rng_normalish(&r);
		ring16[i] = fp16_from_f32(ring[i]);
	}
	for (int i = 0; i < D; i++)
		q[i] = rng_normalish(&r);
	for (int mode = 0; mode < 4; mode++) { /* F16 or F32 cache, AVX2 or scalar */
		bool f16 = mode & 1, simd = (mode & 2) && cpu_has_avx2();
		for (uint32_t first = 0; first < CELLS; first++) {
			for (uint32_t c = 0; c < CELLS; c++) { /* the same cells, unrolled */
				uint32_t from = (first + c) % CELLS;
				memcpy(line + c * D, ring + from * D, D * sizeof(float));
				memcpy(line16 + c * D, ring16 + from * D, D * sizeof(uint16_t));
			}
			for (uint32_t n = 1; n <= CELLS; n++) {
				struct cpu_attn a = {.k = f16 ? (const void *)ring16 : ring,
				                     .v = f16 ? (const void *)ring16 : ring,
				                     .stride = D,
				                     .cells = CELLS,
				                     .first = first,
				                     .d = D,
				                     .f16 = f16,
				                     .simd = simd,
				                     .has_sink = n % 2 == 0,
				                     .sink = 0.25f};
				struct cpu_attn b = a;
				b.k = b.v = f16 ? (const void *)line16 : line;
				b.cells = b.first = 0;
				cpu_attn_head(&a, q, n, sc, o1);
				cpu_attn_head(&b, q, n, sc, o2);
				if (memcmp(o1, o2, sizeof(o1)) != 0) {
					T_FAIL_("ring of %d, first %u, %u positions, mode %d: "
					        "differs from the contiguous read",
					        CELLS, first, n, mode);
					return;
				}
			}
		}
	}
}

int
main(void)
{
	T_RUN(test_simd_twins);
	T_RUN(test_dequant_twins);
	T_RUN(test_qdot_twins);
	T_RUN(test_qdot_groups);
	T_RUN(test_quant_twins);
	T_RUN(test_attn_twins);
	T_RUN(test_attn_ring);
	return t_done();
}
