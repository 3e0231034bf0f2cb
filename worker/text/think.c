/*
 * think.c - a model's think tokens (think.h).
 */
#include "think.h"

#include <string.h>

/* The id of @s when it is one token of @t that decodes to itself; -1 otherwise. */
static int32_t
one_token(const struct tok *t, const char *s)
{
	size_t n = strlen(s);
	int32_t id = tok_find(t, s, n);
	char buf[16];

	if (id < 0 || tok_piece(t, id, TOK_RENDER_SPECIAL, buf, sizeof(buf)) != n ||
	    memcmp(buf, s, n) != 0)
		return -1;
	return id;
}

bool
think_vocab_find(const struct tok *t, const char *src, size_t n, struct think_vocab *ret)
{
	if (src == NULL || memmem(src, n, "</think>", 8) == NULL)
		return false;
	ret->open = one_token(t, "<think>");
	ret->close = one_token(t, "</think>");
	return ret->open >= 0 && ret->close >= 0;
}

bool
think_prompt_open(const struct think_vocab *v, const int32_t *ids, size_t n)
{
	for (size_t k = 0; k < n && k < 8; k++) {
		int32_t id = ids[n - 1 - k];
		if (id == v->close)
			return false;
		if (id == v->open)
			return true;
	}
	return false;
}
