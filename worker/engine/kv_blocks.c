/*
 * kv_blocks.c - the block pool, block tables and prefix cache (kv_blocks.h).
 *
 * Design notes
 * - A block is in exactly one of three places: some tables (ref > 0), the
 *   eviction heap (ref 0, cached) or the free stack (ref 0, not cached).
 *   kvb_check() verifies it.
 * - The eviction heap is a binary min-heap over (has children, last
 *   release tick): leaves before inner blocks, older before newer (a
 *   window pool: older before newer alone, kvb_heap_less). A cached
 *   block's parent is the cached block its parent key named when it was
 *   registered; the parent's children count keeps it behind its leaves.
 *   An inner block is evicted only when no cached-free leaf is left (a
 *   sliding window dropped a parent whose children are still in use). Its
 *   children are then orphans: their parent link carries the parent's
 *   generation, which eviction bumps, so they never touch the id's next
 *   owner.
 * - The hash table is open addressing with linear probing over 2^k >= 2 ×
 *   n_blocks slots and backward-shift deletion (no tombstones), so it never
 *   fills and probes stay short.
 * - A filled block whose key is already cached (two sequences computed the
 *   same prefix at once) stays private and goes back to the free stack when
 *   released: one copy of a prefix is cached, never two.
 */
#include "kv_blocks.h"

#include <assert.h>
#include <string.h>

#include "base/alloc.h"
#include "base/sha256.h"
#include "kv_blocks_int.h"

/* ---- keys ---------------------------------------------------------------- */

static void
key_derive(const struct kvb *kv, const uint8_t *parent, const struct kvb_seq *s,
           const int32_t *tokens, uint8_t out[KVB_KEY_BYTES])
{
	static const uint8_t zero[KVB_KEY_BYTES];
	uint8_t d[SHA256_BYTES], flag = s->salted;
	struct sha256 h;

	sha256_init(&h);
	sha256_update(&h, kv->cfg.seed, KVB_SEED_BYTES);
	sha256_update(&h, parent ? parent : zero, KVB_KEY_BYTES);
	sha256_update(&h, &flag, 1);
	if (s->salted)
		sha256_update(&h, s->salt, SHA256_BYTES);
	for (uint32_t i = 0; i < kv->bt; i++) {
		uint32_t t = (uint32_t)tokens[i];
		uint8_t le[4] = {(uint8_t)t, (uint8_t)(t >> 8), (uint8_t)(t >> 16),
		                 (uint8_t)(t >> 24)};
		sha256_update(&h, le, 4);
	}
	sha256_final(&h, d);
	memcpy(out, d, KVB_KEY_BYTES);
}

/* ---- hash table ------------------------------------------------------------ */

static uint32_t
ht_home(const struct kvb *kv, const uint8_t key[KVB_KEY_BYTES])
{
	uint64_t h;

	memcpy(&h, key, sizeof(h));
	return (uint32_t)(h & kv->ht_mask);
}

/* ht_find - the slot holding @key, or the empty slot where it would go. */
static uint32_t
ht_find(const struct kvb *kv, const uint8_t key[KVB_KEY_BYTES])
{
	uint32_t i = ht_home(kv, key);

	while (kv->ht[i] != KVB_NONE && memcmp(kv->blk[kv->ht[i]].key, key, KVB_KEY_BYTES) != 0)
		i = (i + 1) & kv->ht_mask;
	return i;
}

uint32_t
kvb_lookup(const struct kvb *kv, const uint8_t key[KVB_KEY_BYTES])
{
	return kv->ht[ht_find(kv, key)];
}

static void
ht_remove(struct kvb *kv, uint32_t b)
{
	uint32_t i = ht_find(kv, kv->blk[b].key), j = i;

	assert(kv->ht[i] == b);
	for (;;) {
		j = (j + 1) & kv->ht_mask;
		if (kv->ht[j] == KVB_NONE)
			break;
		uint32_t k = ht_home(kv, kv->blk[kv->ht[j]].key);
		/* move j back to i unless its home lies cyclically in (i, j] */
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (!stays) {
			kv->ht[i] = kv->ht[j];
			i = j;
		}
	}
	kv->ht[i] = KVB_NONE;
}

