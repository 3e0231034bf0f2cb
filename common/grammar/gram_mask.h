#pragma once
/*
 * gram_mask.h - which tokens of a vocabulary a grammar lets come next: a
 * bitset over token ids from a matcher's state (grammar.h), for masking
 * logits before sampling.
 *
 * The vocabulary is a trie of the tokens' bytes walked once per state,
 * pruned at the first byte no parse takes; a cache keyed by the state's
 * stacks (content, not identity) returns the mask of a state seen before
 * in a bitset copy, whichever job or step met it first, and the counts of
 * a bounded repetition (a string's maxLength) share one walk.
 * docs/grammar.md has the costs measured.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct gram;
struct gram_match;

/* A vocabulary's token bytes as a trie. */
struct gram_vocab;

/*
 * gram_vocab_new - the @n tokens' bytes (@bytes[i], @lens[i] bytes; length
 * 0 for a token text never matches: control and special tokens, which the
 * caller allows itself, e.g. end-of-generation when the grammar accepts)
 * into *@ret. The bytes are copied. ORCH_EINVAL for a token over
 * GRAM_TOKEN_MAX bytes, ORCH_ENOMEM.
 */
orch_err gram_vocab_new(const uint8_t *const *bytes, const uint32_t *lens, uint32_t n,
                        struct gram_vocab **ret);

#define GRAM_TOKEN_MAX 1024

/* gram_vocab_free - free @v (NULL is ignored); no gram_masks of it may be left. */
void gram_vocab_free(struct gram_vocab *v);

/* gram_vocab_size - the tokens of @v (bits in a mask). */
uint32_t gram_vocab_size(const struct gram_vocab *v);

/* The masks of one grammar over one vocabulary, cached; one thread at a time. */
struct gram_masks;

/*
 * gram_masks_new - masks of @g over @v (both kept alive by the caller),
 * caching up to @cache_bytes of them (0: none). ORCH_ENOMEM.
 */
orch_err gram_masks_new(const struct gram *g, const struct gram_vocab *v, size_t cache_bytes,
                        struct gram_masks **ret);

/* gram_masks_free - free @c and every mask it cached (NULL is ignored). */
void gram_masks_free(struct gram_masks *c);

/*
 * gram_masks_share - whether the counts of a bounded repetition share one
 * walk (on by default, where the cache has room); off, each count walks the
 * trie itself: the same masks, for tests and benchmarks.
 */
void gram_masks_share(struct gram_masks *c, bool on);

/*
 * gram_masks_over_budget - whether a mask of @c passed GRAM_MASK_WORK_MAX (grammar.h):
 * its grammar is too costly to mask this vocabulary with.
 */
bool gram_masks_over_budget(const struct gram_masks *c);

/* What gram_masks has done: for benchmarks and the debug log. */
struct gram_masks_stats {
	uint64_t hits, misses; /* masks from the cache, masks computed */
	uint64_t derived; /* of the misses, those made from a walk a repetition's counts share */
	uint64_t shared_walks; /* such walks */
	uint64_t walk_ns;      /* time computing */
	uint64_t nodes;        /* trie nodes visited computing */
	uint64_t work_max;     /* the most work one walk took (GRAM_MASK_WORK_MAX's count) */
	uint32_t cached;       /* masks held now */
};

void gram_masks_stats(const struct gram_masks *c, struct gram_masks_stats *ret);

/*
 * gram_match_mask - into *@ret (valid until the next call on @c) the
 * tokens that may follow @m's bytes: bit i of word i / 32 set when token i's
 * bytes keep a parse alive, or a terminal bound to token i (grammar.h) is
 * next in one. A matcher of @c's grammar. ORCH_ENOMEM,
 * ORCH_ERANGE (too ambiguous, as gram_match_feed).
 */
orch_err gram_match_mask(struct gram_match *m, struct gram_masks *c, const uint32_t **ret);
