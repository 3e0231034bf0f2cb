#pragma once
/*
 * cuda_fp16.h (simulated device) - __half and __half2 with CUDA's
 * conversions, bit exact: float to half rounds to nearest even (subnormals,
 * overflow to infinity, NaN kept a NaN), half to float is exact. Half
 * arithmetic rounds each operation to half, as sm_53+ does.
 */
#ifdef __cplusplus
#include <stdint.h>
#include <string.h>

#include "cusim/vector_types.h"

struct __half_raw {
	unsigned short x;
};

struct __half2_raw {
	unsigned short x, y;
};

namespace cusim
{

static inline float
bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint32_t
f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* IEEE binary32 to binary16, round to nearest even. */
static inline unsigned short
f32_to_f16(float f)
{
	uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;

	if (a >= 0x7f800000u) /* inf or NaN (quiet, top payload bits kept) */
		return (unsigned short)(sign | 0x7c00u |
		                        (a > 0x7f800000u ? 0x200u | (a >> 13) : 0));
	if (a >= 0x477ff000u) /* rounds to a value ≥ 65520: infinity */
		return (unsigned short)(sign | 0x7c00u);
	if (a < 0x38800000u) {       /* below 2^-14: a subnormal half (or zero) */
		if (a < 0x33000000u) /* below half the smallest subnormal: zero */
			return (unsigned short)sign;
		/* value = m · 2^(e - 150), a half subnormal counts 2^-24: h = m >> (126 - e) */
		uint32_t m = (a & 0x7fffffu) | 0x800000u, e = a >> 23, sh = 126u - e;
		uint32_t h = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
		if (rem > half || (rem == half && (h & 1u)))
			h++;
		return (unsigned short)(sign | h);
	}
	uint32_t h = ((a >> 13) - (112u << 10)), rem = a & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
		h++;
	return (unsigned short)(sign | h);
}

/* binary16 to binary32, exact. */
static inline float
f16_to_f32(unsigned short h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;

	if (e == 0x1f)
		return bits_f32(sign | 0x7f800000u | (m << 13));
	if (e == 0) {
		if (m == 0)
			return bits_f32(sign);
		e = 113;
		while ((m & 0x400u) == 0) {
			m <<= 1;
			e--;
		}
		return bits_f32(sign | (e << 23) | ((m & 0x3ffu) << 13));
	}
	return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

} // namespace cusim

struct __half {
	unsigned short __x;
	__half() = default;
	constexpr __half(const __half_raw &r) : __x(r.x)
	{
	}
	__half(float f) : __x(cusim::f32_to_f16(f))
	{
	}
	__half(double f) : __x(cusim::f32_to_f16((float)f))
	{
	}
	operator float() const
	{
		return cusim::f16_to_f32(__x);
	}
	operator __half_raw() const
	{
		return __half_raw{__x};
	}
	__half &operator=(const __half_raw &r)
	{
		__x = r.x;
		return *this;
	}
};

struct __attribute__((aligned(4))) __half2 {
	__half x, y;
	__half2() = default;
	constexpr __half2(const __half &a, const __half &b) : x(a), y(b)
	{
	}
	__half2(const __half2_raw &r) : x(__half_raw{r.x}), y(__half_raw{r.y})
	{
	}
};

typedef struct __half half;
typedef struct __half2 half2;

static inline __half
__float2half_rn(float f)
{
	return __half(__half_raw{cusim::f32_to_f16(f)});
}
static inline __half
__float2half(float f)
{
	return __float2half_rn(f);
}
static inline float
__half2float(__half h)
{
	return cusim::f16_to_f32(h.__x);
}
static inline __half
__ushort_as_half(unsigned short u)
{
	return __half(__half_raw{u});
}
static inline unsigned short
__half_as_ushort(__half h)
{
	return h.__x;
}
static inline float2
__half22float2(__half2 h)
{
	return float2{__half2float(h.x), __half2float(h.y)};
}
static inline __half2
__floats2half2_rn(float a, float b)
{
	return __half2(__float2half_rn(a), __float2half_rn(b));
}
static inline __half2
__float22half2_rn(float2 f)
{
	return __floats2half2_rn(f.x, f.y);
}
static inline __half2
__halves2half2(__half a, __half b)
{
	return __half2(a, b);
}
static inline float
__low2float(__half2 h)
{
	return __half2float(h.x);
}
static inline float
__high2float(__half2 h)
{
	return __half2float(h.y);
}
static inline __half
__hadd(__half a, __half b)
{
	return __float2half_rn(__half2float(a) + __half2float(b));
}
static inline __half
__hsub(__half a, __half b)
{
	return __float2half_rn(__half2float(a) - __half2float(b));
}
static inline __half
__hmul(__half a, __half b)
{
	return __float2half_rn(__half2float(a) * __half2float(b));
}
static inline __half
__hfma(__half a, __half b, __half c)
{
	/* the product of two halves is exact in float; one rounding to half at the end
	 * (double rounding through float is exact here: float has 24 > 2·11 + 2 bits) */
	return __float2half_rn(
	        (float)((double)__half2float(a) * __half2float(b) + __half2float(c)));
}
#endif