/* ---- eviction heap ---------------------------------------------------------- */

static void
heap_set(struct kvb *kv, uint32_t i, uint32_t b)
{
	kv->heap[i] = b;
	kv->blk[b].heap_pos = i;
}

static void
heap_up(struct kvb *kv, uint32_t i)
{
	uint32_t b = kv->heap[i];

	while (i > 0 && kvb_heap_less(kv, b, kv->heap[(i - 1) / 2])) {
		heap_set(kv, i, kv->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(kv, i, b);
}

static void
heap_down(struct kvb *kv, uint32_t i)
{
	uint32_t b = kv->heap[i];

	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= kv->n_heap)
			break;
		if (c + 1 < kv->n_heap && kvb_heap_less(kv, kv->heap[c + 1], kv->heap[c]))
			c++;
		if (!kvb_heap_less(kv, kv->heap[c], b))
			break;
		heap_set(kv, i, kv->heap[c]);
		i = c;
	}
	heap_set(kv, i, b);
}

static void
heap_push(struct kvb *kv, uint32_t b)
{
	assert(kv->n_heap < kv->cfg.n_blocks && kv->blk[b].heap_pos == KVB_NONE);
	heap_set(kv, kv->n_heap++, b);
	heap_up(kv, kv->n_heap - 1);
}

static void
heap_remove(struct kvb *kv, uint32_t b)
{
	uint32_t i = kv->blk[b].heap_pos;

	assert(i < kv->n_heap && kv->heap[i] == b);
	kv->blk[b].heap_pos = KVB_NONE;
	if (i == --kv->n_heap)
		return;
	heap_set(kv, i, kv->heap[kv->n_heap]);
	heap_up(kv, i);
	heap_down(kv, kv->blk[kv->heap[i]].heap_pos);
}

/* heap_fix - @b's priority changed (its children count). */
static void
heap_fix(struct kvb *kv, uint32_t b)
{
	uint32_t i = kv->blk[b].heap_pos;

	if (i == KVB_NONE)
		return;
	heap_up(kv, i);
	heap_down(kv, kv->blk[b].heap_pos);
}

/* ---- blocks ------------------------------------------------------------------ */

/* forget - take cached block @b out of the hash table; its children become orphans. */
static void
forget(struct kvb *kv, uint32_t b)
{
	struct kvb_blk *x = &kv->blk[b];

	ht_remove(kv, b);
	if (x->parent != KVB_NONE && kv->blk[x->parent].gen == x->parent_gen) {
		assert(kv->blk[x->parent].children > 0);
		kv->blk[x->parent].children--;
		heap_fix(kv, x->parent);
	}
	x->gen++; /* orphans any children left */
	x->children = 0, x->parent = KVB_NONE, x->cached = false;
}

/* evict - take cached-free block @b out of the cache; it is then unowned. */
static void
evict(struct kvb *kv, uint32_t b)
{
	heap_remove(kv, b);
	forget(kv, b);
	kv->evictions++;
}

/* take - a block with ref 1: a free one, else the heap's first. Caller checked availability. */
static uint32_t
take(struct kvb *kv)
{
	uint32_t b;

	if (kv->n_free > 0) {
		b = kv->free_stack[--kv->n_free];
	} else {
		assert(kv->n_heap > 0);
		b = kv->heap[0];
		evict(kv, b);
	}
	assert(kv->blk[b].ref == 0 && !kv->blk[b].cached);
	kv->blk[b].ref = 1, kv->n_used++;
	return b;
}

/* acquire - one more table holds cached block @b (a prefix match). */
static void
acquire(struct kvb *kv, uint32_t b)
{
	if (kv->blk[b].ref++ == 0) {
		heap_remove(kv, b);
		kv->n_used++;
	}
}

