/*
 * cpu_dequant.c - AVX2 row dequantization for the block types that carry
 * most weights (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, Q2_K, Q3_K, Q4_K, Q6_K) and for F16 and BF16 rows,
 * falling back to the scalar reference (common/gguf/quant.c) for every
 * other type or CPU.
 *
 * Each block's codes are unpacked to bytes with scalar bit operations, then
 * converted and scaled eight lanes at a time. The per-element arithmetic is
 * the reference's (q·d, or d·q − m with the same operands; no FMA
 * contraction in ISO C mode), so both paths give bit-identical floats;
 * cpu_dequant_test checks that.
 */
#include <immintrin.h>
#include <string.h>

#include "cpu.h"
#include "cpu_avx2.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "gguf/quant.h"

__attribute__((target("f16c"))) static float
f16(const uint8_t *p)
{
	uint16_t h;

	memcpy(&h, p, 2);
	return _cvtsh_ss(h);
}

/* y[i] = (float)(q[i] - off) * d for 8·@groups codes. */
__attribute__((target("avx2,fma,f16c"))) static void
scale_codes(const uint8_t *q, int off, float d, float *y, int groups)
{
	__m256 vd = _mm256_set1_ps(d);
	__m256i vo = _mm256_set1_epi32(off);

	for (int g = 0; g < groups; g++) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(q + 8 * g));
		__m256i v = _mm256_sub_epi32(_mm256_cvtepu8_epi32(b), vo);
		_mm256_storeu_ps(y + 8 * g, _mm256_mul_ps(_mm256_cvtepi32_ps(v), vd));
	}
}

/* y[i] = dl·(float)q[i] − ml for 8·@groups codes (K-quants with mins). */
__attribute__((target("avx2,fma,f16c"))) static void
affine_codes(const uint8_t *q, float dl, float ml, float *y, int groups)
{
	__m256 vd = _mm256_set1_ps(dl), vm = _mm256_set1_ps(ml);

	for (int g = 0; g < groups; g++) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(q + 8 * g));
		__m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
		_mm256_storeu_ps(y + 8 * g, _mm256_sub_ps(_mm256_mul_ps(vd, v), vm));
	}
}

__attribute__((target("avx2,fma,f16c"))) static void
q8_0(const uint8_t *b, float *y)
{
	__m256 vd = _mm256_set1_ps(f16(b));

	for (int g = 0; g < 4; g++) {
		__m128i v = _mm_loadl_epi64((const __m128i *)(const void *)(b + 2 + 8 * g));
		__m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
		_mm256_storeu_ps(y + 8 * g, _mm256_mul_ps(f, vd));
	}
}

/* y[i] = (float)q[i]·d + m for 32 codes (Q4_1, Q5_1: the reference's two operations). */
__attribute__((target("avx2,fma,f16c"))) static void
offset_codes(const uint8_t *q, float d, float m, float *y)
{
	__m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);

	for (int g = 0; g < 4; g++) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(q + 8 * g));
		__m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
		_mm256_storeu_ps(y + 8 * g, _mm256_add_ps(_mm256_mul_ps(v, vd), vm));
	}
}

/* Q4_0, Q5_0 ((q − 8 or 16)·d) and Q4_1, Q5_1 (q·d + m, @affine). */
__attribute__((target("avx2,fma,f16c"))) static void
q4_q5(const uint8_t *b, float *y, bool five, bool affine)
{
	const uint8_t *qs = b + 2 + (affine ? 2 : 0) + (five ? 4 : 0);
	__m128i raw = _mm_loadu_si128((const __m128i *)(const void *)qs), m4 = _mm_set1_epi8(0x0f);
	__m128i lo = _mm_and_si128(raw, m4), hi = _mm_and_si128(_mm_srli_epi16(raw, 4), m4);
	__m256i codes = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
	uint8_t q[32];

	if (five) {
		uint32_t qh;
		memcpy(&qh, b + (affine ? 4 : 2), 4);
		codes = _mm256_or_si256(codes, _mm256_and_si256(cpu_avx2_bits_to_bytes(qh),
		                                                _mm256_set1_epi8(0x10)));
	}
	_mm256_storeu_si256((__m256i *)(void *)q, codes);
	if (affine)
		offset_codes(q, f16(b), f16(b + 2), y);
	else
		scale_codes(q, five ? 16 : 8, f16(b), y, 4);
}

__attribute__((target("avx2,fma,f16c"))) static void
q4_k(const uint8_t *b, float *y)
{
	float d = f16(b), dmin = f16(b + 2);
	const uint8_t *p = b + 4, *qs = b + 16;
	uint8_t q[32];

	for (int j = 0; j < 8; j++) {
		int sc, m;
		if (j < 4) {
			sc = p[j] & 63;
			m = p[j + 4] & 63;
		} else {
			sc = (p[j + 4] & 15) | ((p[j - 4] >> 6) << 4);
			m = (p[j + 4] >> 4) | ((p[j] >> 6) << 4);
		}
		const uint8_t *src = qs + 32 * (j / 2);
		for (int l = 0; l < 32; l++)
			q[l] = (uint8_t)((src[l] >> (4 * (j % 2))) & 15);
		affine_codes(q, d * (float)sc, dmin * (float)m, y + 32 * j, 4);
	}
}

