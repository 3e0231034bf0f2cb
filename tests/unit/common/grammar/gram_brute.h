#pragma once
/*
 * gram_brute.h - the brute force the token-mask tests compare masks with:
 * whether a prefix and then a token keep a parse of the grammar alive.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar/grammar.h"

/* Whether @prefix (@n bytes) followed by @tok (@k) keeps a parse of @g alive. */
static inline bool
gram_brute(const struct gram *g, const char *prefix, size_t n, const uint8_t *tok, size_t k)
{
	struct gram_match *m;
	bool ok;

	if (k == 0 || gram_match_new(g, &m) != ORCH_OK)
		return false;
	ok = gram_match_feed(m, prefix, n, NULL) && gram_match_feed(m, tok, k, NULL);
	gram_match_free(m);
	return ok;
}
