/*
 * quant_k.c - the K-quant super-block formats (256 elements each).
 *
 * Element e of a super-block sits in these places (ggml-common.h layouts):
 *   Q2_K {scales[16]; qs[64]; d; dmin}: sub-block s = e/16 has scale
 *        scales[s] & 15 and min scales[s] >> 4; with n = e/128, j = (e%128)/32,
 *        l = e%32 the 2-bit q is (qs[32n + l] >> 2j) & 3; x = d·sc·q − dmin·m.
 *   Q3_K {hmask[32]; qs[64]; scales[12]; d}: 16 signed 6-bit scales stored
 *        +32, low nibble of scale s in scales[s%8] nibble s/8, top 2 bits in
 *        scales[8 + s%4] bits 2(s/4); q = ((qs[32n+l] >> 2j) & 3) − 4 unless
 *        bit 4n+j of hmask[l] is set; x = d·(sc−32)·q.
 *   Q4_K {d; dmin; scales[12]; qs[128]}: 8 sub-blocks of 32 with 6-bit scale
 *        and min (packing in k4_pack); c = e/64, nibble (e%64)/32 of
 *        qs[32c + e%32]; x = d·sc·q − dmin·m.
 *   Q5_K {d; dmin; scales[12]; qh[32]; qs[128]}: as Q4_K plus bit 4 of q in
 *        bit 2c + (e%64)/32 of qh[e%32].
 *   Q6_K {ql[128]; qh[64]; scales[16] int8; d}: n = e/128, k = (e%128)/32,
 *        l = e%32: low nibble k/2 of ql[64n + 32(k%2) + l], high 2 bits at
 *        bit 2k of qh[32n + l], q − 32; x = d·scales[e/16]·q.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "ggml_type.h"
#include "quant_internal.h"

static int
clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * Affine sub-blocks (Q2_K, Q4_K, Q5_K): @ns sub-blocks of @len, q in 0..@qmax,
 * scale/min quantized to 0..@smax. Writes d, dmin and per-sub-block sc[]/m[];
 * q[] receives every element's code.
 */
static void
affine_subblocks(const float *x, int ns, int len, int qmax, int smax, float *ret_d, float *ret_dmin,
                 uint8_t *sc, uint8_t *m, uint8_t *q)
{
	float scale[16], minv[16], max_scale = 0.0f, max_min = 0.0f;

	for (int s = 0; s < ns; s++) {
		float lo = 0.0f, hi = 0.0f;
		for (int i = 0; i < len; i++) {
			lo = fminf(lo, x[s * len + i]);
			hi = fmaxf(hi, x[s * len + i]);
		}
		scale[s] = (hi - lo) / (float)qmax;
		minv[s] = -lo;
		max_scale = fmaxf(max_scale, scale[s]);
		max_min = fmaxf(max_min, minv[s]);
	}
	float d = quant_f16_round(max_scale / (float)smax);
	float dmin = quant_f16_round(max_min / (float)smax);
	for (int s = 0; s < ns; s++) {
		sc[s] = (uint8_t)(d > 0.0f ? clampi(quant_nearest(scale[s] / d), 0, smax) : 0);
		m[s] = (uint8_t)(dmin > 0.0f ? clampi(quant_nearest(minv[s] / dmin), 0, smax) : 0);
		float dl = d * (float)sc[s], ml = dmin * (float)m[s];
		for (int i = 0; i < len; i++) {
			int v = dl > 0.0f ? quant_nearest((x[s * len + i] + ml) / dl) : 0;
			q[s * len + i] = (uint8_t)clampi(v, 0, qmax);
		}
	}
	*ret_d = d;
	*ret_dmin = dmin;
}

/*
 * Symmetric sub-blocks (Q3_K, Q6_K): 16 sub-blocks of 16, q in
 * [-@qneg, @qneg - 1], signed scales in [-@smax, @smax].
 */
