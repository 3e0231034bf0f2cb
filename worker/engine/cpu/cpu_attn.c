/*
 * cpu_attn.c - attention of one query head over the cached positions of a
 * slot: scores q·K[p] / √d, a softmax (cpu_attn_softmax), and Σ w[p]·V[p]. The
 * positions are cells of the slot's cache, read in position order: a
 * sliding-window layer's ring wraps from its last cell to its first; a paged
 * layer's follow the sequence's block table.
 * With an F16 cache the query and the weights are rounded to F16 first, as
 * llama.cpp's CPU attention does. The AVX2 kernel (F16C loads, eight partial
 * sums) and the scalar twin differ only in summation order.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "cpu_avx2.h"
#include "gguf/fp16.h"

static float
kv_at(const struct cpu_attn *a, const uint8_t *base, uint64_t i)
{
	float f;
	uint16_t h;

	if (!a->f16) {
		memcpy(&f, base + 4 * i, 4);
		return f;
	}
	memcpy(&h, base + 2 * i, 2);
	return fp16_to_f32(h);
}

static float
score_scalar(const struct cpu_attn *a, const float *q, const uint8_t *k)
{
	float s = 0.0f;

	for (uint32_t i = 0; i < a->d; i++)
		s += q[i] * kv_at(a, k, i);
	return s;
}

static void
axpy_scalar(const struct cpu_attn *a, float w, const uint8_t *v, float *out)
{
	for (uint32_t i = 0; i < a->d; i++)
		out[i] += w * kv_at(a, v, i);
}

__attribute__((target("avx2,fma,f16c"))) static __m256
load8(const struct cpu_attn *a, const uint8_t *p)
{
	if (a->f16)
		return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
	return _mm256_loadu_ps((const float *)(const void *)p);
}

__attribute__((target("avx2,fma,f16c"))) static float
score_avx2(const struct cpu_attn *a, const float *q, const uint8_t *k)
{
	size_t elem = a->f16 ? 2 : 4;
	__m256 acc = _mm256_setzero_ps();

	for (uint32_t i = 0; i < a->d; i += 8)
		acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(a, k + i * elem), acc);
	return cpu_avx2_hsum(acc);
}

__attribute__((target("avx2,fma,f16c"))) static void
axpy_avx2(const struct cpu_attn *a, float w, const uint8_t *v, float *out)
{
	size_t elem = a->f16 ? 2 : 4;
	__m256 wv = _mm256_set1_ps(w);

	for (uint32_t i = 0; i < a->d; i += 8)
		_mm256_storeu_ps(out + i, _mm256_fmadd_ps(wv, load8(a, v + i * elem),
		                                          _mm256_loadu_ps(out + i)));
}

/*
 * The cell of the @i-th position read and how many positions from it lie in
 * consecutive cells: to the end of the ring, or of the block (paged).
 */
static uint32_t
cell_run(const struct cpu_attn *a, uint32_t i, uint64_t *ret_cell)
{
	if (a->blocks != NULL) {
		uint32_t l = a->first + i, row = l % a->block_tokens;
		*ret_cell = (uint64_t)a->blocks[l / a->block_tokens] * a->block_tokens + row;
		return a->block_tokens - row;
	}
	if (a->cells != 0) {
		uint32_t c = (uint32_t)(((uint64_t)a->first + i) % a->cells);
		*ret_cell = c;
		return a->cells - c;
	}
	*ret_cell = (uint64_t)a->first + i;
	return UINT32_MAX;
}

/*
 * e^x for the softmax (x ≤ 0; below -87, e^-87; NaN, NaN): Cody-Waite
 * reduction and a degree-6 polynomial, each step one IEEE operation, so
 * this and exp8 give the same bits (within 3 ulp of e^x).
 */
static float
exp1(float x)
{
	uint32_t bits;
	float f, n, r, p;

	if (x != x) /* NaN stays NaN, as exp8's */
		return x;
	x = x < -87.0f ? -87.0f : x;
	n = nearbyintf(x * 1.44269504f);
	r = fmaf(-n, 0.693359375f, x);
	r = fmaf(-n, -2.12194440e-4f, r);
	p = fmaf(1.0f / 720, r, 1.0f / 120);
	p = fmaf(p, r, 1.0f / 24);
	p = fmaf(p, r, 1.0f / 6);
	p = fmaf(p, r, 0.5f);
	p = fmaf(p, r, 1.0f);
	p = fmaf(p, r, 1.0f);
	bits = (uint32_t)((int32_t)n + 127) << 23;
	memcpy(&f, &bits, sizeof(f));
	return p * f;
}

