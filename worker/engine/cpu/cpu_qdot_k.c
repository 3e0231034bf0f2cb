/*
 * cpu_qdot_k.c - integer dot products of Q4_K / Q5_K / Q6_K weight rows with
 * an activation row quantized per 256 elements (struct cpu_q8k: one float
 * scale, 256 int8 codes, the sums of each 16 codes), as llama.cpp's CPU
 * kernels compute them (Q2_K and Q3_K: cpu_qdot_k23.c).
 *
 * Per super-block, Σ w·x = d·dx·Σ_j sc_j·Σ q·qx - dmin·dx·Σ_j m_j·Σ qx for
 * Q4_K/Q5_K (eight 32-element sub-blocks with 6-bit scale and min), and
 * d·dx·Σ_g sc_g·(Σ q·qx - 32·Σ qx) for Q6_K (sixteen 16-element groups,
 * codes offset by 32). The integer parts are exact in int32; the AVX2 kernel
 * and the scalar twin differ only in float accumulation order.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "cpu_avx2.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"

void
cpu_quant_q8k(const float *x, struct cpu_q8k *y, uint64_t n)
{
	for (uint64_t i = 0; i < n / 256; i++, x += 256, y++) {
		float amax = 0.0f;
		for (int k = 0; k < 256; k++)
			amax = fmaxf(amax, fabsf(x[k]));
		/* llama.cpp's quantize_row_q8_K_ref: the scale is 1 / (127 / amax) */
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		y->d = id > 0.0f ? 1.0f / id : 0.0f;
		for (int g = 0; g < 16; g++) {
			int s = 0;
			for (int k = 16 * g; k < 16 * g + 16; k++) {
				float v = nearbyintf(x[k] * id);
				y->q[k] = (int8_t)(v > 127.0f ? 127 : v < -127.0f ? -127 : (int)v);
				s += y->q[k];
			}
			y->bsums[g] = (int16_t)s;
		}
	}
}

__attribute__((target("avx2,fma,f16c"))) void
cpu_quant_q8k_avx2(const float *x, void *yq, uint64_t n)
{
	struct cpu_q8k *y = yq;

	for (uint64_t i = 0; i < n / 256; i++, x += 256, y++) {
		__m256 m = _mm256_setzero_ps();
		for (int k = 0; k < 32; k++)
			m = cpu_avx2_amax(_mm256_loadu_ps(x + 8 * k), m);
		float amax = cpu_avx2_hmax(m);
		float id = amax > 0.0f ? 127.0f / amax : 0.0f;
		y->d = id > 0.0f ? 1.0f / id : 0.0f;
		for (int c = 0; c < 8; c++) { /* 32 codes, two groups of 16 */
			__m256i q[4];
			for (int k = 0; k < 4; k++)
				q[k] = cpu_avx2_codes(_mm256_loadu_ps(x + 32 * c + 8 * k),
				                      _mm256_set1_ps(id));
			_mm256_storeu_si256((__m256i *)(void *)(y->q + 32 * c),
			                    cpu_avx2_pack_codes(q[0], q[1], q[2], q[3]));
			y->bsums[2 * c] = (int16_t)cpu_avx2_hsum_i32(_mm256_add_epi32(q[0], q[1]));
			y->bsums[2 * c + 1] =
			        (int16_t)cpu_avx2_hsum_i32(_mm256_add_epi32(q[2], q[3]));
		}
	}
}

/* The 6-bit scale and min of sub-block @j from the 12 packed bytes at @p. */
static void
k4_scale_min(const uint8_t *p, int j, int *sc, int *m)
{
	if (j < 4) {
		*sc = p[j] & 63;
		*m = p[j + 4] & 63;
	} else {
		*sc = (p[j + 4] & 15) | ((p[j - 4] >> 6) << 4);
		*m = (p[j + 4] >> 4) | ((p[j] >> 6) << 4);
	}
}

