/*
 * jinja_lex.c - template source → tokens, with jinja2's whitespace rules
 * as transformers configures them (trim_blocks and lstrip_blocks on):
 *   - "{%-", "{{-", "{#-" strip all whitespace before the tag; "-%}",
 *     "-}}", "-#}" strip all whitespace after it;
 *   - lstrip_blocks: spaces and tabs between the start of a line and a
 *     "{%" or "{#" are removed ("{%+" keeps them);
 *   - trim_blocks: the first newline after "%}" or "#}" is removed ("+%}"
 *     keeps it);
 *   - the source's newlines are normalized to "\n" and one trailing newline
 *     is dropped (keep_trailing_newline = False), before any of this.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "jinja_internal.h"

struct lexer {
	const char *name, *src;
	size_t len, pos;
	struct jlex *out;
	struct orch_errinfo *err;
};

void
jinja_where(const char *name, const char *src, size_t pos, char *buf, size_t n)
{
	size_t line = 1, col = 1;

	for (size_t i = 0; i < pos && src[i] != '\0'; i++) {
		if (src[i] == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)src[i] & 0xc0) != 0x80) {
			col++;
		}
	}
	snprintf(buf, n, "%s:%zu:%zu", name, line, col);
}

static orch_err lex_fail(struct lexer *L, size_t pos, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static orch_err
lex_fail(struct lexer *L, size_t pos, const char *fmt, ...)
{
	char where[256], what[256];
	va_list ap;

	jinja_where(L->name, L->src, pos, where, sizeof(where));
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return orch_errf(L->err, ORCH_ETEMPLATE, "%s: %s", where, what);
}

static orch_err
emit(struct lexer *L, enum jtok type, const char *s, size_t n, size_t pos)
{
	struct jlex *o = L->out;

	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 256;
		struct jtoken *v = orch_reallocarray(o->v, cap, sizeof(*v));
		if (v == NULL)
			return orch_errf(L->err, ORCH_ENOMEM, "%s: out of memory", L->name);
		o->v = v;
		o->cap = cap;
	}
	o->v[o->n++] = (struct jtoken){type, s, n, pos};
	return ORCH_OK;
}

/* A string literal at L->pos: its extent, escapes skipped over. */
static orch_err
lex_string(struct lexer *L, size_t *end)
{
	char q = L->src[L->pos];
	size_t i = L->pos + 1;

	while (i < L->len && L->src[i] != q)
		i += L->src[i] == '\\' && i + 1 < L->len ? 2 : 1;
	if (i >= L->len)
		return lex_fail(L, L->pos, "unterminated string");
	*end = i + 1;
	return ORCH_OK;
}

static size_t
op_len(const char *s, size_t left)
{
	static const char *const two[] = {"//", "**", "==", "!=", "<=", ">="};

	for (size_t i = 0; i < 6 && left >= 2; i++)
		if (s[0] == two[i][0] && s[1] == two[i][1])
			return 2;
	return strchr("+-*/%~<>=()[]{},.:|!", s[0]) != NULL ? 1 : 0;
}

/* One token inside a tag. */
static orch_err
lex_token(struct lexer *L)
{
	const char *s = L->src + L->pos;
	size_t start = L->pos, end = L->pos, k;
	orch_err rv;

	if (isalpha((unsigned char)*s) || *s == '_') {
		while (end < L->len && (isalnum((unsigned char)L->src[end]) || L->src[end] == '_'))
			end++;
		rv = emit(L, JT_NAME, s, end - start, start);
	} else if (isdigit((unsigned char)*s)) {
		bool is_float = false;
		while (end < L->len && (isdigit((unsigned char)L->src[end]) || L->src[end] == '_'))
			end++;
		if (end + 1 < L->len && L->src[end] == '.' &&
		    isdigit((unsigned char)L->src[end + 1])) {
			is_float = true;
			for (end++; end < L->len && isdigit((unsigned char)L->src[end]); end++)
				;
		}
		if (end < L->len && (L->src[end] == 'e' || L->src[end] == 'E')) {
			size_t e = end + 1;
			if (e < L->len && (L->src[e] == '+' || L->src[e] == '-'))
				e++;
			if (e < L->len && isdigit((unsigned char)L->src[e])) {
				is_float = true;
				for (end = e; end < L->len && isdigit((unsigned char)L->src[end]);
				     end++)
					;
			}
		}
		rv = emit(L, is_float ? JT_FLOAT : JT_INT, s, end - start, start);
	} else if (*s == '\'' || *s == '"') {
		if ((rv = lex_string(L, &end)) == ORCH_OK)
			rv = emit(L, JT_STRING, s, end - start, start);
	} else if ((k = op_len(s, L->len - L->pos)) > 0) {
		end = start + k;
		rv = emit(L, JT_OP, s, k, start);
	} else {
		return lex_fail(L, start, "unexpected character '%c'", *s);
	}
	L->pos = end;
	return rv;
}

