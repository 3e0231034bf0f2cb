#pragma once
/*
 * sha256.h - SHA-256 (FIPS 180-4), incremental: a model file's digest in
 * Hello, a tokenizer's digest, and the digest cache beside a model file
 * (filehash.h). Not constant-time; nothing here is secret.
 */
#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32
#define SHA256_HEX   65 /* 64 lowercase hex digits and the NUL */

struct sha256 {
	uint32_t h[8];
	uint64_t n_bytes; /* hashed so far */
	uint8_t block[64];
	uint32_t fill; /* bytes waiting in @block */
};

/* sha256_init - start a digest in @s. */
void sha256_init(struct sha256 *s);

/* sha256_update - add @n bytes at @p (@p may be NULL when @n is 0). */
void sha256_update(struct sha256 *s, const void *p, size_t n);

/* sha256_final - the digest into @out; @s must be initialized again before reuse. */
void sha256_final(struct sha256 *s, uint8_t out[SHA256_BYTES]);

/* sha256_hex - @d as 64 lowercase hex digits and a NUL into @out. */
void sha256_hex(const uint8_t d[SHA256_BYTES], char out[SHA256_HEX]);

/* sha256_buf - the digest of @n bytes at @p in one call. */
void sha256_buf(const void *p, size_t n, uint8_t out[SHA256_BYTES]);
