#pragma once
/*
 * qdot.cuh - the arithmetic of the integer-dot mat-vec (mmvq.cu) and of the
 * activation quantizers (quant_q8.cu), as __host__ __device__ functions: the
 * kernels call them on the device, and tests/unit/cuda's emulation calls
 * the same code on the host, where CI checks it against the CPU backend's
 * cpu_qdot_scalar and cpu_quant_q8b / cpu_quant_q8k without a GPU.
 *
 * A weight row is cut into chunks of 32 codes, in two groups of 16 that
 * each meet 16 consecutive activation codes: one block for Q4_0, Q4_1,
 * Q5_0, Q5_1 and Q8_0 (elements 0-15 and 16-31); one eighth of a 256-element
 * super-block for Q4_K and Q5_K (16 positions of two 32-element sub-blocks:
 * a 16-byte run of nibbles, low then high) and Q6_K (16 positions of the
 * two quarters that share 16 bytes of low nibbles). A lane of a warp takes
 * chunks lane, lane + 32, ... of a row, so the 32 lanes read consecutive
 * bytes. Per group the exact int32 sum of code products (four at a time,
 * __dp4a), then the type's integer scales and offsets, then one or two
 * fp32 multiply-adds with the float scales; a lane's sums run in chunk
 * order whatever the batch, so a row's result does not depend on it.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cuda_fp16.h>

#include "../kernels.h"
#include "gguf/ggml_type.h"

#define CUK_HD __host__ __device__ __forceinline__

#ifdef __CUDA_ARCH__
#define CUK_UNROLL _Pragma("unroll")
#else
#define CUK_UNROLL
#endif

namespace cuk
{
namespace qd
{

/* ---- loads (read-only weights through the texture path on the device) ---- */

CUK_HD uint32_t
ld32(const uint8_t *p) /* 4-byte aligned */
{
#ifdef __CUDA_ARCH__
	return __ldg((const unsigned int *)p);
#else
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
#endif
}

CUK_HD float
f16(const uint8_t *p) /* 2-byte aligned */
{
	__half_raw h;
#ifdef __CUDA_ARCH__
	h.x = __ldg((const unsigned short *)p);
#else
	memcpy(&h.x, p, 2);
#endif
	return __half2float(__half(h));
}

CUK_HD int
i8(const uint8_t *p)
{
#ifdef __CUDA_ARCH__
	return (int)(int8_t)__ldg(p);
#else
	return (int)(int8_t)*p;
#endif
}

/* Bits [sh, sh + 32) of hi:lo (sh < 32). */
CUK_HD uint32_t
funnel(uint32_t lo, uint32_t hi, uint32_t sh)
{
#ifdef __CUDA_ARCH__
	return __funnelshift_r(lo, hi, sh);
#else
	return sh ? (lo >> sh) | (hi << (32 - sh)) : lo;
#endif
}

CUK_HD uint32_t
ld16(const uint8_t *p) /* 2-byte aligned */
{
#ifdef __CUDA_ARCH__
	return __ldg((const unsigned short *)p);
#else
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
#endif
}

/*
 * @N little-endian words from a 2-byte aligned @p: aligned 4-byte loads
 * shifted together; when @p is not 4-byte aligned the run's last two bytes
 * come from one more 2-byte load (nothing past the run is read).
 */
template <int N>
CUK_HD void
ldw(const uint8_t *p, uint32_t *w)
{
	const uint8_t *a = (const uint8_t *)((uintptr_t)p & ~(uintptr_t)3);
	uint32_t sh = (uint32_t)((uintptr_t)p & 2) * 8, cur = ld32(a);

	CUK_UNROLL
	for (int i = 0; i < N; i++) {
		uint32_t next = i + 1 < N ? ld32(a + 4 * (i + 1)) : sh != 0 ? ld16(a + 4 * N) : 0;
		w[i] = funnel(cur, next, sh);
		cur = next;
	}
}

