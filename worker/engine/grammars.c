/*
 * grammars.c - constrained decoding in the worker (grammars.h).
 *
 * A grammar's text names its entry: jobs that send the same text (200
 * requests with one JSON schema) share one compilation and one mask cache,
 * so the cache a first request fills serves the rest. Entries no job uses
 * are kept, up to GRAMMARS_KEEP, and the least recently used goes first.
 * The vocabulary's trie (gram_mask.h) is built at the first grammar: a
 * worker that never sees one never pays for it.
 */
#include "grammars.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "grammar/gram_mask.h"
#include "grammar/grammar.h"
#include "text/tokenizer.h"

struct grammar_entry {
	char *text;
	size_t n;
	char root[GRAMMARS_ROOT_MAX];
	struct gram *g;
	struct gram_masks *masks;
	uint32_t refs;
	uint64_t used; /* when last started: LRU */
	struct grammar_entry *next;
};

struct grammars {
	const struct tok *t;
	struct gram_vocab *v; /* NULL until the first grammar */
	int32_t *eog;         /* the end-of-generation tokens */
	uint32_t n_eog, n_tok;
	uint32_t *spaced; /* SPM with a dummy prefix: the tokens whose piece starts with a space */
	struct grammar_entry *entries;
	uint32_t n_entries;
	uint64_t clock;
};

orch_err
grammars_new(const struct tok *t, struct grammars **ret)
{
	struct grammars *gs = orch_calloc(1, sizeof(*gs));

	*ret = NULL;
	if (gs == NULL)
		return ORCH_ENOMEM;
	gs->t = t;
	gs->n_tok = tok_n_vocab(t);
	*ret = gs;
	return ORCH_OK;
}

static void
entry_free(struct grammar_entry *e)
{
	gram_masks_free(e->masks);
	gram_free(e->g);
	free(e->text);
	free(e);
}

void
grammars_free(struct grammars *gs)
{
	if (gs == NULL)
		return;
	while (gs->entries != NULL) {
		struct grammar_entry *e = gs->entries;
		gs->entries = e->next;
		entry_free(e);
	}
	gram_vocab_free(gs->v);
	free(gs->eog);
	free(gs->spaced);
	free(gs);
}

/* Every token's bytes (control tokens: none) as a trie, and the end-of-generation tokens. */
static orch_err
build_vocab(struct grammars *gs)
{
	uint32_t n = gs->n_tok, *lens = orch_calloc(n ? n : 1, sizeof(*lens));
	uint8_t **bytes = orch_calloc(n ? n : 1, sizeof(*bytes));
	char buf[GRAM_TOKEN_MAX];
	orch_err rv = ORCH_ENOMEM;

	gs->eog = orch_calloc(8, sizeof(*gs->eog));
	if (lens == NULL || bytes == NULL || gs->eog == NULL)
		goto out;
	if (tok_adds_space_prefix(gs->t) &&
	    (gs->spaced = orch_calloc((n + 31) / 32 + 1, sizeof(*gs->spaced))) == NULL)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		size_t k = tok_piece(gs->t, (int32_t)i, 0, buf, sizeof(buf));
		if (tok_is_eog(gs->t, (int32_t)i) && gs->n_eog < 8)
			gs->eog[gs->n_eog++] = (int32_t)i;
		if (k == 0 || k > sizeof(buf) || tok_is_eog(gs->t, (int32_t)i))
			continue; /* never taken by a grammar; a piece over 1 KiB cannot be matched
			           */
		if ((bytes[i] = orch_malloc(k)) == NULL)
			goto out;
		if (gs->spaced != NULL && buf[0] == ' ')
			gs->spaced[i >> 5] |= 1u << (i & 31);
		memcpy(bytes[i], buf, k);
		lens[i] = (uint32_t)k;
	}
	rv = gram_vocab_new((const uint8_t *const *)bytes, lens, n, &gs->v);
out:
	for (uint32_t i = 0; bytes != NULL && i < n; i++)
		free(bytes[i]);
	free(bytes);
	free(lens);
	return rv;
}

/* Drop the least recently used entries no job uses while there are too many. */
static void
trim(struct grammars *gs)
{
	while (gs->n_entries > GRAMMARS_KEEP) {
		struct grammar_entry **old = NULL;
		for (struct grammar_entry **p = &gs->entries; *p != NULL; p = &(*p)->next)
			if ((*p)->refs == 0 && (old == NULL || (*p)->used < (*old)->used))
				old = p;
		if (old == NULL)
			return; /* all in use: they go when their jobs end */
		struct grammar_entry *e = *old;
		*old = e->next;
		entry_free(e);
		gs->n_entries--;
	}
}

