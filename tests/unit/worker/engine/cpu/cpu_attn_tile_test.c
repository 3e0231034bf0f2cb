/*
 * cpu_attn_tile_test.c - blocked attention (engine/cpu/cpu_attn_tile.c):
 * each query gives the bits of cpu_attn_head's AVX2 path over the same
 * positions (F32 and F16 caches, windows that start mid-block, sinks, head
 * sizes 8/64/96/128), alone and in a tile; and a ring or a block table
 * gives the bits of the same positions stored contiguously; and the
 * softmax both share gives the same bits on AVX2 and scalar.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/rng.h"
#include "engine/cpu/cpu.h"
#include "gguf/fp16.h"
#include "t.h"

#define POS  150 /* positions in the cache: several blocks and a partial one */
#define MAXD 128
#define NQ   12

static float kv32[2][POS * MAXD], qv[NQ][MAXD], out[NQ][MAXD], ref[MAXD], sc[POS];
static uint16_t kv16[2][POS * MAXD];
static float scratch[1 << 16];

/* The cache over [0, POS) contiguous: F16 or F32, head size @d. */
static struct cpu_attn
contiguous(bool f16, uint32_t d)
{
	return (struct cpu_attn){.k = f16 ? (const void *)kv16[0] : kv32[0],
	                         .v = f16 ? (const void *)kv16[1] : kv32[1],
	                         .stride = d,
	                         .d = d,
	                         .f16 = f16};
}

static void
fill(struct rng *r)
{
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < POS * MAXD; i++) {
			kv32[s][i] = rng_normalish(r) * (s ? 1.0f : 2.0f);
			kv16[s][i] = fp16_from_f32(kv32[s][i]);
		}
	for (int i = 0; i < NQ; i++)
		for (int k = 0; k < MAXD; k++)
			qv[i][k] = rng_normalish(r);
}

/* Query @i's positions, spread over block boundaries and windows. */
static void
query(uint32_t i, uint32_t seed, struct cpu_attn_query *q)
{
	uint32_t hi = 1 + (seed * 37 + i * 53) % POS, span = 1 + (seed * 11 + i * 29) % hi;

	*q = (struct cpu_attn_query){.q = qv[i],
	                             .out = out[i],
	                             .lo = i % 3 ? hi - span : 0,
	                             .hi = hi,
	                             .has_sink = (i + seed) % 4 == 0,
	                             .sink = 0.5f * (float)(i % 5) - 1.0f};
}

/* Against the scalar path, each query alone and every query in one tile. */
static void
test_tile_vs_head(void)
{
	static const uint32_t ds[] = {8, 64, 96, 128};
	struct cpu_attn_query qs[NQ];
	struct rng r;

	if (!cpu_has_avx2()) {
		printf("SKIP: no AVX2 here; blocked attention is AVX2 only\n");
		return;
	}
	rng_seed(&r, 31);
	fill(&r);
	for (uint32_t seed = 0; seed < 40 && !t_failed_checks; seed++) {
		uint32_t d = ds[seed % 4];
		bool f16 = seed / 4 % 2;
		struct cpu_attn a = contiguous(f16, d);
		T_TRUE(cpu_attn_tile_floats(NQ, d, POS) <= sizeof(scratch) / sizeof(float));
		for (uint32_t i = 0; i < NQ; i++)
			query(i, seed, &qs[i]);
		cpu_attn_tile(&a, qs, NQ, POS, scratch);
		for (uint32_t i = 0; i < NQ && !t_failed_checks; i++) {
			float all[MAXD], alone[MAXD];
			struct cpu_attn h = a;
			memcpy(all, out[i], d * sizeof(float));
			cpu_attn_tile(&a, &qs[i], 1, POS, scratch);
			memcpy(alone, out[i], d * sizeof(float));
			if (memcmp(all, alone, d * sizeof(float)) != 0)
				T_FAIL_("seed %u query %u: alone differs from the tile", seed, i);
			h.first = qs[i].lo;
			h.has_sink = qs[i].has_sink;
			h.sink = qs[i].sink;
			h.simd = true;
			cpu_attn_head(&h, qs[i].q, qs[i].hi - qs[i].lo, sc, ref);
			if (memcmp(all, ref, d * sizeof(float)) != 0)
				T_FAIL_("seed %u query %u (d %u, %s): differs from cpu_attn_head",
				        seed, i, d, f16 ? "F16" : "F32");
		}
	}
}

/*
 * The same positions through a ring of cells and through a block table
 * give the contiguous read's bits.
 */