/* Sixteen bytes at a 16-byte aligned @p as four words. */
CUK_HD void
ld16a(const uint8_t *p, uint32_t w[4])
{
#ifdef __CUDA_ARCH__
	uint4 v = __ldg((const uint4 *)p);
	w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
#else
	memcpy(w, p, 16);
#endif
}

/* ---- integer helpers ---- */

/* Σ of the four signed byte products of @a and @b, plus @c. */
CUK_HD int
dp4a(uint32_t a, uint32_t b, int c)
{
#ifdef __CUDA_ARCH__
	return __dp4a((int)a, (int)b, c);
#else
	for (int i = 0; i < 4; i++)
		c += (int)(int8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i));
	return c;
#endif
}

/* Bits 0-3 of @b as bit 4 of four bytes (the fifth bit of Q5 codes). */
CUK_HD uint32_t
bit4(uint32_t b)
{
	return (((b & 0xfu) * 0x00204081u) & 0x01010101u) << 4;
}

/* Σ of 16 weight codes (four words at @q) times the 16 activation codes at @x (16-byte aligned). */
CUK_HD int
dot16(const uint32_t *q, const uint8_t *x)
{
	uint32_t v[4];
	int s = 0;

#ifdef __CUDA_ARCH__
	uint4 t = *(const uint4 *)x;
	v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
#else
	memcpy(v, x, 16);
#endif
	CUK_UNROLL
	for (int i = 0; i < 4; i++)
		s = dp4a(q[i], v[i], s);
	return s;
}

CUK_HD float
mul_rn(float a, float b)
{
#ifdef __CUDA_ARCH__
	return __fmul_rn(a, b);
#else
	return a * b;
#endif
}

CUK_HD float
div_rn(float a, float b)
{
#ifdef __CUDA_ARCH__
	return __fdiv_rn(a, b);
#else
	return a / b;
#endif
}

/* The 6-bit scale and min of Q4_K/Q5_K sub-block @j from the 12 bytes in @s (three words). */
CUK_HD void
k4_scale(const uint32_t s[3], int j, int *sc, int *m)
{
#define K4_BYTE(i) ((int)((s[(i) >> 2] >> (8 * ((i)&3))) & 0xffu))
	if (j < 4) {
		*sc = K4_BYTE(j) & 63;
		*m = K4_BYTE(j + 4) & 63;
	} else {
		*sc = (K4_BYTE(j + 4) & 15) | ((K4_BYTE(j - 4) >> 6) << 4);
		*m = (K4_BYTE(j + 4) >> 4) | ((K4_BYTE(j) >> 6) << 4);
	}
#undef K4_BYTE
}

/* ---- per type ---- */

/* Bytes of a block (or super-block) of @T, and chunks (of 32 codes) in it. */
template <int T> struct unit {
	static constexpr int chunks =
	        T == GGML_TYPE_Q4_K || T == GGML_TYPE_Q5_K || T == GGML_TYPE_Q6_K ? 8 : 1;
	static constexpr int bytes = T == GGML_TYPE_Q4_0   ? 18
	                             : T == GGML_TYPE_Q4_1 ? 20
	                             : T == GGML_TYPE_Q5_0 ? 22
	                             : T == GGML_TYPE_Q5_1 ? 24
	                             : T == GGML_TYPE_Q8_0 ? 34
	                             : T == GGML_TYPE_Q4_K ? 144
	                             : T == GGML_TYPE_Q5_K ? 176
	                                                   : 210;
	static_assert(T == GGML_TYPE_Q4_0 || T == GGML_TYPE_Q4_1 || T == GGML_TYPE_Q5_0 ||
	                      T == GGML_TYPE_Q5_1 || T == GGML_TYPE_Q8_0 || T == GGML_TYPE_Q4_K ||
	                      T == GGML_TYPE_Q5_K || T == GGML_TYPE_Q6_K,
	              "qdot: unsupported type");
};

