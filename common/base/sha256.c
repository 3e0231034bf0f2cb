/*
 * sha256.c - SHA-256 as FIPS 180-4 §6.2 describes it: 64-byte blocks, a
 * 64-word message schedule, 64 rounds; the message is padded with 0x80,
 * zeros and its length in bits (big-endian) to a whole number of blocks.
 */
#include "sha256.h"

#include <string.h>

/* The first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};

static uint32_t
rotr(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t
load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
store_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* One 64-byte block into the state. */
static void
compress(uint32_t h[8], const uint8_t *block)
{
	uint32_t w[64];
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];

	for (int t = 0; t < 16; t++)
		w[t] = load_be32(block + 4 * t);
	for (int t = 16; t < 64; t++) {
		uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
		uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	for (int t = 0; t < 64; t++) {
		uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
		              k[t] + w[t];
		uint32_t t2 =
		        (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += hh;
}

void
sha256_init(struct sha256 *s)
{
	/* the first 32 bits of the fractional parts of the square roots of the first 8 primes */
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

	memcpy(s->h, h0, sizeof(h0));
	s->n_bytes = 0;
	s->fill = 0;
}

void
sha256_update(struct sha256 *s, const void *p, size_t n)
{
	const uint8_t *b = p;

	if (n == 0)
		return; /* @p may be NULL */
	s->n_bytes += n;
	if (s->fill > 0) {
		size_t take = 64 - s->fill < n ? 64 - s->fill : n;
		memcpy(s->block + s->fill, b, take);
		s->fill += (uint32_t)take;
		b += take;
		n -= take;
		if (s->fill < 64)
			return;
		compress(s->h, s->block);
		s->fill = 0;
	}
	for (; n >= 64; b += 64, n -= 64)
		compress(s->h, b);
	if (n > 0)
		memcpy(s->block, b, n);
	s->fill = (uint32_t)n;
}

void
sha256_final(struct sha256 *s, uint8_t out[SHA256_BYTES])
{
	uint64_t bits = s->n_bytes * 8;
	uint8_t pad[72] = {0x80};
	/* 0x80, zeros up to 56 mod 64, then the 8-byte length */
	size_t n_pad = (s->fill < 56 ? 56 : 120) - s->fill;

	for (int i = 0; i < 8; i++)
		pad[n_pad + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_update(s, pad, n_pad + 8);
	for (int i = 0; i < 8; i++)
		store_be32(out + 4 * i, s->h[i]);
}

void
sha256_hex(const uint8_t d[SHA256_BYTES], char out[SHA256_HEX])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < SHA256_BYTES; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * SHA256_BYTES] = '\0';
}

void
sha256_buf(const void *p, size_t n, uint8_t out[SHA256_BYTES])
{
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, p, n);
	sha256_final(&s, out);
}
