/*
 * cpu_attn_tile.c - attention for several queries of one KV head at once:
 * the positions are taken in blocks, each block's keys and then values
 * converted to float once for every query of the tile, so K and V are
 * read from the cache once per tile instead of once per query row, and a
 * query's scores come eight positions at a time from keys in L1.
 *
 * Each query's arithmetic is cpu_attn_head's on the AVX2 kernels, step for
 * step: the same per-lane products and sums, the same horizontal reduction
 * of each score, the softmax over all its positions in double, its weights
 * rounded to F16 with an F16 cache, and the values summed in position
 * order. So a query gives cpu_attn_head's bits, alone or in any tile,
 * prefilled or decoded (and llama.cpp's goldens stay where they were).
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "gguf/fp16.h"

/* Floats of scratch per query beside its scores: its rounded vector and its output. */
static uint64_t
query_floats(uint32_t d, uint32_t max_pos)
{
	return 2ull * d + ((max_pos + 7u) & ~7u);
}

uint64_t
cpu_attn_tile_floats(uint32_t nq, uint32_t d, uint32_t max_pos)
{
	return 2ull * CPU_ATTN_BLOCK * d + nq * query_floats(d, max_pos);
}

/* The cell of position @p: through the block table, the ring, or itself. */
static uint64_t
cell_of(const struct cpu_attn *a, uint32_t p)
{
	if (a->blocks != NULL)
		return (uint64_t)a->blocks[p / a->block_tokens] * a->block_tokens +
		       p % a->block_tokens;
	return a->cells != 0 ? p % a->cells : p;
}

__attribute__((target("avx2,fma,f16c"))) static __m256
load8(bool f16, const uint8_t *p)
{
	if (f16)
		return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
	return _mm256_loadu_ps((const float *)(const void *)p);
}

/* Positions [@p0, @p1) of the block at @b0 from @cache (K or V) into @f (d floats each). */
__attribute__((target("avx2,fma,f16c"))) static void
load_block(const struct cpu_attn *a, const void *cache, uint32_t b0, uint32_t p0, uint32_t p1,
           float *f)
{
	size_t elem = a->f16 ? 2 : 4;

	for (uint32_t p = p0; p < p1; p++) {
		const uint8_t *src = (const uint8_t *)cache + cell_of(a, p) * a->stride * elem;
		float *dst = f + (uint64_t)(p - b0) * a->d;
		for (uint32_t i = 0; i < a->d; i += 8)
			_mm256_storeu_ps(dst + i, load8(a->f16, src + i * elem));
	}
}

/*
 * Four scores' eight lanes @s reduced as cpu_avx2_hsum reduces one:
 * (h0 + h2) + (h1 + h3) with h = low half + high half, into @out.
 */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
reduce4(const __m256 *s, float scale, float *out)
{
	__m128 h[4];

#pragma GCC unroll 4
	for (int r = 0; r < 4; r++)
		h[r] = _mm_add_ps(_mm256_castps256_ps128(s[r]), _mm256_extractf128_ps(s[r], 1));
	_MM_TRANSPOSE4_PS(h[0], h[1], h[2], h[3]); /* h[k]: lane k of the four */
	__m128 v = _mm_add_ps(_mm_add_ps(h[0], h[2]), _mm_add_ps(h[1], h[3]));
	_mm_storeu_ps(out, _mm_mul_ps(v, _mm_set1_ps(scale)));
}

/* The scores of the @n (≤ 8) keys at @k (d floats each) against @q into @out: score_avx2's. */
__attribute__((target("avx2,fma,f16c"))) static void
scores8(const float *q, const float *k, uint32_t d, uint32_t n, float scale, float *out)
{
	__m256 s[8];
	float all[8];

#pragma GCC unroll 8
	for (int r = 0; r < 8; r++)
		s[r] = _mm256_setzero_ps();
	for (uint32_t i = 0; i < d; i += 8) {
		__m256 qv = _mm256_loadu_ps(q + i);
#pragma GCC unroll 8
		for (int r = 0; r < 8; r++)
			s[r] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + (uint64_t)r * d + i), s[r]);
	}
	reduce4(s, scale, all);
	reduce4(s + 4, scale, all + 4);
	memcpy(out, all, n * sizeof(float));
}

/* One query of a tile in the scratch: its vector, its output, its scores. */
struct qstate {
	float *qh, *acc, *sc;
};

static struct qstate
qstate(const struct cpu_attn *a, float *st)
{
	return (struct qstate){st, st + a->d, st + 2 * a->d};
}

/*
 * A query's output @acc plus positions [@j0, @j1) of the block in @vf times
 * weights @w: 64 outputs at a time in registers, eight independent sums
 * (each output still summed in position order).
 */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
