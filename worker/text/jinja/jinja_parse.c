/*
 * jinja_parse.c - tokens → syntax tree, by recursive descent with jinja2's
 * grammar and precedence (lowest first): conditional "a if c else b", or,
 * and, not, comparisons and in, + -, ~, * / // %, **, unary - +, then
 * primaries with their postfixes (.attr, [item], [a:b:c], (call)) and
 * filters "|f(args)" and tests "is [not] t(args)".
 * Statements: if/elif/else, for (tuple targets, "if" filter, else), set
 * (name, tuple, ns.attr, block), macro, call block, break, continue,
 * generation (those are parsed in jinja_stmt.c). Everything lives in the
 * template's arena.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_internal.h"

const struct jtoken *
jp_peek(struct parser *p)
{
	return &p->tok[p->i < p->n ? p->i : p->n - 1];
}

const struct jtoken *
jp_next(struct parser *p)
{
	const struct jtoken *t = jp_peek(p);

	if (p->i < p->n - 1)
		p->i++;
	return t;
}

bool
jp_tok_is(const struct jtoken *t, enum jtok type, const char *s)
{
	return t->type == type && (s == NULL || (t->n == strlen(s) && memcmp(t->s, s, t->n) == 0));
}

bool
jp_at_op(struct parser *p, const char *s)
{
	return jp_tok_is(jp_peek(p), JT_OP, s);
}

bool
jp_at_name(struct parser *p, const char *s)
{
	return jp_tok_is(jp_peek(p), JT_NAME, s);
}

void *
jp_err(struct parser *p, const struct jtoken *at, const char *fmt, ...)
{
	char where[256], what[256];
	va_list ap;

	if (p->failed)
		return NULL;
	jinja_where(p->t->name, p->t->src, at->pos, where, sizeof(where));
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	p->failed = orch_errf(p->err, ORCH_ETEMPLATE, "%s: %s", where, what);
	return NULL;
}

void *
jp_alloc(struct parser *p, size_t n)
{
	void *m = arena_alloc(&p->t->arena, n);

	if (m == NULL && !p->failed)
		p->failed = orch_errf(p->err, ORCH_ENOMEM, "%s: out of memory", p->t->name);
	return m;
}

bool
jp_expect_op(struct parser *p, const char *s)
{
	if (jp_at_op(p, s)) {
		jp_next(p);
		return true;
	}
	jp_err(p, jp_peek(p), "expected '%s', found '%.*s'", s, (int)jp_peek(p)->n, jp_peek(p)->s);
	return false;
}

const char *
jp_expect_name(struct parser *p)
{
	const struct jtoken *t = jp_peek(p);

	if (t->type != JT_NAME)
		return jp_err(p, t, "expected a name, found '%.*s'", (int)t->n, t->s);
	jp_next(p);
	return arena_strndup(&p->t->arena, t->s, t->n);
}

static struct jexpr *
mk(struct parser *p, enum jx_kind kind, size_t pos)
{
	struct jexpr *e = jp_alloc(p, sizeof(*e));

	if (e != NULL) {
		e->kind = kind;
		e->pos = pos;
	}
	return e;
}

struct jexpr **
jp_copy_list(struct parser *p, struct jexpr **v, size_t n)
{
	struct jexpr **d = jp_alloc(p, (n ? n : 1) * sizeof(*d));

	if (d != NULL)
		memcpy(d, v, n * sizeof(*d));
	return d;
}

static struct jexpr *parse_unary(struct parser *p, bool with_filter);

/* A string literal's value: Python escapes decoded; adjacent literals joined. */
static struct jexpr *
parse_string(struct parser *p)
{
	struct sbuf b = {0};
	size_t pos = jp_peek(p)->pos;

	while (jp_peek(p)->type == JT_STRING) {
		const struct jtoken *t = jp_next(p);
		for (size_t i = 1; i + 1 < t->n; i++) {
			char c = t->s[i];
			if (c != '\\' || i + 2 >= t->n) {
				sbuf_putc(&b, c);
				continue;
			}
			c = t->s[++i];
			switch (c) {
			case 'n':
				sbuf_putc(&b, '\n');
				break;
			case 't':
				sbuf_putc(&b, '\t');
				break;
			case 'r':
				sbuf_putc(&b, '\r');
				break;
			case 'b':
				sbuf_putc(&b, '\b');
				break;
			case 'f':
				sbuf_putc(&b, '\f');
				break;
			case 'v':
				sbuf_putc(&b, '\v');
				break;
			case 'a':
				sbuf_putc(&b, '\a');
				break;
			case '0':
				sbuf_putc(&b, '\0');
				break;
			case '\\':
			case '\'':
			case '"':
				sbuf_putc(&b, c);
				break;
			default: /* unknown escapes stay as written, as in Python */
				sbuf_putc(&b, '\\');
				sbuf_putc(&b, c);
				break;
			}
		}
	}
	struct jexpr *e = mk(p, JX_LIT, pos);
	char *s = e ? arena_alloc(&p->t->arena, sizeof(struct jstr) + b.n + 1) : NULL;
	if (s != NULL) {
		struct jstr *js = (struct jstr *)(void *)s;
		js->n = b.n;
		if (b.n)
			memcpy(js->s, b.p, b.n);
		e->lit = (struct jv){.t = JV_STR, .u.s = js};
	}
	if (b.oom || (e != NULL && s == NULL))
		jp_alloc(p, SIZE_MAX); /* records ENOMEM */
	sbuf_fini(&b);
	return s ? e : NULL;
}

