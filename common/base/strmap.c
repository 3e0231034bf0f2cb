#include "strmap.h"

#include <string.h>

#include "alloc.h"

struct slot {
	const char *key;
	uint32_t len;
	int32_t value;
};

struct strmap {
	struct slot *slots;
	size_t mask;
};

struct u64slot {
	uint64_t key, value;
};

struct u64map {
	struct u64slot *slots;
	size_t mask;
};

static uint64_t
hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static uint64_t
hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* Capacity: a power of two at least twice @n. */
static size_t
capacity(size_t n)
{
	size_t cap = 16;

	while (cap < 2 * n && cap < ((size_t)1 << 40))
		cap <<= 1;
	return cap;
}

orch_err
strmap_new(size_t n, struct strmap **ret)
{
	struct strmap *m = orch_calloc(1, sizeof(*m));
	size_t cap = capacity(n);

	if (m == NULL || (m->slots = orch_calloc(cap, sizeof(*m->slots))) == NULL) {
		orch_free(m);
		return ORCH_ENOMEM;
	}
	m->mask = cap - 1;
	*ret = m;
	return ORCH_OK;
}

void
strmap_free(struct strmap *m)
{
	if (m == NULL)
		return;
	orch_free(m->slots);
	orch_free(m);
}

void
strmap_put(struct strmap *m, const char *key, size_t len, int32_t value)
{
	for (size_t i = hash_bytes(key, len) & m->mask;; i = (i + 1) & m->mask) {
		struct slot *s = &m->slots[i];
		if (s->key == NULL) {
			s->key = key;
			s->len = (uint32_t)len;
			s->value = value;
			return;
		}
		if (s->len == len && memcmp(s->key, key, len) == 0)
			return;
	}
}

int32_t
strmap_get(const struct strmap *m, const char *key, size_t len)
{
	for (size_t i = hash_bytes(key, len) & m->mask;; i = (i + 1) & m->mask) {
		const struct slot *s = &m->slots[i];
		if (s->key == NULL)
			return -1;
		if (s->len == len && memcmp(s->key, key, len) == 0)
			return s->value;
	}
}

orch_err
u64map_new(size_t n, struct u64map **ret)
{
	struct u64map *m = orch_calloc(1, sizeof(*m));
	size_t cap = capacity(n);

	if (m == NULL || (m->slots = orch_malloc(cap * sizeof(*m->slots))) == NULL) {
		orch_free(m);
		return ORCH_ENOMEM;
	}
	memset(m->slots, 0xff, cap * sizeof(*m->slots)); /* key UINT64_MAX: empty */
	m->mask = cap - 1;
	*ret = m;
	return ORCH_OK;
}

void
u64map_free(struct u64map *m)
{
	if (m == NULL)
		return;
	orch_free(m->slots);
	orch_free(m);
}

void
u64map_put(struct u64map *m, uint64_t key, uint64_t value)
{
	for (size_t i = hash_u64(key) & m->mask;; i = (i + 1) & m->mask) {
		if (m->slots[i].key == UINT64_MAX) {
			m->slots[i].key = key;
			m->slots[i].value = value;
			return;
		}
		if (m->slots[i].key == key)
			return;
	}
}

int
u64map_get(const struct u64map *m, uint64_t key, uint64_t *out)
{
	for (size_t i = hash_u64(key) & m->mask;; i = (i + 1) & m->mask) {
		if (m->slots[i].key == UINT64_MAX)
			return 0;
		if (m->slots[i].key == key) {
			*out = m->slots[i].value;
			return 1;
		}
	}
}