static void
release(struct kvb *kv, uint32_t b)
{
	struct kvb_blk *x = &kv->blk[b];

	assert(x->ref > 0);
	if (--x->ref > 0)
		return;
	kv->n_used--;
	if (x->cached) {
		x->last_use = ++kv->tick;
		heap_push(kv, b);
	} else {
		kv->free_stack[kv->n_free++] = b;
	}
}

/* seal - @s just filled block len/bt - 1 (its tokens in s->pend): key it, cache it. */
static void
seal(struct kvb *kv, struct kvb_seq *s)
{
	uint32_t i = s->len / kv->bt - 1, b = s->table[i], slot, parent = KVB_NONE;
	uint8_t key[KVB_KEY_BYTES];

	key_derive(kv, i > 0 ? s->last_key : NULL, s, s->pend, key);
	if (kv->cfg.prefix_cache) {
		if (i > 0)
			parent = kvb_lookup(kv, s->last_key);
		slot = ht_find(kv, key);
		if (kv->ht[slot] == KVB_NONE) {
			struct kvb_blk *x = &kv->blk[b];
			assert(!x->cached && x->ref > 0);
			memcpy(x->key, key, KVB_KEY_BYTES);
			x->cached = true;
			kv->ht[slot] = b;
			if (parent != KVB_NONE) {
				x->parent = parent;
				x->parent_gen = kv->blk[parent].gen;
				kv->blk[parent].children++;
				heap_fix(kv, parent);
			}
		}
	}
	memcpy(s->last_key, key, KVB_KEY_BYTES);
}

/* ---- the pool ------------------------------------------------------------------ */

static orch_err
check_config(const struct kvb_config *c, uint32_t bt, struct orch_errinfo *reterr)
{
	if (c->n_blocks == 0 || c->n_blocks >= UINT32_MAX / 4)
		return orch_errf(reterr, ORCH_EINVAL, "kv blocks: n_blocks %u out of range",
		                 c->n_blocks);
	if (bt > KVB_MAX_BLOCK_TOKENS)
		return orch_errf(reterr, ORCH_EINVAL, "kv blocks: block_tokens %u over %u", bt,
		                 KVB_MAX_BLOCK_TOKENS);
	if (c->max_seqs == 0 || c->max_seqs > (1u << 20))
		return orch_errf(reterr, ORCH_EINVAL, "kv blocks: max_seqs %u out of range",
		                 c->max_seqs);
	if (c->max_seq_tokens == 0 || c->max_seq_tokens > (1u << 30))
		return orch_errf(reterr, ORCH_EINVAL, "kv blocks: max_seq_tokens %u out of range",
		                 c->max_seq_tokens);
	return ORCH_OK;
}

/* alloc_arrays - every fixed array of @kv, all or none. */
static orch_err
alloc_arrays(struct kvb *kv, struct orch_errinfo *reterr)
{
	uint32_t nb = kv->cfg.n_blocks, ns = kv->cfg.max_seqs;
	size_t n_tab;

	if (__builtin_mul_overflow((size_t)ns, (size_t)kv->max_table, &n_tab))
		return orch_errf(reterr, ORCH_EINVAL, "kv blocks: tables overflow");
	kv->blk = orch_calloc(nb, sizeof(*kv->blk));
	kv->free_stack = orch_calloc(nb, sizeof(*kv->free_stack));
	kv->heap = orch_calloc(nb, sizeof(*kv->heap));
	kv->ht = orch_calloc((size_t)kv->ht_mask + 1, sizeof(*kv->ht));
	kv->seqs = orch_calloc(ns, sizeof(*kv->seqs));
	kv->tables = orch_calloc(n_tab, sizeof(*kv->tables));
	kv->pend = orch_calloc((size_t)ns * kv->bt, sizeof(*kv->pend));
	kv->keys = orch_calloc(kv->max_table, sizeof(*kv->keys));
	if (!kv->blk || !kv->free_stack || !kv->heap || !kv->ht || !kv->seqs || !kv->tables ||
	    !kv->pend || !kv->keys) {
		size_t want = (size_t)nb * (sizeof(*kv->blk) + 8) + ((size_t)kv->ht_mask + 1) * 4 +
		              (size_t)ns * (sizeof(*kv->seqs) + 4 * (size_t)kv->bt) + n_tab * 4 +
		              (size_t)kv->max_table * KVB_KEY_BYTES;
		return orch_errf(reterr, ORCH_ENOMEM,
		                 "kv blocks: out of memory for %u blocks, %u sequences (%zu bytes)",
		                 nb, ns, want);
	}
	return ORCH_OK;
}

