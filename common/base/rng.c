#include "rng.h"

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void
rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

void
rng_seed_str(struct rng *r, uint64_t seed, const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	rng_seed(r, seed ^ h);
}

uint64_t
rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

float
rng_uniform(struct rng *r)
{
	return (float)(rng_next(r) >> 40) * 0x1p-24f;
}

float
rng_normalish(struct rng *r)
{
	uint64_t x = rng_next(r);
	uint32_t sum = (uint32_t)(x & 0xffff) + (uint32_t)((x >> 16) & 0xffff) +
	               (uint32_t)((x >> 32) & 0xffff) + (uint32_t)(x >> 48);

	/* Sum of four U(0,1): mean 2, variance 1/3. */
	return ((float)sum * 0x1p-16f - 2.0f) * 1.7320508f;
}
