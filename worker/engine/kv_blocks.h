#pragma once
/*
 * kv_blocks.h - the paged KV cache's bookkeeping (issue 19): a pool of
 * fixed-size blocks, a block table per sequence, and the prefix cache that
 * lets a new sequence reuse full blocks another one computed.
 *
 * This module owns no K/V memory. A backend sizes its K/V storage as
 * n_blocks × block_tokens positions per layer and finds position p of a
 * sequence at (kvb_seq_table()[p / block_tokens] × block_tokens +
 * p % block_tokens). When a sequence must stop sharing a partly filled
 * block, kvb_seq_append() reports the copy (struct kvb_copy) and the caller
 * copies the K/V rows before it writes new ones.
 *
 * Blocks: ids 0 .. n_blocks-1. A block is in use (ref > 0: referenced by
 * that many sequence tables), cached-free (ref 0, but its content is
 * registered under its key and may be matched again) or free (ref 0, no
 * key). Nothing is allocated after kvb_new(): every table, list, heap and
 * the hash table are fixed arrays sized there.
 *
 * Prefix cache: when a block of a sequence is filled, it is registered under
 *   key = SHA-256(seed[32] ‖ parent[16] ‖ salted[1] ‖ SHA-256(salt)[32] if
 *         salted ‖ tokens as int32 little-endian × block_tokens)[0..16)
 * where seed is the caller's identity of model and tokenizer, parent the
 * key of the sequence's previous block (16 zero bytes for block 0) and salt
 * the request's cache_salt. The chain makes a key name the whole prefix up
 * to and including its block. Only full blocks are keyed. A new sequence
 * calls kvb_seq_match() to attach every leading full block already cached.
 * Released cached blocks stay cached until an allocation finds no free
 * block; then the least recently released one is evicted, leaves first
 * (a block no other cached block names as its parent); in a window pool
 * the least recently released one, leaf or not.
 *
 * Sliding window (kvb_config.window = w > 0): a pool for layers whose query
 * at position p sees only positions p - w + 1 .. p. The caller drops blocks
 * that leave every query's window (kvb_seq_drop_before); they stay cached
 * under their keys. A sequence resumes after L cached tokens when the blocks
 * holding positions max(0, L + 1 - w) .. L - 1 are cached, whatever became of
 * the earlier ones: it attaches those alone, its table empty before them.
 * A model with both kinds of layer has one pool of each, and a prompt
 * resumes after a length both can give (kvb_match_len, kvb_seq_resume).
 *
 * Thread: single-threaded. One thread (the scheduler's) calls everything;
 * there are no locks.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#define KVB_KEY_BYTES            16
#define KVB_SEED_BYTES           32
#define KVB_DEFAULT_BLOCK_TOKENS 16
#define KVB_NONE                 UINT32_MAX /* no block */
#define KVB_MAX_BLOCK_TOKENS     4096

struct kvb;

struct kvb_config {
	uint32_t n_blocks;            /* blocks in the pool, >= 1 */
	uint32_t block_tokens;        /* tokens per block, 1..KVB_MAX_BLOCK_TOKENS; 0: 16 */
	uint32_t max_seqs;            /* sequences (ids 0 .. max_seqs-1), >= 1 */
	uint32_t max_seq_tokens;      /* longest sequence (the context length), >= 1 */
	bool prefix_cache;            /* register full blocks and match prefixes */
	uint32_t window;              /* sliding-window pool: positions a query sees; 0: all */
	uint8_t seed[KVB_SEED_BYTES]; /* model + tokenizer identity, mixed into every key */
};

/* A copy the caller must make before writing: rows [0, n_tokens) of block
 * src into block dst. n_tokens == 0: nothing to copy. */
struct kvb_copy {
	uint32_t src, dst;
	uint32_t n_tokens;
};

