/*
 * cpu_qdot.c - integer dot products: which activation format goes with which
 * weight type, and the dots of Q8_0 / Q4_0 / Q5_0 / Q4_1 / Q5_1 weight rows with an
 * activation row quantized as Q8_0 (struct cpu_q8b), as llama.cpp computes
 * them (MXFP4 too: its 4-bit codes index the E2M1 values, doubled, and its
 * E8M0 scale is halved to match); the K-quant dots are in cpu_qdot_k.c. Per 32-element block: the
 * exact int32 sum of code products times the two scales, accumulated in
 * float; Q4_0/Q5_0 codes stay unsigned and their offset is removed with the
 * activation block's code sum. The AVX2 kernel (which prefetches the weight
 * stream) and the scalar twin compute the same integer sums; only the float
 * accumulation order differs.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "cpu_avx2.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"

/* Activation rows fit in the space cpu_matmul's callers give (ne0/32 × 40 bytes). */
_Static_assert(sizeof(struct cpu_q8k) <= 8 * 40, "cpu_q8k larger than 8 x 40 bytes");
_Static_assert(sizeof(struct cpu_q8b) == 40, "cpu_q8b is not 40 bytes");

uint32_t
cpu_qdot_act(uint32_t type)
{
	switch (type) {
	case GGML_TYPE_Q8_0:
	case GGML_TYPE_Q4_0:
	case GGML_TYPE_Q5_0:
	case GGML_TYPE_Q4_1:
	case GGML_TYPE_Q5_1:
	case GGML_TYPE_MXFP4:
		return GGML_TYPE_Q8_0;
	case GGML_TYPE_Q4_K:
	case GGML_TYPE_Q5_K:
	case GGML_TYPE_Q6_K:
		return CPU_ACT_Q8K;
	default:
		return 0;
	}
}

bool
cpu_qdot_supported(uint32_t type)
{
	return cpu_qdot_act(type) != 0;
}

uint64_t
cpu_act_row_bytes(uint32_t type, uint64_t n)
{
	if (cpu_qdot_act(type) == CPU_ACT_Q8K)
		return n / 256 * sizeof(struct cpu_q8k);
	return n / 32 * sizeof(struct cpu_q8b);
}

void
cpu_quant_act(uint32_t type, const float *x, void *xq, uint64_t n)
{
	if (cpu_qdot_act(type) == CPU_ACT_Q8K)
		cpu_quant_q8k(x, xq, n);
	else
		cpu_quant_q8b(x, xq, n);
}

/*
 * As llama.cpp's x86 quantize_row_q8_0 rounds activations: the F16 scale of
 * amax / 127, codes x · (127 / amax) rounded half to even. Q8_0's reference
 * quantizer (the weights' one) multiplies by 1 / d and rounds half away from
 * zero, which differs from it in the last bit of some codes.
 */
void
cpu_quant_q8b(const float *x, struct cpu_q8b *y, uint64_t n)
{
	for (uint64_t i = 0; i < n / 32; i++, x += 32, y++) {
		float amax = 0.0f;
		for (int k = 0; k < 32; k++)
			amax = fmaxf(amax, fabsf(x[k]));
		float id = amax != 0.0f ? 127.0f / amax : 0.0f;
		y->d = fp16_to_f32(fp16_from_f32(amax / 127.0f));
		y->s = 0;
		for (int k = 0; k < 32; k++) {
			float v = nearbyintf(x[k] * id);
			y->q[k] = (int8_t)(v > 127.0f ? 127 : v < -127.0f ? -127 : (int)v);
			y->s += y->q[k];
		}
	}
}

