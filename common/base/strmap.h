#pragma once
/*
 * strmap.h - open-addressing hash maps for the tokenizer: byte strings →
 * int32 (token text → id) and uint64 → uint64 (token pair → merge).
 * Keys of the string map are not copied: the caller keeps them alive.
 * Sized once for a known count; lookups are O(1) expected.
 */
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct strmap;

/* strmap_new - a map for up to @n keys. ORCH_ENOMEM. */
orch_err strmap_new(size_t n, struct strmap **ret);
void strmap_free(struct strmap *m);

/* strmap_put - map @key (@len bytes) to @value; an existing key keeps its first value. */
void strmap_put(struct strmap *m, const char *key, size_t len, int32_t value);

/* strmap_get - the value of @key, or -1. */
int32_t strmap_get(const struct strmap *m, const char *key, size_t len);

struct u64map;

orch_err u64map_new(size_t n, struct u64map **ret);
void u64map_free(struct u64map *m);

/* u64map_put - map @key (never UINT64_MAX) to @value; an existing key keeps its first value. */
void u64map_put(struct u64map *m, uint64_t key, uint64_t value);

/* u64map_get - the value of @key into *@out; 0 when absent, 1 when found. */
int u64map_get(const struct u64map *m, uint64_t key, uint64_t *out);
