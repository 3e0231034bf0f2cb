/*
 * math.cc - the CUDA math functions with the device's documented accuracy.
 *
 * Design notes
 * - Inside a kernel, a function whose CUDA maximum error is N ulp (the CUDA
 *   C Programming Guide's table of standard functions: expf 2, logf 1,
 *   tanhf 2, powf 8, exp 1, pow 2, ...) returns the correctly rounded value
 *   moved by a deterministic pseudo-random number of ulps in [-N, N], a
 *   hash of the function and its arguments: the same input always gives
 *   the same output (graphs on and off, a sequence alone or batched agree),
 *   but a test whose tolerance assumes exact results fails here as it would,
 *   once in a while, on a GPU. ORCH_CUDA_SIM_MATH=exact turns it off.
 * - The fast intrinsics are modelled as the hardware computes them: __expf
 *   is ex2.approx(x · log2 e) with the product rounded to float (its error
 *   grows with |x|, as documented) and ±2 ulp in the exp2; __logf is lg2
 *   times ln 2; __fdividef is x · (1/y) with ±2 ulp; __sinf/__cosf carry an
 *   absolute error up to 2^-21.41.
 * - Outside a kernel (a launcher's host code) these are the host's own.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "exec.h"

namespace cusim
{
namespace
{

uint64_t
mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

bool
device_accuracy(void)
{
	return in_kernel() && !cfg().exact_math;
}

float
ulps(float exact, uint64_t key, int max_ulp)
{
	if (!device_accuracy() || max_ulp == 0 || !std::isfinite(exact))
		return exact;
	int d = (int)(mix(key) % (uint64_t)(2 * max_ulp + 1)) - max_ulp;
	float r = exact;
	for (int i = 0; i < (d < 0 ? -d : d); i++)
		r = nextafterf(r, d > 0 ? INFINITY : -INFINITY);
	/* never across zero or to infinity: the device does neither */
	if (!std::isfinite(r) || (r < 0) != (exact < 0) || (exact != 0 && r == 0))
		return exact;
	return r;
}

double
ulps_d(double exact, uint64_t key, int max_ulp)
{
	if (!device_accuracy() || max_ulp == 0 || !std::isfinite(exact))
		return exact;
	int d = (int)(mix(key) % (uint64_t)(2 * max_ulp + 1)) - max_ulp;
	double r = exact;
	for (int i = 0; i < (d < 0 ? -d : d); i++)
		r = nextafter(r, d > 0 ? INFINITY : -INFINITY);
	if (!std::isfinite(r) || (r < 0) != (exact < 0) || (exact != 0 && r == 0))
		return exact;
	return r;
}

uint64_t
key1(uint32_t salt, float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	return ((uint64_t)salt << 32) | u;
}

uint64_t
key2(uint32_t salt, float x, float y)
{
	uint32_t u, v;
	memcpy(&u, &x, 4);
	memcpy(&v, &y, 4);
	return mix(((uint64_t)salt << 32) | u) ^ v;
}

uint64_t
keyd(uint32_t salt, double x)
{
	uint64_t u;
	memcpy(&u, &x, 8);
	return mix(u) ^ salt;
}

} // namespace

/* correctly rounded through double (sqrt and the like are exact already) */
#define F1(name, hostexpr, maxulp, salt)                               \
	float name(float x)                                            \
	{                                                              \
		return ulps((float)(hostexpr), key1(salt, x), maxulp); \
	}
F1(dev_expf, exp((double)x), 2, 1)
F1(dev_exp2f, exp2((double)x), 2, 2)
F1(dev_exp10f, exp10((double)x), 2, 3)
F1(dev_expm1f, expm1((double)x), 1, 4)
F1(dev_logf, log((double)x), 1, 5)
F1(dev_log2f, log2((double)x), 1, 6)
F1(dev_log10f, log10((double)x), 2, 7)
F1(dev_log1pf, log1p((double)x), 1, 8)
F1(dev_sinf, sin((double)x), 2, 9)
F1(dev_cosf, cos((double)x), 2, 10)
F1(dev_tanf, tan((double)x), 4, 11)
F1(dev_tanhf, tanh((double)x), 2, 12)
F1(dev_erff, erf((double)x), 2, 13)
F1(dev_rsqrtf, 1.0 / sqrt((double)x), 2, 14)
#undef F1

