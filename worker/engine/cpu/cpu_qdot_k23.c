/*
 * cpu_qdot_k23.c - integer dot products of Q2_K and Q3_K weight rows with an
 * activation row quantized per 256 elements (struct cpu_q8k), as llama.cpp's
 * CPU kernels compute them.
 *
 * Both have sixteen 16-element sub-blocks per super-block. Q2_K: 2-bit codes
 * q, a 4-bit scale and a 4-bit min per sub-block, so Σ w·x = dx·(d·Σ_g sc_g·
 * Σ q·qx - dmin·Σ_g m_g·Σ qx). Q3_K: 3-bit codes u = q + 4 (two low bits and
 * a high bit), a 6-bit scale less 32 per sub-block, so Σ w·x = dx·d·Σ_g sc_g·
 * (Σ u·qx - 4·Σ qx). The integer parts are exact in int32; the AVX2 kernel
 * and the scalar twin differ only in float accumulation order.
 */
#include <immintrin.h>
#include <string.h>

#include "cpu.h"
#include "cpu_avx2.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"

void
cpu_q3k_scales(const uint8_t *b, int8_t *sc)
{
	for (int g = 0; g < 16; g++) {
		int lo = (b[96 + g % 8] >> (4 * (g / 8))) & 15;
		int hi = (b[104 + g % 4] >> (2 * (g / 4))) & 3;
		sc[g] = (int8_t)((lo | hi << 4) - 32);
	}
}

int
cpu_k23_code(uint32_t type, const uint8_t *b, uint32_t e)
{
	uint32_t n = e / 128, j = e % 128 / 32, l = e % 32;

	if (type == GGML_TYPE_Q2_K)
		return (b[16 + 32 * n + l] >> (2 * j)) & 3;
	return ((b[32 + 32 * n + l] >> (2 * j)) & 3) | ((b[l] >> (4 * n + j)) & 1) << 2;
}

float
cpu_qdot_k23_scalar(uint32_t type, const void *w, const struct cpu_q8k *x, uint64_t n)
{
	const uint8_t *b = w;
	float sum = 0.0f;

	for (uint64_t i = 0; i < n / 256; i++, x++) {
		int32_t sumi = 0, summ = 0;
		int8_t sc[16];
		if (type == GGML_TYPE_Q3_K)
			cpu_q3k_scales(b, sc);
		for (uint32_t g = 0; g < 16; g++) {
			int32_t s = 0;
			for (uint32_t e = 16 * g; e < 16 * g + 16; e++)
				s += cpu_k23_code(type, b, e) * x->q[e];
			if (type == GGML_TYPE_Q2_K) {
				sumi += (b[g] & 15) * s;
				summ += (b[g] >> 4) * x->bsums[g];
			} else {
				sumi += sc[g] * (s - 4 * x->bsums[g]);
			}
		}
		/* one operation a statement, as cpu_pack_k.c's twin */
		if (type == GGML_TYPE_Q2_K) {
			float a = fp16_load(b + 80) * (float)sumi;
			float m = fp16_load(b + 82) * (float)summ;
			float v = x->d * (a - m);
			sum += v;
			b += 84;
		} else {
			float v = x->d * fp16_load(b + 108) * (float)sumi;
			sum += v;
			b += 110;
		}
	}
	return sum;
}

/* Bit @k of each byte of @h at bit 2 (the epi16 shifts' spill is masked off). */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline __m256i
bit_to_2(__m256i h, const uint32_t k)
{
	h = k <= 2 ? _mm256_slli_epi16(h, (int)(2 - k)) : _mm256_srli_epi16(h, (int)(k - 2));
	return _mm256_and_si256(h, _mm256_set1_epi8(4));
}

/*
 * Q2_K (Q3_K when @three) super-blocks of row @b times @nt tokens (a
 * constant once inlined; token t's activations at @x + t·@xs): per 32
 * elements one vector of codes, two sub-blocks' scales as int16 lanes, the
 * exact sums per token; then the float steps per super-block. Each token's
 * sums are made in the order a single token's are: the same bits whatever @nt.
 */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