/*
 * @g's token terminals bound to this vocabulary: <TEXT> to the token whose
 * text it is, <[ID]> checked to be in it. ORCH_EINVAL naming one that is not.
 */
static orch_err
bind_tokens(const struct grammars *gs, struct gram *g, struct orch_errinfo *reterr)
{
	for (uint32_t i = 0; i < gram_n_tokens(g); i++) {
		const char *text;
		uint32_t len;
		int32_t id = gram_token(g, i, &text, &len);
		if (text != NULL && (id = tok_find(gs->t, text, len)) < 0)
			return orch_errf(reterr, ORCH_EINVAL,
			                 "grammar: the token terminal %.*s is no token of this "
			                 "model's vocabulary",
			                 (int)len, text);
		if (text == NULL && (uint32_t)id >= gs->n_tok)
			return orch_errf(
			        reterr, ORCH_EINVAL,
			        "grammar: the token terminal <[%d]> is outside this model's "
			        "vocabulary (ids 0 to %u)",
			        id, gs->n_tok - 1);
		gram_bind_token(g, i, id);
	}
	return ORCH_OK;
}

/* The kept entry of @text with start rule @root, or NULL. */
static struct grammar_entry *
entry_find(const struct grammars *gs, const char *text, size_t n, const char *root)
{
	for (struct grammar_entry *e = gs->entries; e != NULL; e = e->next)
		if (e->n == n && strcmp(e->root, root) == 0 && memcmp(e->text, text, n) == 0)
			return e;
	return NULL;
}

/* The entry of @text with start rule @root, compiled when new. */
static orch_err
entry_get(struct grammars *gs, const char *text, size_t n, const char *root,
          struct grammar_entry **ret, struct orch_errinfo *reterr)
{
	struct grammar_entry *e;
	struct gram_err ge;
	orch_err rv;

	if ((*ret = entry_find(gs, text, n, root)) != NULL)
		return ORCH_OK;
	if ((e = orch_calloc(1, sizeof(*e))) == NULL || (e->text = orch_strndup(text, n)) == NULL)
		goto oom;
	e->n = n;
	snprintf(e->root, sizeof(e->root), "%s", root);
	if ((rv = gram_compile(text, n, root, &e->g, &ge)) != ORCH_OK) {
		entry_free(e);
		if (rv == ORCH_ENOMEM)
			return orch_errf(reterr, ORCH_ENOMEM,
			                 "out of memory compiling the grammar");
		return orch_errf(reterr, ORCH_EINVAL, "grammar: %u:%u: %s", ge.line, ge.col,
		                 ge.msg);
	}
	if ((rv = bind_tokens(gs, e->g, reterr)) != ORCH_OK) {
		entry_free(e);
		return rv;
	}
	if (gram_masks_new(e->g, gs->v, GRAMMARS_MASK_CACHE, &e->masks) != ORCH_OK)
		goto oom;
	e->next = gs->entries;
	gs->entries = e;
	gs->n_entries++;
	*ret = e;
	return ORCH_OK;
oom:
	if (e != NULL)
		entry_free(e);
	return orch_errf(reterr, ORCH_ENOMEM, "out of memory compiling the grammar");
}

/*
 * A matcher's failure other than a refused byte: ORCH_ERANGE (more parses
 * alive at once than the matcher keeps) is the request's fault, a clear
 * ORCH_EINVAL; ORCH_ENOMEM stays what it is.
 */
static orch_err
ambiguous_or_oom(orch_err rv, const char *what, struct orch_errinfo *reterr)
{
	if (rv == ORCH_ERANGE)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "the grammar is too ambiguous: more than %u parses alive at once, "
		                 "more than %u steps of work for one byte, or more than %llu for "
		                 "one step's mask over the vocabulary, %s (make its alternatives "
		                 "exclusive, its repetitions of what may be empty fewer)",
		                 GRAM_STACKS_MAX, GRAM_WORK_MAX,
		                 (unsigned long long)GRAM_MASK_WORK_MAX, what);
	return orch_errf(reterr, ORCH_ENOMEM, "out of memory %s", what);
}