struct kvb_stats {
	uint32_t total;        /* n_blocks */
	uint32_t used;         /* ref > 0 */
	uint32_t cached;       /* ref 0, keyed: reusable, evictable */
	uint32_t free;         /* ref 0, no key */
	uint64_t query_tokens; /* prompt tokens kvb_seq_match() was asked about (not
	                          kvb_match_len or kvb_seq_resume: their caller counts) */
	uint64_t hit_tokens;   /* of them, tokens found cached */
	uint64_t evictions;    /* cached blocks reclaimed for an allocation */
};

/* What kvb_block_info() tells about one block (tests, debugging). */
struct kvb_block_info {
	uint32_t ref;
	uint32_t children; /* cached blocks registered with this one as parent */
	bool cached;
	uint8_t key[KVB_KEY_BYTES]; /* valid when cached */
};

/*
 * kvb_new - a pool for @cfg, every sequence empty, every block free.
 * ORCH_EINVAL for a zero or oversized field (the message names it),
 * ORCH_ENOMEM with the bytes wanted.
 */
orch_err kvb_new(const struct kvb_config *cfg, struct kvb **ret, struct orch_errinfo *reterr);

/* kvb_free - free @kv and all it holds; NULL is fine. */
void kvb_free(struct kvb *kv);

/* kvb_block_tokens - tokens per block (the default applied). */
uint32_t kvb_block_tokens(const struct kvb *kv);

/* kvb_stats - the counters: total == used + cached + free. */
struct kvb_stats kvb_stats(const struct kvb *kv);

/* kvb_available - blocks an allocation may take now: free + cached. */
uint32_t kvb_available(const struct kvb *kv);

/*
 * kvb_seq_match - start empty sequence @seq as a request for @n prompt
 * @tokens with cache salt @salt (@salt_len bytes; NULL/0: none; a salted
 * request shares blocks only with requests of the same salt). Attaches the
 * longest run of leading full blocks of the prompt that is cached (ref++;
 * with a window, the longest prefix whose window is cached, as
 * kvb_match_len) and puts their token count in *@ret_cached: a multiple of
 * block_tokens and at most n - 1, so at least one prompt token is left to
 * compute and the step yields logits. The caller then appends tokens[*ret_cached ..n).
 * Call it for every new request, even with the cache off (returns 0): the
 * salt it records is the one the sequence's own blocks are registered under.
 * ORCH_EINVAL when @seq is out of range or not empty.
 */
orch_err kvb_seq_match(struct kvb *kv, uint32_t seq, const int32_t *tokens, uint32_t n,
                       const void *salt, uint32_t salt_len, uint32_t *ret_cached);

/*
 * kvb_match_len - the prompt tokens a new request for @n @tokens under @salt
 * could resume after: the most L = k·block_tokens <= min(@limit, n - 1) whose
 * blocks are cached (all k, or with a window the last ones its next query
 * sees). 0 without the prefix cache. Attaches nothing; the keys are derived
 * again (SHA-256 of each block up to L). In a full-attention pool every
 * shorter multiple of block_tokens resumes as well; in a window pool not
 * necessarily, so a caller agreeing on one length across pools asks the
 * full pool first and passes its answer as the window pool's @limit.
 */
uint32_t kvb_match_len(struct kvb *kv, const int32_t *tokens, uint32_t n, const void *salt,
                       uint32_t salt_len, uint32_t limit);

/*
 * kvb_seq_resume - start empty sequence @seq as a request under @salt whose
 * first @len tokens (@tokens, a multiple of block_tokens) are cached, as
 * kvb_match_len reported: attach their blocks (those its window still sees)
 * and set its length to @len. The caller then appends tokens[len ..). @len 0
 * only records the salt. ORCH_EINVAL for a bad @seq or @len, ORCH_ENOTFOUND
 * when a block it needs is not cached (then nothing changed).
 */
orch_err kvb_seq_resume(struct kvb *kv, uint32_t seq, const int32_t *tokens, uint32_t len,
                        const void *salt, uint32_t salt_len);

/*
 * kvb_seq_blocks_needed - blocks kvb_seq_append(@seq, n) would take: new
 * blocks plus one when the partial last block is shared (copy-on-write).
 * For admission: it fits when this is <= kvb_available().
 */
