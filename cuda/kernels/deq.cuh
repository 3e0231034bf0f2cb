#pragma once
/*
 * deq.cuh - dequantization of 32 consecutive weights in registers, for
 * every weight type the kernels support. deq32<T>(row, c, w) writes
 * elements [32c, 32c + 32) of a row into w[0..31] with the arithmetic of
 * common/gguf/quant.c (products and sums rounded separately: no fused
 * multiply-add), so the values are bit-identical to dequant_row().
 *
 * Loads are as wide as the block layout lets them be: 16 bytes where the
 * bytes are 16-byte aligned (K-quant scales and codes), else 4, 2 or 1.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "gguf/ggml_type.h"

namespace cuk {

__device__ __forceinline__ float
f16_at(const uint8_t *p) /* 2-byte aligned */
{
	return __half2float(__ushort_as_half(*(const uint16_t *)p));
}

/* Sixteen bytes at @p as four little-endian words, with the widest aligned loads. */
__device__ __forceinline__ void
ld16(const uint8_t *p, uint32_t w[4])
{
	uintptr_t a = (uintptr_t)p;

	if ((a & 15) == 0) {
		uint4 v = __ldg((const uint4 *)p);
		w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
	} else if ((a & 3) == 0) {
#pragma unroll
		for (int i = 0; i < 4; i++)
			w[i] = __ldg((const uint32_t *)p + i);
	} else if ((a & 1) == 0) {
#pragma unroll
		for (int i = 0; i < 4; i++)
			w[i] = (uint32_t)__ldg((const uint16_t *)p + 2 * i) |
			       ((uint32_t)__ldg((const uint16_t *)p + 2 * i + 1) << 16);
	} else {
#pragma unroll
		for (int i = 0; i < 4; i++)
			w[i] = (uint32_t)p[4 * i] | ((uint32_t)p[4 * i + 1] << 8) |
			       ((uint32_t)p[4 * i + 2] << 16) | ((uint32_t)p[4 * i + 3] << 24);
	}
}

__device__ __forceinline__ uint32_t
byte_of(const uint32_t *w, int i)
{
	return (w[i >> 2] >> (8 * (i & 3))) & 0xffu;
}

/* Four bytes at a 2-byte aligned @p. */
__device__ __forceinline__ uint32_t
ld4_2(const uint8_t *p)
{
	return (uint32_t)*(const uint16_t *)p | ((uint32_t) * (const uint16_t *)(p + 2) << 16);
}

/* 2^(e - 128) exactly, subnormals included (MXFP4's E8M0 scale, as ldexpf(1, e - 128)). */
__device__ __forceinline__ float
e8m0_half(uint32_t e)
{
	return e >= 2 ? __uint_as_float((e - 1) << 23) : __uint_as_float(0x00400000u >> (1 - e));
}

