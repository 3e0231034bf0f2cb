/*
 * tokenizer.c - what both tokenizer kinds share: special-token partition,
 * BOS/EOS, the SPM dummy prefix, pieces and decoding, and the tables built
 * once the vocabulary is loaded.
 *
 * Design notes
 * - Special tokens are matched as llama.cpp does: longest text first, each
 *   splitting every remaining raw-text fragment at all its occurrences.
 *   Without TOK_PARSE_SPECIAL, control and unknown tokens are not matched
 *   (their text is tokenized as plain text); user-defined tokens always are.
 * - A matched special token with the RSTRIP (LSTRIP) attribute swallows the
 *   whitespace after (before) it, as llama.cpp's partition does: phi-3's
 *   "<|user|>\n" is one token. Stripping once every split is done gives the
 *   same fragments as llama.cpp's stripping during each split, since the
 *   raw fragment beside a token is always what that token's split left.
 * - SPM: a raw fragment gets the dummy prefix space when the model adds one
 *   and the fragment starts the text or follows a special token; spaces then
 *   become "▁" before the merges.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "tok_internal.h"

struct frag {
	int32_t id; /* -1: raw text */
	size_t off, len;
};

struct frags {
	struct frag *v;
	size_t n, cap;
};

orch_err
tok_push(struct tok_ids *out, int32_t id)
{
	if (out->n == out->cap) {
		size_t cap = out->cap ? out->cap * 2 : 64;
		int32_t *v = orch_reallocarray(out->v, cap, sizeof(*v));
		if (v == NULL)
			return ORCH_ENOMEM;
		out->v = v;
		out->cap = cap;
	}
	out->v[out->n++] = id;
	return ORCH_OK;
}

orch_err
tok_ids_push(struct tok_ids *ids, int32_t id)
{
	return tok_push(ids, id);
}

void
tok_ids_fini(struct tok_ids *ids)
{
	orch_free(ids->v);
	ids->v = NULL;
	ids->n = ids->cap = 0;
}

static orch_err
frag_insert(struct frags *f, size_t at, struct frag x)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		struct frag *v = orch_reallocarray(f->v, cap, sizeof(*v));
		if (v == NULL)
			return ORCH_ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	memmove(&f->v[at + 1], &f->v[at], (f->n - at) * sizeof(*f->v));
	f->v[at] = x;
	f->n++;
	return ORCH_OK;
}

/* Split raw fragment @i at every occurrence of special token @id. */
static orch_err
split_fragment(const struct tok *t, const char *text, struct frags *f, size_t i, int32_t id)
{
	const char *s = t->blob + t->off[id];
	size_t slen = t->len[id];

	while (f->v[i].len >= slen) {
		const char *base = text + f->v[i].off;
		const char *hit = memmem(base, f->v[i].len, s, slen);
		if (hit == NULL)
			return ORCH_OK;
		size_t pre = (size_t)(hit - base), rest = f->v[i].len - pre - slen;
		struct frag tokf = {id, f->v[i].off + pre, slen};
		struct frag after = {-1, tokf.off + slen, rest};
		f->v[i].len = pre;
		if (frag_insert(f, i + 1, tokf) != ORCH_OK ||
		    (rest > 0 && frag_insert(f, i + 2, after) != ORCH_OK))
			return ORCH_ENOMEM;
		if (pre == 0) { /* drop the empty raw fragment before the token */
			memmove(&f->v[i], &f->v[i + 1], (f->n - i - 1) * sizeof(*f->v));
			f->n--;
			i++;
		} else {
			i += 2;
		}
		if (rest == 0)
			return ORCH_OK;
	}
	return ORCH_OK;
}

static bool
is_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r'); /* isspace() in the C locale */
}

/* Apply the strip attributes of the matched tokens, dropping raw fragments left empty. */
static void
strip_fragments(const struct tok *t, const char *text, struct frags *f)
{
	size_t k = 0;

	for (size_t i = 0; i < f->n; i++) {
		struct frag *x = &f->v[i];
		if (x->id < 0) {
			if (i > 0 && f->v[i - 1].id >= 0 &&
			    (t->strip[f->v[i - 1].id] & TOK_STRIP_RIGHT))
				while (x->len > 0 && is_space(text[x->off])) {
					x->off++;
					x->len--;
				}
			if (i + 1 < f->n && f->v[i + 1].id >= 0 &&
			    (t->strip[f->v[i + 1].id] & TOK_STRIP_LEFT))
				while (x->len > 0 && is_space(text[x->off + x->len - 1]))
					x->len--;
			if (x->len == 0)
				continue;
		}
		f->v[k++] = *x;
	}
	f->n = k;
}

static orch_err
partition(const struct tok *t, const char *text, size_t len, unsigned flags, struct frags *f)
{
	orch_err rv;

	if ((rv = frag_insert(f, 0, (struct frag){-1, 0, len})) != ORCH_OK)
		return rv;
	for (size_t k = 0; k < t->n_special; k++) {
		int32_t id = t->special[k];
		if (!(flags & TOK_PARSE_SPECIAL) && t->types[id] != TOK_TYPE_USER_DEFINED)
			continue;
		for (size_t i = 0; i < f->n; i++) {
			if (f->v[i].id >= 0)
				continue;
			if ((rv = split_fragment(t, text, f, i, id)) != ORCH_OK)
				return rv;
		}
	}
	strip_fragments(t, text, f);
	return ORCH_OK;
}

