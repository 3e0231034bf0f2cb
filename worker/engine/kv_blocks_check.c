/*
 * kv_blocks_check.c - kvb_check: every invariant of the block pool
 * (kv_blocks.h), recounted from the tables. For tests; O(n_blocks + tables).
 */
#include <string.h>

#include "base/alloc.h"
#include "kv_blocks_int.h"

static orch_err
check_refs(const struct kvb *kv, uint32_t *count, struct orch_errinfo *reterr)
{
	uint32_t used = 0;

	memset(count, 0, kv->cfg.n_blocks * sizeof(*count));
	for (uint32_t q = 0; q < kv->cfg.max_seqs; q++) {
		const struct kvb_seq *s = &kv->seqs[q];
		uint32_t n = kvb_seq_n_table(kv, s);
		for (uint32_t i = 0; i < kv->max_table; i++) {
			uint32_t b = s->table[i];
			bool held = i >= s->first && i < n;
			if (held != (b != KVB_NONE) || (held && b >= kv->cfg.n_blocks))
				return orch_errf(reterr, ORCH_EINTERNAL,
				                 "seq %u entry %u: block %u (first %u, n %u)", q, i,
				                 b, s->first, n);
			if (held)
				count[b]++;
		}
	}
	for (uint32_t b = 0; b < kv->cfg.n_blocks; b++) {
		if (count[b] != kv->blk[b].ref)
			return orch_errf(reterr, ORCH_EINTERNAL, "block %u: ref %u, %u tables", b,
			                 kv->blk[b].ref, count[b]);
		used += count[b] > 0;
	}
	if (used != kv->n_used || used + kv->n_heap + kv->n_free != kv->cfg.n_blocks)
		return orch_errf(reterr, ORCH_EINTERNAL,
		                 "used %u (counted %u) + cached %u + free %u", kv->n_used, used,
		                 kv->n_heap, kv->n_free);
	return ORCH_OK;
}

static orch_err
check_lists(const struct kvb *kv, struct orch_errinfo *reterr)
{
	for (uint32_t i = 0; i < kv->n_free; i++) {
		const struct kvb_blk *x = &kv->blk[kv->free_stack[i]];
		if (x->ref || x->cached || x->heap_pos != KVB_NONE)
			return orch_errf(reterr, ORCH_EINTERNAL, "free block %u: ref %u cached %d",
			                 kv->free_stack[i], x->ref, x->cached);
	}
	for (uint32_t i = 0; i < kv->n_heap; i++) {
		uint32_t b = kv->heap[i];
		if (kv->blk[b].ref || !kv->blk[b].cached || kv->blk[b].heap_pos != i)
			return orch_errf(reterr, ORCH_EINTERNAL, "heap %u: block %u ref %u", i, b,
			                 kv->blk[b].ref);
		if (i > 0 && kvb_heap_less(kv, b, kv->heap[(i - 1) / 2]))
			return orch_errf(reterr, ORCH_EINTERNAL, "heap %u: block %u before parent",
			                 i, b);
	}
	return ORCH_OK;
}

static orch_err
check_cache(const struct kvb *kv, uint32_t *children, struct orch_errinfo *reterr)
{
	uint32_t n_cached = 0, n_ht = 0;

	memset(children, 0, kv->cfg.n_blocks * sizeof(*children));
	for (uint32_t b = 0; b < kv->cfg.n_blocks; b++) {
		const struct kvb_blk *x = &kv->blk[b];
		if (!x->cached)
			continue;
		n_cached++;
		if (kvb_lookup(kv, x->key) != b)
			return orch_errf(reterr, ORCH_EINTERNAL, "cached block %u not found by key",
			                 b);
		if (x->parent != KVB_NONE && kv->blk[x->parent].gen == x->parent_gen)
			children[x->parent]++;
	}
	for (uint32_t i = 0; i <= kv->ht_mask; i++)
		n_ht += kv->ht[i] != KVB_NONE;
	if (n_ht != n_cached)
		return orch_errf(reterr, ORCH_EINTERNAL, "hash table holds %u, %u cached", n_ht,
		                 n_cached);
	for (uint32_t b = 0; b < kv->cfg.n_blocks; b++)
		if (children[b] != kv->blk[b].children)
			return orch_errf(reterr, ORCH_EINTERNAL,
			                 "block %u: children %u, counted %u", b,
			                 kv->blk[b].children, children[b]);
	return ORCH_OK;
}

orch_err
kvb_check(const struct kvb *kv, struct orch_errinfo *reterr)
{
	uint32_t *scratch = orch_calloc(kv->cfg.n_blocks, sizeof(*scratch));
	orch_err rv;

	if (scratch == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "kvb_check: out of memory");
	rv = check_refs(kv, scratch, reterr);
	if (rv == ORCH_OK)
		rv = check_lists(kv, reterr);
	if (rv == ORCH_OK)
		rv = check_cache(kv, scratch, reterr);
	orch_free(scratch);
	return rv;
}
