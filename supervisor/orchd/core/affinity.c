/*
 * affinity.c - prompt-prefix affinity keys and rendezvous scores (affinity.h).
 */
#include "affinity.h"

#include <string.h>

#include <cjson/cJSON.h>

#include "jobs.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME  0x100000001b3ull

/* FNV-1a over @n bytes of @p into @h, stopping at *@left bytes in all. */
static uint64_t
fnv(uint64_t h, const void *p, size_t n, size_t *left)
{
	const unsigned char *b = p;

	if (n > *left)
		n = *left;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * FNV_PRIME;
	*left -= n;
	return h;
}

/* A 64-bit finalizer (splitmix64's): FNV's low bits alone mix poorly. */
static uint64_t
mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t
affinity_key(const struct job_request *r)
{
	size_t left = AFFINITY_PREFIX_BYTES, salt_left = SIZE_MAX;
	uint64_t h = FNV_OFFSET;
	const cJSON *it;

	if (r->cache_salt) /* a salted request shares blocks only with its salt */
		h = fnv(h, r->cache_salt, strlen(r->cache_salt) + 1, &salt_left);
	if (r->prompt != NULL && r->prompt[0] != '\0') {
		h = fnv(h, r->prompt, strlen(r->prompt), &left);
	} else if (r->n_prompt_ids > 0) { /* token ids: their bytes (4 a token, about a word) */
		h = fnv(h, r->prompt_ids, (size_t)r->n_prompt_ids * sizeof(*r->prompt_ids), &left);
	} else if (r->messages != NULL) {
		cJSON_ArrayForEach(it, r->messages)
		{
			const cJSON *role = cJSON_GetObjectItem(it, "role");
			const cJSON *content = cJSON_GetObjectItem(it, "content");
			if (cJSON_IsString(role))
				h = fnv(h, role->valuestring, strlen(role->valuestring) + 1, &left);
			if (cJSON_IsString(content))
				h = fnv(h, content->valuestring, strlen(content->valuestring) + 1,
				        &left);
		}
	}
	if (left == AFFINITY_PREFIX_BYTES)
		return 0;
	h = mix(h);
	return h ? h : 1;
}

uint64_t
affinity_score(uint64_t key, const char *worker_id)
{
	size_t left = SIZE_MAX;

	return mix(fnv(key ^ FNV_OFFSET, worker_id, strlen(worker_id), &left));
}