orch_err
kvb_new(const struct kvb_config *cfg, struct kvb **ret, struct orch_errinfo *reterr)
{
	struct kvb *kv = NULL;
	uint32_t bt = cfg->block_tokens ? cfg->block_tokens : KVB_DEFAULT_BLOCK_TOKENS;
	orch_err rv = check_config(cfg, bt, reterr);

	if (rv != ORCH_OK)
		return rv;
	kv = orch_calloc(1, sizeof(*kv));
	if (kv == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "kv blocks: out of memory");
	kv->cfg = *cfg;
	kv->cfg.block_tokens = kv->bt = bt;
	kv->max_table = kvb_div_up(cfg->max_seq_tokens, bt);
	kv->ht_mask = 1;
	while (kv->ht_mask + 1 < 2 * cfg->n_blocks)
		kv->ht_mask = kv->ht_mask * 2 + 1;
	rv = alloc_arrays(kv, reterr);
	if (rv != ORCH_OK)
		goto out;
	for (uint32_t b = 0; b < cfg->n_blocks; b++) {
		kv->blk[b].parent = KVB_NONE;
		kv->blk[b].heap_pos = KVB_NONE;
		kv->free_stack[b] = cfg->n_blocks - 1 - b; /* block 0 is taken first */
	}
	kv->n_free = cfg->n_blocks;
	memset(kv->ht, 0xff, ((size_t)kv->ht_mask + 1) * sizeof(*kv->ht));
	for (uint32_t s = 0; s < cfg->max_seqs; s++) {
		kv->seqs[s].table = kv->tables + (size_t)s * kv->max_table;
		kv->seqs[s].pend = kv->pend + (size_t)s * bt;
		for (uint32_t i = 0; i < kv->max_table; i++)
			kv->seqs[s].table[i] = KVB_NONE;
	}
	*ret = kv;
	kv = NULL;
out:
	kvb_free(kv);
	return rv;
}

void
kvb_free(struct kvb *kv)
{
	if (kv == NULL)
		return;
	orch_free(kv->blk);
	orch_free(kv->free_stack);
	orch_free(kv->heap);
	orch_free(kv->ht);
	orch_free(kv->seqs);
	orch_free(kv->tables);
	orch_free(kv->pend);
	orch_free(kv->keys);
	orch_free(kv);
}

uint32_t
kvb_block_tokens(const struct kvb *kv)
{
	return kv->bt;
}

struct kvb_stats
kvb_stats(const struct kvb *kv)
{
	return (struct kvb_stats){
	        .total = kv->cfg.n_blocks,
	        .used = kv->n_used,
	        .cached = kv->n_heap,
	        .free = kv->n_free,
	        .query_tokens = kv->query_tokens,
	        .hit_tokens = kv->hit_tokens,
	        .evictions = kv->evictions,
	};
}

uint32_t
kvb_available(const struct kvb *kv)
{
	return kv->n_free + kv->n_heap;
}

struct kvb_block_info
kvb_block_info(const struct kvb *kv, uint32_t b)
{
	struct kvb_block_info bi = {0};

	assert(b < kv->cfg.n_blocks);
	bi.ref = kv->blk[b].ref;
	bi.children = kv->blk[b].children;
	bi.cached = kv->blk[b].cached;
	if (bi.cached)
		memcpy(bi.key, kv->blk[b].key, KVB_KEY_BYTES);
	return bi;
}

/* ---- sequences ------------------------------------------------------------------ */