/* SPM: optional leading space, then every ' ' → "▁". */
static orch_err
spm_fragment(const struct tok *t, const char *s, size_t n, bool prefix, struct tok_ids *out)
{
	size_t cap = (n + 1) * 3, k = 0;
	char *buf = orch_malloc(cap);
	orch_err rv;

	if (buf == NULL)
		return ORCH_ENOMEM;
	if (prefix) {
		memcpy(buf, "\xe2\x96\x81", 3);
		k = 3;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ') {
			memcpy(buf + k, "\xe2\x96\x81", 3);
			k += 3;
		} else {
			buf[k++] = s[i];
		}
	}
	rv = tok_spm_encode(t, buf, k, out);
	orch_free(buf);
	return rv;
}

orch_err
tok_encode(const struct tok *t, const char *text, size_t len, unsigned flags, struct tok_ids *out)
{
	struct frags f = {0};
	bool prev_special = true;
	size_t start = out->n;
	orch_err rv = ORCH_OK;

	if ((flags & TOK_ADD_SPECIAL) && t->add_bos && t->bos >= 0)
		rv = tok_push(out, t->bos);
	if (rv == ORCH_OK && len > 0)
		rv = partition(t, text, len, flags, &f);
	for (size_t i = 0; rv == ORCH_OK && i < f.n; i++) {
		if (f.v[i].id >= 0) {
			rv = tok_push(out, f.v[i].id);
			prev_special = true;
			continue;
		}
		if (t->kind == TOK_SPM)
			rv = spm_fragment(t, text + f.v[i].off, f.v[i].len,
			                  t->add_space_prefix && prev_special, out);
		else
			rv = tok_bpe_encode(t, text + f.v[i].off, f.v[i].len, out);
		prev_special = false;
	}
	if (rv == ORCH_OK && (flags & TOK_ADD_SPECIAL) && t->add_eos && t->eos >= 0)
		rv = tok_push(out, t->eos);
	orch_free(f.v);
	if (rv != ORCH_OK)
		out->n = start;
	return rv;
}

static size_t
put(char *buf, size_t cap, size_t at, const void *src, size_t n)
{
	if (at < cap)
		memcpy(buf + at, src, at + n <= cap ? n : cap - at);
	return at + n;
}

/* "<0xNN>" → NN, or -1. */
static int
byte_token_value(const char *s, size_t n)
{
	char hex[3] = {0};

	if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
		return -1;
	hex[0] = s[3];
	hex[1] = s[4];
	char *end;
	long v = strtol(hex, &end, 16);
	return *end == '\0' ? (int)v : -1;
}

size_t
tok_piece(const struct tok *t, int32_t id, unsigned flags, char *buf, size_t cap)
{
	const char *s;
	size_t n, k = 0;

	if (id < 0 || (uint32_t)id >= t->n_vocab)
		return 0;
	s = t->blob + t->off[id];
	n = t->len[id];
	switch ((enum tok_type)t->types[id]) {
	case TOK_TYPE_CONTROL:
	case TOK_TYPE_UNKNOWN:
	case TOK_TYPE_UNUSED:
		return (flags & TOK_RENDER_SPECIAL) ? put(buf, cap, 0, s, n) : 0;
	case TOK_TYPE_USER_DEFINED:
		return put(buf, cap, 0, s, n);
	case TOK_TYPE_BYTE: {
		int b = byte_token_value(s, n);
		char c = (char)b;
		if (b >= 0)
			return put(buf, cap, 0, &c, 1);
		return put(buf, cap, 0, s, n);
	}
	case TOK_TYPE_UNDEFINED:
	case TOK_TYPE_NORMAL:
		break;
	}
	for (size_t i = 0; i < n;) {
		if (t->kind == TOK_SPM && i + 3 <= n && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
			k = put(buf, cap, k, " ", 1);
			i += 3;
			continue;
		}
		if (t->kind == TOK_BPE) {
			/* every byte-level code point is < 324, so 1 or 2 bytes of UTF-8 */
			uint32_t cp = (uint8_t)s[i];
			size_t l = 1;
			if ((cp & 0xe0) == 0xc0 && i + 1 < n) {
				cp = ((cp & 0x1f) << 6) | ((uint8_t)s[i + 1] & 0x3f);
				l = 2;
			}
			if (cp < 324 && t->cp_byte[cp] >= 0 && (l == 2 || cp < 0x80)) {
				char c = (char)t->cp_byte[cp];
				k = put(buf, cap, k, &c, 1);
				i += l;
				continue;
			}
		}
		k = put(buf, cap, k, s + i, 1);
		i++;
	}
	return k;
}

orch_err
tok_decode(const struct tok *t, const int32_t *ids, size_t n, unsigned flags, char **buf,
           size_t *len)
{
	char piece[256];
	bool started = *len > 0; /* the dummy prefix goes from the first non-empty piece only */

	for (size_t i = 0; i < n; i++) {
		size_t m = tok_piece(t, ids[i], flags, piece, sizeof(piece));
		const char *src = piece;
		char *big = NULL;
		if (m > sizeof(piece)) {
			if ((big = orch_malloc(m)) == NULL)
				return ORCH_ENOMEM;
			tok_piece(t, ids[i], flags, big, m);
			src = big;
		}
		bool nonempty = m > 0;
		if ((flags & TOK_STRIP_PREFIX) && !started && t->add_space_prefix && m > 0 &&
		    src[0] == ' ') {
			src++;
			m--;
		}
		started |= nonempty;
		char *nb = orch_reallocarray(*buf, *len + m + 1, 1);
		if (nb == NULL) {
			orch_free(big);
			return ORCH_ENOMEM;
		}
		memcpy(nb + *len, src, m);
		*len += m;
		nb[*len] = '\0';
		*buf = nb;
		orch_free(big);
	}
	return ORCH_OK;
}
