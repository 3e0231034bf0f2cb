#include "fp16.h"

#include <string.h>

static uint32_t
f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float
f32_from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

float
fp16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t man = h & 0x3ffu;

	if (exp == 0x1f) /* inf or NaN */
		return f32_from_bits(sign | 0x7f800000u | (man << 13));
	if (exp != 0)
		return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
	if (man == 0)
		return f32_from_bits(sign);
	/* subnormal: man × 2^-24, exact in float */
	float v = (float)man * 0x1p-24f;
	return sign ? -v : v;
}

float
fp16_load(const void *p)
{
	const uint8_t *b = p;

	return fp16_to_f32((uint16_t)(b[0] | b[1] << 8));
}

uint16_t
fp16_from_f32(float f)
{
	uint32_t u = f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	uint32_t abs = u & 0x7fffffffu;

	if (abs >= 0x7f800000u) /* inf or NaN; keep NaN quiet */
		return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
	if (abs >= 0x477ff000u) /* rounds to ≥ 65520: overflow to inf */
		return (uint16_t)(sign | 0x7c00u);
	if (abs < 0x38800000u) {       /* below the smallest normal half: subnormal or zero */
		if (abs < 0x33000000u) /* below half of the smallest subnormal */
			return sign;
		uint32_t e = abs >> 23;
		uint32_t m = (abs & 0x7fffffu) | 0x800000u;
		uint32_t shift = 126u - e; /* 14..24 */
		uint32_t q = m >> shift;
		uint32_t rem = m & ((1u << shift) - 1u);
		uint32_t halfway = 1u << (shift - 1u);
		if (rem > halfway || (rem == halfway && (q & 1u)))
			q++;
		return (uint16_t)(sign | q);
	}
	uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u); /* round to nearest even */
	return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

float
bf16_to_f32(uint16_t b)
{
	return f32_from_bits((uint32_t)b << 16);
}

uint16_t
bf16_from_f32(float f)
{
	uint32_t u = f32_bits(f);

	if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign, force quiet */
		return (uint16_t)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}