static float
sym_subblocks(const float *x, int qneg, int smax, int *sc, int *q)
{
	float scale[16], max_abs = 0.0f;

	for (int s = 0; s < 16; s++) {
		float amax = 0.0f, max = 0.0f;
		for (int i = 0; i < 16; i++) {
			if (fabsf(x[16 * s + i]) > amax) {
				amax = fabsf(x[16 * s + i]);
				max = x[16 * s + i];
			}
		}
		scale[s] = max / (float)-qneg; /* the largest element maps to -qneg */
		max_abs = fmaxf(max_abs, fabsf(scale[s]));
	}
	float d = quant_f16_round(max_abs / (float)smax);
	for (int s = 0; s < 16; s++) {
		sc[s] = d > 0.0f ? clampi(quant_nearest(scale[s] / d), -smax, smax) : 0;
		float dl = d * (float)sc[s];
		for (int i = 0; i < 16; i++) {
			int v = dl != 0.0f ? quant_nearest(x[16 * s + i] / dl) : 0;
			q[16 * s + i] = clampi(v, -qneg, qneg - 1);
		}
	}
	return d;
}

void
quant_q2_k(const float *x, uint8_t *b)
{
	uint8_t sc[16], m[16], q[QK_K];
	float d, dmin;

	affine_subblocks(x, 16, 16, 3, 15, &d, &dmin, sc, m, q);
	memset(b, 0, 84);
	for (int s = 0; s < 16; s++)
		b[s] = (uint8_t)(sc[s] | (m[s] << 4));
	for (int e = 0; e < QK_K; e++)
		b[16 + 32 * (e / 128) + e % 32] |= (uint8_t)(q[e] << (2 * ((e % 128) / 32)));
	quant_put_f16(b + 80, d);
	quant_put_f16(b + 82, dmin);
}

void
dequant_q2_k(const uint8_t *b, float *y)
{
	float d = quant_get_f16(b + 80), dmin = quant_get_f16(b + 82);

	for (int n = 0; n < 2; n++) {
		const uint8_t *q = b + 16 + 32 * n;
		for (int j = 0; j < 4; j++) {
			for (int h = 0; h < 2; h++) {
				uint8_t sc = b[8 * n + 2 * j + h];
				float dl = d * (float)(sc & 15), ml = dmin * (float)(sc >> 4);
				float *o = y + 128 * n + 32 * j + 16 * h;
				for (int l = 0; l < 16; l++)
					o[l] = dl * (float)((q[16 * h + l] >> (2 * j)) & 3) - ml;
			}
		}
	}
}

void
quant_q3_k(const float *x, uint8_t *b)
{
	int sc[16], q[QK_K];
	float d = sym_subblocks(x, 4, 31, sc, q);

	memset(b, 0, 110);
	for (int e = 0; e < QK_K; e++) {
		int n = e / 128, j = (e % 128) / 32, l = e % 32, u = q[e] + 4;
		b[32 + 32 * n + l] |= (uint8_t)((u & 3) << (2 * j));
		if (u >> 2)
			b[l] |= (uint8_t)(1u << (4 * n + j));
	}
	for (int s = 0; s < 16; s++) {
		int u = sc[s] + 32;
		b[96 + s % 8] |= (uint8_t)((u & 15) << (4 * (s / 8)));
		b[96 + 8 + s % 4] |= (uint8_t)((u >> 4) << (2 * (s / 4)));
	}
	quant_put_f16(b + 108, d);
}

void
dequant_q3_k(const uint8_t *b, float *y)
{
	float d = quant_get_f16(b + 108);

	for (int sb = 0; sb < 16; sb++) {
		int lo = (b[96 + sb % 8] >> (4 * (sb / 8))) & 15;
		int hi = (b[104 + sb % 4] >> (2 * (sb / 4))) & 3;
		float dl = d * (float)((lo | (hi << 4)) - 32);
		int n = sb / 8, j = (sb % 8) / 2, l0 = 16 * (sb % 2);
		uint8_t mask = (uint8_t)(1u << (4 * n + j));
		const uint8_t *q = b + 32 + 32 * n;
		for (int l = l0; l < l0 + 16; l++) {
			int v = (q[l] >> (2 * j)) & 3;
			y[16 * sb + l - l0] = dl * (float)(v - ((b[l] & mask) ? 0 : 4));
		}
	}
}