static void
test_tile_layouts(void)
{
	enum { D = 64, BT = 16, BLOCKS = (POS + BT - 1) / BT, CELLS = 61 };
	static float ring[2][CELLS * D], paged[2][(BLOCKS + 3) * BT * D], want[NQ][D];
	static uint32_t table[BLOCKS];
	struct cpu_attn_query qs[NQ];
	struct rng r;

	if (!cpu_has_avx2())
		return;
	rng_seed(&r, 37);
	fill(&r);
	for (uint32_t b = 0; b < BLOCKS; b++) /* blocks scattered, in reverse */
		table[b] = BLOCKS + 2 - b;
	for (uint32_t p = 0; p < POS; p++)
		for (int s = 0; s < 2; s++) {
			memcpy(paged[s] + ((uint64_t)table[p / BT] * BT + p % BT) * D,
			       kv32[s] + (uint64_t)p * D, D * sizeof(float));
		}
	for (uint32_t seed = 0; seed < 20 && !t_failed_checks; seed++) {
		struct cpu_attn a = contiguous(false, D), pg = a, rg = a;
		uint32_t n = 0;
		for (uint32_t i = 0; i < NQ; i++) {
			query(i, seed, &qs[n]);
			qs[n].out = out[n];
			n += qs[n].hi - qs[n].lo <= CELLS; /* the ring holds a window of CELLS */
		}
		cpu_attn_tile(&a, qs, n, POS, scratch);
		for (uint32_t i = 0; i < n; i++)
			memcpy(want[i], out[i], sizeof(want[i]));
		pg.k = paged[0];
		pg.v = paged[1];
		pg.blocks = table;
		pg.block_tokens = BT;
		cpu_attn_tile(&pg, qs, n, POS, scratch);
		for (uint32_t i = 0; i < n; i++)
			if (memcmp(want[i], out[i], sizeof(want[i])) != 0)
				T_FAIL_("seed %u query %u: the block table differs", seed, i);
		for (uint32_t i = 0; i < n && !t_failed_checks; i++) { /* one window per ring */
			for (uint32_t p = qs[i].lo; p < qs[i].hi; p++)
				for (int s = 0; s < 2; s++)
					memcpy(ring[s] + (uint64_t)(p % CELLS) * D,
					       kv32[s] + (uint64_t)p * D, D * sizeof(float));
			rg.k = ring[0];
			rg.v = ring[1];
			rg.cells = CELLS;
			cpu_attn_tile(&rg, &qs[i], 1, POS, scratch);
			if (memcmp(want[i], out[i], sizeof(want[i])) != 0)
				T_FAIL_("seed %u query %u: the ring differs", seed, i);
		}
	}
}

/*
 * The softmax's AVX2 and scalar steps give the same bits, for every length
 * (whole eights and tails), sinks or not, F16 or F32 weights; the weights
 * sum to 1 (less the sink's share) and follow e^(s - max) within 1e-6.
 */
static void
test_softmax_twins(void)
{
	static float s0[70], s1[70], s2[70];
	struct rng r;

	if (!cpu_has_avx2())
		return;
	rng_seed(&r, 41);
	for (uint32_t n = 1; n <= 70 && !t_failed_checks; n++)
		for (int mode = 0; mode < 4; mode++) {
			bool f16 = mode & 1, sink = mode & 2;
			float sk = rng_normalish(&r) * 3.0f, max = sink ? sk : -INFINITY;
			double sum = 0, tot = 0;
			for (uint32_t p = 0; p < n; p++) {
				s0[p] = s1[p] = s2[p] = rng_normalish(&r) * (p % 7 ? 4.0f : 40.0f);
				max = s0[p] > max ? s0[p] : max;
			}
			cpu_attn_softmax(s0, n, sink, sk, f16, true);
			cpu_attn_softmax(s1, n, sink, sk, f16, false);
			if (memcmp(s0, s1, n * sizeof(float)) != 0)
				T_FAIL_("n %u mode %d: AVX2 and scalar weights differ", n, mode);
			for (uint32_t p = 0; p < n; p++)
				sum += exp((double)(s2[p] - max));
			if (sink)
				sum += exp((double)(sk - max));
			for (uint32_t p = 0; p < n; p++) {
				double want =
				        exp((double)(s2[p] - max)) / sum; /* s - max in float */
				T_NEAR((double)s0[p], want,
				       f16 ? want * 1e-3 + 3e-8 : want * 1e-6 + 1e-30);
				tot += (double)s0[p];
			}
			T_TRUE(tot <= 1.0 + 1e-3 && (sink || tot >= 1.0 - 1e-3));
		}
	for (int simd = 0; simd < 2; simd++) { /* a NaN score is not hidden */
		for (uint32_t p = 0; p < 11; p++)
			s0[p] = p == 3 ? NAN : (float)p;
		cpu_attn_softmax(s0, 11, false, 0.0f, false, simd);
		for (uint32_t p = 0; p < 11; p++)
			T_TRUE(isnan(s0[p]));
	}
}

int
main(void)
{
	T_RUN(test_softmax_twins);
	T_RUN(test_tile_vs_head);
	T_RUN(test_tile_layouts);
	return t_done();
}