/* All eight scales and minimums at once (what k4_scale_min gives for j = 0..7). */
static void
k4_unpack_all(const uint8_t *p, uint8_t *sc, uint8_t *m)
{
	uint32_t u[3], s0, s1, m0, m1;

	memcpy(u, p, 12);
	s0 = u[0] & 0x3f3f3f3fu;
	m0 = u[1] & 0x3f3f3f3fu;
	s1 = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
	m1 = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
	memcpy(sc, &s0, 4);
	memcpy(sc + 4, &s1, 4);
	memcpy(m, &m0, 4);
	memcpy(m + 4, &m1, 4);
}

static float
dot_k45_scalar(const uint8_t *b, const struct cpu_q8k *x, uint64_t nb, bool five)
{
	float sum = 0.0f;

	for (uint64_t i = 0; i < nb; i++, b += five ? 176 : 144, x++) {
		const uint8_t *qs = b + (five ? 48 : 16);
		int32_t sumi = 0, summ = 0;
		for (int j = 0; j < 8; j++) {
			int sc, m, c = j / 2, h = j % 2;
			k4_scale_min(b + 4, j, &sc, &m);
			int32_t s = 0;
			for (int l = 0; l < 32; l++) {
				int v = (qs[32 * c + l] >> (4 * h)) & 15;
				if (five && (b[16 + l] >> j & 1))
					v += 16;
				s += v * x->q[32 * j + l];
			}
			sumi += sc * s;
			summ += m * (x->bsums[2 * j] + x->bsums[2 * j + 1]);
		}
		/* one operation a statement: no compiler fuses them (cpu_pack_k.c's bits) */
		float a = fp16_load(b) * (float)sumi, m = fp16_load(b + 2) * (float)summ;
		float v = x->d * (a - m);
		sum += v;
	}
	return sum;
}

static float
dot_q6k_scalar(const uint8_t *b, const struct cpu_q8k *x, uint64_t nb)
{
	float sum = 0.0f;

	for (uint64_t i = 0; i < nb; i++, b += 210, x++) {
		int32_t sumi = 0;
		for (int n = 0; n < 2; n++) {
			const uint8_t *ql = b + 64 * n, *qh = b + 128 + 32 * n;
			for (int k = 0; k < 4; k++) {
				for (int h = 0; h < 2; h++) {
					int g = 8 * n + 2 * k + h, sc = (int8_t)b[192 + g];
					int32_t s = 0;
					for (int l = 16 * h; l < 16 * h + 16; l++) {
						int lo = (ql[32 * (k % 2) + l] >> (4 * (k / 2))) &
						         15;
						int hi = (qh[l] >> (2 * k)) & 3;
						s += (lo | (hi << 4)) * x->q[128 * n + 32 * k + l];
					}
					sumi += sc * (s - 32 * x->bsums[g]);
				}
			}
		}
		float v = x->d * fp16_load(b + 208) * (float)sumi;
		sum += v;
	}
	return sum;
}

float
cpu_qdot_k_scalar(uint32_t type, const void *w, const struct cpu_q8k *x, uint64_t n)
{
	if (type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K)
		return cpu_qdot_k23_scalar(type, w, x, n);
	if (type == GGML_TYPE_Q6_K)
		return dot_q6k_scalar(w, x, n / 256);
	return dot_k45_scalar(w, x, n / 256, type == GGML_TYPE_Q5_K);
}

/*
 * The AVX2 kernels take @nt tokens at once (a constant once inlined): a
 * super-block's codes and scales are unpacked once, and token t's
 * activations start at @x + t·@xs super-blocks. Each token's sums are made
 * in the order a single token's are, so its result is the same bits
 * whatever @nt is.
 */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
dot_k45_avx2(const uint8_t *b, const struct cpu_q8k *x, uint64_t xs, uint64_t nb, bool five,
             const uint32_t nt, float *out)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), sixteen = _mm256_set1_epi8(16);
	__m256 acc[CPU_QDOT_N];
	float mins[CPU_QDOT_N];