/* Q4_0, Q4_1, Q5_0, Q5_1: one block of 32. */
template <int T>
__device__ __forceinline__ void
deq_q45(const uint8_t *b, float *w)
{
	constexpr bool affine = T == GGML_TYPE_Q4_1 || T == GGML_TYPE_Q5_1;
	constexpr bool five = T == GGML_TYPE_Q5_0 || T == GGML_TYPE_Q5_1;
	constexpr int offset = affine ? 0 : five ? 16 : 8;
	float d = f16_at(b), m = affine ? f16_at(b + 2) : 0.0f;
	uint32_t qh = 0, qs[4];

	if (five)
		qh = affine ? *(const uint32_t *)(b + 4) : ld4_2(b + 2);
	ld16(b + 2 + (affine ? 2 : 0) + (five ? 4 : 0), qs);
#pragma unroll
	for (int j = 0; j < 16; j++) {
		uint32_t q = byte_of(qs, j);
		int q0 = (int)(q & 15u) | (int)(((qh >> j) & 1u) << 4);
		int q1 = (int)(q >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
		w[j] = __fadd_rn(__fmul_rn((float)(q0 - offset), d), m);
		w[j + 16] = __fadd_rn(__fmul_rn((float)(q1 - offset), d), m);
	}
}

__device__ __forceinline__ void
deq_q8_0(const uint8_t *b, float *w)
{
	float d = f16_at(b);
	uint32_t qs[8];

	ld16(b + 2, qs);
	ld16(b + 18, qs + 4);
#pragma unroll
	for (int j = 0; j < 32; j++)
		w[j] = __fmul_rn((float)(int8_t)byte_of(qs, j), d);
}

__device__ __forceinline__ void
deq_mxfp4(const uint8_t *b, float *w)
{
	const float d = e8m0_half(b[0]);
	uint32_t qs[4];

	ld16(b + 1, qs);
#pragma unroll
	for (int j = 0; j < 16; j++) {
		uint32_t q = byte_of(qs, j);
		/* E2M1 ×2 by code: 0 1 2 3 4 6 8 12, sign in bit 3 */
		uint32_t lo = q & 7u, hi = (q >> 4) & 7u;
		int v0 = lo < 5 ? (int)lo : lo == 5 ? 6 : lo == 6 ? 8 : 12;
		int v1 = hi < 5 ? (int)hi : hi == 5 ? 6 : hi == 6 ? 8 : 12;
		w[j] = __fmul_rn((float)((q & 8u) ? -v0 : v0), d);
		w[j + 16] = __fmul_rn((float)((q & 128u) ? -v1 : v1), d);
	}
}

/* Q2_K (84 bytes per 256): chunk c = 32 elements, two 16-element scales. */
__device__ __forceinline__ void
deq_q2_k(const uint8_t *b, int c, float *w)
{
	float d = f16_at(b + 80), dmin = f16_at(b + 82);
	int n = c / 4, j = c % 4;
	uint32_t q[8];

	ld16(b + 16 + 32 * n, q);
	ld16(b + 32 + 32 * n, q + 4);
#pragma unroll
	for (int h = 0; h < 2; h++) {
		uint32_t sc = b[8 * n + 2 * j + h];
		float dl = __fmul_rn(d, (float)(sc & 15u)), ml = __fmul_rn(dmin, (float)(sc >> 4));
#pragma unroll
		for (int l = 0; l < 16; l++)
			w[16 * h + l] = __fsub_rn(
			        __fmul_rn(dl, (float)((byte_of(q, 16 * h + l) >> (2 * j)) & 3u)), ml);
	}
}

/* Q3_K (110 bytes per 256). */
__device__ __forceinline__ void
deq_q3_k(const uint8_t *b, int c, float *w)
{
	float d = f16_at(b + 108);
	int n = c / 4, j = c % 4;
	uint32_t q[8], hm[8];

	ld16(b, hm);
	ld16(b + 16, hm + 4);
	ld16(b + 32 + 32 * n, q);
	ld16(b + 48 + 32 * n, q + 4);
	uint32_t mask = 1u << (4 * n + j);
#pragma unroll
	for (int h = 0; h < 2; h++) {
		int sb = 2 * c + h;
		int lo = (b[96 + sb % 8] >> (4 * (sb / 8))) & 15;
		int hi = (b[104 + sb % 4] >> (2 * (sb / 4))) & 3;
		float dl = __fmul_rn(d, (float)((lo | (hi << 4)) - 32));
#pragma unroll
		for (int l = 0; l < 16; l++) {
			int v = (int)((byte_of(q, 16 * h + l) >> (2 * j)) & 3u);
			int sub = (byte_of(hm, 16 * h + l) & mask) ? 0 : 4;
			w[16 * h + l] = __fmul_rn(dl, (float)(v - sub));
		}
	}
}

/* Q4_K (144 bytes) and Q5_K (176 bytes) per 256: the 6-bit scale and min of sub-block c. */
__device__ __forceinline__ void
k4_scale(const uint8_t *p, int j, float *sc, float *m)
{
	if (j < 4) {
		*sc = (float)(p[j] & 63);
		*m = (float)(p[j + 4] & 63);
	} else {
		*sc = (float)((p[j + 4] & 15) | ((p[j - 4] >> 6) << 4));
		*m = (float)((p[j + 4] >> 4) | ((p[j] >> 6) << 4));
	}
}

template <bool FIVE>
__device__ __forceinline__ void
deq_k45(const uint8_t *b, int c, float *w)
{
	float d = f16_at(b), dmin = f16_at(b + 2), sc, m;
	int cc = c / 2, h = c % 2;
	uint32_t q[8], qh[8];

	k4_scale(b + 4, c, &sc, &m);
	float dl = __fmul_rn(d, sc), ml = __fmul_rn(dmin, m);
	ld16(b + (FIVE ? 48 : 16) + 32 * cc, q);
	ld16(b + (FIVE ? 64 : 32) + 32 * cc, q + 4);
	if (FIVE) {
		ld16(b + 16, qh);
		ld16(b + 32, qh + 4);
	}
#pragma unroll
	for (int l = 0; l < 32; l++) {
		int v = (int)((byte_of(q, l) >> (4 * h)) & 15u);
		if (FIVE && (byte_of(qh, l) & (1u << c)))
			v += 16;
		w[l] = __fsub_rn(__fmul_rn(dl, (float)v), ml);
	}
}

/* Q6_K (210 bytes per 256). */
__device__ __forceinline__ void
deq_q6_k(const uint8_t *b, int c, float *w)
{
	float d = f16_at(b + 208);
	int n = c / 4, k = c % 4;
	uint32_t ql[8], qh[8];

	ld16(b + 64 * n + 32 * (k % 2), ql);
	ld16(b + 64 * n + 32 * (k % 2) + 16, ql + 4);
	ld16(b + 128 + 32 * n, qh);
	ld16(b + 144 + 32 * n, qh + 4);
#pragma unroll
	for (int h = 0; h < 2; h++) {
		float dl = __fmul_rn(d, (float)(int8_t)b[192 + 8 * n + 2 * k + h]);
#pragma unroll
		for (int l = 16 * h; l < 16 * h + 16; l++) {
			int lo = (int)((byte_of(ql, l) >> (4 * (k / 2))) & 15u);
			int hi = (int)((byte_of(qh, l) >> (2 * k)) & 3u);
			w[l] = __fmul_rn(dl, (float)((lo | (hi << 4)) - 32));
		}
	}
}

/*
 * deq32 - elements [32c, 32c + 32) of weight row @row of type T into @w.
 * Element types (F32, F16, BF16) read only the first @valid (≤ 32) and
 * write zeros after them; block types always have 32.
 */
template <int T>
__device__ __forceinline__ void
deq32(const uint8_t *row, uint32_t c, uint32_t valid, float *w)
{
	if constexpr (T == GGML_TYPE_F32 || T == GGML_TYPE_F16 || T == GGML_TYPE_BF16) {
		constexpr int es = T == GGML_TYPE_F32 ? 4 : 2;
		const uint8_t *p = row + (uint64_t)c * 32 * es;
		if (valid == 32 && ((uintptr_t)p & 15) == 0) {
			uint32_t v[8 * es]; /* 32 elements: 32 * es bytes, 2 * es loads of 16 */
#pragma unroll
			for (int i = 0; i < 2 * es; i++)
				ld16(p + 16 * i, v + 4 * i);
#pragma unroll
			for (int i = 0; i < 32; i++) {
				if constexpr (T == GGML_TYPE_F32)
					w[i] = __uint_as_float(v[i]);
				else if constexpr (T == GGML_TYPE_F16)
					w[i] = __half2float(__ushort_as_half(
					        (unsigned short)(v[i / 2] >> (16 * (i % 2)))));
				else
					w[i] = __uint_as_float((v[i / 2] >> (16 * (i % 2))) << 16);
			}
			return;
		}
#pragma unroll
		for (int i = 0; i < 32; i++) {
			if ((uint32_t)i >= valid)
				w[i] = 0.0f;
			else if constexpr (T == GGML_TYPE_F32)
				w[i] = ((const float *)p)[i];
			else if constexpr (T == GGML_TYPE_F16)
				w[i] = __half2float(((const __half *)p)[i]);
			else
				w[i] = __uint_as_float((uint32_t)((const uint16_t *)p)[i] << 16);
		}
	} else if constexpr (T == GGML_TYPE_Q4_0 || T == GGML_TYPE_Q4_1 || T == GGML_TYPE_Q5_0 ||
	                     T == GGML_TYPE_Q5_1) {
		constexpr int bytes = T == GGML_TYPE_Q4_0 ? 18 : T == GGML_TYPE_Q4_1 ? 20
		                                             : T == GGML_TYPE_Q5_0 ? 22
		                                                                   : 24;
		deq_q45<T>(row + (uint64_t)c * bytes, w);
	} else if constexpr (T == GGML_TYPE_Q8_0) {
		deq_q8_0(row + (uint64_t)c * 34, w);
	} else if constexpr (T == GGML_TYPE_MXFP4) {
		deq_mxfp4(row + (uint64_t)c * 17, w);
	} else if constexpr (T == GGML_TYPE_Q2_K) {
		deq_q2_k(row + (uint64_t)(c / 8) * 84, (int)(c % 8), w);
	} else if constexpr (T == GGML_TYPE_Q3_K) {
		deq_q3_k(row + (uint64_t)(c / 8) * 110, (int)(c % 8), w);
	} else if constexpr (T == GGML_TYPE_Q4_K) {
		deq_k45<false>(row + (uint64_t)(c / 8) * 144, (int)(c % 8), w);
	} else if constexpr (T == GGML_TYPE_Q5_K) {
		deq_k45<true>(row + (uint64_t)(c / 8) * 176, (int)(c % 8), w);
	} else {
		static_assert(T == GGML_TYPE_Q6_K, "deq32: unsupported type");
		deq_q6_k(row + (uint64_t)(c / 8) * 210, (int)(c % 8), w);
	}
}

/* Instantiate @F<T> for each supported type and call it: the type switch of every launcher. */
#define CUK_TYPE_SWITCH(type, F, ...)                                            \
	switch (type) {                                                          \
	case GGML_TYPE_F32: F<GGML_TYPE_F32>(__VA_ARGS__); break;                \
	case GGML_TYPE_F16: F<GGML_TYPE_F16>(__VA_ARGS__); break;                \
	case GGML_TYPE_BF16: F<GGML_TYPE_BF16>(__VA_ARGS__); break;              \
	case GGML_TYPE_Q4_0: F<GGML_TYPE_Q4_0>(__VA_ARGS__); break;              \
	case GGML_TYPE_Q4_1: F<GGML_TYPE_Q4_1>(__VA_ARGS__); break;              \
	case GGML_TYPE_Q5_0: F<GGML_TYPE_Q5_0>(__VA_ARGS__); break;              \
	case GGML_TYPE_Q5_1: F<GGML_TYPE_Q5_1>(__VA_ARGS__); break;              \
	case GGML_TYPE_Q8_0: F<GGML_TYPE_Q8_0>(__VA_ARGS__); break;              \
	case GGML_TYPE_MXFP4: F<GGML_TYPE_MXFP4>(__VA_ARGS__); break;            \
	case GGML_TYPE_Q2_K: F<GGML_TYPE_Q2_K>(__VA_ARGS__); break;              \
	case GGML_TYPE_Q3_K: F<GGML_TYPE_Q3_K>(__VA_ARGS__); break;              \
	case GGML_TYPE_Q4_K: F<GGML_TYPE_Q4_K>(__VA_ARGS__); break;              \
	case GGML_TYPE_Q5_K: F<GGML_TYPE_Q5_K>(__VA_ARGS__); break;              \
	case GGML_TYPE_Q6_K: F<GGML_TYPE_Q6_K>(__VA_ARGS__); break;              \
	default: return cudaErrorInvalidValue;                                   \
	}

} // namespace cuk