dot_k23_avx2(const uint8_t *b, const struct cpu_q8k *x, uint64_t xs, uint64_t nb, const bool three,
             const uint32_t nt, float *out)
{
	const __m256i m2 = _mm256_set1_epi8(3);
	const uint64_t bb = three ? 110 : 84;
	__m256 acc[CPU_QDOT_N];
	float mins[CPU_QDOT_N];

#pragma GCC unroll 4
	for (uint32_t t = 0; t < nt; t++) {
		acc[t] = _mm256_setzero_ps();
		mins[t] = 0.0f;
	}
	for (uint64_t i = 0; i < nb; i++, b += bb) {
		for (uint64_t l = 0; l < bb; l += 64)
			_mm_prefetch((const char *)b + CPU_PREFETCH_AHEAD + l, _MM_HINT_T0);
		__m256i sumi[CPU_QDOT_N];
		int32_t side[CPU_QDOT_N]; /* Q2_K: Σ m·Σ qx; Q3_K: Σ sc·Σ qx */
		int8_t sc[16];
		if (three)
			cpu_q3k_scales(b, sc);
		else
			for (int g = 0; g < 16; g++)
				sc[g] = (int8_t)(b[g] & 15);
#pragma GCC unroll 4
		for (uint32_t t = 0; t < nt; t++) {
			const struct cpu_q8k *xt = x + t * xs + i;
			sumi[t] = _mm256_setzero_si256();
			side[t] = 0;
			for (int g = 0; g < 16; g++)
				side[t] += (three ? sc[g] : b[g] >> 4) * xt->bsums[g];
		}
		__m256i hm = three ? _mm256_loadu_si256((const __m256i *)(const void *)b)
		                   : _mm256_setzero_si256();
		const uint8_t *qs = b + (three ? 32 : 16);
#pragma GCC unroll 2
		for (uint32_t n = 0; n < 2; n++) {
			__m256i raw =
			        _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * n));
#pragma GCC unroll 4
			for (uint32_t j = 0; j < 4;
			     j++) { /* elements 128n + 32j.., sub-blocks g, g+1 */
				uint32_t g = 8 * n + 2 * j;
				__m256i c =
				        _mm256_and_si256(_mm256_srli_epi16(raw, (int)(2 * j)), m2);
				if (three)
					c = _mm256_or_si256(c, bit_to_2(hm, 4 * n + j));
				__m256i s = _mm256_setr_m128i(_mm_set1_epi16(sc[g]),
				                              _mm_set1_epi16(sc[g + 1]));
#pragma GCC unroll 4
				for (uint32_t t = 0; t < nt; t++) {
					__m256i v = _mm256_loadu_si256(
					        (const __m256i *)(const void *)(x[t * xs + i].q +
					                                        16 * g));
					sumi[t] = _mm256_add_epi32(
					        sumi[t],
					        _mm256_madd_epi16(_mm256_maddubs_epi16(c, v), s));
				}
			}
		}
		float d = fp16_load(b + (three ? 108 : 80));
#pragma GCC unroll 4
		for (uint32_t t = 0; t < nt; t++) {
			const struct cpu_q8k *xt = x + t * xs + i;
			__m256i v = sumi[t];
			if (three) /* less 4·Σ sc·Σ qx */
				v = _mm256_sub_epi32(
				        v, _mm256_setr_epi32(4 * side[t], 0, 0, 0, 0, 0, 0, 0));
			acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(xt->d * d), _mm256_cvtepi32_ps(v),
			                         acc[t]);
			if (!three)
				mins[t] += xt->d * fp16_load(b + 82) * (float)side[t];
		}
	}
#pragma GCC unroll 4
	for (uint32_t t = 0; t < nt; t++)
		out[t] = cpu_avx2_hsum(acc[t]) - mins[t];
}

/* One type's kernel for @nt of 1..CPU_QDOT_N, each a loop of its own. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
dot_k23_nt(const uint8_t *b, const struct cpu_q8k *x, uint64_t xs, uint64_t nb, const bool three,
           uint32_t nt, float *out)
{
	_Static_assert(CPU_QDOT_N == 4, "one case per token count");
	switch (nt) {
	case 4:
		dot_k23_avx2(b, x, xs, nb, three, 4, out);
		break;
	case 3:
		dot_k23_avx2(b, x, xs, nb, three, 3, out);
		break;
	case 2:
		dot_k23_avx2(b, x, xs, nb, three, 2, out);
		break;
	default:
		dot_k23_avx2(b, x, xs, nb, three, 1, out);
		break;
	}
}

__attribute__((target("avx2,fma,f16c"))) void
cpu_qdot_k23_n(uint32_t type, const void *w, const struct cpu_q8k *x, uint64_t xs, uint64_t n,
               uint32_t nt, float *out)
{
	if (type == GGML_TYPE_Q3_K)
		dot_k23_nt(w, x, xs, n / 256, true, nt, out);
	else
		dot_k23_nt(w, x, xs, n / 256, false, nt, out);
}
