#pragma once
/*
 * rng.h - small deterministic PRNG (xoshiro256** seeded by splitmix64).
 * Same seed, same stream, on every machine. Not for cryptography.
 */
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rng {
	uint64_t s[4];
};

/* rng_seed - seed @r from @seed; any value, 0 included, gives a good stream. */
void rng_seed(struct rng *r, uint64_t seed);

/* rng_seed_str - seed from @seed mixed with the string @s (e.g. a tensor name). */
void rng_seed_str(struct rng *r, uint64_t seed, const char *s);

/* rng_next - 64 random bits. */
uint64_t rng_next(struct rng *r);

/* rng_uniform - a float in [0, 1). */
float rng_uniform(struct rng *r);

/*
 * rng_normalish - approximately standard normal: the centred, scaled sum of
 * four uniforms (Irwin-Hall). Mean 0, variance 1, bounded by ±3.47; cheap
 * enough for billions of synthetic weights.
 */
float rng_normalish(struct rng *r);

#ifdef __cplusplus
}
#endif
