#pragma once
/*
 * kv_blocks_int.h - the block pool's internals, shared by kv_blocks.c (the
 * pool, the tables, the prefix cache) and kv_blocks_check.c (kvb_check).
 * Not for use outside those two files.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/sha256.h"
#include "kv_blocks.h"

struct kvb_blk {
	uint8_t key[KVB_KEY_BYTES]; /* valid when cached */
	uint64_t last_use;          /* tick of the release that made ref 0 */
	uint32_t ref;               /* tables holding it */
	uint32_t children;          /* cached blocks whose parent it is */
	uint32_t parent;            /* cached parent at registration, or KVB_NONE */
	uint32_t parent_gen;        /* the parent's gen then */
	uint32_t gen;               /* bumped at each eviction */
	uint32_t heap_pos;          /* index in kv->heap, or KVB_NONE */
	bool cached;                /* registered in the hash table */
};

struct kvb_seq {
	uint32_t *table;                 /* [max_table] into kv->tables */
	int32_t *pend;                   /* [block_tokens] tokens of the partial last block */
	uint32_t len;                    /* tokens */
	uint32_t first;                  /* first table entry held */
	uint8_t last_key[KVB_KEY_BYTES]; /* key of block len/bt - 1 (len >= bt) */
	uint8_t salt[SHA256_BYTES];      /* SHA-256 of the cache salt */
	bool salted;
};

struct kvb {
	struct kvb_config cfg;
	uint32_t bt;        /* block_tokens */
	uint32_t max_table; /* table entries per sequence */
	struct kvb_blk *blk;
	uint32_t *free_stack; /* [n_blocks] */
	uint32_t n_free;
	uint32_t *heap; /* [n_blocks] block ids */
	uint32_t n_heap;
	uint32_t *ht; /* [ht_mask + 1] block ids or KVB_NONE */
	uint32_t ht_mask;
	struct kvb_seq *seqs;
	uint32_t *tables;
	int32_t *pend;
	uint8_t (*keys)[KVB_KEY_BYTES]; /* [max_table]: scratch for a prompt's chain of keys */
	uint32_t n_used;
	uint64_t tick;
	uint64_t query_tokens, hit_tokens, evictions;
};

static inline uint32_t
kvb_div_up(uint32_t a, uint32_t b)
{
	return a / b + (a % b != 0);
}

static inline uint32_t
kvb_seq_n_table(const struct kvb *kv, const struct kvb_seq *s)
{
	return kvb_div_up(s->len, kv->bt);
}

/*
 * kvb_heap_less - eviction order: leaves before inner blocks, older before newer; in a
 * window pool older before newer alone (what resumes a prefix there is its last
 * window, the blocks a chain released last, not its root).
 */
static inline bool
kvb_heap_less(const struct kvb *kv, uint32_t a, uint32_t b)
{
	const struct kvb_blk *x = &kv->blk[a], *y = &kv->blk[b];
	bool xi = x->children > 0, yi = y->children > 0;

	if (xi != yi && kv->cfg.window == 0)
		return !xi;
	return x->last_use < y->last_use;
}