__attribute__((target("avx2,fma,f16c"))) static void
q6_k(const uint8_t *b, float *y)
{
	float d = f16(b + 208);
	uint8_t q[16];

	for (int sb = 0; sb < 16; sb++) {
		int n = sb / 8, k = (sb % 8) / 2, h = sb % 2;
		const uint8_t *ql = b + 64 * n + 32 * (k % 2), *qh = b + 128 + 32 * n;
		for (int l = 0; l < 16; l++) {
			int i = 16 * h + l;
			q[l] = (uint8_t)(((ql[i] >> (4 * (k / 2))) & 15) |
			                 (((qh[i] >> (2 * k)) & 3) << 4));
		}
		scale_codes(q, 32, d * (float)(int8_t)b[192 + sb], y + 16 * sb, 2);
	}
}

/* Q2_K: 16 sub-blocks of 16, dl·q − ml as the reference (quant_k.c). */
__attribute__((target("avx2,fma,f16c"))) static void
q2_k(const uint8_t *b, float *y)
{
	float d = f16(b + 80), dmin = f16(b + 82);
	uint8_t q[16];

	for (int n = 0; n < 2; n++)
		for (int j = 0; j < 4; j++)
			for (int h = 0; h < 2; h++) {
				uint8_t sc = b[8 * n + 2 * j + h];
				const uint8_t *src = b + 16 + 32 * n + 16 * h;
				for (int l = 0; l < 16; l++)
					q[l] = (uint8_t)((src[l] >> (2 * j)) & 3);
				affine_codes(q, d * (float)(sc & 15), dmin * (float)(sc >> 4),
				             y + 128 * n + 32 * j + 16 * h, 2);
			}
}

/* Q3_K: 16 sub-blocks of 16, dl·(q − 4 unless the high bit) as the reference. */
__attribute__((target("avx2,fma,f16c"))) static void
q3_k(const uint8_t *b, float *y)
{
	float d = f16(b + 108);
	uint8_t q[16];

	for (int sb = 0; sb < 16; sb++) {
		int lo = (b[96 + sb % 8] >> (4 * (sb / 8))) & 15;
		int hi = (b[104 + sb % 4] >> (2 * (sb / 4))) & 3;
		int n = sb / 8, j = (sb % 8) / 2, l0 = 16 * (sb % 2);
		uint8_t mask = (uint8_t)(1u << (4 * n + j));
		for (int l = 0; l < 16; l++) /* v + 4 with the bit, v without: less 4 below */
			q[l] = (uint8_t)(((b[32 + 32 * n + l0 + l] >> (2 * j)) & 3) +
			                 ((b[l0 + l] & mask) ? 4 : 0));
		scale_codes(q, 4, d * (float)((lo | (hi << 4)) - 32), y + 16 * sb, 2);
	}
}

/* F16 (F16C: exact, as fp16_to_f32) or BF16 (the high half of an F32: exact) elements. */
__attribute__((target("avx2,fma,f16c"))) static void
half_row(bool bf16, const uint8_t *src, float *y, uint64_t n)
{
	uint64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i));
		__m256 f =
		        bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
		             : _mm256_cvtph_ps(h);
		_mm256_storeu_ps(y + i, f);
	}
	for (; i < n; i++) {
		uint16_t h;
		memcpy(&h, src + 2 * i, 2);
		y[i] = bf16 ? bf16_to_f32(h) : fp16_to_f32(h);
	}
}

bool
cpu_dequant_row(uint32_t type, const void *src, float *y, uint64_t n, bool simd)
{
	const struct ggml_type_info *t = ggml_type_get(type);
	const uint8_t *b = src;

	if (simd && (type == GGML_TYPE_F16 || type == GGML_TYPE_BF16)) {
		half_row(type == GGML_TYPE_BF16, src, y, n);
		return true;
	}
	if (!simd || t == NULL ||
	    (type != GGML_TYPE_Q8_0 && type != GGML_TYPE_Q4_0 && type != GGML_TYPE_Q5_0 &&
	     type != GGML_TYPE_Q4_1 && type != GGML_TYPE_Q5_1 && type != GGML_TYPE_Q2_K &&
	     type != GGML_TYPE_Q3_K && type != GGML_TYPE_Q4_K && type != GGML_TYPE_Q6_K))
		return dequant_row(type, src, y, n) == ORCH_OK;
	for (uint64_t i = 0; i < n / t->block_size; i++, b += t->block_bytes, y += t->block_size) {
		switch (type) {
		case GGML_TYPE_Q8_0:
			q8_0(b, y);
			break;
		case GGML_TYPE_Q4_0:
		case GGML_TYPE_Q5_0:
		case GGML_TYPE_Q4_1:
		case GGML_TYPE_Q5_1:
			q4_q5(b, y, type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1,
			      type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1);
			break;
		case GGML_TYPE_Q2_K:
			q2_k(b, y);
			break;
		case GGML_TYPE_Q3_K:
			q3_k(b, y);
			break;
		case GGML_TYPE_Q4_K:
			q4_k(b, y);
			break;
		default:
			q6_k(b, y);
			break;
		}
	}
	return true;
}
