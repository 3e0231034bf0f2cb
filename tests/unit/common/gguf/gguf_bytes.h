#pragma once
/*
 * gguf_bytes.h - build raw GGUF bytes by hand, valid or not, for the reader
 * tests (the writer refuses to produce broken files, this does not).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct gb {
	uint8_t *p;
	size_t n, cap;
};

static inline void
gb_put(struct gb *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (b->p == NULL)
			abort();
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static inline void
gb_u8(struct gb *b, uint8_t x)
{
	gb_put(b, &x, 1);
}

static inline void
gb_u32(struct gb *b, uint32_t x)
{
	gb_put(b, &x, 4);
}

static inline void
gb_u64(struct gb *b, uint64_t x)
{
	gb_put(b, &x, 8);
}

static inline void
gb_strn(struct gb *b, const char *s, size_t n)
{
	gb_u64(b, n);
	gb_put(b, s, n);
}

static inline void
gb_str(struct gb *b, const char *s)
{
	gb_strn(b, s, strlen(s));
}

static inline void
gb_header(struct gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
	gb_put(b, "GGUF", 4);
	gb_u32(b, version);
	gb_u64(b, n_tensors);
	gb_u64(b, n_kv);
}

static inline void
gb_kv_u32(struct gb *b, const char *key, uint32_t v)
{
	gb_str(b, key);
	gb_u32(b, 4); /* UINT32 */
	gb_u32(b, v);
}

/* A tensor record with @nd dims from @ne. */
static inline void
gb_tensor(struct gb *b, const char *name, uint32_t nd, const uint64_t *ne, uint32_t type,
          uint64_t offset)
{
	gb_str(b, name);
	gb_u32(b, nd);
	for (uint32_t i = 0; i < nd; i++)
		gb_u64(b, ne[i]);
	gb_u32(b, type);
	gb_u64(b, offset);
}

static inline void
gb_pad(struct gb *b, size_t align)
{
	while (b->n % align)
		gb_u8(b, 0);
}

static inline void
gb_zeros(struct gb *b, size_t n)
{
	while (n--)
		gb_u8(b, 0);
}