static struct jexpr *
parse_number(struct parser *p)
{
	const struct jtoken *t = jp_next(p);
	char buf[64];
	size_t k = 0;
	struct jexpr *e = mk(p, JX_LIT, t->pos);

	for (size_t i = 0; i < t->n && k + 1 < sizeof(buf); i++)
		if (t->s[i] != '_')
			buf[k++] = t->s[i];
	buf[k] = '\0';
	if (e == NULL)
		return NULL;
	errno = 0;
	if (t->type == JT_INT) {
		long long v = strtoll(buf, NULL, 10);
		e->lit = errno ? jv_float(strtod(buf, NULL)) : jv_int(v);
	} else {
		e->lit = jv_float(strtod(buf, NULL));
	}
	return e;
}

/* Items up to @close: "(" tuple, "[" list, "{" dict (key: value). */
static struct jexpr *
parse_seq(struct parser *p, enum jx_kind kind, const char *close, size_t pos)
{
	struct jexpr *items[MAX_ITEMS], *vals[MAX_ITEMS], *e;
	size_t n = 0;

	while (!jp_at_op(p, close) && !p->failed) {
		if (n == MAX_ITEMS)
			return jp_err(p, jp_peek(p), "more than %d items", MAX_ITEMS);
		items[n] = jp_expr(p, true);
		if (kind == JX_DICT && jp_expect_op(p, ":"))
			vals[n] = jp_expr(p, true);
		n++;
		if (!jp_at_op(p, ","))
			break;
		jp_next(p);
	}
	if (!jp_expect_op(p, close) || (e = mk(p, kind, pos)) == NULL)
		return NULL;
	e->args = jp_copy_list(p, items, n);
	e->vals = kind == JX_DICT ? jp_copy_list(p, vals, n) : NULL;
	e->n_args = n;
	return p->failed ? NULL : e;
}

