/*
 * gbnf.c - the GBNF parser (grammar.h, docs/grammar.md): text to rules of
 * elements. Character classes and repetitions are lowered by gbnf_lower.c.
 *
 * The format is llama.cpp's: "name ::= alternatives", one rule per line (a
 * newline inside parentheses, or after "::=" or "|", continues it);
 * "strings" and [classes] with \x \u \U escapes, "." for any character,
 * ( groups ), postfix * + ? {m} {m,} {m,n}, # comments; token terminals
 * <[ID]> and <TEXT> (gram_tok.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/parse.h"
#include "base/utf8.h"
#include "gbnf_int.h"

/* The most code point ranges one class may list, and the deepest nesting of groups. */
#define CLASS_MAX 1024
#define DEPTH_MAX 256

static uint64_t
name_hash(const char *s, uint32_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

static bool
grow_names(struct gbnf *p)
{
	uint32_t n = (p->names_mask + 1) * 2, *v = orch_reallocarray(NULL, n, sizeof(*v));

	if (v == NULL)
		return gbnf_oom(p);
	memset(v, 0xff, (size_t)n * sizeof(*v));
	for (uint32_t i = 0; i <= p->names_mask; i++) {
		uint32_t r = p->names[i];
		if (r == GRAM_NONE)
			continue;
		uint64_t h = name_hash(p->rules[r].name, p->rules[r].name_len);
		uint32_t k = (uint32_t)h & (n - 1);
		while (v[k] != GRAM_NONE)
			k = (k + 1) & (n - 1);
		v[k] = r;
	}
	free(p->names);
	p->names = v;
	p->names_mask = n - 1;
	return true;
}

/* The rule named @name (@len bytes), made (undefined, named at @at) when first named. */
static bool
named_rule(struct gbnf *p, const char *name, uint32_t len, const char *at, uint32_t *ret)
{
	uint64_t h = name_hash(name, len);
	uint32_t k = (uint32_t)h & p->names_mask, used = 0;

	for (; p->names[k] != GRAM_NONE; k = (k + 1) & p->names_mask, used++) {
		const struct gbnf_rule *r = &p->rules[p->names[k]];
		if (r->name_len == len && memcmp(r->name, name, len) == 0) {
			*ret = p->names[k];
			return true;
		}
	}
	if (!gbnf_add_rule(p, name, len, at, ret))
		return false;
	p->names[k] = *ret;
	return (p->n_rules * 2 <= p->names_mask) || grow_names(p);
}

/* Skip blanks and comments; newlines too when @nl. */
static void
space(struct gbnf *p, bool nl)
{
	while (p->s < p->end) {
		char c = *p->s;
		if (c == '#') {
			while (p->s < p->end && *p->s != '\n')
				p->s++;
		} else if (c == '\n' && nl) {
			p->s++;
			p->line++;
			p->line_start = p->s;
		} else if (c == ' ' || c == '\t' || (c == '\r' && nl)) {
			p->s++;
		} else {
			return;
		}
	}
}

static bool
is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

static bool
hex_escape(struct gbnf *p, int digits, uint32_t *cp)
{
	*cp = 0;
	for (int i = 0; i < digits; i++) {
		int v = p->s < p->end ? orch_hex_digit(*p->s) : -1;
		if (v < 0)
			return gbnf_fail(p, "expected %d hex digits in an escape", digits);
		*cp = *cp * 16 + (uint32_t)v;
		p->s++;
	}
	if (*cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return gbnf_fail(p, "escape U+%04X is not a Unicode scalar value", *cp);
	return true;
}

/* One character of a string or class (an escape or a UTF-8 sequence) into *@cp. */
static bool
one_char(struct gbnf *p, uint32_t *cp)
{
	size_t len;

	if (p->s >= p->end || *p->s == '\n')
		return gbnf_fail(p, "unterminated string or class");
	if (*p->s != '\\') {
		if (utf8_next((const uint8_t *)p->s, (size_t)(p->end - p->s), cp, &len) != UTF8_OK)
			return gbnf_fail(p, "ill-formed UTF-8 in the grammar");
		p->s += len;
		return true;
	}
	if (++p->s >= p->end)
		return gbnf_fail(p, "unterminated escape");
	char c = *p->s++;
	switch (c) {
	case 'x':
		return hex_escape(p, 2, cp);
	case 'u':
		return hex_escape(p, 4, cp);
	case 'U':
		return hex_escape(p, 8, cp);
	case 'n':
		*cp = '\n';
		return true;
	case 'r':
		*cp = '\r';
		return true;
	case 't':
		*cp = '\t';
		return true;
	case 'f':
		*cp = '\f';
		return true;
	case 'v':
		*cp = '\v';
		return true;
	case '0':
		*cp = 0;
		return true;
	}
	if ((unsigned char)c < 0x80 && c > ' ' && !(c >= 'a' && c <= 'z') &&
	    !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9')) {
		*cp = (uint32_t)c; /* \\ \" \] \[ \- \^ \/ ... */
		return true;
	}
	p->s--;
	return gbnf_fail(p, "unknown escape '\\%c'", c);
}

static bool
byte_elem(struct gbnf *p, uint32_t r, uint8_t b)
{
	struct gram_set set = {0};
	uint32_t k;

	set.w[b >> 6] |= 1ull << (b & 63);
	return gbnf_set(p, &set, &k) && gbnf_push(p, r, GE_SET, k);
}

/* "literal": a GE_SET per byte, into @r; *@one when it was a single byte. */
static bool
literal(struct gbnf *p, uint32_t r, uint32_t *count)
{
	char buf[4];
	uint32_t cp;

	*count = 0;
	for (p->s++; p->s < p->end && *p->s != '"';) {
		if (!one_char(p, &cp))
			return false;
		size_t n = utf8_encode(cp, buf);
		for (size_t i = 0; i < n; i++)
			if (!byte_elem(p, r, (uint8_t)buf[i]))
				return false;
		*count += (uint32_t)n;
	}
	if (p->s >= p->end)
		return gbnf_fail(p, "unterminated string");
	p->s++;
	return true;
}

static int
cmp_range(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Sort and merge @n ranges (pairs in @v), negated when @neg, into @lo/@hi; the count. */
static uint32_t
normalize(uint32_t (*v)[2], uint32_t n, bool neg, uint32_t *lo, uint32_t *hi)
{
	uint32_t k = 0, next = 0;

	qsort(v, n, sizeof(*v), cmp_range);
	for (uint32_t i = 0; i < n; i++) {
		if (k > 0 && v[i][0] <= hi[k - 1] + 1) {
			if (v[i][1] > hi[k - 1])
				hi[k - 1] = v[i][1];
			continue;
		}
		lo[k] = v[i][0];
		hi[k++] = v[i][1];
	}
	if (!neg)
		return k;
	uint32_t m = 0, olo[CLASS_MAX + 1], ohi[CLASS_MAX + 1];
	for (uint32_t i = 0; i < k; i++) {
		if (lo[i] > next) {
			olo[m] = next;
			ohi[m++] = lo[i] - 1;
		}
		next = hi[i] + 1;
	}
	if (next <= 0x10ffff) {
		olo[m] = next;
		ohi[m++] = 0x10ffff;
	}
	memcpy(lo, olo, m * sizeof(*lo));
	memcpy(hi, ohi, m * sizeof(*hi));
	return m;
}

/* [class] or . into @r. */
static bool
char_class(struct gbnf *p, uint32_t r)
{
	uint32_t v[CLASS_MAX][2], n = 0, lo[CLASS_MAX + 1], hi[CLASS_MAX + 1];
	bool neg = false;

	if (*p->s == '.') {
		p->s++;
		lo[0] = 0;
		hi[0] = 0x10ffff;
		return gbnf_class(p, r, lo, hi, 1);
	}
	if (++p->s < p->end && *p->s == '^') {
		neg = true;
		p->s++;
	}
	while (p->s < p->end && *p->s != ']') {
		if (n == CLASS_MAX)
			return gbnf_fail(p, "a class of more than %d ranges", CLASS_MAX);
		if (!one_char(p, &v[n][0]))
			return false;
		v[n][1] = v[n][0];
		if (p->s + 1 < p->end && p->s[0] == '-' && p->s[1] != ']') {
			p->s++;
			if (!one_char(p, &v[n][1]))
				return false;
			if (v[n][1] < v[n][0])
				return gbnf_fail(p, "range out of order in a class");
		}
		n++;
	}
	if (p->s >= p->end)
		return gbnf_fail(p, "unterminated class");
	p->s++;
	n = normalize(v, n, neg, lo, hi);
	return gbnf_class(p, r, lo, hi, n);
}

static bool
parse_uint(struct gbnf *p, uint32_t *ret)
{
	uint64_t v = 0;
	const char *s0 = p->s;

	while (p->s < p->end && *p->s >= '0' && *p->s <= '9' && v <= GRAM_REPEAT_MAX)
		v = v * 10 + (uint64_t)(*p->s++ - '0');
	if (p->s == s0)
		return gbnf_fail(p, "expected a number in {m,n}");
	if (v > GRAM_REPEAT_MAX)
		return gbnf_fail(p, "a repetition bound over %d", GRAM_REPEAT_MAX);
	*ret = (uint32_t)v;
	return true;
}

/* {m}, {m,}, {m,n} after the item at @start of rule @r. */
static bool
braces(struct gbnf *p, uint32_t r, uint32_t start)
{
	uint32_t min = 0, max = 0;

	p->s++;
	space(p, false);
	if (!parse_uint(p, &min))
		return false;
	space(p, false);
	max = min;
	if (p->s < p->end && *p->s == ',') {
		p->s++;
		space(p, false);
		max = UINT32_MAX;
		if (p->s < p->end && *p->s != '}' && !parse_uint(p, &max))
			return false;
		space(p, false);
	}
	if (p->s >= p->end || *p->s != '}')
		return gbnf_fail(p, "expected '}'");
	p->s++;
	if (max < min)
		return gbnf_fail(p, "{%u,%u}: the upper bound is below the lower", min, max);
	return gbnf_repeat(p, r, start, min, max);
}

static bool alternates(struct gbnf *p, uint32_t r, bool nested);

/* A group: a new rule of the alternates inside, referred to from @r. */
static bool
group(struct gbnf *p, uint32_t r)
{
	uint32_t sub;

	if (++p->depth > DEPTH_MAX)
		return gbnf_fail(p, "groups nested deeper than %d", DEPTH_MAX);
	p->s++;
	space(p, true);
	if (!gbnf_new_rule(p, &sub) || !alternates(p, sub, true))
		return false;
	if (p->s >= p->end || *p->s != ')')
		return gbnf_fail(p, "expected ')'");
	p->s++;
	p->depth--;
	return gbnf_push(p, r, GE_REF, sub);
}

/* One item (a literal, class, token, name or group) into @r; false with *@none at no item. */
static bool
item(struct gbnf *p, uint32_t r, bool *none)
{
	const char *s0 = p->s;
	uint32_t ref, count;

	*none = false;
	switch (*p->s) {
	case '"':
		if (!literal(p, r, &count))
			return false;
		/* "" matches the empty string: an empty group keeps repetition well defined */
		return count > 0 || (gbnf_new_rule(p, &ref) && gbnf_push(p, ref, GE_END, 0) &&
		                     gbnf_push(p, r, GE_REF, ref));
	case '[':
	case '.':
		return char_class(p, r);
	case '(':
		return group(p, r);
	case '<':
		return gbnf_token(p, r);
	case '!':
		return gbnf_fail(p, "'!<...>' (any token but one) is not supported");
	}
	while (p->s < p->end && is_name_char(*p->s))
		p->s++;
	if (p->s == s0) {
		*none = true;
		return false;
	}
	return named_rule(p, s0, (uint32_t)(p->s - s0), s0, &ref) && gbnf_push(p, r, GE_REF, ref);
}

/* Items and their repetitions into @r up to '|', ')', or the end of the line (unless @nested). */
static bool
sequence(struct gbnf *p, uint32_t r, bool nested)
{
	for (;;) {
		uint32_t start = p->rules[r].body.n;
		bool none;

		if (p->s >= p->end || *p->s == '|' || *p->s == ')' || *p->s == '\n' ||
		    *p->s == '\r')
			return true;
		if (!item(p, r, &none)) {
			if (none)
				return gbnf_fail(p, "unexpected '%c'", *p->s);
			return false;
		}
		space(p, nested);
		while (p->s < p->end && strchr("*+?{", *p->s) != NULL) {
			char op = *p->s;
			bool ok;
			if (op == '{') {
				ok = braces(p, r, start);
			} else {
				p->s++;
				ok = gbnf_repeat(p, r, start, op == '+',
				                 op == '?' ? 1 : UINT32_MAX);
			}
			if (!ok)
				return false;
			space(p, nested);
		}
	}
}

static bool
alternates(struct gbnf *p, uint32_t r, bool nested)
{
	for (;;) {
		if (!sequence(p, r, nested))
			return false;
		if (p->s >= p->end || *p->s != '|')
			return gbnf_push(p, r, GE_END, 0);
		if (!gbnf_push(p, r, GE_ALT, 0))
			return false;
		p->s++;
		space(p, true);
	}
}

static bool
rule(struct gbnf *p)
{
	const char *s0 = p->s;
	uint32_t r;

	while (p->s < p->end && is_name_char(*p->s))
		p->s++;
	if (p->s == s0)
		return gbnf_fail(p, "expected a rule name");
	uint32_t len = (uint32_t)(p->s - s0);
	space(p, false);
	if (p->end - p->s < 3 || memcmp(p->s, "::=", 3) != 0)
		return gbnf_fail(p, "expected '::=' after rule name '%.*s'", (int)len, s0);
	if (!named_rule(p, s0, len, s0, &r))
		return false;
	if (p->rules[r].defined) {
		p->s = s0;
		return gbnf_fail(p, "rule '%.*s' is defined twice", (int)len, s0);
	}
	p->rules[r].defined = true;
	p->s += 3;
	space(p, true);
	if (!alternates(p, r, false))
		return false;
	if (p->s < p->end && *p->s == ')')
		return gbnf_fail(p, "unmatched ')'");
	return true;
}

static void
parser_fini(struct gbnf *p)
{
	for (uint32_t i = 0; i < p->n_rules; i++)
		free(p->rules[i].body.v);
	free(p->rules);
	free(p->names);
	free(p->sets);
	free(p->set_ix);
	free(p->reps);
	gram_toks_free(p->toks, p->n_toks);
}

orch_err
gram_compile(const char *text, size_t n, const char *root, struct gram **ret, struct gram_err *err)
{
	struct gbnf p = {.s = text, .end = text + n, .line_start = text, .line = 1, .err = err};
	uint32_t r = GRAM_NONE;
	orch_err rv = ORCH_EINVAL;

	*err = (struct gram_err){0};
	*ret = NULL;
	root = root ? root : "root";
	p.names = orch_reallocarray(NULL, 64, sizeof(*p.names));
	if (p.names == NULL)
		return ORCH_ENOMEM;
	memset(p.names, 0xff, 64 * sizeof(*p.names));
	p.names_mask = 63;
	for (space(&p, true); p.s < p.end && !p.failed; space(&p, true))
		rule(&p);
	if (!p.failed && !named_rule(&p, root, (uint32_t)strlen(root), p.s, &r))
		goto out;
	if (!p.failed && !p.rules[r].defined) {
		snprintf(err->msg, sizeof(err->msg), "the grammar has no rule '%.64s'", root);
		goto out;
	}
	if (!p.failed)
		rv = gbnf_finish(&p, r, ret);
	else if (err->line == 0)
		rv = ORCH_ENOMEM;
out:
	parser_fini(&p);
	return rv;
}
