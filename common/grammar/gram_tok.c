/*
 * gram_tok.c - token terminals (grammar.h): <[ID]> and <TEXT> parsed into
 * GE_TOK elements, each distinct terminal kept once, and bound to a
 * vocabulary's ids by the caller that has one (the worker).
 *
 * llama.cpp's GBNF has the same two forms; its !<...> ("any token but
 * this one") is refused: a byte-level matcher would have to take every
 * other token whole, and no grammar orch makes needs it.
 */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "gbnf_int.h"

/* The longest <TEXT> a terminal may have, brackets included. */
#define TOKEN_TEXT_MAX 256

/* Terminal (@text, @len; or id @id when @text is NULL) as an index, added when new. */
static bool
terminal(struct gbnf *p, const char *text, uint32_t len, int32_t id, uint32_t *ret)
{
	/* a scan per terminal: bounded, so a grammar of many cannot make compiling quadratic */
	for (uint32_t i = 0; i < p->n_toks; i++) {
		const struct gram_tok *t = &p->toks[i];
		bool same = text == NULL ? t->text == NULL && t->id == id
		                         : t->text != NULL && t->len == len &&
		                                   memcmp(t->text, text, len) == 0;
		if (same) {
			*ret = i;
			return true;
		}
	}
	/* the spare is a wrapper's: a client's grammar past it had more than the documented max */
	if (p->n_toks == GRAM_TOKENS_MAX + GRAM_TOKENS_SPARE)
		return gbnf_fail(p, "more than %d distinct token terminals", GRAM_TOKENS_MAX);
	if (!gram_grow((void **)&p->toks, &p->cap_toks, p->n_toks, sizeof(*p->toks), 4))
		return gbnf_oom(p);
	struct gram_tok *t = &p->toks[p->n_toks];
	*t = (struct gram_tok){.id = id};
	if (text != NULL) {
		if ((t->text = orch_strndup(text, len)) == NULL)
			return gbnf_oom(p);
		t->len = len;
		t->id = -1;
	}
	*ret = p->n_toks++;
	return true;
}

/* <[ID]>, the parser past '<': the id into *@ret. */
static bool
token_id(struct gbnf *p, int32_t *ret)
{
	int64_t v = 0;
	const char *s0 = ++p->s;

	while (p->s < p->end && *p->s >= '0' && *p->s <= '9' && v <= INT32_MAX)
		v = v * 10 + (*p->s++ - '0');
	if (p->s == s0)
		return gbnf_fail(p, "expected a token id after '<['");
	if (v > INT32_MAX)
		return gbnf_fail(p, "token id over %d", INT32_MAX);
	if (p->end - p->s < 2 || p->s[0] != ']' || p->s[1] != '>')
		return gbnf_fail(p, "expected ']>' after a token id");
	p->s += 2;
	*ret = (int32_t)v;
	return true;
}

bool
gbnf_token(struct gbnf *p, uint32_t r)
{
	const char *s0 = p->s;
	uint32_t k;

	if (p->end - p->s >= 2 && p->s[1] == '[') {
		int32_t id = 0;
		p->s++;
		return token_id(p, &id) && terminal(p, NULL, 0, id, &k) &&
		       gbnf_push(p, r, GE_TOK, k);
	}
	for (p->s++; p->s < p->end && *p->s != '>'; p->s++)
		if (strchr(" \t\n\r<", *p->s) != NULL)
			break;
	if (p->s >= p->end || *p->s != '>' || p->s + 1 - s0 > TOKEN_TEXT_MAX) {
		p->s = s0;
		return gbnf_fail(p,
		                 "a token terminal is <[ID]> or <TEXT> (no spaces, at most %d "
		                 "bytes, ending with '>')",
		                 TOKEN_TEXT_MAX);
	}
	p->s++;
	if (p->s - s0 == 2) {
		p->s = s0;
		return gbnf_fail(p, "an empty token terminal '<>'");
	}
	return terminal(p, s0, (uint32_t)(p->s - s0), -1, &k) && gbnf_push(p, r, GE_TOK, k);
}

void
gram_toks_free(struct gram_tok *t, uint32_t n)
{
	for (uint32_t i = 0; t != NULL && i < n; i++)
		free(t[i].text);
	free(t);
}

uint32_t
gram_n_tokens(const struct gram *g)
{
	return g->n_toks;
}

int32_t
gram_token(const struct gram *g, uint32_t i, const char **text, uint32_t *len)
{
	*text = g->toks[i].text;
	*len = g->toks[i].len;
	return g->toks[i].id;
}

void
gram_bind_token(struct gram *g, uint32_t i, int32_t id)
{
	g->toks[i].id = id;
}
