/*
 * quant.c - F32/F16/BF16 and the 32-element block formats (Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0), plus the row dispatch for all supported types.
 *
 * Block layouts (ggml-common.h), little-endian, fp16 scales:
 *   Q4_0 {d; qs[16]}         x = (q - 8)·d,  q of element j<16 in the low nibble of qs[j], j+16
 * high Q4_1 {d; m; qs[16]}      x = q·d + m Q5_0 {d; qh[4]; qs[16]}  x = (q - 16)·d, bit 4 of
 * element j is bit j of qh (u32) Q5_1 {d; m; qh[4]; qs[16]} x = q·d + m Q8_0 {d; qs[32] int8}    x
 * = q·d
 */
#include "quant.h"

#include <math.h>
#include <string.h>

#include "fp16.h"
#include "ggml_type.h"
#include "quant_internal.h"

float
quant_f16_round(float x)
{
	return fp16_to_f32(fp16_from_f32(x));
}

void
quant_put_f16(uint8_t *b, float x)
{
	uint16_t h = fp16_from_f32(x);

	memcpy(b, &h, 2);
}

float
quant_get_f16(const uint8_t *b)
{
	return fp16_load(b);
}

int
quant_nearest(float x)
{
	return (int)lrintf(x);
}

static int
clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The element of largest magnitude, with its sign. */
static float
signed_absmax(const float *x, int n)
{
	float amax = 0.0f, max = 0.0f;

	for (int i = 0; i < n; i++) {
		if (fabsf(x[i]) > amax) {
			amax = fabsf(x[i]);
			max = x[i];
		}
	}
	return max;
}

/*
 * Symmetric: Q4_0 (@bits 4) and Q5_0 (@bits 5). The arithmetic is ggml's
 * reference quantizer's (scale from the unrounded d, truncation after
 * +half+0.5), so blocks come out byte-identical to llama-quantize's.
 */
static void
quant_sym(const float *x, uint8_t *b, int bits)
{
	int half = 1 << (bits - 1), qmax = (1 << bits) - 1;
	float d = signed_absmax(x, 32) / (float)-half;
	float id = d != 0.0f ? 1.0f / d : 0.0f;
	uint8_t *qs = b + (bits == 5 ? 6 : 2);
	uint32_t qh = 0;

	quant_put_f16(b, d);
	for (int j = 0; j < 16; j++) {
		int q0 = clampi((int)(int8_t)(x[j] * id + (float)half + 0.5f), 0, qmax);
		int q1 = clampi((int)(int8_t)(x[j + 16] * id + (float)half + 0.5f), 0, qmax);
		qs[j] = (uint8_t)((q0 & 0xf) | ((q1 & 0xf) << 4));
		qh |= (uint32_t)(q0 >> 4) << j;
		qh |= (uint32_t)(q1 >> 4) << (j + 16);
	}
	if (bits == 5)
		memcpy(b + 2, &qh, 4);
}

/* Affine: Q4_1 (@bits 4) and Q5_1 (@bits 5), ggml's reference arithmetic. */
static void
quant_affine(const float *x, uint8_t *b, int bits)
{
	int qmax = (1 << bits) - 1;
	float min = x[0], max = x[0];
	uint8_t *qs = b + (bits == 5 ? 8 : 4);
	uint32_t qh = 0;

	for (int i = 1; i < 32; i++) {
		min = fminf(min, x[i]);
		max = fmaxf(max, x[i]);
	}
	float d = (max - min) / (float)qmax;
	float id = d != 0.0f ? 1.0f / d : 0.0f;
	quant_put_f16(b, d);
	quant_put_f16(b + 2, min);
	for (int j = 0; j < 16; j++) {
		int q0 = clampi((int)(int8_t)((x[j] - min) * id + 0.5f), 0, qmax);
		int q1 = clampi((int)(int8_t)((x[j + 16] - min) * id + 0.5f), 0, qmax);
		qs[j] = (uint8_t)((q0 & 0xf) | ((q1 & 0xf) << 4));
		qh |= (uint32_t)(q0 >> 4) << j;
		qh |= (uint32_t)(q1 >> 4) << (j + 16);
	}
	if (bits == 5)
		memcpy(b + 4, &qh, 4);
}

