/*
 * cpu_pack_k.c - the packed layout of the K-quants Q2_K, Q3_K, Q4_K, Q5_K and
 * Q6_K (cpu.h says it): eight rows' super-blocks regrouped so that one vector
 * of codes serves eight rows and one broadcast word of a token's Q8_K
 * activations, with the sub-block scales a byte each. Here: the packer and the
 * scalar twin of their kernels (cpu_pack_mm.c), which computes what
 * cpu_qdot_k_scalar computes from the file's rows, to the bit.
 */
#include <string.h>

#include "cpu.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"

/* The 6-bit scale and min of sub-block @j from Q4_K's 12 packed bytes at @p. */
static void
q4k_scale_min(const uint8_t *p, uint32_t j, uint8_t *sc, uint8_t *m)
{
	if (j < 4) {
		*sc = p[j] & 63;
		*m = p[j + 4] & 63;
	} else {
		*sc = (uint8_t)((p[j + 4] & 15) | ((p[j - 4] >> 6) << 4));
		*m = (uint8_t)((p[j + 4] >> 4) | ((p[j] >> 6) << 4));
	}
}

/* Row @r's Q4_K (Q5_K when @five) super-block @blk into packed super-block @dst. */
static void
pack_q45k(const uint8_t *blk, bool five, uint32_t r, uint8_t *dst)
{
	const uint8_t *qs = blk + (five ? 48 : 16);

	memcpy(dst + 2 * r, blk, 2);
	memcpy(dst + CPU_PACK_Q4K_DMIN + 2 * r, blk + 2, 2);
	for (uint32_t j = 0; j < 8; j++)
		q4k_scale_min(blk + 4, j, dst + CPU_PACK_Q4K_SC + 8 * j + r,
		              dst + CPU_PACK_Q4K_MIN + 8 * j + r);
	for (uint32_t k = 0; k < 128; k++) /* qs[32c + 4p + i]: vector 8c + p, byte i */
		dst[CPU_PACK_Q45K_CODES(five) + 32 * (k / 4) + 4 * r + k % 4] = qs[k];
	if (five) /* qh[4p + i]: vector p, byte i; its bit j is sub-block j's */
		for (uint32_t k = 0; k < 32; k++)
			dst[CPU_PACK_Q5K_HIGH + 32 * (k / 4) + 4 * r + k % 4] = blk[16 + k];
}

/* The 6-bit codes of the 256 elements of Q6_K super-block @blk into @q. */
static void
q6k_codes(const uint8_t *blk, uint8_t *q)
{
	for (uint32_t n = 0; n < 2; n++)
		for (uint32_t k = 0; k < 4; k++)
			for (uint32_t l = 0; l < 32; l++) {
				uint32_t lo =
				        (blk[64 * n + 32 * (k % 2) + l] >> (4 * (k / 2))) & 15;
				uint32_t hi = (blk[128 + 32 * n + l] >> (2 * k)) & 3;
				q[128 * n + 32 * k + l] = (uint8_t)(lo | hi << 4);
			}
}

/*
 * Row @r's Q6_K super-block @blk into packed super-block @dst: unit u (0..63)
 * is elements 4u..4u+3; vector u < 32 of low nibbles holds unit u's in its
 * low nibbles and unit u + 32's in its high ones; high-bit vector v holds,
 * in bits 2k..2k+1 of byte i, element i of units 2v, 2v + 32, 2v + 1, 2v + 33
 * for k = 0, 1, 2, 3.
 */
static void
pack_q6k(const uint8_t *blk, uint32_t r, uint8_t *dst)
{
	static const uint32_t unit_of[4] = {0, 32, 1, 33};
	uint8_t q[256];

	q6k_codes(blk, q);
	memcpy(dst + 2 * r, blk + 208, 2);
	for (uint32_t g = 0; g < 16; g++)
		dst[CPU_PACK_Q6K_SC + 16 * (g / 2) + 2 * r + g % 2] = blk[192 + g];
	for (uint32_t u = 0; u < 32; u++)
		for (uint32_t i = 0; i < 4; i++)
			dst[CPU_PACK_Q6K_LO(u) + 4 * r + i] =
			        (uint8_t)((q[4 * u + i] & 15) | (q[128 + 4 * u + i] & 15) << 4);
	for (uint32_t v = 0; v < 16; v++)
		for (uint32_t i = 0; i < 4; i++) {
			uint32_t b = 0;
			for (uint32_t k = 0; k < 4; k++)
				b |= (uint32_t)(q[4 * (2 * v + unit_of[k]) + i] >> 4) << (2 * k);
			dst[CPU_PACK_Q6K_HI(v) + 4 * r + i] = (uint8_t)b;
		}
}

