/*
 * tok_spm.c - SentencePiece-style BPE over characters, driven by scores
 * (llama.cpp's llm_tokenizer_spm): start from one symbol per UTF-8
 * character, repeatedly merge the adjacent pair whose concatenation is the
 * highest-scoring token (ties: leftmost), then emit each symbol's token, or
 * its bytes as <0xNN> tokens (unknown token when a byte token is missing).
 * Symbols are substrings of the input, so a pair's text is contiguous and
 * looked up in place.
 */
#include "base/alloc.h"
#include "base/utf8.h"
#include "tok_internal.h"

struct sym {
	int32_t prev, next;
	uint32_t off, n;
};

static orch_err
try_bigram(const struct tok *t, const char *text, const struct sym *s, int32_t l, int32_t r,
           struct tok_heap *h)
{
	struct tok_bigram b = {0};
	int32_t id;

	if (l < 0 || r < 0)
		return ORCH_OK;
	id = strmap_get(t->map, text + s[l].off, s[l].n + s[r].n);
	if (id < 0)
		return ORCH_OK;
	b.prio = -(double)t->scores[id];
	b.left = (uint32_t)l;
	b.right = (uint32_t)r;
	b.size = s[l].n + s[r].n;
	return tok_heap_push(h, &b);
}

static orch_err
emit(const struct tok *t, const char *text, const struct sym *s, struct tok_ids *out)
{
	int32_t id = strmap_get(t->map, text + s->off, s->n);
	orch_err rv = ORCH_OK;

	if (id >= 0)
		return tok_push(out, id);
	for (uint32_t i = 0; i < s->n && rv == ORCH_OK; i++) {
		int32_t b = t->byte_tok[(uint8_t)text[s->off + i]];
		rv = tok_push(out, b >= 0 ? b : t->unk >= 0 ? t->unk : 0);
	}
	return rv;
}

orch_err
tok_spm_encode(const struct tok *t, const char *text, size_t len, struct tok_ids *out)
{
	struct tok_heap h = {0};
	struct sym *s = orch_calloc(len ? len : 1, sizeof(*s));
	int32_t n = 0;
	orch_err rv = ORCH_OK;

	if (s == NULL)
		return ORCH_ENOMEM;
	for (size_t off = 0; off < len; n++) {
		size_t cl = utf8_char_len((uint8_t)text[off]);
		cl = cl < len - off ? cl : len - off;
		s[n] = (struct sym){n - 1, off + cl < len ? n + 1 : -1, (uint32_t)off,
		                    (uint32_t)cl};
		off += cl;
	}
	for (int32_t i = 1; i < n && rv == ORCH_OK; i++)
		rv = try_bigram(t, text, s, i - 1, i, &h);
	while (rv == ORCH_OK && h.n > 0) {
		struct tok_bigram b;
		tok_heap_pop(&h, &b);
		struct sym *l = &s[b.left], *r = &s[b.right];
		if (l->n == 0 || r->n == 0 || l->n + r->n != b.size || l->next != (int32_t)b.right)
			continue; /* stale: one side merged since */
		l->n += r->n;
		r->n = 0;
		l->next = r->next;
		if (r->next >= 0)
			s[r->next].prev = (int32_t)b.left;
		rv = try_bigram(t, text, s, l->prev, (int32_t)b.left, &h);
		if (rv == ORCH_OK)
			rv = try_bigram(t, text, s, (int32_t)b.left, l->next, &h);
	}
	for (int32_t i = 0; n > 0 && i >= 0 && rv == ORCH_OK; i = s[i].next)
		rv = emit(t, text, &s[i], out);
	tok_heap_fini(&h);
	orch_free(s);
	return rv;
}