weigh_n(uint32_t d, float *acc, const float *w, uint32_t j0, uint32_t j1, const float *vf,
        const uint32_t nc)
{
	__m256 o[8];

#pragma GCC unroll 8
	for (uint32_t c = 0; c < nc; c++)
		o[c] = _mm256_loadu_ps(acc + 8 * c);
	for (uint32_t j = j0; j < j1; j++) {
		__m256 wj = _mm256_set1_ps(w[j - j0]);
#pragma GCC unroll 8
		for (uint32_t c = 0; c < nc; c++)
			o[c] = _mm256_fmadd_ps(wj, _mm256_loadu_ps(vf + (uint64_t)j * d + 8 * c),
			                       o[c]);
	}
#pragma GCC unroll 8
	for (uint32_t c = 0; c < nc; c++)
		_mm256_storeu_ps(acc + 8 * c, o[c]);
}

__attribute__((target("avx2,fma,f16c"))) static void
weigh_block(uint32_t d, float *acc, const float *w, uint32_t j0, uint32_t j1, const float *vf)
{
	for (uint32_t i0 = 0; i0 < d; i0 += 64) {
		switch ((d - i0) / 8) { /* outputs i0.. in registers, their count a constant */
		case 1:
			weigh_n(d, acc + i0, w, j0, j1, vf + i0, 1);
			break;
		case 2:
			weigh_n(d, acc + i0, w, j0, j1, vf + i0, 2);
			break;
		case 3:
			weigh_n(d, acc + i0, w, j0, j1, vf + i0, 3);
			break;
		case 4:
			weigh_n(d, acc + i0, w, j0, j1, vf + i0, 4);
			break;
		case 5:
			weigh_n(d, acc + i0, w, j0, j1, vf + i0, 5);
			break;
		case 6:
			weigh_n(d, acc + i0, w, j0, j1, vf + i0, 6);
			break;
		case 7:
			weigh_n(d, acc + i0, w, j0, j1, vf + i0, 7);
			break;
		default:
			weigh_n(d, acc + i0, w, j0, j1, vf + i0, 8);
			break;
		}
	}
}

/* The overlap of @q's positions and [@p0, @p1): [*s, *e), empty when *s >= *e. */
static void
overlap(const struct cpu_attn_query *q, uint32_t p0, uint32_t p1, uint32_t *s, uint32_t *e)
{
	*s = q->lo > p0 ? q->lo : p0;
	*e = q->hi < p1 ? q->hi : p1;
}

void
cpu_attn_tile(const struct cpu_attn *a, const struct cpu_attn_query *qs, uint32_t nq,
              uint32_t max_pos, float *scratch)
{
	float *kf = scratch, *st = kf + 2ull * CPU_ATTN_BLOCK * a->d;
	float scale = a->scale != 0.0f ? a->scale : 1.0f / sqrtf((float)a->d);
	uint64_t qf = query_floats(a->d, max_pos);
	uint32_t lo = UINT32_MAX, hi = 0, b0, first;

	for (uint32_t i = 0; i < nq; i++) {
		struct qstate s = qstate(a, st + i * qf);
		lo = qs[i].lo < lo ? qs[i].lo : lo;
		hi = qs[i].hi > hi ? qs[i].hi : hi;
		for (uint32_t k = 0; k < a->d; k++)
			s.qh[k] = a->f16 ? fp16_to_f32(fp16_from_f32(qs[i].q[k])) : qs[i].q[k];
		memset(s.acc, 0, a->d * sizeof(float));
	}
	first = lo / CPU_ATTN_BLOCK * CPU_ATTN_BLOCK;     /* blocks aligned; only [lo, hi) read */
	for (b0 = first; b0 < hi; b0 += CPU_ATTN_BLOCK) { /* the keys: every query's scores */
		uint32_t p1 = b0 + CPU_ATTN_BLOCK < hi ? b0 + CPU_ATTN_BLOCK : hi, s, e;
		load_block(a, a->k, b0, b0 > lo ? b0 : lo, p1, kf);
		for (uint32_t i = 0; i < nq; i++) {
			struct qstate q = qstate(a, st + i * qf);
			overlap(&qs[i], b0, p1, &s, &e);
			for (uint32_t p = s; p < e; p += 8)
				scores8(q.qh, kf + (uint64_t)(p - b0) * a->d, a->d,
				        e - p < 8 ? e - p : 8, scale, q.sc + (p - qs[i].lo));
		}
	}
	for (uint32_t i = 0; i < nq; i++)
		cpu_attn_softmax(qstate(a, st + i * qf).sc, qs[i].hi - qs[i].lo, qs[i].has_sink,
		                 qs[i].sink, a->f16, true);
	for (b0 = first; b0 < hi; b0 += CPU_ATTN_BLOCK) { /* the values, weighted */
		uint32_t p1 = b0 + CPU_ATTN_BLOCK < hi ? b0 + CPU_ATTN_BLOCK : hi, s, e;
		load_block(a, a->v, b0, b0 > lo ? b0 : lo, p1, kf);
		for (uint32_t i = 0; i < nq; i++) {
			struct qstate q = qstate(a, st + i * qf);
			overlap(&qs[i], b0, p1, &s, &e);
			if (s < e)
				weigh_block(a->d, q.acc, q.sc + (s - qs[i].lo), s - b0, e - b0, kf);
		}
	}
	for (uint32_t i = 0; i < nq; i++)
		memcpy(qs[i].out, qstate(a, st + i * qf).acc, a->d * sizeof(float));
}