static struct jexpr *
parse_primary(struct parser *p)
{
	const struct jtoken *t = jp_peek(p);
	struct jexpr *e;

	if (t->type == JT_STRING)
		return parse_string(p);
	if (t->type == JT_INT || t->type == JT_FLOAT)
		return parse_number(p);
	if (t->type == JT_NAME) {
		jp_next(p);
		if ((e = mk(p, JX_LIT, t->pos)) == NULL)
			return NULL;
		if (jp_tok_is(t, JT_NAME, "true") || jp_tok_is(t, JT_NAME, "True"))
			e->lit = jv_bool(true);
		else if (jp_tok_is(t, JT_NAME, "false") || jp_tok_is(t, JT_NAME, "False"))
			e->lit = jv_bool(false);
		else if (jp_tok_is(t, JT_NAME, "none") || jp_tok_is(t, JT_NAME, "None"))
			e->lit = jv_none();
		else {
			e->kind = JX_NAME;
			e->name = arena_strndup(&p->t->arena, t->s, t->n);
		}
		return e;
	}
	if (jp_tok_is(t, JT_OP, "(")) {
		jp_next(p);
		if (jp_at_op(p, ")"))
			return parse_seq(p, JX_TUPLE, ")", t->pos);
		e = jp_expr(p, true);
		if (jp_at_op(p, ",")) { /* a tuple */
			jp_next(p);
			struct jexpr *rest = parse_seq(p, JX_TUPLE, ")", t->pos);
			if (rest == NULL || rest->n_args + 1 > MAX_ITEMS)
				return rest;
			struct jexpr **v = jp_alloc(p, (rest->n_args + 1) * sizeof(*v));
			if (v == NULL)
				return NULL;
			v[0] = e;
			memcpy(v + 1, rest->args, rest->n_args * sizeof(*v));
			rest->args = v;
			rest->n_args++;
			return rest;
		}
		return jp_expect_op(p, ")") ? e : NULL;
	}
	if (jp_tok_is(t, JT_OP, "[")) {
		jp_next(p);
		return parse_seq(p, JX_LIST, "]", t->pos);
	}
	if (jp_tok_is(t, JT_OP, "{")) {
		jp_next(p);
		return parse_seq(p, JX_DICT, "}", t->pos);
	}
	return jp_err(p, t, "unexpected '%.*s'", (int)t->n, t->s);
}

/* "(" args ")" into @e: positional, then name=value. */
static bool
parse_args(struct parser *p, struct jexpr *e)
{
	struct jexpr *pos[MAX_ITEMS], *kwv[MAX_ITEMS];
	const char *kwn[MAX_ITEMS];
	size_t np = 0, nk = 0;

	jp_expect_op(p, "(");
	while (!jp_at_op(p, ")") && !p->failed) {
		if (np + nk == MAX_ITEMS)
			return jp_err(p, jp_peek(p), "too many arguments") != NULL;
		if (jp_peek(p)->type == JT_NAME && jp_tok_is(&p->tok[p->i + 1], JT_OP, "=")) {
			kwn[nk] = jp_expect_name(p);
			jp_next(p);
			kwv[nk++] = jp_expr(p, true);
		} else {
			pos[np++] = jp_expr(p, true);
		}
		if (!jp_at_op(p, ","))
			break;
		jp_next(p);
	}
	if (!jp_expect_op(p, ")"))
		return false;
	e->args = jp_copy_list(p, pos, np);
	e->n_args = np;
	e->vals = jp_copy_list(p, kwv, nk);
	e->kwnames = jp_alloc(p, (nk ? nk : 1) * sizeof(*e->kwnames));
	if (e->kwnames != NULL)
		memcpy(e->kwnames, kwn, nk * sizeof(*kwn));
	e->n_kw = nk;
	return !p->failed;
}