#pragma GCC unroll 4
	for (uint32_t t = 0; t < nt; t++) {
		acc[t] = _mm256_setzero_ps();
		mins[t] = 0.0f;
	}
	for (uint64_t i = 0; i < nb; i++, b += five ? 176 : 144) {
		const uint8_t *qs = b + (five ? 48 : 16);
		_mm_prefetch((const char *)b + CPU_PREFETCH_AHEAD, _MM_HINT_T0);
		_mm_prefetch((const char *)b + CPU_PREFETCH_AHEAD + 64, _MM_HINT_T0);
		_mm_prefetch((const char *)b + CPU_PREFETCH_AHEAD + 128, _MM_HINT_T0);
		__m256i hb = five ? _mm256_loadu_si256((const __m256i *)(const void *)(b + 16))
		                  : _mm256_setzero_si256();
		__m256i sumi[CPU_QDOT_N];
		int32_t summ[CPU_QDOT_N];
		uint8_t sc[8], m[8];
		k4_unpack_all(b + 4, sc, m);
#pragma GCC unroll 4
		for (uint32_t t = 0; t < nt; t++) {
			const struct cpu_q8k *xt = x + t * xs + i;
			sumi[t] = _mm256_setzero_si256();
			summ[t] = 0;
			for (int j = 0; j < 8; j++)
				summ[t] += m[j] * (xt->bsums[2 * j] + xt->bsums[2 * j + 1]);
		}
		for (int c = 0; c < 4; c++) {
			__m256i raw =
			        _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * c));
			__m256i lo = _mm256_and_si256(raw, m4);
			__m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
			if (five) { /* bits 2c and 2c+1 of each qh byte are the 5th bits */
				__m256i k0 = _mm256_set1_epi8((char)(1 << (2 * c)));
				__m256i k1 = _mm256_set1_epi8((char)(1 << (2 * c + 1)));
				__m256i b0 = _mm256_cmpeq_epi8(_mm256_and_si256(hb, k0), k0);
				__m256i b1 = _mm256_cmpeq_epi8(_mm256_and_si256(hb, k1), k1);
				lo = _mm256_or_si256(lo, _mm256_and_si256(b0, sixteen));
				hi = _mm256_or_si256(hi, _mm256_and_si256(b1, sixteen));
			}
			__m256i s0 = _mm256_set1_epi16((short)sc[2 * c]);
			__m256i s1 = _mm256_set1_epi16((short)sc[2 * c + 1]);
#pragma GCC unroll 4
			for (uint32_t t = 0; t < nt; t++) {
				const int8_t *q = x[t * xs + i].q + 64 * c;
				__m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)q);
				__m256i x1 =
				        _mm256_loadu_si256((const __m256i *)(const void *)(q + 32));
				__m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, x0), s0);
				__m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, x1), s1);
				sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p0, p1));
			}
		}
		float d = fp16_load(b), dmin = fp16_load(b + 2);
#pragma GCC unroll 4
		for (uint32_t t = 0; t < nt; t++) {
			const struct cpu_q8k *xt = x + t * xs + i;
			float dd = xt->d * d;
			acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(sumi[t]),
			                         acc[t]);
			mins[t] += xt->d * dmin * (float)summ[t];
		}
	}
#pragma GCC unroll 4
	for (uint32_t t = 0; t < nt; t++)
		out[t] = cpu_avx2_hsum(acc[t]) - mins[t];
}

