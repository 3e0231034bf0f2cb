/*
 * cpu_qdot_q8.c - the SIMD integer dots of Q8_0 / Q4_0 / Q5_0 / Q4_1 / Q5_1 /
 * MXFP4 weight rows with Q8_0-quantized activations (cpu_qdot.c has the
 * scalar reference and says what is computed), for up to CPU_QDOT_N tokens
 * at once. Built twice, each build naming its entry CPU_QDOT_Q8_FN: for
 * AVX2/FMA/F16C, and for AVX-512 VNNI, where one vpdpbusd takes the place of
 * vpsignb, vpmaddubsw and vpmaddwd. The VNNI build adds 128 to the
 * activation codes (an unsigned operand) and starts from -128 times the
 * weights' codes, so each lane holds the same exact int32 sum and every
 * result is the same bits on either build. Called only after the CPU was
 * checked (cpu_isa_best).
 */
#include <immintrin.h>
#include <string.h>

#include "cpu.h"
#include "cpu_avx2.h"
#include "cpu_qdot_int.h"

#ifndef CPU_QDOT_Q8_FN
#error "CPU_QDOT_Q8_FN names the entry of this build"
#endif

/* The 32 codes of one weight block, as codes() gives them. */
__attribute__((always_inline)) static inline __m256i
codes_avx2(uint32_t type, const uint8_t *b)
{
	if (type == GGML_TYPE_Q8_0)
		return _mm256_loadu_si256((const __m256i *)(const void *)(b + 2));
	if (type == GGML_TYPE_MXFP4) { /* codes index the values: a byte shuffle */
		const __m128i values = _mm_loadu_si128((const __m128i *)(const void *)cpu_mxfp4_x2);
		__m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(b + 1));
		__m128i m4 = _mm_set1_epi8(0x0f);
		__m128i lo = _mm_shuffle_epi8(values, _mm_and_si128(raw, m4));
		__m128i hi = _mm_shuffle_epi8(values, _mm_and_si128(_mm_srli_epi16(raw, 4), m4));
		return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
	}
	bool five = type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1, aff = cpu_affine(type);
	__m128i raw = _mm_loadu_si128(
	        (const __m128i *)(const void *)(b + 2 + (aff ? 2 : 0) + (five ? 4 : 0)));
	__m128i m4 = _mm_set1_epi8(0x0f);
	__m256i c = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(raw, m4)),
	                                    _mm_and_si128(_mm_srli_epi16(raw, 4), m4), 1);
	if (five) {
		uint32_t qh;
		memcpy(&qh, b + (aff ? 4 : 2), 4);
		c = _mm256_or_si256(
		        c, _mm256_and_si256(cpu_avx2_bits_to_bytes(qh), _mm256_set1_epi8(0x10)));
	}
	return c;
}

struct qacc {
	__m256 sum;
	float corr;
};

/* A weight block decoded once for the activation blocks of several tokens. */
struct wblk {
	__m256i c, ac; /* the codes, and for the signed types |c| (VNNI: -128·Σc), else c */
	float dw, m;   /* the scale, and Q4_1/Q5_1's min */
};

__attribute__((always_inline)) static inline struct wblk
wblk_avx2(uint32_t type, const uint8_t *wb)
{
	struct wblk w;
	bool sign = type == GGML_TYPE_Q8_0 || type == GGML_TYPE_MXFP4;

	w.c = codes_avx2(type, wb);
#ifdef __AVX512VNNI__
	/* -128·Σc per lane of four codes, what adding 128 to the activations adds */
	w.ac = sign ? _mm256_sub_epi32(_mm256_setzero_si256(),
	                               _mm256_dpbusd_epi32(_mm256_setzero_si256(),
	                                                   _mm256_set1_epi8(-128), w.c))
	            : w.c;
#else
	w.ac = sign ? _mm256_sign_epi8(w.c, w.c) : w.c;
#endif
	if (type == GGML_TYPE_MXFP4) {
		w.dw = cpu_e8m0_half(wb[0]);
	} else {
		uint16_t hw;
		memcpy(&hw, wb, 2);
		w.dw = _cvtsh_ss(hw);
	}
	w.m = 0.0f;
	if (cpu_affine(type)) {
		uint16_t hm;
		memcpy(&hm, wb + 2, 2);
		w.m = _cvtsh_ss(hm);
	}
	return w;
}

/* One block into @a: dw·dx times the eight int32 partial sums of code products; dw·dx·s. */
__attribute__((always_inline)) static inline void
block_avx2(uint32_t type, const struct wblk *w, const struct cpu_q8b *x, struct qacc *a)
{
	__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)x->q);
	bool sign = type == GGML_TYPE_Q8_0 || type == GGML_TYPE_MXFP4;
#ifdef __AVX512VNNI__
	/* (b + 128)·c in one instruction, from -128·Σc: the same lanes as below */
	__m256i si =
	        sign ? _mm256_dpbusd_epi32(w->ac, _mm256_xor_si256(b, _mm256_set1_epi8(-128)), w->c)
	             : _mm256_dpbusd_epi32(_mm256_setzero_si256(), w->c, b);