static struct jexpr *
parse_postfix(struct parser *p, struct jexpr *e)
{
	while (e != NULL && !p->failed) {
		const struct jtoken *t = jp_peek(p);
		struct jexpr *x;
		if (jp_tok_is(t, JT_OP, ".")) {
			jp_next(p);
			if (jp_peek(p)->type == JT_INT) {
				x = mk(p, JX_ITEM, t->pos);
				if (x != NULL)
					x->b = parse_number(p);
			} else if ((x = mk(p, JX_ATTR, t->pos)) != NULL) {
				x->name = jp_expect_name(p);
			}
		} else if (jp_tok_is(t, JT_OP, "[")) {
			jp_next(p);
			struct jexpr *lo = NULL, *hi = NULL, *st = NULL;
			if (!jp_at_op(p, ":"))
				lo = jp_expr(p, true);
			if (jp_at_op(p, ":")) {
				x = mk(p, JX_SLICE, t->pos);
				jp_next(p);
				if (!jp_at_op(p, "]") && !jp_at_op(p, ":"))
					hi = jp_expr(p, true);
				if (jp_at_op(p, ":") && (jp_next(p), !jp_at_op(p, "]")))
					st = jp_expr(p, true);
				if (x != NULL) {
					x->b = lo;
					x->c = hi;
					x->d = st;
				}
			} else if ((x = mk(p, JX_ITEM, t->pos)) != NULL) {
				x->b = lo;
			}
			jp_expect_op(p, "]");
		} else if (jp_tok_is(t, JT_OP, "(")) {
			x = mk(p, JX_CALL, t->pos);
			if (x != NULL)
				parse_args(p, x);
		} else {
			break;
		}
		if (x == NULL)
			return NULL;
		x->a = e;
		e = x;
	}
	return p->failed ? NULL : e;
}

/* A test's argument without parentheses: "x is divisibleby 3". */
static bool
bare_test_arg(struct parser *p)
{
	static const char *const stop[] = {"and", "or", "else", "if", "in", "is", "not"};
	const struct jtoken *t = jp_peek(p);

	if (t->type == JT_STRING || t->type == JT_INT || t->type == JT_FLOAT)
		return true;
	if (t->type != JT_NAME)
		return false;
	for (size_t i = 0; i < sizeof(stop) / sizeof(stop[0]); i++)
		if (jp_tok_is(t, JT_NAME, stop[i]))
			return false;
	return true;
}

static struct jexpr *
parse_filters(struct parser *p, struct jexpr *e)
{
	while (e != NULL && !p->failed) {
		const struct jtoken *t = jp_peek(p);
		struct jexpr *x;
		if (jp_tok_is(t, JT_OP, "|")) {
			jp_next(p);
			if ((x = mk(p, JX_FILTER, t->pos)) == NULL)
				return NULL;
			x->name = jp_expect_name(p);
			if (jp_at_op(p, "("))
				parse_args(p, x);
		} else if (jp_tok_is(t, JT_NAME, "is")) {
			jp_next(p);
			if ((x = mk(p, JX_TEST, t->pos)) == NULL)
				return NULL;
			if (jp_at_name(p, "not")) {
				jp_next(p);
				x->negate = true;
			}
			x->name = jp_expect_name(p);
			if (jp_at_op(p, "(")) {
				parse_args(p, x);
			} else if (bare_test_arg(p)) {
				x->args = jp_alloc(p, sizeof(*x->args));
				if (x->args != NULL)
					x->args[0] = parse_postfix(p, parse_primary(p));
				x->n_args = 1;
			}
		} else if (jp_tok_is(t, JT_OP, "(")) {
			if ((x = mk(p, JX_CALL, t->pos)) == NULL)
				return NULL;
			parse_args(p, x);
		} else {
			break;
		}
		x->a = e;
		e = x;
	}
	return p->failed ? NULL : e;
}

static struct jexpr *
parse_unary(struct parser *p, bool with_filter)
{
	const struct jtoken *t = jp_peek(p);
	struct jexpr *e;

	if (++p->depth > 200) {
		p->depth--;
		return jp_err(p, t, "expression nested too deeply");
	}
	if (jp_tok_is(t, JT_OP, "-") || jp_tok_is(t, JT_OP, "+")) {
		jp_next(p);
		if ((e = mk(p, jp_tok_is(t, JT_OP, "-") ? JX_NEG : JX_POS, t->pos)) != NULL)
			e->a = parse_unary(p, false);
	} else {
		e = parse_postfix(p, parse_primary(p));
	}
	if (with_filter)
		e = parse_filters(p, e);
	p->depth--;
	return p->failed ? NULL : e;
}

static struct jexpr *
binary(struct parser *p, const struct jtoken *op, struct jexpr *a, struct jexpr *b,
       enum jx_kind kind)
{
	struct jexpr *e = mk(p, kind, op->pos);

