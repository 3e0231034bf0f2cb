/*
 * qdot_emul.cu - cuk_mmvq and cuk_quant_act run on the host: the same
 * qdot.cuh code the kernels run, one lane at a time, with the warp's
 * butterfly sum in the kernel's order, so that qdot_test.c can check the
 * arithmetic and the chunk layout against the CPU backend without a GPU
 * (and tests/gpu can compare the device with it bit for bit).
 */
#include "kernels/qdot.cuh"
#include "qdot_emul.h"

namespace
{

/* cuk::warp_sum over 32 lane values: v[l] += v[l ^ o] for o = 16, 8, 4, 2, 1; lane 0's. */
float
warp_sum(float *v)
{
	for (int o = 16; o > 0; o >>= 1) {
		float t[32];
		for (int l = 0; l < 32; l++)
			t[l] = v[l] + v[l ^ o];
		memcpy(v, t, sizeof(t));
	}
	return v[0];
}

template <int T, int B>
void
row_B(const uint8_t *w, uint32_t n, const uint8_t *xq, uint64_t xq_ld, float *out)
{
	float acc[32][B], lane[32];

	for (uint32_t l = 0; l < 32; l++)
		cuk::qd::lane_sums<T, B>(w, n, xq, xq_ld, l, 32, acc[l]);
	for (int b = 0; b < B; b++) {
		for (int l = 0; l < 32; l++)
			lane[l] = acc[l][b];
		out[b] = warp_sum(lane);
	}
}

template <int T>
void
row(const uint8_t *w, uint32_t n, const uint8_t *xq, uint64_t xq_ld, uint32_t B, float *out)
{
	if (B == 1)
		row_B<T, 1>(w, n, xq, xq_ld, out);
	else
		row_B<T, 8>(w, n, xq, xq_ld, out);
}

} // namespace

extern "C" bool
qdot_emul_row(uint32_t type, const uint8_t *w, uint32_t n, const uint8_t *xq, uint64_t xq_ld,
              uint32_t B, float *out)
{
	if (B != 1 && B != 8)
		return false;
	switch (type) {
	case GGML_TYPE_Q4_0:
		row<GGML_TYPE_Q4_0>(w, n, xq, xq_ld, B, out);
		break;
	case GGML_TYPE_Q4_1:
		row<GGML_TYPE_Q4_1>(w, n, xq, xq_ld, B, out);
		break;
	case GGML_TYPE_Q5_0:
		row<GGML_TYPE_Q5_0>(w, n, xq, xq_ld, B, out);
		break;
	case GGML_TYPE_Q5_1:
		row<GGML_TYPE_Q5_1>(w, n, xq, xq_ld, B, out);
		break;
	case GGML_TYPE_Q8_0:
		row<GGML_TYPE_Q8_0>(w, n, xq, xq_ld, B, out);
		break;
	case GGML_TYPE_Q4_K:
		row<GGML_TYPE_Q4_K>(w, n, xq, xq_ld, B, out);
		break;
	case GGML_TYPE_Q5_K:
		row<GGML_TYPE_Q5_K>(w, n, xq, xq_ld, B, out);
		break;
	case GGML_TYPE_Q6_K:
		row<GGML_TYPE_Q6_K>(w, n, xq, xq_ld, B, out);
		break;
	default:
		return false;
	}
	return true;
}

extern "C" bool
qdot_emul_quant(enum cuk_act fmt, const float *x, uint32_t n, uint8_t *row)
{
	if (fmt == CUK_ACT_Q8 && n % 32 == 0) {
		for (uint32_t c = 0; c < n / 32; c++) {
			uint32_t w[8];
			float d;
			int s = cuk::qd::q8_block(x + 32ull * c, w, &d);
			memcpy(row + 4ull * c, &d, 4);
			memcpy(row + cuk_q8_sums_off(n) + 4ull * c, &s, 4);
			memcpy(row + cuk_q8_codes_off(n) + 32ull * c, w, 32);
		}
		return true;
	}
	if (fmt != CUK_ACT_Q8K || n % 256 != 0)
		return false;
	for (uint32_t u = 0; u < n / 256; u++) {
		const float *xs = x + 256ull * u;
		float amax = 0.0f, id, d;
		int s[32];
		for (int k = 0; k < 256; k++)
			amax = fmaxf(amax, fabsf(xs[k]));
		cuk::qd::q8k_scale(amax, &id, &d);
		for (int l = 0; l < 32; l++) { /* lane l: elements 8l .. 8l + 7 */
			uint32_t w[2];
			s[l] = cuk::qd::q8k_codes8(xs + 8 * l, id, w);
			memcpy(row + cuk_q8k_codes_off(n) + 256ull * u + 8 * l, w, 8);
		}
		for (int g = 0; g < 16; g++) {
			int16_t bs = (int16_t)(s[2 * g] + s[2 * g + 1]);
			memcpy(row + cuk_q8k_bsums_off(n) + 2 * (16ull * u + g), &bs, 2);
		}
		memcpy(row + 4ull * u, &d, 4);
	}
	return true;
}
