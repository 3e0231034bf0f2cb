#pragma once
/*
 * fp16.h - IEEE half and bfloat16 conversions in portable C, bit exact:
 * float → half/bf16 rounds to nearest even, NaN stays NaN, overflow gives inf.
 */
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fp16_to_f32 - the float value of IEEE binary16 bits @h (subnormals, inf and NaN included). */
float fp16_to_f32(uint16_t h);

/* fp16_from_f32 - IEEE binary16 bits nearest to @f (ties to even). */
uint16_t fp16_from_f32(float f);

/* fp16_load - the float value of the binary16 stored little-endian at @p (any alignment). */
float fp16_load(const void *p);

/* bf16_to_f32 - the float value of bfloat16 bits @b. */
float bf16_to_f32(uint16_t b);

/* bf16_from_f32 - bfloat16 bits nearest to @f (ties to even; NaN stays quiet NaN). */
uint16_t bf16_from_f32(float f);

#ifdef __cplusplus
}
#endif
