#pragma once
/*
 * cuda_bf16.h (simulated device) - __nv_bfloat16 with CUDA's conversions:
 * float to bfloat16 rounds to nearest even (NaN stays a NaN), bfloat16 to
 * float is exact.
 */
#ifdef __cplusplus
#include "cuda_fp16.h"

struct __nv_bfloat16_raw {
	unsigned short x;
};

struct __nv_bfloat16 {
	unsigned short __x;
	__nv_bfloat16() = default;
	constexpr __nv_bfloat16(const __nv_bfloat16_raw &r) : __x(r.x)
	{
	}
};

static inline float
__bfloat162float(__nv_bfloat16 b)
{
	return cusim::bits_f32((uint32_t)b.__x << 16);
}

static inline __nv_bfloat16
__float2bfloat16_rn(float f)
{
	uint32_t u = cusim::f32_bits(f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return __nv_bfloat16(__nv_bfloat16_raw{(unsigned short)((u >> 16) | 0x40u)});
	u += 0x7fffu + ((u >> 16) & 1u);
	return __nv_bfloat16(__nv_bfloat16_raw{(unsigned short)(u >> 16)});
}

static inline __nv_bfloat16
__float2bfloat16(float f)
{
	return __float2bfloat16_rn(f);
}
#endif
