#pragma once
/*
 * cpu_avx2.h - small AVX2 helpers shared by the CPU kernels (internal to
 * worker/engine/cpu). Callers run them only after cpu_has_avx2().
 */
#include <immintrin.h>
#include <stdint.h>

/* cpu_avx2_hsum - the sum of the eight lanes of @v. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline float
cpu_avx2_hsum(__m256 v)
{
	__m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));

	h = _mm_add_ps(h, _mm_movehl_ps(h, h));
	h = _mm_add_ss(h, _mm_movehdup_ps(h));
	return _mm_cvtss_f32(h);
}

/* cpu_avx2_bits_to_bytes - 32 bits of @x as 32 bytes: 0xff where the bit is set (byte i ← bit i).
 */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline __m256i
cpu_avx2_bits_to_bytes(uint32_t x)
{
	const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
	                                       0x0101010101010101, 0x0000000000000000);
	__m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x), shuf);

	v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
	return _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
}

/* cpu_avx2_amax - the largest |x| of @v's lanes and @m's; a NaN lane is passed over, as fmaxf does.
 */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline __m256
cpu_avx2_amax(__m256 v, __m256 m)
{
	return _mm256_max_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), v), m); /* NaN: m */
}

/* cpu_avx2_hmax - the largest of the eight lanes of @v (none a NaN). */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline float
cpu_avx2_hmax(__m256 v)
{
	__m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));

	h = _mm_max_ps(h, _mm_movehl_ps(h, h));
	h = _mm_max_ss(h, _mm_movehdup_ps(h));
	return _mm_cvtss_f32(h);
}

/*
 * cpu_avx2_codes - @v · @id rounded half to even and clamped to ±127, as
 * int32 lanes: what nearbyintf and the scalar quantizers' clamp give.
 */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline __m256i
cpu_avx2_codes(__m256 v, __m256 id)
{
	__m256 r = _mm256_round_ps(_mm256_mul_ps(v, id),
	                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

	r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
	return _mm256_cvtps_epi32(r);
}

/* cpu_avx2_pack_codes - four vectors of int32 codes (within ±127), in order, as 32 bytes. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline __m256i
cpu_avx2_pack_codes(__m256i a, __m256i b, __m256i c, __m256i d)
{
	__m256i x = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));

	/* the packs interleave the 128-bit halves: four-byte groups a0 b0 c0 d0 a1 b1 c1 d1 */
	return _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* cpu_avx2_hsum_i32 - the sum of the eight int32 lanes of @v. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline int32_t
cpu_avx2_hsum_i32(__m256i v)
{
	__m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
	h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
	return _mm_cvtsi128_si32(h);
}