__attribute__((target("avx2,fma,f16c"))) static __m256
exp8(__m256 x)
{
	x = _mm256_max_ps(_mm256_set1_ps(-87.0f), x); /* a NaN x passes through */
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
	                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	__m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.0f / 720), r, _mm256_set1_ps(1.0f / 120));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	__m256i e = _mm256_slli_epi32(
	        _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* The softmax's steps on AVX2 from the maximum on: the bits of the scalar steps. */
__attribute__((target("avx2,fma,f16c"))) static uint32_t
softmax_avx2(float *sc, uint32_t n, float max, double *s)
{
	__m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
	uint32_t p = 0;

	for (; p + 8 <= n; p += 8) {
		__m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(sc + p), _mm256_set1_ps(max)));
		_mm256_storeu_ps(sc + p, e);
		lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
		hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
	}
	_mm256_storeu_pd(s, lo);
	_mm256_storeu_pd(s + 4, hi);
	return p;
}

/* @sc[0..n) times @inv, rounded to F16 when @f16; AVX2 for whole eights. */
__attribute__((target("avx2,fma,f16c"))) static uint32_t
weights_avx2(float *sc, uint32_t n, float inv, bool f16)
{
	uint32_t p = 0;

	for (; p + 8 <= n; p += 8) {
		__m256 w = _mm256_mul_ps(_mm256_loadu_ps(sc + p), _mm256_set1_ps(inv));
		if (f16)
			w = _mm256_cvtph_ps(_mm256_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT));
		_mm256_storeu_ps(sc + p, w);
	}
	return p;
}

void
cpu_attn_softmax(float *sc, uint32_t n, bool has_sink, float sink, bool f16, bool simd)
{
	float max = has_sink ? sink : -INFINITY;
	double s[8] = {0};
	uint32_t p = 0;

	for (uint32_t i = 0; i < n; i++)
		max = sc[i] > max ? sc[i] : max;
	if (simd)
		p = softmax_avx2(sc, n, max, s);
	for (; p < n; p++) {
		sc[p] = exp1(sc[p] - max);
		s[p % 8] += (double)sc[p];
	}
	double sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
	if (has_sink)
		sum += (double)exp1(sink - max);
	float inv = (float)(1.0 / sum);
	for (p = simd ? weights_avx2(sc, n, inv, f16) : 0; p < n; p++) {
		float w = sc[p] * inv;
		sc[p] = f16 ? fp16_to_f32(fp16_from_f32(w)) : w;
	}
}

void
cpu_attn_head(const struct cpu_attn *a, const float *qs, uint32_t n_pos, float *sc, float *out)
{
	bool simd = a->simd && a->d % 8 == 0;
	size_t elem = a->f16 ? 2 : 4;
	float q[CPU_ATTN_MAX_D], scale = a->scale != 0.0f ? a->scale : 1.0f / sqrtf((float)a->d);

	for (uint32_t i = 0; i < a->d; i++)
		q[i] = a->f16 ? fp16_to_f32(fp16_from_f32(qs[i])) : qs[i];
	for (uint32_t p = 0; p < n_pos;) {
		uint64_t c;
		uint32_t run = cell_run(a, p, &c), end = run < n_pos - p ? p + run : n_pos;
		for (const uint8_t *k = (const uint8_t *)a->k + c * a->stride * elem; p < end;
		     p++, k += a->stride * elem) {
			sc[p] = (simd ? score_avx2(a, q, k) : score_scalar(a, q, k)) * scale;
		}
	}
	cpu_attn_softmax(sc, n_pos, a->has_sink, a->sink, a->f16, a->simd);
	memset(out, 0, a->d * sizeof(float));
	for (uint32_t p = 0; p < n_pos;) {
		uint64_t c;
		uint32_t run = cell_run(a, p, &c), end = run < n_pos - p ? p + run : n_pos;
		for (const uint8_t *v = (const uint8_t *)a->v + c * a->stride * elem; p < end;
		     p++, v += a->stride * elem) {
			if (simd)
				axpy_avx2(a, sc[p], v, out);
			else
				axpy_scalar(a, sc[p], v, out);
		}
	}
}
