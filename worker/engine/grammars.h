#pragma once
/*
 * grammars.h - constrained decoding in the worker: the grammars of its jobs
 * (GBNF text, common/grammar) compiled once and shared, their token masks
 * cached, over the model's vocabulary. The scheduler asks for the tokens a
 * job's grammar allows (a bitset) before it samples, on the host or the
 * device, and feeds the grammar each token it takes. docs/grammar.md.
 *
 * One thread (the engine's) uses a grammars and its jobs.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct tok;
struct grammars;
struct grammar_entry;
struct gram_match;

/* One job's grammar: where its output stands in it. */
struct gram_job {
	struct grammars *gs;
	struct grammar_entry *e; /* the compiled grammar and its masks (shared) */
	struct gram_match *m;
};

/* The compiled grammars kept for reuse while no job uses them. */
#define GRAMMARS_KEEP 16
/* The token masks one grammar keeps, in bytes. */
#define GRAMMARS_MASK_CACHE (32u << 20)

/* grammars_new - for the vocabulary of @t (kept alive by the caller); ORCH_ENOMEM. */
orch_err grammars_new(const struct tok *t, struct grammars **ret);

/* grammars_free - every gram_job must have ended. */
void grammars_free(struct grammars *gs);

/* The longest start rule name, with its NUL. */
#define GRAMMARS_ROOT_MAX 64

/*
 * grammars_start - a job constrained by the GBNF @text (@n bytes, start
 * rule @root) into *@ret; its token terminals (<|channel|>, <[ID]>) bound to
 * the vocabulary. ORCH_EINVAL with the line, column and reason in @reterr
 * for a grammar that does not compile, a terminal the vocabulary has no
 * token for; ORCH_ENOMEM.
 */
orch_err grammars_start(struct grammars *gs, const char *text, size_t n, const char *root,
                        struct gram_job *ret, struct orch_errinfo *reterr);

/* grammars_cached - whether @text (@n bytes) with start rule @root is compiled and kept. */
bool grammars_cached(const struct grammars *gs, const char *text, size_t n, const char *root);

/* grammars_end - the job is over (a zeroed gram_job is ignored). */
void grammars_end(struct gram_job *j);

/*
 * grammars_mask - the tokens @j's grammar allows next, a bit each (token i:
 * bit i % 32 of @out[i / 32], 1 = allowed; (@n_vocab + 31) / 32 words): a
 * token whose bytes some parse takes, no control token but those a terminal
 * next in a parse names, and the end-of-generation tokens only when the
 * output so far is a whole sentence (or a terminal names them). @first: no
 * text yet, where an SPM model's output drops the dummy prefix's space
 * (detok.h), so a token whose piece starts with a space is not allowed
 * either: the grammar and the client see the same bytes. *@ret_allowed
 * (when not NULL): how many tokens are. ORCH_EINVAL when none is (a grammar
 * this vocabulary cannot spell on), ORCH_ENOMEM. The host sampler applies the
 * bits to the logits; a device sampler takes them as they are (be_sample.mask).
 */
orch_err grammars_mask(struct gram_job *j, uint32_t n_vocab, bool first, uint32_t *out,
                       uint32_t *ret_allowed, struct orch_errinfo *reterr);

/*
 * grammars_feed - token @id (not end-of-generation) taken: its bytes into
 * @j's grammar. ORCH_EINVAL when the grammar refuses them (a token the mask
 * did not allow), ORCH_ENOMEM.
 */
orch_err grammars_feed(struct gram_job *j, int32_t id, struct orch_errinfo *reterr);

/*
 * grammars_done - @j's output is a whole sentence nothing can follow, or
 * one the grammar ends with an end-of-generation token (a terminal such as
 * harmony's <|return|>), which is all that can follow: the job is complete.
 */
bool grammars_done(const struct gram_job *j);