/* Q6_K's 64 codes of half @n of super-block @b, four vectors of 32 (0..63). */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
q6k_codes(const uint8_t *b, int n, __m256i *q)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
	const uint8_t *ql = b + 64 * n, *qhp = b + 128 + 32 * n;
	__m256i l0 = _mm256_loadu_si256((const __m256i *)(const void *)ql);
	__m256i l1 = _mm256_loadu_si256((const __m256i *)(const void *)(ql + 32));
	__m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)qhp);

	q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
	                       _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
	q[1] = _mm256_or_si256(
	        _mm256_and_si256(l1, m4),
	        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
	q[2] = _mm256_or_si256(
	        _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
	        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
	q[3] = _mm256_or_si256(
	        _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
	        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
}

__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
dot_q6k_avx2(const uint8_t *b, const struct cpu_q8k *x, uint64_t xs, uint64_t nb, const uint32_t nt,
             float *out)
{
	__m256 acc[CPU_QDOT_N];

#pragma GCC unroll 4
	for (uint32_t t = 0; t < nt; t++)
		acc[t] = _mm256_setzero_ps();
	for (uint64_t i = 0; i < nb; i++, b += 210) {
		__m256i sumi[CPU_QDOT_N];
		int32_t off[CPU_QDOT_N];
		for (int l = 0; l < 210; l += 64)
			_mm_prefetch((const char *)b + CPU_PREFETCH_AHEAD + l, _MM_HINT_T0);
#pragma GCC unroll 4
		for (uint32_t t = 0; t < nt; t++) {
			sumi[t] = _mm256_setzero_si256();
			off[t] = 0;
			for (int g = 0; g < 16; g++)
				off[t] += (int8_t)b[192 + g] * x[t * xs + i].bsums[g];
		}
		for (int n = 0; n < 2; n++) {
			__m256i q[4];
			q6k_codes(b, n, q);
			for (int k = 0; k < 4; k++) {
				const uint8_t *sc = b + 192 + 8 * n + 2 * k;
				/* int16 lanes 0-7 are elements 0-15 (scale sc[0]), 8-15 are 16-31
				 */
				__m256i s = _mm256_setr_m128i(_mm_set1_epi16((short)(int8_t)sc[0]),
				                              _mm_set1_epi16((short)(int8_t)sc[1]));
#pragma GCC unroll 4
				for (uint32_t t = 0; t < nt; t++) {
					const int8_t *xq = x[t * xs + i].q + 128 * n + 32 * k;
					__m256i v = _mm256_loadu_si256(
					        (const __m256i *)(const void *)xq);
					sumi[t] = _mm256_add_epi32(
					        sumi[t], _mm256_madd_epi16(
					                         _mm256_maddubs_epi16(q[k], v), s));
				}
			}
		}
		float d = fp16_load(b + 208);
#pragma GCC unroll 4
		for (uint32_t t = 0; t < nt; t++) {
			__m256i v = _mm256_sub_epi32(
			        sumi[t], _mm256_setr_epi32(32 * off[t], 0, 0, 0, 0, 0, 0, 0));
			float dd = x[t * xs + i].d * d;
			acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dd), _mm256_cvtepi32_ps(v), acc[t]);
		}
	}
#pragma GCC unroll 4
	for (uint32_t t = 0; t < nt; t++)
		out[t] = cpu_avx2_hsum(acc[t]);
}

/* One K-quant type's kernel for @nt of 1..CPU_QDOT_N, each a loop of its own. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
dot_k_nt(uint32_t type, const uint8_t *b, const struct cpu_q8k *x, uint64_t xs, uint64_t nb,
         const uint32_t nt, float *out)
{
	if (type == GGML_TYPE_Q6_K)
		dot_q6k_avx2(b, x, xs, nb, nt, out);
	else
		dot_k45_avx2(b, x, xs, nb, type == GGML_TYPE_Q5_K, nt, out);
}

__attribute__((target("avx2,fma,f16c"))) static void
dot_k_avx2(uint32_t type, const uint8_t *b, const struct cpu_q8k *x, uint64_t xs, uint64_t nb,
           uint32_t nt, float *out)
{
	_Static_assert(CPU_QDOT_N == 4, "one case per token count");
	switch (nt) {
	case 4:
		dot_k_nt(type, b, x, xs, nb, 4, out);
		break;
	case 3:
		dot_k_nt(type, b, x, xs, nb, 3, out);
		break;
	case 2:
		dot_k_nt(type, b, x, xs, nb, 2, out);
		break;
	default:
		dot_k_nt(type, b, x, xs, nb, 1, out);
		break;
	}
}

void
cpu_qdot_k_n(uint32_t type, const void *w, const struct cpu_q8k *x, uint64_t xs, uint64_t n,
             uint32_t nt, float *out)
{
	if (type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K)
		cpu_qdot_k23_n(type, w, x, xs, n, nt, out);
	else
		dot_k_avx2(type, w, x, xs, n / 256, nt, out);
}

float
cpu_qdot_k(uint32_t type, const void *w, const struct cpu_q8k *x, uint64_t n, bool simd)
{
	float out;

	if (!simd)
		return cpu_qdot_k_scalar(type, w, x, n);
	cpu_qdot_k_n(type, w, x, 0, n, 1, &out);
	return out;
}