/*
 * One chunk of a weight row, ready for the activations: codes of group a
 * (q[0..3]) and b (q[4..7]), where their activations start in the unit
 * (xa, xb: code offsets; for K-quants xa / 16 and xb / 16 are the groups'
 * Q8_K sums), the integer scales (and mins) of the two groups, and the
 * float scales.
 */
struct chunk {
	uint32_t q[8];
	uint32_t u, xa, xb;
	int sa, sb, ma, mb;
	float d, m;
};

/* Chunk @k of a weight row of type @T at @row. */
template <int T>
CUK_HD void
load(const uint8_t *row, uint32_t k, chunk &c)
{
	constexpr int C = unit<T>::chunks;
	uint32_t j = k % C;
	const uint8_t *b = row + (uint64_t)(k / C) * unit<T>::bytes;
	uint32_t w[4], h[4];

	c.u = k / C;
	c.sa = c.sb = 1;
	c.ma = c.mb = 0;
	c.m = 0.0f;
	if constexpr (T == GGML_TYPE_Q8_0) {
		ldw<8>(b + 2, c.q);
		c.d = f16(b);
		c.xa = 0, c.xb = 16;
	} else if constexpr (C == 1) { /* Q4_0, Q4_1, Q5_0, Q5_1 */
		constexpr bool aff = T == GGML_TYPE_Q4_1 || T == GGML_TYPE_Q5_1;
		constexpr bool five = T == GGML_TYPE_Q5_0 || T == GGML_TYPE_Q5_1;
		uint32_t qh = 0;
		if constexpr (five)
			ldw<1>(b + (aff ? 4 : 2), &qh);
		ldw<4>(b + 2 + (aff ? 2 : 0) + (five ? 4 : 0), w);
		CUK_UNROLL
		for (int i = 0; i < 4; i++) {
			c.q[i] = w[i] & 0x0f0f0f0fu;
			c.q[4 + i] = (w[i] >> 4) & 0x0f0f0f0fu;
			if constexpr (five) {
				c.q[i] |= bit4(qh >> (4 * i));
				c.q[4 + i] |= bit4(qh >> (16 + 4 * i));
			}
		}
		c.d = f16(b);
		if constexpr (aff)
			c.m = f16(b + 2);
		c.xa = 0, c.xb = 16;
	} else if constexpr (T == GGML_TYPE_Q4_K || T == GGML_TYPE_Q5_K) {
		constexpr bool five = T == GGML_TYPE_Q5_K;
		uint32_t s[3] = {ld32(b + 4), ld32(b + 8), ld32(b + 12)}, p = j / 2, hf = j % 2;
		ld16a(b + (five ? 48 : 16) + 32 * p + 16 * hf, w);
		if constexpr (five)
			ld16a(b + 16 + 16 * hf, h);
		CUK_UNROLL
		for (int i = 0; i < 4; i++) {
			c.q[i] = w[i] & 0x0f0f0f0fu;
			c.q[4 + i] = (w[i] >> 4) & 0x0f0f0f0fu;
			if constexpr (five) {
				c.q[i] |= ((h[i] >> (2 * p)) & 0x01010101u) << 4;
				c.q[4 + i] |= ((h[i] >> (2 * p + 1)) & 0x01010101u) << 4;
			}
		}
		k4_scale(s, (int)(2 * p), &c.sa, &c.ma);
		k4_scale(s, (int)(2 * p + 1), &c.sb, &c.mb);
		c.d = f16(b);
		c.m = f16(b + 2);
		c.xa = 64 * p + 16 * hf, c.xb = c.xa + 32;
	} else {
		static_assert(T == GGML_TYPE_Q6_K, "qdot: unsupported type");
		/* j = 4n + 2p + hf: half n, low nibbles quarter p and high nibbles quarter p + 2 */
		uint32_t n = j / 4, p = (j / 2) % 2, hf = j % 2;
		ldw<4>(b + 64 * n + 32 * p + 16 * hf, w);
		ldw<4>(b + 128 + 32 * n + 16 * hf, h);
		CUK_UNROLL
		for (int i = 0; i < 4; i++) {
			c.q[i] = (w[i] & 0x0f0f0f0fu) | (((h[i] >> (2 * p)) & 0x03030303u) << 4);
			c.q[4 + i] = ((w[i] >> 4) & 0x0f0f0f0fu) |
			             (((h[i] >> (2 * p + 4)) & 0x03030303u) << 4);
		}
		c.xa = 128 * n + 32 * p + 16 * hf, c.xb = c.xa + 64;
		c.sa = i8(b + 192 + c.xa / 16);
		c.sb = i8(b + 192 + c.xb / 16);
		c.d = f16(b + 208);
	}
}