static void
dequant_32(uint32_t type, const uint8_t *b, float *y)
{
	bool affine = type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1;
	bool five = type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1;
	float d = quant_get_f16(b), m = affine ? quant_get_f16(b + 2) : 0.0f;
	const uint8_t *qs = b + 2 + (affine ? 2 : 0) + (five ? 4 : 0);
	int offset = affine ? 0 : five ? 16 : 8;
	uint32_t qh = 0;

	if (five)
		memcpy(&qh, b + (affine ? 4 : 2), 4);
	for (int j = 0; j < 16; j++) {
		int q0 = (qs[j] & 0xf) | (int)(((qh >> j) & 1u) << 4);
		int q1 = (qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
		y[j] = (float)(q0 - offset) * d + m;
		y[j + 16] = (float)(q1 - offset) * d + m;
	}
}

static void
quant_q8_0(const float *x, uint8_t *b)
{
	float amax = 0.0f;

	for (int i = 0; i < 32; i++)
		amax = fmaxf(amax, fabsf(x[i]));
	float d = amax / 127.0f;
	float id = d != 0.0f ? 1.0f / d : 0.0f;
	quant_put_f16(b, d);
	for (int i = 0; i < 32; i++)
		b[2 + i] = (uint8_t)(int8_t)clampi((int)roundf(x[i] * id), -127, 127);
}

static void
dequant_q8_0(const uint8_t *b, float *y)
{
	float d = quant_get_f16(b);

	for (int i = 0; i < 32; i++)
		y[i] = (float)(int8_t)b[2 + i] * d;
}

/* E2M1 values ×2, indexed by the 4-bit code (sign in bit 3). */
static const int8_t mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static void
dequant_mxfp4(const uint8_t *b, float *y)
{
	float d = ldexpf(1.0f, (int)b[0] - 128);

	for (int j = 0; j < 16; j++) {
		y[j] = (float)mxfp4_values[b[1 + j] & 0xf] * d;
		y[j + 16] = (float)mxfp4_values[b[1 + j] >> 4] * d;
	}
}

static int
mxfp4_nearest(float v)
{
	int best = 0;
	float err = INFINITY;

	for (int k = 0; k < 16; k++) {
		float e = fabsf(v - (float)mxfp4_values[k]);
		if (e < err) {
			err = e;
			best = k;
		}
	}
	return best;
}

/* Shared exponent so the largest magnitude lands at or below 12 (6.0 undoubled). */
static void
quant_mxfp4(const float *x, uint8_t *b)
{
	float amax = 0.0f;

	for (int i = 0; i < 32; i++)
		amax = fmaxf(amax, fabsf(x[i]));
	int e = amax > 0.0f ? (int)floorf(log2f(amax)) - 2 + 127 : 0;
	e = e < 0 ? 0 : e > 254 ? 254 : e;
	float id = 1.0f / ldexpf(1.0f, e - 128);
	b[0] = (uint8_t)e;
	for (int j = 0; j < 16; j++)
		b[1 + j] =
		        (uint8_t)(mxfp4_nearest(x[j] * id) | (mxfp4_nearest(x[j + 16] * id) << 4));
}

bool
quant_supported(uint32_t type)
{
	switch (type) {
	case GGML_TYPE_F32:
	case GGML_TYPE_F16:
	case GGML_TYPE_BF16:
	case GGML_TYPE_Q4_0:
	case GGML_TYPE_Q4_1:
	case GGML_TYPE_Q5_0:
	case GGML_TYPE_Q5_1:
	case GGML_TYPE_Q8_0:
	case GGML_TYPE_Q2_K:
	case GGML_TYPE_Q3_K:
	case GGML_TYPE_Q4_K:
	case GGML_TYPE_Q5_K:
	case GGML_TYPE_Q6_K:
	case GGML_TYPE_MXFP4:
		return true;
	default:
		return false;
	}
}

/* One block of a quantized type: encode (@enc) or decode. */
static void
block_codec(uint32_t type, bool enc, float *x, uint8_t *b)
{
	switch (type) {
	case GGML_TYPE_Q4_0:
	case GGML_TYPE_Q5_0:
		if (enc)
			quant_sym(x, b, type == GGML_TYPE_Q4_0 ? 4 : 5);
		else
			dequant_32(type, b, x);
		break;
	case GGML_TYPE_Q4_1:
	case GGML_TYPE_Q5_1:
		if (enc)
			quant_affine(x, b, type == GGML_TYPE_Q4_1 ? 4 : 5);
		else
			dequant_32(type, b, x);
		break;
	case GGML_TYPE_Q8_0:
		enc ? quant_q8_0(x, b) : dequant_q8_0(b, x);
		break;
	case GGML_TYPE_MXFP4:
		enc ? quant_mxfp4(x, b) : dequant_mxfp4(b, x);
		break;
	case GGML_TYPE_Q2_K:
		enc ? quant_q2_k(x, b) : dequant_q2_k(b, x);
		break;
	case GGML_TYPE_Q3_K:
		enc ? quant_q3_k(x, b) : dequant_q3_k(b, x);
		break;
	case GGML_TYPE_Q4_K:
		enc ? quant_q4_k(x, b) : dequant_q4_k(b, x);
		break;
	case GGML_TYPE_Q5_K:
		enc ? quant_q5_k(x, b) : dequant_q5_k(b, x);
		break;
	default: /* GGML_TYPE_Q6_K; quant_supported() filtered the rest */
		enc ? quant_q6_k(x, b) : dequant_q6_k(b, x);
		break;
	}
}

/* Element types: F32, F16, BF16. */
static void
elem_codec(uint32_t type, bool enc, float *x, uint8_t *b, uint64_t n)
{
	uint16_t h;

	for (uint64_t i = 0; i < n; i++) {
		if (type == GGML_TYPE_F32) {
			if (enc)
				memcpy(b + 4 * i, &x[i], 4);
			else
				memcpy(&x[i], b + 4 * i, 4);
			continue;
		}
		if (enc) {
			h = type == GGML_TYPE_F16 ? fp16_from_f32(x[i]) : bf16_from_f32(x[i]);
			memcpy(b + 2 * i, &h, 2);
		} else {
			memcpy(&h, b + 2 * i, 2);
			x[i] = type == GGML_TYPE_F16 ? fp16_to_f32(h) : bf16_to_f32(h);
		}
	}
}

static orch_err
row_codec(uint32_t type, bool enc, float *x, uint8_t *b, uint64_t n)
{
	const struct ggml_type_info *t = ggml_type_get(type);

	if (t == NULL || !quant_supported(type))
		return ORCH_EUNSUPPORTED;
	if (n % t->block_size != 0)
		return ORCH_EINVAL;
	if (!t->quantized) {
		elem_codec(type, enc, x, b, n);
		return ORCH_OK;
	}
	for (uint64_t i = 0; i < n / t->block_size; i++)
		block_codec(type, enc, x + i * t->block_size, b + i * t->block_bytes);
	return ORCH_OK;
}

orch_err
quant_row(uint32_t type, const float *x, void *dst, uint64_t n)
{
	/* The encoders never write through x; the shared codec takes it non-const. */
	union {
		const float *c;
		float *m;
	} in = {.c = x};

	return row_codec(type, true, in.m, dst, n);
}

orch_err
dequant_row(uint32_t type, const void *src, float *y, uint64_t n)
{
	union {
		const void *c;
		uint8_t *m;
	} in = {.c = src};

	return row_codec(type, false, y, in.m, n);
}