/*
 * Tokens of a tag whose body starts at L->pos, up to its closer @close
 * ("}}" or "%}"). *@strip_after is set for "-}}"/"-%}", *@keep for "+%}".
 */
static orch_err
lex_tag(struct lexer *L, const char *close, bool *strip_after, bool *keep)
{
	orch_err rv;

	for (;;) {
		while (L->pos < L->len && isspace((unsigned char)L->src[L->pos]))
			L->pos++;
		if (L->pos >= L->len)
			return lex_fail(L, L->pos, "missing '%s'", close);
		const char *s = L->src + L->pos;
		size_t left = L->len - L->pos;
		if ((s[0] == '-' || s[0] == '+') && left >= 3 && memcmp(s + 1, close, 2) == 0) {
			*strip_after = s[0] == '-';
			*keep = s[0] == '+';
			L->pos += 3;
			return ORCH_OK;
		}
		if (left >= 2 && memcmp(s, close, 2) == 0) {
			L->pos += 2;
			return ORCH_OK;
		}
		if ((rv = lex_token(L)) != ORCH_OK)
			return rv;
	}
}

static bool
all_space(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)s[i]))
			return false;
	return true;
}

/* Text before a tag opener of kind @kind ('{', '%', '#') with modifier @mod. */
static orch_err
lex_text(struct lexer *L, size_t start, size_t end, char kind, char mod, bool line_starting,
         bool strip_before)
{
	const char *t = L->src + start;
	size_t n = end - start;

	while (strip_before && n > 0 && isspace((unsigned char)t[0])) {
		t++;
		n--;
		start++;
	}
	if (mod == '-') {
		while (n > 0 && isspace((unsigned char)t[n - 1]))
			n--;
	} else if (mod != '+' && kind != '{') {
		size_t l_pos = n;
		while (l_pos > 0 && t[l_pos - 1] != '\n')
			l_pos--;
		if ((l_pos > 0 || line_starting) && all_space(t + l_pos, n - l_pos))
			n = l_pos;
	}
	return n > 0 ? emit(L, JT_TEXT, t, n, start) : ORCH_OK;
}

orch_err
jinja_lex(const char *name, const char *src, size_t len, struct jlex *out,
          struct orch_errinfo *reterr)
{
	struct lexer L = {name, src, len, 0, out, reterr};
	bool line_starting = true, strip_next = false;
	orch_err rv = ORCH_OK;

	while (rv == ORCH_OK && L.pos < len) {
		const char *open = NULL;
		for (size_t i = L.pos; i + 1 < len && open == NULL; i++)
			if (src[i] == '{' &&
			    (src[i + 1] == '{' || src[i + 1] == '%' || src[i + 1] == '#'))
				open = src + i;
		size_t at = open ? (size_t)(open - src) : len;
		char kind = open ? open[1] : '{';
		char mod = open && at + 2 < len ? src[at + 2] : 0;
		if ((rv = lex_text(&L, L.pos, at, kind, open ? mod : '+', line_starting,
		                   strip_next)) != ORCH_OK ||
		    open == NULL)
			break;
		bool strip_after = false, keep = false;
		L.pos = at + 2 + (mod == '-' || mod == '+');
		if (kind == '#') {
			const char *c = memmem(src + L.pos, len - L.pos, "#}", 2);
			if (c == NULL)
				return lex_fail(&L, at, "unterminated comment");
			strip_after = c > src + L.pos && c[-1] == '-';
			keep = c > src + L.pos && c[-1] == '+';
			L.pos = (size_t)(c - src) + 2;
		} else {
			if ((rv = emit(&L, kind == '{' ? JT_VAR_BEGIN : JT_BLOCK_BEGIN, open, 2,
			               at)))
				break;
			if ((rv = lex_tag(&L, kind == '{' ? "}}" : "%}", &strip_after, &keep)))
				break;
			rv = emit(&L, kind == '{' ? JT_VAR_END : JT_BLOCK_END, src + L.pos - 2, 2,
			          L.pos - 2);
		}
		strip_next = strip_after;
		if (!strip_after && !keep && kind != '{' && L.pos < len && src[L.pos] == '\n')
			L.pos++; /* trim_blocks */
		line_starting = L.pos > 0 && src[L.pos - 1] == '\n';
	}
	if (rv == ORCH_OK)
		rv = emit(&L, JT_EOF, src + len, 0, len);
	return rv;
}