uint32_t kvb_seq_blocks_needed(const struct kvb *kv, uint32_t seq, uint32_t n);

/*
 * kvb_seq_append - add @n @tokens at the end of @seq, taking blocks as
 * needed (free ones first, then evicting cached ones). Each block the
 * append fills is registered in the prefix cache (unless its key is already
 * there: then the block stays private). When the partial last block is
 * shared (after kvb_seq_fork), it is first moved to a private block and
 * *@ret_copy says which rows to copy; otherwise ret_copy->n_tokens is 0.
 * ORCH_ECONTEXT past max_seq_tokens, ORCH_EVRAM when the pool has too few
 * blocks; on any error nothing changed (the caller may preempt and retry).
 */
orch_err kvb_seq_append(struct kvb *kv, uint32_t seq, const int32_t *tokens, uint32_t n,
                        struct kvb_copy *ret_copy, struct orch_errinfo *reterr);

/*
 * kvb_seq_fork - make empty sequence @dst a copy of @src sharing all its
 * blocks (ref++); the next append to either copies the partial last block.
 * ORCH_EINVAL when @dst is not empty or an id is out of range or equal.
 */
orch_err kvb_seq_fork(struct kvb *kv, uint32_t dst, uint32_t src);

/*
 * kvb_seq_drop_before - release the blocks of @seq that lie wholly before
 * position @pos (a sliding window moved past them); their table entries
 * become KVB_NONE and kvb_seq_first_block() moves to @pos / block_tokens.
 * The length is unchanged. ORCH_EINVAL when @pos > the sequence's length.
 */
orch_err kvb_seq_drop_before(struct kvb *kv, uint32_t seq, uint32_t pos);

/*
 * kvb_seq_uncache_from - take the blocks of @seq holding positions >= @pos out of
 * the prefix cache (they stay in the table): their keys were registered when the
 * tokens were appended, and the step that was to compute those rows failed.
 */
void kvb_seq_uncache_from(struct kvb *kv, uint32_t seq, uint32_t pos);

/* kvb_seq_free - release all blocks of @seq and make it empty (length 0, no salt). */
void kvb_seq_free(struct kvb *kv, uint32_t seq);

/* kvb_seq_len - tokens in @seq. */
uint32_t kvb_seq_len(const struct kvb *kv, uint32_t seq);

/* kvb_seq_first_block - index of the first table entry still held (0 unless dropped). */
uint32_t kvb_seq_first_block(const struct kvb *kv, uint32_t seq);

/*
 * kvb_seq_table - the block table of @seq: entry i holds logical block i
 * (positions i·block_tokens ..), KVB_NONE before kvb_seq_first_block();
 * ceil(len / block_tokens) entries in *@ret_n. Valid until the next call
 * that changes @seq.
 */
const uint32_t *kvb_seq_table(const struct kvb *kv, uint32_t seq, uint32_t *ret_n);

/*
 * kvb_seq_pos - the block and row holding position @pos of @seq.
 * ORCH_ERANGE when @pos >= the length or its block was dropped.
 */
orch_err kvb_seq_pos(const struct kvb *kv, uint32_t seq, uint32_t pos, uint32_t *ret_block,
                     uint32_t *ret_offset);

/* kvb_block_info - what the pool knows about block @b (< n_blocks). */
struct kvb_block_info kvb_block_info(const struct kvb *kv, uint32_t b);

/* kvb_lookup - the block cached under @key, or KVB_NONE. */
uint32_t kvb_lookup(const struct kvb *kv, const uint8_t key[KVB_KEY_BYTES]);

/*
 * kvb_check - verify every internal invariant (refcounts against the
 * tables, the free list, the eviction heap, the hash table, the counters);
 * O(n_blocks + tables). ORCH_EINTERNAL with the first broken one. For tests.
 */
orch_err kvb_check(const struct kvb *kv, struct orch_errinfo *reterr);