#else
	__m256i p = sign ? /* |c| · sign(c)·b: unsigned × signed bytes */
	                    _mm256_maddubs_epi16(w->ac, _mm256_sign_epi8(b, w->c))
	                 : _mm256_maddubs_epi16(w->c, b); /* the codes are unsigned already */
	__m256i si = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
#endif
	__m256 s = _mm256_cvtepi32_ps(si);
	float dd = w->dw * x->d;
	a->sum = _mm256_fmadd_ps(_mm256_set1_ps(dd), s, a->sum);
	if (cpu_affine(type)) /* + m·dx·s */
		a->corr += w->m * x->d * (float)x->s;
	else if (!sign)
		a->corr += dd * (float)x->s;
}

/*
 * The loop for one weight type (a constant once inlined), two blocks per
 * step, for @nt tokens at once (a constant too): each weight block is
 * decoded once, and token t's activation rows start at @x + t·@xs blocks.
 * Every token's sums are made in the order a single token's are, so its
 * result is the same bits whatever @nt is.
 */
__attribute__((always_inline)) static inline void
qdot_loop(uint32_t type, uint64_t block_bytes, const uint8_t *wb, const struct cpu_q8b *x,
          uint64_t xs, uint64_t nb, const uint32_t nt, float *out)
{
	struct qacc a0[CPU_QDOT_N], a1[CPU_QDOT_N];
	uint64_t i = 0;

#pragma GCC unroll 4
	for (uint32_t t = 0; t < nt; t++)
		a0[t] = a1[t] = (struct qacc){_mm256_setzero_ps(), 0.0f};
	for (; i + 2 <= nb; i += 2, wb += 2 * block_bytes) {
		_mm_prefetch((const char *)wb + CPU_PREFETCH_AHEAD, _MM_HINT_T0);
		_mm_prefetch((const char *)wb + CPU_PREFETCH_AHEAD + 2 * block_bytes - 1,
		             _MM_HINT_T0);
		struct wblk w0 = wblk_avx2(type, wb), w1 = wblk_avx2(type, wb + block_bytes);
#pragma GCC unroll 4
		for (uint32_t t = 0; t < nt; t++) {
			block_avx2(type, &w0, x + t * xs + i, &a0[t]);
			block_avx2(type, &w1, x + t * xs + i + 1, &a1[t]);
		}
	}
	if (i < nb) {
		struct wblk w0 = wblk_avx2(type, wb);
#pragma GCC unroll 4
		for (uint32_t t = 0; t < nt; t++)
			block_avx2(type, &w0, x + t * xs + i, &a0[t]);
	}
	float off = type == GGML_TYPE_Q4_0   ? 8.0f
	            : type == GGML_TYPE_Q5_0 ? 16.0f
	            : cpu_affine(type)       ? -1.0f /* the min's term is added */
	                                     : 0.0f;
#pragma GCC unroll 4
	for (uint32_t t = 0; t < nt; t++)
		out[t] = cpu_avx2_hsum(_mm256_add_ps(a0[t].sum, a1[t].sum)) -
		         off * (a0[t].corr + a1[t].corr);
}

/* qdot_loop for @nt of 1..CPU_QDOT_N, each a loop of its own. */
__attribute__((always_inline)) static inline void
qdot_loop_nt(uint32_t type, uint64_t block_bytes, const uint8_t *wb, const struct cpu_q8b *x,
             uint64_t xs, uint64_t nb, uint32_t nt, float *out)
{
	_Static_assert(CPU_QDOT_N == 4, "one case per token count");
	switch (nt) {
	case 4:
		qdot_loop(type, block_bytes, wb, x, xs, nb, 4, out);
		break;
	case 3:
		qdot_loop(type, block_bytes, wb, x, xs, nb, 3, out);
		break;
	case 2:
		qdot_loop(type, block_bytes, wb, x, xs, nb, 2, out);
		break;
	default:
		qdot_loop(type, block_bytes, wb, x, xs, nb, 1, out);
		break;
	}
}

void
CPU_QDOT_Q8_FN(uint32_t type, const void *w, const void *xq, uint64_t xs, uint64_t n, uint32_t nt,
               float *out)
{
	switch (type) {
	case GGML_TYPE_Q8_0:
		qdot_loop_nt(GGML_TYPE_Q8_0, 34, w, xq, xs, n / 32, nt, out);
		break;
	case GGML_TYPE_Q4_0:
		qdot_loop_nt(GGML_TYPE_Q4_0, 18, w, xq, xs, n / 32, nt, out);
		break;
	case GGML_TYPE_MXFP4:
		qdot_loop_nt(GGML_TYPE_MXFP4, 17, w, xq, xs, n / 32, nt, out);
		break;
	case GGML_TYPE_Q4_1:
		qdot_loop_nt(GGML_TYPE_Q4_1, 20, w, xq, xs, n / 32, nt, out);
		break;
	case GGML_TYPE_Q5_1:
		qdot_loop_nt(GGML_TYPE_Q5_1, 24, w, xq, xs, n / 32, nt, out);
		break;
	default:
		qdot_loop_nt(GGML_TYPE_Q5_0, 22, w, xq, xs, n / 32, nt, out);
		break;
	}
}
