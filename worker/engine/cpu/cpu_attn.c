/*
 * cpu_attn.c - attention of one query head over the cached positions of a
 * slot: scores q·K[p] / √d, a softmax (sum in double), and Σ w[p]·V[p]. The
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

void
cpu_attn_head(const struct cpu_attn *a, const float *qs, uint32_t n_pos, float *sc, float *out)
{
	bool simd = a->simd && a->d % 8 == 0;
	size_t elem = a->f16 ? 2 : 4;
	float q[CPU_ATTN_MAX_D], max = -INFINITY, scale = 1.0f / sqrtf((float)a->d);

	for (uint32_t i = 0; i < a->d; i++)
		q[i] = a->f16 ? fp16_to_f32(fp16_from_f32(qs[i])) : qs[i];
	for (uint32_t p = 0; p < n_pos;) {
		uint64_t c;
		uint32_t run = cell_run(a, p, &c), end = run < n_pos - p ? p + run : n_pos;
		for (const uint8_t *k = (const uint8_t *)a->k + c * a->stride * elem; p < end;
		     p++, k += a->stride * elem) {
			sc[p] = (simd ? score_avx2(a, q, k) : score_scalar(a, q, k)) * scale;
			max = sc[p] > max ? sc[p] : max;
		}
	}
	if (a->has_sink)
		max = a->sink > max ? a->sink : max;
	double sum = 0.0;
	for (uint32_t p = 0; p < n_pos; p++) {
		sc[p] = expf(sc[p] - max);
		sum += (double)sc[p];
	}
	if (a->has_sink)
		sum += (double)expf(a->sink - max);
	float inv = (float)(1.0 / sum);
	memset(out, 0, a->d * sizeof(float));
	for (uint32_t p = 0; p < n_pos;) {
		uint64_t c;
		uint32_t run = cell_run(a, p, &c), end = run < n_pos - p ? p + run : n_pos;
		for (const uint8_t *v = (const uint8_t *)a->v + c * a->stride * elem; p < end;
		     p++, v += a->stride * elem) {
			float w = sc[p] * inv;
			if (a->f16)
				w = fp16_to_f32(fp16_from_f32(w));
			if (simd)
				axpy_avx2(a, w, v, out);
			else
				axpy_scalar(a, w, v, out);
		}
	}
}
