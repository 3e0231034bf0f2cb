#pragma once
/*
 * q8.cuh - integer dots of MXFP4 weight blocks with activations quantized to
 * Q8_0 codes (cuk_quant_q8's rows), as cpu_qdot.c computes them: per
 * 32-element block the exact int32 sum of the doubled E2M1 values times the
 * codes (__dp4a, four products at a time), then times the halved E8M0 scale
 * and the activation block's scale, products rounded one at a time.
 */
#include <stdint.h>

#include "../kernels.h"
#include "deq.cuh"

namespace cuk
{

/* The scales of a quantized activation row (cuk_q8_row_bytes' layout). */
__device__ __forceinline__ const float *
q8_scales(const uint8_t *row)
{
	return (const float *)row;
}

/* The codes of block @c of a quantized activation row of @nb blocks (16-byte aligned). */
__device__ __forceinline__ const int8_t *
q8_codes(const uint8_t *row, uint32_t nb, uint32_t c)
{
	return (const int8_t *)(row + cuk_q8_codes_off(32 * nb)) + 32ull * c;
}

/*
 * Four E2M1 codes, the low nibbles of @q's bytes, as their doubled values
 * (0 1 2 3 4 6 8 12, negated for codes 8..15), one signed byte each: two
 * byte permutes over the positive and the negative halves of the table,
 * then a per-byte choice by the code's sign bit.
 */
__device__ __forceinline__ int
mxfp4_values4(uint32_t q)
{
	uint32_t t = q & 0x07070707u;
	uint32_t s = (t & 0x7u) | ((t >> 4) & 0x70u) | ((t >> 8) & 0x700u) | ((t >> 12) & 0x7000u);
	uint32_t pos = __byte_perm(0x03020100u, 0x0c080604u, s);
	uint32_t neg = __byte_perm(0xfdfeff00u, 0xf4f8fafcu, s);
	uint32_t m = ((q >> 3) & 0x01010101u) * 0xffu;

	return (int)((pos & ~m) | (neg & m));
}

/* The doubled values of an MXFP4 block's 32 codes (the 16 bytes after its scale at @b). */
__device__ __forceinline__ void
mxfp4_values(const uint8_t *b, int v[8])
{
	uint32_t w[4];

	ld16(b + 1, w);
#pragma unroll
	for (int i = 0; i < 4; i++) {
		v[i] = mxfp4_values4(w[i]);          /* elements 4i .. 4i + 3 */
		v[i + 4] = mxfp4_values4(w[i] >> 4); /* elements 16 + 4i .. 16 + 4i + 3 */
	}
}

/* Σ v[k]·codes[k] over one block, exact in int32. */
__device__ __forceinline__ int
dot_codes(const int v[8], const int8_t *codes)
{
	int4 a = *(const int4 *)codes, b = *(const int4 *)(codes + 16);
	int s = 0;

	s = __dp4a(v[0], a.x, s);
	s = __dp4a(v[1], a.y, s);
	s = __dp4a(v[2], a.z, s);
	s = __dp4a(v[3], a.w, s);
	s = __dp4a(v[4], b.x, s);
	s = __dp4a(v[5], b.y, s);
	s = __dp4a(v[6], b.z, s);
	return __dp4a(v[7], b.w, s);
}

/* One block's term of the dot, as cpu_qdot: (dw · dx) · Σ, each product rounded. */
__device__ __forceinline__ float
block_term(float dw, float dx, int isum)
{
	return __fmul_rn(__fmul_rn(dw, dx), (float)isum);
}

} // namespace cuk
