#pragma once
/*
 * cpu_qdot_int.h - what the integer dots of Q8_0-style blocks share between
 * the scalar reference (cpu_qdot.c) and the SIMD kernels (cpu_qdot_q8.c,
 * built once per instruction set). Internal to worker/engine/cpu.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gguf/ggml_type.h"

/* MXFP4's E2M1 values times two (ggml's kvalues_mxfp4), by 4-bit code. */
static const int8_t cpu_mxfp4_x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* An E8M0 exponent as the float 2^(e - 128): half the scale, for the doubled values. */
static inline float
cpu_e8m0_half(uint8_t e)
{
	uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Whether @type's values are code·d + m (Q4_1, Q5_1): the min m is its second F16. */
static inline bool
cpu_affine(uint32_t type)
{
	return type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1;
}