/* MXFP4's E2M1 values times two (ggml's kvalues_mxfp4), by 4-bit code. */
static const int8_t mxfp4_x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* An E8M0 exponent as the float 2^(e - 128): half the scale, for the doubled values. */
static float
e8m0_half(uint8_t e)
{
	uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* A weight block's scale: F16 in its first two bytes, or MXFP4's E8M0 byte (halved). */
static float
block_scale(uint32_t type, const uint8_t *b)
{
	return type == GGML_TYPE_MXFP4 ? e8m0_half(b[0]) : fp16_load(b);
}

/* Whether @type's values are code·d + m (Q4_1, Q5_1): the min m is its second F16. */
static bool
affine(uint32_t type)
{
	return type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1;
}

/*
 * The 32 codes of one weight block: signed for Q8_0 and MXFP4 (its values),
 * unsigned (0..15, 0..31) for Q4_0/Q5_0, whose values are code - @off (8,
 * 16), and for Q4_1/Q5_1 (code·d + m); *@off is 0 for all but Q4_0/Q5_0.
 */
static void
codes(uint32_t type, const uint8_t *b, int *q, int *off)
{
	*off = 0;
	if (type == GGML_TYPE_MXFP4) {
		for (int j = 0; j < 16; j++) {
			q[j] = mxfp4_x2[b[1 + j] & 0xf];
			q[j + 16] = mxfp4_x2[b[1 + j] >> 4];
		}
		return;
	}
	if (type == GGML_TYPE_Q8_0) {
		for (int j = 0; j < 32; j++)
			q[j] = (int8_t)b[2 + j];
		return;
	}
	bool five = type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1, aff = affine(type);
	const uint8_t *qs = b + 2 + (aff ? 2 : 0) + (five ? 4 : 0);
	uint32_t qh = 0;
	if (five)
		memcpy(&qh, b + (aff ? 4 : 2), 4);
	*off = aff ? 0 : five ? 16 : 8;
	for (int j = 0; j < 16; j++) {
		q[j] = (int)((qs[j] & 0xfu) | (((qh >> j) & 1u) << 4));
		q[j + 16] = (int)((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
	}
}

/*
 * Σ over blocks of dw·dx·Σ c·q, minus off · Σ dw·dx·s: the offset of Q4_0/Q5_0
 * codes is taken out with the activation block's code sum s; Q4_1/Q5_1's min
 * m adds Σ m·dx·s instead. The AVX2 kernel accumulates the same two sums.
 */
static float
qdot_q8_scalar(uint32_t type, const void *w, const struct cpu_q8b *x, uint64_t n)
{
	const struct ggml_type_info *t = ggml_type_get(type);
	const uint8_t *wb = w;
	float sum = 0.0f, corr = 0.0f;
	int q[32], off = 0;

	for (uint64_t i = 0; i < n / 32; i++, wb += t->block_bytes, x++) {
		int32_t s = 0;
		codes(type, wb, q, &off);
		for (int k = 0; k < 32; k++)
			s += q[k] * x->q[k];
		float dd = block_scale(type, wb) * x->d;
		sum += dd * (float)s;
		corr += (affine(type) ? fp16_load(wb + 2) * x->d : dd) * (float)x->s;
	}
	return affine(type) ? sum + corr : sum - (float)off * corr;
}

/* The 32 codes of one weight block, as codes() gives them. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline __m256i
codes_avx2(uint32_t type, const uint8_t *b)
{
	if (type == GGML_TYPE_Q8_0)
		return _mm256_loadu_si256((const __m256i *)(const void *)(b + 2));
	if (type == GGML_TYPE_MXFP4) { /* codes index the values: a byte shuffle */
		const __m128i values = _mm_loadu_si128((const __m128i *)(const void *)mxfp4_x2);
		__m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(b + 1));
		__m128i m4 = _mm_set1_epi8(0x0f);
		__m128i lo = _mm_shuffle_epi8(values, _mm_and_si128(raw, m4));
		__m128i hi = _mm_shuffle_epi8(values, _mm_and_si128(_mm_srli_epi16(raw, 4), m4));
		return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
	}
	bool five = type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1, aff = affine(type);
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

/* One block into @a: dw·dx times the eight int32 partial sums of code products; dw·dx·s. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
block_avx2(uint32_t type, const uint8_t *wb, const struct cpu_q8b *x, struct qacc *a)
{
	__m256i c = codes_avx2(type, wb);
	__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)x->q);
	__m256i p;
	bool sign = type == GGML_TYPE_Q8_0 || type == GGML_TYPE_MXFP4;
	if (sign) /* |c| · sign(c)·b: unsigned × signed bytes */
		p = _mm256_maddubs_epi16(_mm256_sign_epi8(c, c), _mm256_sign_epi8(b, c));
	else /* the codes are unsigned already */
		p = _mm256_maddubs_epi16(c, b);
	__m256 s = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
	float dw;
	if (type == GGML_TYPE_MXFP4) {
		dw = e8m0_half(wb[0]);
	} else {
		uint16_t hw;
		memcpy(&hw, wb, 2);
		dw = _cvtsh_ss(hw);
	}
	float dd = dw * x->d;
	a->sum = _mm256_fmadd_ps(_mm256_set1_ps(dd), s, a->sum);
	if (affine(type)) { /* + m·dx·s */
		uint16_t hm;
		memcpy(&hm, wb + 2, 2);
		a->corr += _cvtsh_ss(hm) * x->d * (float)x->s;
	} else if (!sign) {
		a->corr += dd * (float)x->s;
	}
}

