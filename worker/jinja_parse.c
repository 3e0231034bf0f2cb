/*
 * jinja_parse.c - tokens → syntax tree, by recursive descent with jinja2's
 * grammar and precedence (lowest first): conditional "a if c else b", or,
 * and, not, comparisons and in, + -, ~, * / // %, **, unary - +, then
 * primaries with their postfixes (.attr, [item], [a:b:c], (call)) and
 * filters "|f(args)" and tests "is [not] t(args)".
 * Statements: if/elif/else, for (tuple targets, "if" filter, else), set
 * (name, tuple, ns.attr, block), macro, call block, break, continue,
 * generation. Everything lives in the template's arena.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_internal.h"

#define MAX_ITEMS 256

struct parser {
	struct jinja_tmpl *t;
	const struct jtoken *tok;
	size_t i, n;
	struct orch_errinfo *err;
	orch_err failed;
	unsigned depth;
};

static const struct jtoken *
peek(struct parser *p)
{
	return &p->tok[p->i < p->n ? p->i : p->n - 1];
}

static const struct jtoken *
next(struct parser *p)
{
	const struct jtoken *t = peek(p);

	if (p->i < p->n - 1)
		p->i++;
	return t;
}

static bool
tok_is(const struct jtoken *t, enum jtok type, const char *s)
{
	return t->type == type && (s == NULL || (t->n == strlen(s) && memcmp(t->s, s, t->n) == 0));
}

static bool
at_op(struct parser *p, const char *s)
{
	return tok_is(peek(p), JT_OP, s);
}

static bool
at_name(struct parser *p, const char *s)
{
	return tok_is(peek(p), JT_NAME, s);
}

static void *perr(struct parser *p, const struct jtoken *at, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void *
perr(struct parser *p, const struct jtoken *at, const char *fmt, ...)
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

static void *
palloc(struct parser *p, size_t n)
{
	void *m = arena_alloc(&p->t->arena, n);

	if (m == NULL && !p->failed)
		p->failed = orch_errf(p->err, ORCH_ENOMEM, "%s: out of memory", p->t->name);
	return m;
}

static bool
expect_op(struct parser *p, const char *s)
{
	if (at_op(p, s)) {
		next(p);
		return true;
	}
	perr(p, peek(p), "expected '%s', found '%.*s'", s, (int)peek(p)->n, peek(p)->s);
	return false;
}

static const char *
expect_name(struct parser *p)
{
	const struct jtoken *t = peek(p);

	if (t->type != JT_NAME)
		return perr(p, t, "expected a name, found '%.*s'", (int)t->n, t->s);
	next(p);
	return arena_strndup(&p->t->arena, t->s, t->n);
}

static struct jexpr *
mk(struct parser *p, enum jx_kind kind, size_t pos)
{
	struct jexpr *e = palloc(p, sizeof(*e));

	if (e != NULL) {
		e->kind = kind;
		e->pos = pos;
	}
	return e;
}

static struct jexpr **
copy_list(struct parser *p, struct jexpr **v, size_t n)
{
	struct jexpr **d = palloc(p, (n ? n : 1) * sizeof(*d));

	if (d != NULL)
		memcpy(d, v, n * sizeof(*d));
	return d;
}

static struct jexpr *parse_expr(struct parser *p, bool allow_cond);
static struct jexpr *parse_unary(struct parser *p, bool with_filter);

/* A string literal's value: Python escapes decoded; adjacent literals joined. */
static struct jexpr *
parse_string(struct parser *p)
{
	struct sbuf b = {0};
	size_t pos = peek(p)->pos;

	while (peek(p)->type == JT_STRING) {
		const struct jtoken *t = next(p);
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
		palloc(p, SIZE_MAX); /* records ENOMEM */
	sbuf_fini(&b);
	return s ? e : NULL;
}

static struct jexpr *
parse_number(struct parser *p)
{
	const struct jtoken *t = next(p);
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

	while (!at_op(p, close) && !p->failed) {
		if (n == MAX_ITEMS)
			return perr(p, peek(p), "more than %d items", MAX_ITEMS);
		items[n] = parse_expr(p, true);
		if (kind == JX_DICT && expect_op(p, ":"))
			vals[n] = parse_expr(p, true);
		n++;
		if (!at_op(p, ","))
			break;
		next(p);
	}
	if (!expect_op(p, close) || (e = mk(p, kind, pos)) == NULL)
		return NULL;
	e->args = copy_list(p, items, n);
	e->vals = kind == JX_DICT ? copy_list(p, vals, n) : NULL;
	e->n_args = n;
	return p->failed ? NULL : e;
}

static struct jexpr *
parse_primary(struct parser *p)
{
	const struct jtoken *t = peek(p);
	struct jexpr *e;

	if (t->type == JT_STRING)
		return parse_string(p);
	if (t->type == JT_INT || t->type == JT_FLOAT)
		return parse_number(p);
	if (t->type == JT_NAME) {
		next(p);
		if ((e = mk(p, JX_LIT, t->pos)) == NULL)
			return NULL;
		if (tok_is(t, JT_NAME, "true") || tok_is(t, JT_NAME, "True"))
			e->lit = jv_bool(true);
		else if (tok_is(t, JT_NAME, "false") || tok_is(t, JT_NAME, "False"))
			e->lit = jv_bool(false);
		else if (tok_is(t, JT_NAME, "none") || tok_is(t, JT_NAME, "None"))
			e->lit = jv_none();
		else {
			e->kind = JX_NAME;
			e->name = arena_strndup(&p->t->arena, t->s, t->n);
		}
		return e;
	}
	if (tok_is(t, JT_OP, "(")) {
		next(p);
		if (at_op(p, ")"))
			return parse_seq(p, JX_TUPLE, ")", t->pos);
		e = parse_expr(p, true);
		if (at_op(p, ",")) { /* a tuple */
			next(p);
			struct jexpr *rest = parse_seq(p, JX_TUPLE, ")", t->pos);
			if (rest == NULL || rest->n_args + 1 > MAX_ITEMS)
				return rest;
			struct jexpr **v = palloc(p, (rest->n_args + 1) * sizeof(*v));
			if (v == NULL)
				return NULL;
			v[0] = e;
			memcpy(v + 1, rest->args, rest->n_args * sizeof(*v));
			rest->args = v;
			rest->n_args++;
			return rest;
		}
		return expect_op(p, ")") ? e : NULL;
	}
	if (tok_is(t, JT_OP, "[")) {
		next(p);
		return parse_seq(p, JX_LIST, "]", t->pos);
	}
	if (tok_is(t, JT_OP, "{")) {
		next(p);
		return parse_seq(p, JX_DICT, "}", t->pos);
	}
	return perr(p, t, "unexpected '%.*s'", (int)t->n, t->s);
}

/* "(" args ")" into @e: positional, then name=value. */
static bool
parse_args(struct parser *p, struct jexpr *e)
{
	struct jexpr *pos[MAX_ITEMS], *kwv[MAX_ITEMS];
	const char *kwn[MAX_ITEMS];
	size_t np = 0, nk = 0;

	expect_op(p, "(");
	while (!at_op(p, ")") && !p->failed) {
		if (np + nk == MAX_ITEMS)
			return perr(p, peek(p), "too many arguments") != NULL;
		if (peek(p)->type == JT_NAME && tok_is(&p->tok[p->i + 1], JT_OP, "=")) {
			kwn[nk] = expect_name(p);
			next(p);
			kwv[nk++] = parse_expr(p, true);
		} else {
			pos[np++] = parse_expr(p, true);
		}
		if (!at_op(p, ","))
			break;
		next(p);
	}
	if (!expect_op(p, ")"))
		return false;
	e->args = copy_list(p, pos, np);
	e->n_args = np;
	e->vals = copy_list(p, kwv, nk);
	e->kwnames = palloc(p, (nk ? nk : 1) * sizeof(*e->kwnames));
	if (e->kwnames != NULL)
		memcpy(e->kwnames, kwn, nk * sizeof(*kwn));
	e->n_kw = nk;
	return !p->failed;
}

static struct jexpr *
parse_postfix(struct parser *p, struct jexpr *e)
{
	while (e != NULL && !p->failed) {
		const struct jtoken *t = peek(p);
		struct jexpr *x;
		if (tok_is(t, JT_OP, ".")) {
			next(p);
			if (peek(p)->type == JT_INT) {
				x = mk(p, JX_ITEM, t->pos);
				if (x != NULL)
					x->b = parse_number(p);
			} else if ((x = mk(p, JX_ATTR, t->pos)) != NULL) {
				x->name = expect_name(p);
			}
		} else if (tok_is(t, JT_OP, "[")) {
			next(p);
			struct jexpr *lo = NULL, *hi = NULL, *st = NULL;
			if (!at_op(p, ":"))
				lo = parse_expr(p, true);
			if (at_op(p, ":")) {
				x = mk(p, JX_SLICE, t->pos);
				next(p);
				if (!at_op(p, "]") && !at_op(p, ":"))
					hi = parse_expr(p, true);
				if (at_op(p, ":") && (next(p), !at_op(p, "]")))
					st = parse_expr(p, true);
				if (x != NULL) {
					x->b = lo;
					x->c = hi;
					x->d = st;
				}
			} else if ((x = mk(p, JX_ITEM, t->pos)) != NULL) {
				x->b = lo;
			}
			expect_op(p, "]");
		} else if (tok_is(t, JT_OP, "(")) {
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
	const struct jtoken *t = peek(p);

	if (t->type == JT_STRING || t->type == JT_INT || t->type == JT_FLOAT)
		return true;
	if (t->type != JT_NAME)
		return false;
	for (size_t i = 0; i < sizeof(stop) / sizeof(stop[0]); i++)
		if (tok_is(t, JT_NAME, stop[i]))
			return false;
	return true;
}

static struct jexpr *
parse_filters(struct parser *p, struct jexpr *e)
{
	while (e != NULL && !p->failed) {
		const struct jtoken *t = peek(p);
		struct jexpr *x;
		if (tok_is(t, JT_OP, "|")) {
			next(p);
			if ((x = mk(p, JX_FILTER, t->pos)) == NULL)
				return NULL;
			x->name = expect_name(p);
			if (at_op(p, "("))
				parse_args(p, x);
		} else if (tok_is(t, JT_NAME, "is")) {
			next(p);
			if ((x = mk(p, JX_TEST, t->pos)) == NULL)
				return NULL;
			if (at_name(p, "not")) {
				next(p);
				x->negate = true;
			}
			x->name = expect_name(p);
			if (at_op(p, "(")) {
				parse_args(p, x);
			} else if (bare_test_arg(p)) {
				x->args = palloc(p, sizeof(*x->args));
				if (x->args != NULL)
					x->args[0] = parse_postfix(p, parse_primary(p));
				x->n_args = 1;
			}
		} else if (tok_is(t, JT_OP, "(")) {
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
	const struct jtoken *t = peek(p);
	struct jexpr *e;

	if (++p->depth > 200) {
		p->depth--;
		return perr(p, t, "expression nested too deeply");
	}
	if (tok_is(t, JT_OP, "-") || tok_is(t, JT_OP, "+")) {
		next(p);
		if ((e = mk(p, tok_is(t, JT_OP, "-") ? JX_NEG : JX_POS, t->pos)) != NULL)
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
		const struct jtoken *t = peek(p);
		bool hit = false;
		for (int k = 0; levels[level][k] != NULL; k++)
			hit |= tok_is(t, JT_OP, levels[level][k]);
		if (level == 4 &&
		    (tok_is(t, JT_NAME, "in") ||
		     (tok_is(t, JT_NAME, "not") && tok_is(&p->tok[p->i + 1], JT_NAME, "in"))))
			hit = true;
		if (!hit)
			break;
		next(p);
		if (tok_is(t, JT_NAME, "not")) {
			next(p); /* "not in" */
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
	if (at_name(p, "not")) {
		const struct jtoken *t = next(p);
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

	while (e != NULL && at_name(p, is_or ? "or" : "and")) {
		const struct jtoken *t = next(p);
		e = binary(p, t, e, is_or ? parse_andor(p, false) : parse_not(p),
		           is_or ? JX_OR : JX_AND);
	}
	return e;
}

static struct jexpr *
parse_expr(struct parser *p, bool allow_cond)
{
	struct jexpr *e = parse_andor(p, true);

	if (e != NULL && allow_cond && at_name(p, "if")) {
		const struct jtoken *t = next(p);
		struct jexpr *c = mk(p, JX_COND, t->pos);
		if (c == NULL)
			return NULL;
		c->a = e;
		c->b = parse_andor(p, true);
		if (at_name(p, "else")) {
			next(p);
			c->c = parse_expr(p, true);
		}
		e = c;
	}
	return p->failed ? NULL : e;
}

/* An expression that may be a bare tuple: "a, b". */
static struct jexpr *
parse_tuple_expr(struct parser *p, bool allow_cond)
{
	struct jexpr *items[MAX_ITEMS], *e;
	size_t n = 0, pos = peek(p)->pos;

	items[n++] = parse_expr(p, allow_cond);
	while (at_op(p, ",") && n < MAX_ITEMS && !p->failed) {
		next(p);
		items[n++] = parse_expr(p, allow_cond);
	}
	if (n == 1 || (e = mk(p, JX_TUPLE, pos)) == NULL)
		return n == 1 ? items[0] : NULL;
	e->args = copy_list(p, items, n);
	e->n_args = n;
	return p->failed ? NULL : e;
}

/* ---- statements ---- */

static bool parse_body(struct parser *p, struct jbody *b, const char *const *ends);

static bool
body_push(struct parser *p, struct jbody *b, struct jnode *n)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 8;
		struct jnode **v = palloc(p, cap * sizeof(*v));
		if (v == NULL)
			return false;
		if (b->n)
			memcpy(v, b->v, b->n * sizeof(*v));
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = n;
	return true;
}

static struct jnode *
mkn(struct parser *p, enum jn_kind kind, size_t pos)
{
	struct jnode *n = palloc(p, sizeof(*n));

	if (n != NULL) {
		n->kind = kind;
		n->pos = pos;
	}
	return n;
}

static bool
end_block(struct parser *p)
{
	if (peek(p)->type == JT_BLOCK_END) {
		next(p);
		return true;
	}
	perr(p, peek(p), "expected '%%}', found '%.*s'", (int)peek(p)->n, peek(p)->s);
	return false;
}

/* "{% NAME" is next: consume "{%" and the name. */
static void
eat_tag(struct parser *p)
{
	next(p);
	next(p);
}

static bool
at_tag(struct parser *p, const char *name)
{
	return peek(p)->type == JT_BLOCK_BEGIN && tok_is(&p->tok[p->i + 1], JT_NAME, name);
}

static struct jnode *
parse_if(struct parser *p, size_t pos)
{
	static const char *const ends[] = {"elif", "else", "endif", NULL};
	struct jexpr *conds[MAX_ITEMS];
	struct jbody bodies[MAX_ITEMS];
	struct jnode *n = mkn(p, JN_IF, pos);
	size_t k = 0;

	do {
		if (k == MAX_ITEMS)
			return perr(p, peek(p), "too many elif branches");
		conds[k] = parse_expr(p, true);
		bodies[k] = (struct jbody){0};
		if (!end_block(p) || !parse_body(p, &bodies[k++], ends))
			return NULL;
	} while (at_tag(p, "elif") && (eat_tag(p), true));
	if (at_tag(p, "else")) {
		eat_tag(p);
		if (n == NULL || !end_block(p) || !parse_body(p, &n->else_body, ends + 2))
			return NULL;
	}
	if (n == NULL || !at_tag(p, "endif"))
		return perr(p, peek(p), "expected {%% endif %%}");
	eat_tag(p);
	n->conds = copy_list(p, conds, k);
	n->bodies = palloc(p, k * sizeof(*n->bodies));
	if (n->bodies != NULL)
		memcpy(n->bodies, bodies, k * sizeof(*bodies));
	n->n_conds = k;
	return end_block(p) ? n : NULL;
}

static bool
parse_targets(struct parser *p, struct jnode *n)
{
	const char *names[16];
	size_t k = 0;

	do {
		if (k == 16)
			return perr(p, peek(p), "too many loop targets") != NULL;
		if ((names[k++] = expect_name(p)) == NULL)
			return false;
	} while (at_op(p, ",") && (next(p), true));
	n->targets = palloc(p, k * sizeof(*n->targets));
	if (n->targets == NULL)
		return false;
	memcpy(n->targets, names, k * sizeof(*names));
	n->n_targets = k;
	return true;
}

static struct jnode *
parse_for(struct parser *p, size_t pos)
{
	static const char *const ends[] = {"else", "endfor", NULL};
	struct jnode *n = mkn(p, JN_FOR, pos);

	if (n == NULL || !parse_targets(p, n))
		return NULL;
	if (!at_name(p, "in"))
		return perr(p, peek(p), "expected 'in' in for loop");
	next(p);
	n->expr = parse_tuple_expr(p, false);
	if (at_name(p, "if")) {
		next(p);
		n->cond = parse_expr(p, false);
	}
	if (at_name(p, "recursive"))
		return perr(p, peek(p), "recursive loops are not supported");
	if (!end_block(p) || !parse_body(p, &n->body, ends))
		return NULL;
	if (at_tag(p, "else")) {
		eat_tag(p);
		if (!end_block(p) || !parse_body(p, &n->else_body, ends + 1))
			return NULL;
	}
	if (!at_tag(p, "endfor"))
		return perr(p, peek(p), "expected {%% endfor %%}");
	eat_tag(p);
	return end_block(p) ? n : NULL;
}

static struct jnode *
parse_set(struct parser *p, size_t pos)
{
	static const char *const ends[] = {"endset", NULL};
	struct jnode *n = mkn(p, JN_SET, pos);

	if (n == NULL || !parse_targets(p, n))
		return NULL;
	if (n->n_targets == 1 && at_op(p, ".")) {
		next(p);
		n->attr = expect_name(p);
	}
	if (peek(p)->type == JT_BLOCK_END && n->n_targets == 1 && n->attr == NULL) {
		next(p);
		n->kind = JN_SET_BLOCK;
		if (!parse_body(p, &n->body, ends) || !at_tag(p, "endset"))
			return perr(p, peek(p), "expected {%% endset %%}");
		eat_tag(p);
		return end_block(p) ? n : NULL;
	}
	if (!expect_op(p, "="))
		return NULL;
	n->expr = parse_tuple_expr(p, true);
	return end_block(p) ? n : NULL;
}

static bool
parse_params(struct parser *p, struct jnode *n)
{
	const char *names[64];
	struct jexpr *defs[64];
	size_t k = 0;

	if (!expect_op(p, "("))
		return false;
	while (!at_op(p, ")") && !p->failed && k < 64) {
		names[k] = expect_name(p);
		defs[k] = NULL;
		if (at_op(p, "=")) {
			next(p);
			defs[k] = parse_expr(p, true);
		}
		k++;
		if (!at_op(p, ","))
			break;
		next(p);
	}
	if (!expect_op(p, ")"))
		return false;
	n->params = palloc(p, (k ? k : 1) * sizeof(*n->params));
	n->defaults = copy_list(p, defs, k);
	if (n->params != NULL)
		memcpy(n->params, names, k * sizeof(*names));
	n->n_params = k;
	return !p->failed;
}

static struct jnode *
parse_macro(struct parser *p, size_t pos, bool call_block)
{
	static const char *const macro_end[] = {"endmacro", NULL}, *const call_end[] = {"endcall",
	                                                                                NULL};
	struct jnode *n = mkn(p, call_block ? JN_CALL_BLOCK : JN_MACRO, pos);

	if (n == NULL)
		return NULL;
	if (call_block) {
		if (at_op(p, "(") && !parse_params(p, n))
			return NULL;
		n->expr = parse_expr(p, true);
		if (n->expr == NULL || n->expr->kind != JX_CALL)
			return perr(p, peek(p), "{%% call %%} needs a macro call");
	} else if ((n->name = expect_name(p)) == NULL || !parse_params(p, n)) {
		return NULL;
	}
	if (!end_block(p) || !parse_body(p, &n->body, call_block ? call_end : macro_end))
		return NULL;
	if (!at_tag(p, call_block ? "endcall" : "endmacro"))
		return perr(p, peek(p), "expected {%% %s %%}", call_block ? "endcall" : "endmacro");
	eat_tag(p);
	return end_block(p) ? n : NULL;
}

static struct jnode *
parse_statement(struct parser *p)
{
	static const char *const gen_end[] = {"endgeneration", NULL};
	const struct jtoken *kw = &p->tok[p->i + 1];
	size_t pos = kw->pos;
	struct jnode *n;

	if (kw->type != JT_NAME)
		return perr(p, kw, "expected a statement name");
	eat_tag(p);
	if (tok_is(kw, JT_NAME, "if"))
		return parse_if(p, pos);
	if (tok_is(kw, JT_NAME, "for"))
		return parse_for(p, pos);
	if (tok_is(kw, JT_NAME, "set"))
		return parse_set(p, pos);
	if (tok_is(kw, JT_NAME, "macro") || tok_is(kw, JT_NAME, "call"))
		return parse_macro(p, pos, tok_is(kw, JT_NAME, "call"));
	if (tok_is(kw, JT_NAME, "break") || tok_is(kw, JT_NAME, "continue")) {
		n = mkn(p, tok_is(kw, JT_NAME, "break") ? JN_BREAK : JN_CONTINUE, pos);
		return end_block(p) ? n : NULL;
	}
	if (tok_is(kw, JT_NAME, "generation")) {
		if ((n = mkn(p, JN_GENERATION, pos)) == NULL || !end_block(p) ||
		    !parse_body(p, &n->body, gen_end) || !at_tag(p, "endgeneration"))
			return perr(p, peek(p), "expected {%% endgeneration %%}");
		eat_tag(p);
		return end_block(p) ? n : NULL;
	}
	return perr(p, kw, "unknown statement '%.*s'", (int)kw->n, kw->s);
}

/* Nodes until EOF (@ends NULL) or a "{% NAME" with NAME in @ends, left unconsumed. */
static bool
parse_body(struct parser *p, struct jbody *b, const char *const *ends)
{
	while (!p->failed) {
		const struct jtoken *t = peek(p);
		struct jnode *n = NULL;
		if (t->type == JT_EOF) {
			if (ends != NULL) {
				const char *const *last = ends;
				while (last[1] != NULL)
					last++;
				perr(p, t, "unexpected end of template, expected {%% %s %%}",
				     *last);
			}
			break;
		}
		if (t->type == JT_BLOCK_BEGIN && ends != NULL) {
			bool stop = false;
			for (const char *const *e = ends; *e != NULL; e++)
				stop |= tok_is(&p->tok[p->i + 1], JT_NAME, *e);
			if (stop)
				return true;
		}
		if (t->type == JT_TEXT) {
			next(p);
			if ((n = mkn(p, JN_TEXT, t->pos)) != NULL) {
				n->text = t->s;
				n->text_n = t->n;
			}
		} else if (t->type == JT_VAR_BEGIN) {
			next(p);
			if ((n = mkn(p, JN_OUTPUT, t->pos)) != NULL)
				n->expr = parse_tuple_expr(p, true);
			if (peek(p)->type != JT_VAR_END)
				return perr(p, peek(p), "expected '}}', found '%.*s'",
				            (int)peek(p)->n, peek(p)->s) != NULL;
			next(p);
		} else if (t->type == JT_BLOCK_BEGIN) {
			n = parse_statement(p);
		} else {
			return perr(p, t, "unexpected '%.*s'", (int)t->n, t->s) != NULL;
		}
		if (n == NULL || !body_push(p, b, n))
			break;
	}
	return !p->failed;
}

orch_err
jinja_parse(struct jinja_tmpl *t, const struct jlex *lex, struct orch_errinfo *reterr)
{
	struct parser p = {t, lex->v, 0, lex->n, reterr, ORCH_OK, 0};

	parse_body(&p, &t->root, NULL);
	return p.failed;
}
