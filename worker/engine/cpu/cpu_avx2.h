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