/* The loop for one weight type (a constant once inlined), two blocks per step. */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline float
qdot_loop(uint32_t type, uint64_t block_bytes, const uint8_t *wb, const struct cpu_q8b *x,
          uint64_t nb)
{
	struct qacc a0 = {_mm256_setzero_ps(), 0.0f}, a1 = {_mm256_setzero_ps(), 0.0f};
	uint64_t i = 0;

	for (; i + 2 <= nb; i += 2, wb += 2 * block_bytes, x += 2) {
		_mm_prefetch((const char *)wb + CPU_PREFETCH_AHEAD, _MM_HINT_T0);
		_mm_prefetch((const char *)wb + CPU_PREFETCH_AHEAD + 2 * block_bytes - 1,
		             _MM_HINT_T0);
		block_avx2(type, wb, x, &a0);
		block_avx2(type, wb + block_bytes, x + 1, &a1);
	}
	if (i < nb)
		block_avx2(type, wb, x, &a0);
	float off = type == GGML_TYPE_Q4_0   ? 8.0f
	            : type == GGML_TYPE_Q5_0 ? 16.0f
	            : affine(type)           ? -1.0f /* the min's term is added */
	                                     : 0.0f;
	return cpu_avx2_hsum(_mm256_add_ps(a0.sum, a1.sum)) - off * (a0.corr + a1.corr);
}

__attribute__((target("avx2,fma,f16c"))) static float
qdot_avx2(uint32_t type, const void *w, const void *xq, uint64_t n)
{
	switch (type) {
	case GGML_TYPE_Q8_0:
		return qdot_loop(GGML_TYPE_Q8_0, 34, w, xq, n / 32);
	case GGML_TYPE_Q4_0:
		return qdot_loop(GGML_TYPE_Q4_0, 18, w, xq, n / 32);
	case GGML_TYPE_MXFP4:
		return qdot_loop(GGML_TYPE_MXFP4, 17, w, xq, n / 32);
	case GGML_TYPE_Q4_1:
		return qdot_loop(GGML_TYPE_Q4_1, 20, w, xq, n / 32);
	case GGML_TYPE_Q5_1:
		return qdot_loop(GGML_TYPE_Q5_1, 24, w, xq, n / 32);
	default:
		return qdot_loop(GGML_TYPE_Q5_0, 22, w, xq, n / 32);
	}
}

float
cpu_qdot_scalar(uint32_t type, const void *w, const void *xq, uint64_t n)
{
	if (cpu_qdot_act(type) == CPU_ACT_Q8K)
		return cpu_qdot_k_scalar(type, w, xq, n);
	return qdot_q8_scalar(type, w, xq, n);
}

float
cpu_qdot(uint32_t type, const void *w, const void *xq, uint64_t n, bool simd)
{
	if (cpu_qdot_act(type) == CPU_ACT_Q8K)
		return cpu_qdot_k(type, w, xq, n, simd);
	return simd ? qdot_avx2(type, w, xq, n) : qdot_q8_scalar(type, w, xq, n);
}