/*
 * Row @r's Q2_K (Q3_K when @three) super-block @blk into packed super-block
 * @dst: with unit u (0..63) the elements 4u..4u+3, code vector v (0..15)
 * holds in bits 2k, 2k + 1 of byte i the code (Q3_K: its two low bits) of
 * element i of unit v + 16k; Q3_K's high-bit vector w (0..7) holds in bit k
 * of byte i the high bit of element i of unit w + 8k.
 */
static void
pack_q23k(uint32_t type, const uint8_t *blk, uint32_t r, uint8_t *dst)
{
	bool three = type == GGML_TYPE_Q3_K;
	uint32_t codes = three ? CPU_PACK_Q3K_LO : CPU_PACK_Q2K_CODES;
	int8_t sc[16];

	if (three) {
		memcpy(dst + 2 * r, blk + 108, 2);
		cpu_q3k_scales(blk, sc);
		for (uint32_t g = 0; g < 16; g++)
			dst[CPU_PACK_Q3K_SC + 16 * (g / 2) + 2 * r + g % 2] = (uint8_t)sc[g];
	} else {
		memcpy(dst + 2 * r, blk + 80, 2);
		memcpy(dst + CPU_PACK_Q2K_DMIN + 2 * r, blk + 82, 2);
		for (uint32_t g = 0; g < 16; g++)
			dst[CPU_PACK_Q2K_SC + 8 * g + r] = blk[g];
	}
	for (uint32_t v = 0; v < 16; v++)
		for (uint32_t i = 0; i < 4; i++) {
			uint32_t b = 0;
			for (uint32_t k = 0; k < 4; k++)
				b |= (uint32_t)(cpu_k23_code(type, blk, 4 * (v + 16 * k) + i) & 3)
				     << (2 * k);
			dst[codes + 32 * v + 4 * r + i] = (uint8_t)b;
		}
	for (uint32_t w = 0; three && w < 8; w++)
		for (uint32_t i = 0; i < 4; i++) {
			uint32_t b = 0;
			for (uint32_t k = 0; k < 8; k++)
				b |= (uint32_t)(cpu_k23_code(type, blk, 4 * (w + 8 * k) + i) >> 2)
				     << k;
			dst[CPU_PACK_Q3K_HI + 32 * w + 4 * r + i] = (uint8_t)b;
		}
}

void
cpu_pack_group_k(uint32_t type, const uint8_t *src, uint64_t row_bytes, uint64_t nb, uint8_t *dst)
{
	uint64_t bb = ggml_type_get(type)->block_bytes, pb = cpu_pack_block_bytes(type);

	for (uint64_t b = 0; b < nb; b++)
		for (uint32_t r = 0; r < CPU_PACK_ROWS; r++) {
			const uint8_t *blk = src + r * row_bytes + b * bb;
			if (type == GGML_TYPE_Q6_K)
				pack_q6k(blk, r, dst + b * pb);
			else if (type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K)
				pack_q23k(type, blk, r, dst + b * pb);
			else
				pack_q45k(blk, type == GGML_TYPE_Q5_K, r, dst + b * pb);
		}
}

/* Row @r's code of element @e in packed Q4_K (Q5_K when @five) super-block @p. */
static int32_t
q45k_packed(const uint8_t *p, bool five, uint32_t r, uint32_t e)
{
	uint32_t c = e / 64, h = e % 64 / 32, k = 32 * c + e % 32, l = e % 32;
	int32_t v = (p[CPU_PACK_Q45K_CODES(five) + 32 * (k / 4) + 4 * r + k % 4] >> (4 * h)) & 15;

	if (five)
		v |= ((p[CPU_PACK_Q5K_HIGH + 32 * (l / 4) + 4 * r + l % 4] >> (e / 32)) & 1) << 4;
	return v;
}

/* Row @r's code of element @e in packed Q6_K super-block @p. */
static int32_t
q6k_packed(const uint8_t *p, uint32_t r, uint32_t e)
{
	uint32_t u = e / 4 % 32, hi = e / 128, i = e % 4, v = u / 2;
	uint32_t k = 2 * (u % 2) + hi; /* the unit's place in its high-bit vector */
	int32_t lo = (p[CPU_PACK_Q6K_LO(u) + 4 * r + i] >> (4 * hi)) & 15;

	return lo | ((p[CPU_PACK_Q6K_HI(v) + 4 * r + i] >> (2 * k)) & 3) << 4;
}