/*
 * @acc + chunk @c times activation row @xr (n elements, quantized in
 * cuk_act_of(T)'s format). Q4_0/Q5_0 codes are unsigned: their offset (8,
 * 16) leaves with the block's code sum; Q4_1/Q5_1 add min × code sum; Q4_K
 * and Q5_K subtract their mins times the groups' Q8_K sums, Q6_K its offset
 * 32 times them.
 */
template <int T>
CUK_HD float
term(const chunk &c, const uint8_t *xr, uint32_t n, float acc)
{
	if constexpr (unit<T>::chunks == 1) {
		const uint8_t *codes = xr + cuk_q8_codes_off(n) + 32ull * c.u;
		float dx = ((const float *)xr)[c.u];
		int xs = ((const int32_t *)(xr + cuk_q8_sums_off(n)))[c.u];
		int s = dot16(c.q, codes) + dot16(c.q + 4, codes + 16);
		if constexpr (T == GGML_TYPE_Q4_0)
			s -= 8 * xs;
		else if constexpr (T == GGML_TYPE_Q5_0)
			s -= 16 * xs;
		acc = fmaf(mul_rn(c.d, dx), (float)s, acc);
		if constexpr (T == GGML_TYPE_Q4_1 || T == GGML_TYPE_Q5_1)
			acc = fmaf(mul_rn(c.m, dx), (float)xs, acc);
		return acc;
	} else {
		const uint8_t *codes = xr + cuk_q8k_codes_off(n) + 256ull * c.u;
		const int16_t *bs = (const int16_t *)(xr + cuk_q8k_bsums_off(n)) + 16ull * c.u;
		float dx = ((const float *)xr)[c.u];
		int sa = dot16(c.q, codes + c.xa), sb = dot16(c.q + 4, codes + c.xb);
		int ba = bs[c.xa / 16], bb = bs[c.xb / 16];
		if constexpr (T == GGML_TYPE_Q6_K)
			return fmaf(mul_rn(c.d, dx),
			            (float)(c.sa * (sa - 32 * ba) + c.sb * (sb - 32 * bb)), acc);
		acc = fmaf(mul_rn(c.d, dx), (float)(c.sa * sa + c.sb * sb), acc);
		return fmaf(-mul_rn(c.m, dx), (float)(c.ma * ba + c.mb * bb), acc);
	}
}

/*
 * A lane's share of y[b] = W_row · x[b] for b < B: chunks lane, lane +
 * @stride, ... of the row (ne0 @n), each against the B activation rows of
 * @xq (@xq_ld bytes apart). The caller sums the lanes' @acc.
 */
template <int T, int B>
CUK_HD void
lane_sums(const uint8_t *row, uint32_t n, const uint8_t *xq, uint64_t xq_ld, uint32_t lane,
          uint32_t stride, float *acc)
{
	uint32_t chunks = n / 256 * 8;

	if constexpr (unit<T>::chunks == 1)
		chunks = n / 32;
	CUK_UNROLL
	for (int b = 0; b < B; b++)
		acc[b] = 0.0f;
	for (uint32_t k = lane; k < chunks; k += stride) {
		chunk c;
		load<T>(row, k, c);
		CUK_UNROLL
		for (int b = 0; b < B; b++)
			acc[b] = term<T>(c, xq + (uint64_t)b * xq_ld, n, acc[b]);
	}
}

