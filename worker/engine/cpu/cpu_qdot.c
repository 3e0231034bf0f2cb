/*
 * cpu_qdot.c - integer dot products: which activation format goes with which
 * weight type, and the dots of Q8_0 / Q4_0 / Q5_0 / Q4_1 / Q5_1 weight rows with an
 * activation row quantized as Q8_0 (struct cpu_q8b), as llama.cpp computes
 * them (MXFP4 too: its 4-bit codes index the E2M1 values, doubled, and its
 * E8M0 scale is halved to match); the K-quant dots are in cpu_qdot_k.c. Per 32-element block: the
 * exact int32 sum of code products times the two scales, accumulated in
 * float; Q4_0/Q5_0 codes stay unsigned and their offset is removed with the
 * activation block's code sum. The SIMD kernels (cpu_qdot_q8.c, which
 * prefetch the weight stream) and the scalar twin compute the same integer
 * sums; only the float accumulation order differs.
 */
#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "cpu.h"
#include "cpu_avx2.h"
#include "cpu_qdot_int.h"
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
	case GGML_TYPE_Q2_K:
	case GGML_TYPE_Q3_K:
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
cpu_quant_act(uint32_t type, const float *x, void *xq, uint64_t n, bool simd)
{
	bool k = cpu_qdot_act(type) == CPU_ACT_Q8K;

	if (simd && k)
		cpu_quant_q8k_avx2(x, xq, n);
	else if (simd)
		cpu_quant_q8b_avx2(x, xq, n);
	else if (k)
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

__attribute__((target("avx2,fma,f16c"))) void
cpu_quant_q8b_avx2(const float *x, void *yq, uint64_t n)
{
	struct cpu_q8b *y = yq;

	for (uint64_t i = 0; i < n / 32; i++, x += 32, y++) {
		__m256 v[4], m = _mm256_setzero_ps();
		for (int k = 0; k < 4; k++) {
			v[k] = _mm256_loadu_ps(x + 8 * k);
			m = cpu_avx2_amax(v[k], m);
		}
		float amax = cpu_avx2_hmax(m);
		__m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
		y->d = fp16_to_f32(fp16_from_f32(amax / 127.0f));
		__m256i q[4];
		for (int k = 0; k < 4; k++)
			q[k] = cpu_avx2_codes(v[k], id);
		_mm256_storeu_si256((__m256i *)(void *)y->q,
		                    cpu_avx2_pack_codes(q[0], q[1], q[2], q[3]));
		y->s = cpu_avx2_hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]),
		                                          _mm256_add_epi32(q[2], q[3])));
	}
}

/* A weight block's scale: F16 in its first two bytes, or MXFP4's E8M0 byte (halved). */
static float
block_scale(uint32_t type, const uint8_t *b)
{
	return type == GGML_TYPE_MXFP4 ? cpu_e8m0_half(b[0]) : fp16_load(b);
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
			q[j] = cpu_mxfp4_x2[b[1 + j] & 0xf];
			q[j + 16] = cpu_mxfp4_x2[b[1 + j] >> 4];
		}
		return;
	}
	if (type == GGML_TYPE_Q8_0) {
		for (int j = 0; j < 32; j++)
			q[j] = (int8_t)b[2 + j];
		return;
	}
	bool five = type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1, aff = cpu_affine(type);
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
		corr += (cpu_affine(type) ? fp16_load(wb + 2) * x->d : dd) * (float)x->s;
	}
	return cpu_affine(type) ? sum + corr : sum - (float)off * corr;
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
	float out;

	cpu_qdot_n(simd ? cpu_isa_best() : CPU_ISA_SCALAR, type, w, xq, 0, n, 1, &out);
	return out;
}

enum cpu_isa
cpu_isa_best(void)
{
	static _Atomic int best = -1; /* found once: CPUID may trap to a hypervisor */
	int v = atomic_load_explicit(&best, memory_order_relaxed);

	if (v < 0) {
		v = !cpu_has_avx2() ? CPU_ISA_SCALAR
		    : __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl")
		            ? CPU_ISA_VNNI
		            : CPU_ISA_AVX2;
		atomic_store_explicit(&best, v, memory_order_relaxed);
	}
	return (enum cpu_isa)v;
}

void
cpu_qdot_n(enum cpu_isa isa, uint32_t type, const void *w, const void *xq, uint64_t xq_row,
           uint64_t n, uint32_t nt, float *out)
{
	const uint8_t *x = xq;
	uint64_t xs = xq_row / sizeof(struct cpu_q8b);

	for (; nt > CPU_QDOT_N; nt -= CPU_QDOT_N, x += CPU_QDOT_N * xq_row, out += CPU_QDOT_N)
		cpu_qdot_n(isa, type, w, x, xq_row, n, CPU_QDOT_N, out);
	if (nt == 0)
		return;
	if (isa == CPU_ISA_SCALAR)
		for (uint32_t t = 0; t < nt; t++)
			out[t] = cpu_qdot_scalar(type, w, x + t * xq_row, n);
	else if (cpu_qdot_act(type) == CPU_ACT_Q8K)
		cpu_qdot_k_n(type, w, (const struct cpu_q8k *)(const void *)x,
		             xq_row / sizeof(struct cpu_q8k), n, nt, out);
	else if (isa == CPU_ISA_VNNI)
		cpu_qdot_q8_vnni(type, w, x, xs, n, nt, out);
	else
		cpu_qdot_q8_avx2(type, w, x, xs, n, nt, out);
}