/* Row @r of packed super-block @p times @x, as cpu_qdot_k_scalar's Q4_K / Q5_K step. */
static float
sb_q45k(const uint8_t *p, bool five, uint32_t r, const struct cpu_q8k *x)
{
	int32_t sumi = 0, summ = 0;

	for (uint32_t j = 0; j < 8; j++) {
		int32_t s = 0;
		for (uint32_t e = 32 * j; e < 32 * j + 32; e++)
			s += q45k_packed(p, five, r, e) * x->q[e];
		sumi += p[CPU_PACK_Q4K_SC + 8 * j + r] * s;
		summ += p[CPU_PACK_Q4K_MIN + 8 * j + r] * (x->bsums[2 * j] + x->bsums[2 * j + 1]);
	}
	/* one operation a statement, as cpu_qdot_k_scalar: nothing fused */
	float a = fp16_load(p + 2 * r) * (float)sumi;
	float m = fp16_load(p + CPU_PACK_Q4K_DMIN + 2 * r) * (float)summ;
	return x->d * (a - m);
}

/* Row @r of packed super-block @p times @x, as cpu_qdot_k_scalar's Q6_K step. */
static float
sb_q6k(const uint8_t *p, uint32_t r, const struct cpu_q8k *x)
{
	int32_t sumi = 0;

	for (uint32_t g = 0; g < 16; g++) {
		int32_t s = 0, sc = (int8_t)p[CPU_PACK_Q6K_SC + 16 * (g / 2) + 2 * r + g % 2];
		for (uint32_t e = 16 * g; e < 16 * g + 16; e++)
			s += q6k_packed(p, r, e) * x->q[e];
		sumi += sc * (s - 32 * x->bsums[g]);
	}
	return x->d * fp16_load(p + 2 * r) * (float)sumi;
}

/* Row @r's code of element @e in packed Q2_K super-block @p (Q3_K: q + 4, when @three). */
static int32_t
q23k_packed(const uint8_t *p, bool three, uint32_t r, uint32_t e)
{
	uint32_t u = e / 4, i = e % 4;
	int32_t v =
	        (p[(three ? CPU_PACK_Q3K_LO : CPU_PACK_Q2K_CODES) + 32 * (u % 16) + 4 * r + i] >>
	         (2 * (u / 16))) &
	        3;

	if (three)
		v |= ((p[CPU_PACK_Q3K_HI + 32 * (u % 8) + 4 * r + i] >> (u / 8)) & 1) << 2;
	return v;
}

/* Row @r of packed super-block @p times @x, as cpu_qdot_k23_scalar's Q2_K / Q3_K step. */
static float
sb_q23k(const uint8_t *p, bool three, uint32_t r, const struct cpu_q8k *x)
{
	int32_t sumi = 0, summ = 0;

	for (uint32_t g = 0; g < 16; g++) {
		int32_t s = 0;
		for (uint32_t e = 16 * g; e < 16 * g + 16; e++)
			s += q23k_packed(p, three, r, e) * x->q[e];
		if (three) {
			int32_t sc = (int8_t)p[CPU_PACK_Q3K_SC + 16 * (g / 2) + 2 * r + g % 2];
			sumi += sc * (s - 4 * x->bsums[g]);
		} else {
			uint8_t sc = p[CPU_PACK_Q2K_SC + 8 * g + r];
			sumi += (sc & 15) * s;
			summ += (sc >> 4) * x->bsums[g];
		}
	}
	if (three) {
		float v = x->d * fp16_load(p + 2 * r) * (float)sumi;
		return v;
	}
	float a = fp16_load(p + 2 * r) * (float)sumi;
	float m = fp16_load(p + CPU_PACK_Q2K_DMIN + 2 * r) * (float)summ;
	return x->d * (a - m);
}

void
cpu_pack_mm_k_scalar(uint32_t type, const uint8_t *g, uint64_t nb, const void *xq, uint64_t xs,
                     uint32_t nt, float *y, uint64_t ys, const float *bias)
{
	const struct cpu_q8k *x = xq;
	uint64_t pb = cpu_pack_block_bytes(type);

	for (uint32_t t = 0; t < nt; t++)
		for (uint32_t r = 0; r < CPU_PACK_ROWS; r++) {
			float acc = 0.0f;
			for (uint64_t b = 0; b < nb; b++) {
				const uint8_t *p = g + b * pb;
				const struct cpu_q8k *xb = x + t * xs + b;
				float v = type == GGML_TYPE_Q6_K ? sb_q6k(p, r, xb)
				          : type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K
				                  ? sb_q23k(p, type == GGML_TYPE_Q3_K, r, xb)
				                  : sb_q45k(p, type == GGML_TYPE_Q5_K, r, xb);
				acc += v;
			}
			y[t * ys + r] = bias != NULL ? acc + bias[r] : acc;
		}
}