float
dev_powf(float x, float y)
{
	return ulps((float)pow((double)x, (double)y), key2(15, x, y), 8);
}

double
dev_exp(double x)
{
	return ulps_d(exp(x), keyd(16, x), 1);
}

double
dev_log(double x)
{
	return ulps_d(log(x), keyd(17, x), 1);
}

double
dev_pow(double x, double y)
{
	return ulps_d(pow(x, y), keyd(18, x) ^ mix(keyd(19, y)), 2);
}

double
dev_tanh(double x)
{
	return ulps_d(tanh(x), keyd(20, x), 1);
}

double
dev_sin(double x)
{
	return ulps_d(sin(x), keyd(21, x), 1);
}

double
dev_cos(double x)
{
	return ulps_d(cos(x), keyd(22, x), 1);
}

/* sin and cos of π·x: x reduced exactly to [-1, 1], then in long double. */
static void
sincospi_exact(double x, long double *s, long double *c)
{
	double r = fmod(x, 2.0); /* exact */
	long double a = (long double)r * 3.141592653589793238462643383279502884L;

	if (r == 0.0 || r == 1.0 || r == -1.0) { /* exact zeros of sin */
		*s = r == 0.0 ? (long double)copysign(0.0, x) : 0.0L;
		*c = r == 0.0 ? 1.0L : -1.0L;
		return;
	}
	if (fabs(r) == 0.5 || fabs(r) == 1.5) { /* exact zeros of cos */
		*s = (r == 0.5 || r == -1.5) ? 1.0L : -1.0L;
		*c = 0.0L;
		return;
	}
	*s = sinl(a);
	*c = cosl(a);
}

void
dev_sincospi(double x, double *s, double *c)
{
	long double ls, lc;

	sincospi_exact(x, &ls, &lc);
	*s = ulps_d((double)ls, keyd(28, x), 1);
	*c = ulps_d((double)lc, keyd(29, x), 1);
}

void
dev_sincospif(float x, float *s, float *c)
{
	long double ls, lc;

	sincospi_exact((double)x, &ls, &lc);
	*s = ulps((float)ls, key1(30, x), 2);
	*c = ulps((float)lc, key1(31, x), 2);
}

void
dev_sincosf(float x, float *s, float *c)
{
	*s = ulps((float)sin((double)x), key1(9, x), 2);
	*c = ulps((float)cos((double)x), key1(10, x), 2);
}

/* ---- fast intrinsics ---- */

float
dev_fast_expf(float x)
{
	if (!device_accuracy())
		return (float)exp((double)x);
	float t = x * 1.44269502f; /* the rounding here is the error that grows with |x| */
	return ulps((float)exp2((double)t), key1(23, x), 2);
}

float
dev_fast_logf(float x)
{
	if (!device_accuracy())
		return (float)log((double)x);
	float l2 = ulps((float)log2((double)x), key1(24, x), 2);
	return l2 * 0.693147182f;
}

float
dev_fast_fdividef(float x, float y)
{
	if (!device_accuracy())
		return x / y;
	return ulps((float)((double)x / (double)y), key2(25, x, y), 2);
}

float
dev_fast_powf(float x, float y)
{
	return dev_fast_expf(y * dev_fast_logf(x) * 1.0f);
}

static float
abs_err(float exact, uint64_t key)
{
	if (!device_accuracy())
		return exact;
	/* up to 2^-21.41 absolute, in steps the float can hold */
	double e = ldexp(1.0, -22) * 1.5 * ((double)(mix(key) % 2001) / 1000.0 - 1.0);
	return (float)((double)exact + e);
}

float
dev_fast_sinf(float x)
{
	return abs_err((float)sin((double)x), key1(26, x));
}

float
dev_fast_cosf(float x)
{
	return abs_err((float)cos((double)x), key1(27, x));
}

} // namespace cusim