orch_err
grammars_start(struct grammars *gs, const char *text, size_t n, const char *root,
               struct gram_job *ret, struct orch_errinfo *reterr)
{
	struct grammar_entry *e;
	orch_err rv;

	*ret = (struct gram_job){0};
	if (gs->v == NULL && build_vocab(gs) != ORCH_OK)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory indexing the vocabulary");
	if (strlen(root) >= GRAMMARS_ROOT_MAX)
		return orch_errf(reterr, ORCH_EINVAL, "grammar: the start rule's name is too long");
	if ((rv = entry_get(gs, text, n, root, &e, reterr)) != ORCH_OK)
		return rv;
	if (e->masks != NULL && gram_masks_over_budget(e->masks)) { /* once is enough (1-2 s) */
		trim(gs);
		return ambiguous_or_oom(ORCH_ERANGE, "as an earlier request with it found", reterr);
	}
	if ((rv = gram_match_new(e->g, &ret->m)) != ORCH_OK) {
		trim(gs);
		return ambiguous_or_oom(rv, "starting the grammar", reterr);
	}
	e->refs++;
	e->used = ++gs->clock;
	ret->gs = gs;
	ret->e = e;
	trim(gs);
	return ORCH_OK;
}

bool
grammars_cached(const struct grammars *gs, const char *text, size_t n, const char *root)
{
	return entry_find(gs, text, n, root) != NULL;
}

void
grammars_end(struct gram_job *j)
{
	if (j->gs == NULL)
		return;
	gram_match_free(j->m);
	j->e->refs--;
	trim(j->gs);
	*j = (struct gram_job){0};
}

orch_err
grammars_mask(struct gram_job *j, uint32_t n_vocab, bool first, uint32_t *out,
              uint32_t *ret_allowed, struct orch_errinfo *reterr)
{
	const struct grammars *gs = j->gs;
	const uint32_t *bits;
	bool strip = first && gs->spaced != NULL;
	uint32_t allowed = 0, n = n_vocab < gs->n_tok ? n_vocab : gs->n_tok;
	bool end = gram_match_accepting(j->m);

	orch_err rv = gram_match_mask(j->m, j->e->masks, &bits);
	if (rv != ORCH_OK)
		return ambiguous_or_oom(rv, "computing the grammar's mask", reterr);
	for (uint32_t w = 0; w < (n_vocab + 31) / 32; w++) {
		uint32_t base = w * 32, top = base + 32 < n ? base + 32 : n, word = 0;
		if (base < n)
			word = bits[w] & (strip ? ~gs->spaced[w] : ~0u) &
			       (top - base < 32 ? (1u << (top - base)) - 1 : ~0u);
		out[w] = word;
		allowed += (uint32_t)__builtin_popcount(word);
	}
	for (uint32_t i = 0; i < gs->n_eog && end; i++) {
		uint32_t t = (uint32_t)gs->eog[i];
		bool masked_in =
		        t < n && ((bits[t >> 5] >> (t & 31)) & 1); /* a terminal named it */
		if (t < n_vocab && !masked_in && !((out[t >> 5] >> (t & 31)) & 1)) {
			out[t >> 5] |= 1u << (t & 31);
			allowed++;
		}
	}
	if (ret_allowed != NULL)
		*ret_allowed = allowed;
	if (allowed == 0)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "the grammar allows no token of this model's vocabulary here");
	return ORCH_OK;
}

orch_err
grammars_feed(struct gram_job *j, int32_t id, struct orch_errinfo *reterr)
{
	char buf[GRAM_TOKEN_MAX];
	size_t k = tok_piece(j->gs->t, id, 0, buf, sizeof(buf));
	orch_err why = ORCH_EINVAL;

	/* a control token has no text (k == 0): only a terminal naming it takes it */
	if (k <= sizeof(buf) && gram_match_feed_token(j->m, id, buf, k, &why))
		return ORCH_OK;
	if (why != ORCH_EINVAL)
		return ambiguous_or_oom(why, "matching the grammar", reterr);
	return orch_errf(reterr, ORCH_EINVAL, "token %d is not allowed by the grammar here", id);
}

bool
grammars_done(const struct gram_job *j)
{
	int32_t next = gram_match_next_token(j->m);

	return gram_match_done(j->m) || (next >= 0 && tok_is_eog(j->gs->t, next));
}