	if (e == NULL)
		return NULL;
	e->a = a;
	e->b = b;
	e->name = arena_strndup(&p->t->arena, op->s, op->n);
	return p->failed ? NULL : e;
}

/* Binary levels from tightest to loosest: each lists its operators. */
static const char *const levels[][7] = {
        {"**", NULL},
        {"*", "/", "//", "%", NULL},
        {"~", NULL},
        {"+", "-", NULL},
        {"==", "!=", "<", "<=", ">", ">=", NULL},
};

static struct jexpr *
parse_level(struct parser *p, int level)
{
	struct jexpr *e = level == 0 ? parse_unary(p, true) : parse_level(p, level - 1);

	while (e != NULL && !p->failed) {
		const struct jtoken *t = jp_peek(p);
		bool hit = false;
		for (int k = 0; levels[level][k] != NULL; k++)
			hit |= jp_tok_is(t, JT_OP, levels[level][k]);
		if (level == 4 &&
		    (jp_tok_is(t, JT_NAME, "in") ||
		     (jp_tok_is(t, JT_NAME, "not") && jp_tok_is(&p->tok[p->i + 1], JT_NAME, "in"))))
			hit = true;
		if (!hit)
			break;
		jp_next(p);
		if (jp_tok_is(t, JT_NAME, "not")) {
			jp_next(p); /* "not in" */
			struct jexpr *in = binary(p, t, e, parse_level(p, level - 1), JX_BIN);
			if (in != NULL)
				in->name = "in";
			if ((e = mk(p, JX_NOT, t->pos)) != NULL)
				e->a = in;
			continue;
		}
		e = binary(p, t, e, level == 0 ? parse_unary(p, true) : parse_level(p, level - 1),
		           JX_BIN);
	}
	return e;
}

static struct jexpr *
parse_not(struct parser *p)
{
	if (jp_at_name(p, "not")) {
		const struct jtoken *t = jp_next(p);
		struct jexpr *e = mk(p, JX_NOT, t->pos);
		if (e != NULL)
			e->a = parse_not(p);
		return p->failed ? NULL : e;
	}
	return parse_level(p, 4);
}

static struct jexpr *
parse_andor(struct parser *p, bool is_or)
{
	struct jexpr *e = is_or ? parse_andor(p, false) : parse_not(p);

	while (e != NULL && jp_at_name(p, is_or ? "or" : "and")) {
		const struct jtoken *t = jp_next(p);
		e = binary(p, t, e, is_or ? parse_andor(p, false) : parse_not(p),
		           is_or ? JX_OR : JX_AND);
	}
	return e;
}

struct jexpr *
jp_expr(struct parser *p, bool allow_cond)
{
	struct jexpr *e = parse_andor(p, true);

	if (e != NULL && allow_cond && jp_at_name(p, "if")) {
		const struct jtoken *t = jp_next(p);
		struct jexpr *c = mk(p, JX_COND, t->pos);
		if (c == NULL)
			return NULL;
		c->a = e;
		c->b = parse_andor(p, true);
		if (jp_at_name(p, "else")) {
			jp_next(p);
			c->c = jp_expr(p, true);
		}
		e = c;
	}
	return p->failed ? NULL : e;
}

/* An expression that may be a bare tuple: "a, b". */
struct jexpr *
jp_tuple_expr(struct parser *p, bool allow_cond)
{
	struct jexpr *items[MAX_ITEMS], *e;
	size_t n = 0, pos = jp_peek(p)->pos;

	items[n++] = jp_expr(p, allow_cond);
	while (jp_at_op(p, ",") && n < MAX_ITEMS && !p->failed) {
		jp_next(p);
		items[n++] = jp_expr(p, allow_cond);
	}
	if (n == 1 || (e = mk(p, JX_TUPLE, pos)) == NULL)
		return n == 1 ? items[0] : NULL;
	e->args = jp_copy_list(p, items, n);
	e->n_args = n;
	return p->failed ? NULL : e;
}