static bool
seq_empty(const struct kvb_seq *s)
{
	return s->len == 0 && s->first == 0;
}

/* seq_salt - the request's salt into @s: SHA-256 of it, or unsalted for NULL or empty. */
static void
seq_salt(struct kvb_seq *s, const void *salt, uint32_t salt_len)
{
	s->salted = salt != NULL && salt_len > 0;
	memset(s->salt, 0, sizeof(s->salt));
	if (s->salted)
		sha256_buf(salt, salt_len, s->salt);
}

/*
 * window_first - the first block a sequence of @len tokens still needs: 0 in a
 * full-attention pool; with a window, the block of position len + 1 - window,
 * the oldest key the query at position len sees.
 */
static uint32_t
window_first(const struct kvb *kv, uint32_t len)
{
	uint32_t w = kv->cfg.window;

	return w == 0 || len + 1 <= w ? 0 : (len + 1 - w) / kv->bt;
}

/* max_blocks - full blocks a prompt of @n may resume after: at most @limit and n - 1 tokens. */
static uint32_t
max_blocks(const struct kvb *kv, uint32_t n, uint32_t limit)
{
	uint32_t m;

	if (n == 0)
		return 0;
	m = (n - 1 < limit ? n - 1 : limit) / kv->bt;
	return m < kv->max_table ? m : kv->max_table;
}

/*
 * scan - the keys of the first @max full blocks of @tokens under @s's salt into
 * kv->keys (a full-attention pool stops at the first block not cached), and the most
 * blocks k a sequence can resume after: blocks window_first(k·bt) .. k - 1 all cached.
 */
static uint32_t
scan(struct kvb *kv, const struct kvb_seq *s, const int32_t *tokens, uint32_t max)
{
	uint32_t best = 0, run = 0;

	for (uint32_t i = 0; i < max; i++) {
		key_derive(kv, i > 0 ? kv->keys[i - 1] : NULL, s, tokens + (size_t)i * kv->bt,
		           kv->keys[i]);
		bool hit = kvb_lookup(kv, kv->keys[i]) != KVB_NONE;
		if (!hit && kv->cfg.window == 0)
			break;
		run = hit ? run + 1 : 0; /* blocks i + 1 - run .. i are cached */
		if (i + 1 - run <= window_first(kv, (i + 1) * kv->bt))
			best = i + 1; /* (a window of 1 needs no block at all) */
	}
	return best;
}

/* attach - empty @s resumes after @k blocks (scan's keys): ref++ on those it still needs. */
static void
attach(struct kvb *kv, struct kvb_seq *s, uint32_t k)
{
	uint32_t first = window_first(kv, k * kv->bt);

	for (uint32_t i = first; i < k; i++) {
		uint32_t b = kvb_lookup(kv, kv->keys[i]);
		assert(b != KVB_NONE);
		acquire(kv, b);
		s->table[i] = b;
	}
	s->first = first;
	s->len = k * kv->bt;
	if (k > 0)
		memcpy(s->last_key, kv->keys[k - 1], KVB_KEY_BYTES);
}

orch_err
kvb_seq_match(struct kvb *kv, uint32_t seq, const int32_t *tokens, uint32_t n, const void *salt,
              uint32_t salt_len, uint32_t *ret_cached)
{
	struct kvb_seq *s;

	if (seq >= kv->cfg.max_seqs || !seq_empty(&kv->seqs[seq]))
		return ORCH_EINVAL;
	s = &kv->seqs[seq];
	seq_salt(s, salt, salt_len);
	*ret_cached = 0;
	if (!kv->cfg.prefix_cache || n == 0)
		return ORCH_OK;
	kv->query_tokens += n;
	attach(kv, s, scan(kv, s, tokens, max_blocks(kv, n, UINT32_MAX)));
	kv->hit_tokens += s->len;
	*ret_cached = s->len;
	return ORCH_OK;
}