/* The 12-byte scale/min packing shared by Q4_K and Q5_K. */
static void
k4_pack(const uint8_t *sc, const uint8_t *m, uint8_t *p)
{
	memset(p, 0, 12);
	for (int j = 0; j < 4; j++) {
		p[j] = sc[j];
		p[j + 4] = m[j];
	}
	for (int j = 4; j < 8; j++) {
		p[j + 4] = (uint8_t)((sc[j] & 15) | ((m[j] & 15) << 4));
		p[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
		p[j] |= (uint8_t)((m[j] >> 4) << 6);
	}
}

static void
k4_unpack(const uint8_t *p, int j, float *sc, float *m)
{
	if (j < 4) {
		*sc = (float)(p[j] & 63);
		*m = (float)(p[j + 4] & 63);
	} else {
		*sc = (float)((p[j + 4] & 15) | ((p[j - 4] >> 6) << 4));
		*m = (float)((p[j + 4] >> 4) | ((p[j] >> 6) << 4));
	}
}

/* Q4_K (@five false) and Q5_K. */
static void
quant_k45(const float *x, uint8_t *b, bool five)
{
	uint8_t sc[8], m[8], q[QK_K];
	uint8_t *qs = b + (five ? 48 : 16);
	float d, dmin;

	affine_subblocks(x, 8, 32, five ? 31 : 15, 63, &d, &dmin, sc, m, q);
	memset(b, 0, five ? 176 : 144);
	quant_put_f16(b, d);
	quant_put_f16(b + 2, dmin);
	k4_pack(sc, m, b + 4);
	for (int e = 0; e < QK_K; e++) {
		int c = e / 64, hi = (e % 64) / 32;
		qs[32 * c + e % 32] |= (uint8_t)((q[e] & 15) << (4 * hi));
		if (five && (q[e] & 16))
			b[16 + e % 32] |= (uint8_t)(1u << (2 * c + hi));
	}
}

static void
dequant_k45(const uint8_t *b, float *y, bool five)
{
	float d = quant_get_f16(b), dmin = quant_get_f16(b + 2);
	const uint8_t *qs = b + (five ? 48 : 16);

	for (int c = 0; c < 4; c++) {
		for (int h = 0; h < 2; h++) {
			float sc, m;
			k4_unpack(b + 4, 2 * c + h, &sc, &m);
			float dl = d * sc, ml = dmin * m;
			const uint8_t *q = qs + 32 * c;
			uint8_t hb = (uint8_t)(1u << (2 * c + h));
			float *o = y + 64 * c + 32 * h;
			for (int l = 0; l < 32; l++) {
				int v = (q[l] >> (4 * h)) & 15;
				if (five && (b[16 + l] & hb))
					v += 16;
				o[l] = dl * (float)v - ml;
			}
		}
	}
}

void
quant_q4_k(const float *x, uint8_t *b)
{
	quant_k45(x, b, false);
}

void
dequant_q4_k(const uint8_t *b, float *y)
{
	dequant_k45(b, y, false);
}

void
quant_q5_k(const float *x, uint8_t *b)
{
	quant_k45(x, b, true);
}

void
dequant_q5_k(const uint8_t *b, float *y)
{
	dequant_k45(b, y, true);
}

void
quant_q6_k(const float *x, uint8_t *b)
{
	int sc[16], q[QK_K];
	float d = sym_subblocks(x, 32, 127, sc, q);

	memset(b, 0, 210);
	for (int e = 0; e < QK_K; e++) {
		int n = e / 128, k = (e % 128) / 32, l = e % 32, u = q[e] + 32;
		b[64 * n + 32 * (k % 2) + l] |= (uint8_t)((u & 15) << (4 * (k / 2)));
		b[128 + 32 * n + l] |= (uint8_t)((u >> 4) << (2 * k));
	}
	for (int s = 0; s < 16; s++)
		b[192 + s] = (uint8_t)(int8_t)sc[s];
	quant_put_f16(b + 208, d);
}

void
dequant_q6_k(const uint8_t *b, float *y)
{
	float d = quant_get_f16(b + 208);

	for (int n = 0; n < 2; n++) {
		const uint8_t *ql = b + 64 * n, *qh = b + 128 + 32 * n;
		for (int k = 0; k < 4; k++) {
			for (int h = 0; h < 2; h++) {
				float dl = d * (float)(int8_t)b[192 + 8 * n + 2 * k + h];
				float *o = y + 128 * n + 32 * k + 16 * h;
				for (int l = 16 * h; l < 16 * h + 16; l++) {
					int lo = (ql[32 * (k % 2) + l] >> (4 * (k / 2))) & 15;
					int hi = (qh[l] >> (2 * k)) & 3;
					o[l - 16 * h] = dl * (float)((lo | (hi << 4)) - 32);
				}
			}
		}
	}
}