/* ---- activation quantizers ---- */

/* @v rounded half to even and clamped to ±127; NaN gives 0 (the CPU's int8 store of it). */
CUK_HD int
code(float v)
{
	float r = rintf(v);

	return r > 127.0f ? 127 : r < -127.0f ? -127 : r == r ? (int)r : 0;
}

/*
 * One Q8_0 activation block of 32 floats at @x, as cpu_quant_q8b: the scale
 * amax / 127 rounded to F16, codes x · (127 / amax) rounded half to even;
 * the codes go to @w (eight words), the scale to *@d; returns the code sum.
 */
CUK_HD int
q8_block(const float *x, uint32_t w[8], float *d)
{
	float amax = 0.0f;
	int sum = 0;

	for (int k = 0; k < 32; k++)
		amax = fmaxf(amax, fabsf(x[k]));
	float id = amax != 0.0f ? div_rn(127.0f, amax) : 0.0f;
	*d = __half2float(__float2half_rn(div_rn(amax, 127.0f)));
	for (int k = 0; k < 8; k++)
		w[k] = 0;
	for (int k = 0; k < 32; k++) {
		int q = code(mul_rn(x[k], id));
		w[k / 4] |= (uint32_t)(q & 0xff) << (8 * (k % 4));
		sum += q;
	}
	return sum;
}

/* Q8_K's scale from the super-block's amax, as cpu_quant_q8k: *@id = 127 / amax, *@d = 1 / *@id. */
CUK_HD void
q8k_scale(float amax, float *id, float *d)
{
	*id = amax > 0.0f ? div_rn(127.0f, amax) : 0.0f;
	*d = *id > 0.0f ? div_rn(1.0f, *id) : 0.0f;
}

/* Eight Q8_K codes of @x (rounded half to even, clamped to ±127) into @w; returns their sum. */
CUK_HD int
q8k_codes8(const float *x, float id, uint32_t w[2])
{
	int sum = 0;

	w[0] = w[1] = 0;
	for (int k = 0; k < 8; k++) {
		int q = code(mul_rn(x[k], id));
		w[k / 4] |= (uint32_t)(q & 0xff) << (8 * (k % 4));
		sum += q;
	}
	return sum;
}

} // namespace qd
} // namespace cuk

/* The type switch of the integer-dot launchers and checks (mmvq.cu, moe.cu): the types above. */
#define CUK_QDOT_TYPE_SWITCH(type, F, ...)      \
	switch (type) {                         \
	case GGML_TYPE_Q4_0:                    \
		F<GGML_TYPE_Q4_0>(__VA_ARGS__); \
		break;                          \
	case GGML_TYPE_Q4_1:                    \
		F<GGML_TYPE_Q4_1>(__VA_ARGS__); \
		break;                          \
	case GGML_TYPE_Q5_0:                    \
		F<GGML_TYPE_Q5_0>(__VA_ARGS__); \
		break;                          \
	case GGML_TYPE_Q5_1:                    \
		F<GGML_TYPE_Q5_1>(__VA_ARGS__); \
		break;                          \
	case GGML_TYPE_Q8_0:                    \
		F<GGML_TYPE_Q8_0>(__VA_ARGS__); \
		break;                          \
	case GGML_TYPE_Q4_K:                    \
		F<GGML_TYPE_Q4_K>(__VA_ARGS__); \
		break;                          \
	case GGML_TYPE_Q5_K:                    \
		F<GGML_TYPE_Q5_K>(__VA_ARGS__); \
		break;                          \
	case GGML_TYPE_Q6_K:                    \
		F<GGML_TYPE_Q6_K>(__VA_ARGS__); \
		break;                          \
	default:                                \
		return cudaErrorInvalidValue;   \
	}