uint32_t
kvb_match_len(struct kvb *kv, const int32_t *tokens, uint32_t n, const void *salt,
              uint32_t salt_len, uint32_t limit)
{
	struct kvb_seq s = {0};

	if (!kv->cfg.prefix_cache)
		return 0;
	seq_salt(&s, salt, salt_len);
	return scan(kv, &s, tokens, max_blocks(kv, n, limit)) * kv->bt;
}

orch_err
kvb_seq_resume(struct kvb *kv, uint32_t seq, const int32_t *tokens, uint32_t len, const void *salt,
               uint32_t salt_len)
{
	struct kvb_seq *s;
	uint32_t k = len / kv->bt;

	if (seq >= kv->cfg.max_seqs || !seq_empty(&kv->seqs[seq]) || len % kv->bt != 0 ||
	    k > kv->max_table)
		return ORCH_EINVAL;
	s = &kv->seqs[seq];
	seq_salt(s, salt, salt_len);
	if (k > 0 && (!kv->cfg.prefix_cache || scan(kv, s, tokens, k) != k)) {
		seq_salt(s, NULL, 0);
		return ORCH_ENOTFOUND;
	}
	attach(kv, s, k);
	return ORCH_OK;
}

/* seq_cow_src - the shared partial last block of @s, or KVB_NONE. */
static uint32_t
seq_cow_src(const struct kvb *kv, const struct kvb_seq *s)
{
	uint32_t b;

	if (s->len % kv->bt == 0)
		return KVB_NONE;
	b = s->table[s->len / kv->bt];
	assert(b != KVB_NONE);
	return kv->blk[b].ref > 1 ? b : KVB_NONE;
}

uint32_t
kvb_seq_blocks_needed(const struct kvb *kv, uint32_t seq, uint32_t n)
{
	const struct kvb_seq *s;
	uint64_t after;

	assert(seq < kv->cfg.max_seqs);
	s = &kv->seqs[seq];
	after = ((uint64_t)s->len + n + kv->bt - 1) / kv->bt;
	if (after > UINT32_MAX / 2)
		return UINT32_MAX;
	return (uint32_t)after - kvb_seq_n_table(kv, s) + (seq_cow_src(kv, s) != KVB_NONE);
}

orch_err
kvb_seq_append(struct kvb *kv, uint32_t seq, const int32_t *tokens, uint32_t n,
               struct kvb_copy *ret_copy, struct orch_errinfo *reterr)
{
	struct kvb_seq *s;
	uint32_t need, src;

	*ret_copy = (struct kvb_copy){KVB_NONE, KVB_NONE, 0};
	if (seq >= kv->cfg.max_seqs)
		return orch_errf(reterr, ORCH_EINVAL, "kv blocks: sequence %u out of range", seq);
	s = &kv->seqs[seq];
	if ((uint64_t)s->len + n > kv->cfg.max_seq_tokens)
		return orch_errf(reterr, ORCH_ECONTEXT,
		                 "kv blocks: %u + %u tokens exceed the context of %u", s->len, n,
		                 kv->cfg.max_seq_tokens);
	need = kvb_seq_blocks_needed(kv, seq, n);
	if (need > kvb_available(kv))
		return orch_errf(reterr, ORCH_EVRAM,
		                 "kv blocks: %u blocks needed, %u free or cached of %u", need,
		                 kvb_available(kv), kv->cfg.n_blocks);
	src = seq_cow_src(kv, s);
	if (src != KVB_NONE) {
		uint32_t dst = take(kv);
		*ret_copy = (struct kvb_copy){src, dst, s->len % kv->bt};
		s->table[s->len / kv->bt] = dst;
		release(kv, src);
	}
	for (uint32_t k = 0; k < n; k++) {
		uint32_t off = s->len % kv->bt;
		if (off == 0)
			s->table[s->len / kv->bt] = take(kv);
		s->pend[off] = tokens[k];
		s->len++;
		if (off + 1 == kv->bt)
			seal(kv, s);
	}
	return ORCH_OK;
}

orch_err
kvb_seq_fork(struct kvb *kv, uint32_t dst, uint32_t src)
{
	struct kvb_seq *d, *s;
	uint32_t n;

	if (dst >= kv->cfg.max_seqs || src >= kv->cfg.max_seqs || dst == src)
		return ORCH_EINVAL;
	d = &kv->seqs[dst];
	s = &kv->seqs[src];
	if (!seq_empty(d))
		return ORCH_EINVAL;
	n = kvb_seq_n_table(kv, s);
	for (uint32_t i = s->first; i < n; i++) {
		d->table[i] = s->table[i];
		kv->blk[s->table[i]].ref++; /* held by src: ref > 0 already */
	}
	memcpy(d->pend, s->pend, kv->bt * sizeof(*d->pend));
	d->len = s->len;
	d->first = s->first;
	memcpy(d->last_key, s->last_key, KVB_KEY_BYTES);
	memcpy(d->salt, s->salt, sizeof(d->salt));
	d->salted = s->salted;
	return ORCH_OK;
}

orch_err
kvb_seq_drop_before(struct kvb *kv, uint32_t seq, uint32_t pos)
{
	struct kvb_seq *s;
	uint32_t to;

	if (seq >= kv->cfg.max_seqs || pos > kv->seqs[seq].len)
		return ORCH_EINVAL;
	s = &kv->seqs[seq];
	to = pos / kv->bt;
	for (uint32_t i = s->first; i < to; i++) {
		release(kv, s->table[i]);
		s->table[i] = KVB_NONE;
	}
	if (to > s->first)
		s->first = to;
	return ORCH_OK;
}

void
kvb_seq_uncache_from(struct kvb *kv, uint32_t seq, uint32_t pos)
{
	struct kvb_seq *s;
	uint32_t n;

	assert(seq < kv->cfg.max_seqs);
	s = &kv->seqs[seq];
	n = kvb_seq_n_table(kv, s);
	for (uint32_t i = pos / kv->bt; i < n; i++) {
		uint32_t b = s->table[i];
		if (b != KVB_NONE && kv->blk[b].cached && kv->blk[b].heap_pos == KVB_NONE)
			forget(kv, b); /* held (ref > 0): not in the heap */
	}
}

void
kvb_seq_free(struct kvb *kv, uint32_t seq)
{
	struct kvb_seq *s;
	uint32_t n;

	assert(seq < kv->cfg.max_seqs);
	s = &kv->seqs[seq];
	n = kvb_seq_n_table(kv, s);
	for (uint32_t i = 0; i < n; i++) {
		if (s->table[i] != KVB_NONE)
			release(kv, s->table[i]);
		s->table[i] = KVB_NONE;
	}
	s->len = 0;
	s->first = 0;
	s->salted = false;
	memset(s->salt, 0, sizeof(s->salt));
	memset(s->last_key, 0, sizeof(s->last_key));
}

uint32_t
kvb_seq_len(const struct kvb *kv, uint32_t seq)
{
	assert(seq < kv->cfg.max_seqs);
	return kv->seqs[seq].len;
}

uint32_t
kvb_seq_first_block(const struct kvb *kv, uint32_t seq)
{
	assert(seq < kv->cfg.max_seqs);
	return kv->seqs[seq].first;
}

const uint32_t *
kvb_seq_table(const struct kvb *kv, uint32_t seq, uint32_t *ret_n)
{
	assert(seq < kv->cfg.max_seqs);
	*ret_n = kvb_seq_n_table(kv, &kv->seqs[seq]);
	return kv->seqs[seq].table;
}

orch_err
kvb_seq_pos(const struct kvb *kv, uint32_t seq, uint32_t pos, uint32_t *ret_block,
            uint32_t *ret_offset)
{
	const struct kvb_seq *s;

	if (seq >= kv->cfg.max_seqs)
		return ORCH_EINVAL;
	s = &kv->seqs[seq];
	if (pos >= s->len || pos / kv->bt < s->first)
		return ORCH_ERANGE;
	*ret_block = s->table[pos / kv->bt];
	*ret_offset = pos % kv->bt;
	return ORCH_OK;
}
