/*
 * jinja_filters.c - the filters chat templates use, with jinja2's
 * signatures (positional or keyword arguments) and behaviour:
 * trim, length/count, tojson (transformers' version), string, list, items,
 * join, selectattr/rejectattr/select/reject, lower, upper, capitalize,
 * title, default/d, replace, first, last, indent, map, unique, int, float,
 * abs, round, reverse, sort, safe, escape/e.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "jinja_internal.h"

/* Named parameters of a builtin: positional first, then by keyword. */
struct jargs {
	struct jv *args;
	size_t n;
	const char **kwn;
	struct jv *kwv;
	size_t nkw;
};

static struct jv
arg(const struct jargs *a, size_t i, const char *name, struct jv dflt)
{
	if (i < a->n)
		return a->args[i];
	for (size_t k = 0; k < a->nkw; k++)
		if (strcmp(a->kwn[k], name) == 0)
			return a->kwv[k];
	return dflt;
}

static struct jv
str_of(struct jrender *r, struct jv v)
{
	struct sbuf b = {0};
	struct jv s;

	if (v.t == JV_STR)
		return v;
	jv_to_string(v, &b);
	s = jv_from_sbuf(r, &b);
	return s;
}

static struct jv
ffail(struct jrender *r, const struct jexpr *e, const char *msg)
{
	jr_fail(r, e->pos, ORCH_ETEMPLATE, "filter '%s': %s", e->name, msg);
	return jv_undef(NULL);
}

/* Python's str.isspace() for a code point. */
static bool
py_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
	       c == 0x202f || c == 0x205f || c == 0x3000;
}

/* str.strip/lstrip/rstrip: @chars NULL strips whitespace. @how: 1 left, 2 right, 3 both. */
struct jv
jr_strip(struct jrender *r, struct jv v, const struct jstr *chars, int how)
{
	const char *s = v.u.s->s;
	size_t a = 0, b = v.u.s->n, len;
	uint32_t cp;

	while ((how & 1) && a < b) {
		if (utf8_next((const uint8_t *)s + a, b - a, &cp, &len) != UTF8_OK)
			break;
		if (chars ? memmem(chars->s, chars->n, s + a, len) == NULL : !py_space(cp))
			break;
		a += len;
	}
	while ((how & 2) && b > a) {
		size_t k = b - 1;
		while (k > a && ((unsigned char)s[k] & 0xc0) == 0x80)
			k--;
		if (utf8_next((const uint8_t *)s + k, b - k, &cp, &len) != UTF8_OK)
			break;
		if (chars ? memmem(chars->s, chars->n, s + k, len) == NULL : !py_space(cp))
			break;
		b = k;
	}
	return jv_str(r, s + a, b - a);
}

/* ASCII case mapping; other characters are kept. */
struct jv
jr_case(struct jrender *r, struct jv v, int mode)
{
	struct jv out = jv_str(r, v.u.s->s, v.u.s->n);
	bool word_start = true;

	if (out.t != JV_STR)
		return out;
	for (size_t i = 0; i < out.u.s->n; i++) {
		char *c = &out.u.s->s[i];
		bool alpha = isalpha((unsigned char)*c);
		if (mode == 'l' || (mode == 'c' && i > 0) || (mode == 't' && !word_start))
			*c = (char)tolower((unsigned char)*c);
		else if (mode == 'u' || mode == 'c' || mode == 't')
			*c = (char)toupper((unsigned char)*c);
		word_start = !alpha && ((unsigned char)*c < 0x80);
	}
	return out;
}

static struct jv
to_list(struct jrender *r, const struct jexpr *e, struct jv v)
{
	struct jv *items, out;
	size_t n;

	if (!jr_iterate(r, v, e->pos, &items, &n))
		return jv_undef(NULL);
	out = jv_list(r, n);
	for (size_t i = 0; i < n && out.t == JV_LIST; i++)
		jv_list_push(r, out, items[i]);
	return out;
}

/* Attribute "a.b.c" (or an integer index) of @v, as selectattr/map/join see it. */
static struct jv
attr_path(struct jrender *r, struct jv v, struct jv attr)
{
	if (attr.t == JV_INT)
		return v.t == JV_LIST && attr.u.i >= 0 && (size_t)attr.u.i < v.u.l->n
		               ? v.u.l->v[attr.u.i]
		               : jv_undef(NULL);
	if (attr.t != JV_STR)
		return jv_undef(NULL);
	const char *p = attr.u.s->s;
	while (v.t != JV_UNDEF) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		struct jv *x = v.t == JV_DICT ? jv_dict_get(v.u.d, p, n) : NULL;
		v = x ? *x : jv_undef(NULL);
		if (dot == NULL)
			break;
		p = dot + 1;
	}
	(void)r;
	return v;
}

/* select/reject/selectattr/rejectattr: keep items whose test result is @want. */
static struct jv
select_items(struct jrender *r, const struct jexpr *e, struct jv v, const struct jargs *a,
             bool by_attr, bool want)
{
	struct jv *items, out;
	size_t n, first = by_attr ? 1 : 0;

	if (!jr_iterate(r, v, e->pos, &items, &n))
		return jv_undef(NULL);
	struct jv test = first < a->n ? a->args[first] : jv_undef(NULL);
	if (test.t != JV_UNDEF && test.t != JV_STR)
		return ffail(r, e, "the test name must be a string");
	out = jv_list(r, n);
	for (size_t i = 0; i < n && out.t == JV_LIST && !r->failed; i++) {
		struct jv x = by_attr ? attr_path(r, items[i], arg(a, 0, "attribute", jv_none()))
		                      : items[i];
		bool ok = test.t == JV_UNDEF ? jv_truthy(x)
		                             : jr_test(r, e, test.u.s->s, x, a->args + first + 1,
		                                       a->n > first + 1 ? a->n - first - 1 : 0);
		if (ok == want)
			jv_list_push(r, out, items[i]);
	}
	return out;
}

static struct jv
f_join(struct jrender *r, const struct jexpr *e, struct jv v, const struct jargs *a)
{
	struct jv sep = arg(a, 0, "d", jv_undef(NULL)), attr = arg(a, 1, "attribute", jv_none());
	struct jv *items, out;
	struct sbuf b = {0};
	size_t n;

	if (!jr_iterate(r, v, e->pos, &items, &n))
		return jv_undef(NULL);
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && sep.t != JV_UNDEF)
			jv_to_string(sep, &b);
		jv_to_string(attr.t == JV_NONE ? items[i] : attr_path(r, items[i], attr), &b);
		if (!jr_room(r, b.n)) {
			sbuf_fini(&b);
			return jv_undef(NULL);
		}
	}
	out = jv_from_sbuf(r, &b);
	return out;
}

static struct jv
f_tojson(struct jrender *r, const struct jexpr *e, struct jv v, const struct jargs *a)
{
	struct jv indent = arg(a, 0, "indent", jv_none()),
	          sort = arg(a, 3, "sort_keys", jv_bool(false));
	struct sbuf b = {0};
	struct jv out;

	if (indent.t != JV_NONE && (indent.t != JV_INT || indent.u.i > 64))
		return ffail(r, e, "indent must be an integer up to 64");
	if (indent.t == JV_INT && indent.u.i < 0)
		indent.u.i = 0; /* Python: a negative indent indents by nothing */
	if (!jv_tojson(v, indent.t == JV_INT ? (int)indent.u.i : -1, jv_truthy(sort), 0, &b)) {
		sbuf_fini(&b);
		char msg[96];
		snprintf(msg, sizeof(msg), "a %s value is not JSON serializable", jv_type_name(v));
		return ffail(r, e, msg);
	}
	out = jv_from_sbuf(r, &b);
	return out;
}

static struct jv
f_indent(struct jrender *r, struct jv v, const struct jargs *a)
{
	struct jv w = arg(a, 0, "width", jv_int(4)), first = arg(a, 1, "first", jv_bool(false));
	struct jv blank = arg(a, 2, "blank", jv_bool(false));
	struct sbuf pad = {0}, b = {0};
	struct jv s = str_of(r, v);
	size_t start = 0;

	if (w.t == JV_STR)
		sbuf_put(&pad, w.u.s->s, w.u.s->n);
	else
		for (int64_t i = 0; w.t == JV_INT && i < w.u.i && i < 1000; i++)
			sbuf_putc(&pad, ' ');
	for (size_t i = 0; s.t == JV_STR && i <= s.u.s->n; i++) {
		if (i < s.u.s->n && s.u.s->s[i] != '\n')
			continue;
		size_t len = i - start;
		bool indent_it = start == 0 ? jv_truthy(first) : (len > 0 || jv_truthy(blank));
		if (indent_it)
			sbuf_put(&b, pad.p ? pad.p : "", pad.n);
		sbuf_put(&b, s.u.s->s + start, len);
		if (i < s.u.s->n)
			sbuf_putc(&b, '\n');
		start = i + 1;
	}
	if (pad.oom)
		b.oom = true;
	sbuf_fini(&pad);
	return jv_from_sbuf(r, &b);
}

static struct jv
f_replace(struct jrender *r, struct jv v, const struct jargs *a)
{
	struct jv s = str_of(r, v), old = str_of(r, arg(a, 0, "old", jv_str(r, "", 0)));
	struct jv new = str_of(r, arg(a, 1, "new", jv_str(r, "", 0))),
	          cnt = arg(a, 2, "count", jv_none());
	int64_t left = cnt.t == JV_INT ? cnt.u.i : INT64_MAX;
	struct sbuf b = {0};
	size_t i = 0;

	if (s.t != JV_STR || old.t != JV_STR || new.t != JV_STR)
		return jv_undef(NULL);
	while (i <= s.u.s->n) {
		const char *hit = left > 0 && old.u.s->n > 0 ? memmem(s.u.s->s + i, s.u.s->n - i,
		                                                      old.u.s->s, old.u.s->n)
		                                             : NULL;
		if (hit == NULL) {
			sbuf_put(&b, s.u.s->s + i, s.u.s->n - i);
			break;
		}
		sbuf_put(&b, s.u.s->s + i, (size_t)(hit - (s.u.s->s + i)));
		sbuf_put(&b, new.u.s->s, new.u.s->n);
		i = (size_t)(hit - s.u.s->s) + old.u.s->n;
		left--;
		if (!jr_room(r, b.n)) {
			sbuf_fini(&b);
			return jv_undef(NULL);
		}
	}
	struct jv out = jv_from_sbuf(r, &b);
	return out;
}

static struct jv
f_map(struct jrender *r, const struct jexpr *e, struct jv v, const struct jargs *a)
{
	struct jv attr = arg(a, 99, "attribute", jv_undef(NULL)),
	          dflt = arg(a, 99, "default", jv_undef(NULL));
	struct jv *items, out;
	size_t n;

	if (!jr_iterate(r, v, e->pos, &items, &n))
		return jv_undef(NULL);
	if (attr.t == JV_UNDEF && (a->n == 0 || a->args[0].t != JV_STR))
		return ffail(r, e, "map needs a filter name or attribute=");
	out = jv_list(r, n);
	for (size_t i = 0; i < n && out.t == JV_LIST && !r->failed; i++) {
		struct jv x;
		if (attr.t != JV_UNDEF) {
			x = attr_path(r, items[i], attr);
			if (x.t == JV_UNDEF && dflt.t != JV_UNDEF)
				x = dflt;
		} else {
			struct jexpr sub = *e;
			sub.name = a->args[0].u.s->s;
			x = jr_filter(r, &sub, items[i], a->args + 1, a->n - 1, NULL, NULL, 0);
		}
		jv_list_push(r, out, x);
	}
	return out;
}

static struct jv
f_unique(struct jrender *r, const struct jexpr *e, struct jv v)
{
	struct jv *items, out;
	size_t n;

	if (!jr_iterate(r, v, e->pos, &items, &n))
		return jv_undef(NULL);
	out = jv_list(r, n);
	for (size_t i = 0; i < n && out.t == JV_LIST; i++) {
		bool seen = false;
		for (size_t k = 0; k < out.u.l->n && !seen; k++)
			seen = jv_equal(out.u.l->v[k], items[i]);
		if (!seen)
			jv_list_push(r, out, items[i]);
	}
	return out;
}

static struct jv
f_items(struct jrender *r, const struct jexpr *e, struct jv v)
{
	struct jv out;

	if (v.t == JV_UNDEF)
		return jv_list(r, 0);
	if (v.t != JV_DICT)
		return ffail(r, e, "can only get items from a mapping");
	out = jv_list(r, v.u.d->n);
	for (size_t i = 0; i < v.u.d->n && out.t == JV_LIST; i++) {
		struct jv pair = jv_list(r, 2);
		if (pair.t != JV_LIST)
			break;
		jv_list_push(r, pair, v.u.d->k[i]);
		jv_list_push(r, pair, v.u.d->v[i]);
		jv_list_push(r, out, pair);
	}
	return out;
}

static struct jv
f_length(struct jrender *r, const struct jexpr *e, struct jv v)
{
	switch (v.t) {
	case JV_UNDEF:
		return jv_int(0);
	case JV_STR:
		return jv_int((int64_t)jv_len_chars(v.u.s));
	case JV_LIST:
		return jv_int((int64_t)v.u.l->n);
	case JV_DICT:
		return jv_int((int64_t)v.u.d->n);
	default:
		break;
	}
	char msg[96];
	snprintf(msg, sizeof(msg), "object of type '%s' has no len()", jv_type_name(v));
	return ffail(r, e, msg);
}

static struct jv
f_first_last(struct jrender *r, const struct jexpr *e, struct jv v, bool last)
{
	struct jv *items;
	size_t n;

	if (!jr_iterate(r, v, e->pos, &items, &n))
		return jv_undef(NULL);
	return n == 0 ? jv_undef("first") : items[last ? n - 1 : 0];
}

static struct jv
f_number(struct jrender *r, struct jv v, const struct jargs *a, bool as_int)
{
	struct jv dflt = arg(a, 0, "default", as_int ? jv_int(0) : jv_float(0.0));

	if (v.t == JV_INT || v.t == JV_BOOL)
		return as_int ? jv_int(v.t == JV_BOOL ? v.u.b : v.u.i)
		              : jv_float(v.t == JV_BOOL ? v.u.b : (double)v.u.i);
	if (v.t == JV_FLOAT)
		return as_int ? jv_int((int64_t)v.u.f) : v;
	if (v.t == JV_STR) {
		char *end;
		double d = strtod(v.u.s->s, &end);
		if (end != v.u.s->s && *end == '\0')
			return as_int ? jv_int((int64_t)d) : jv_float(d);
	}
	(void)r;
	return dflt;
}

static struct jv
f_escape(struct jrender *r, struct jv v)
{
	struct jv s = str_of(r, v), out;
	struct sbuf b = {0};

	for (size_t i = 0; s.t == JV_STR && i < s.u.s->n; i++) {
		switch (s.u.s->s[i]) {
		case '&':
			sbuf_puts(&b, "&amp;");
			break;
		case '<':
			sbuf_puts(&b, "&lt;");
			break;
		case '>':
			sbuf_puts(&b, "&gt;");
			break;
		case '"':
			sbuf_puts(&b, "&#34;");
			break;
		case '\'':
			sbuf_puts(&b, "&#39;");
			break;
		default:
			sbuf_putc(&b, s.u.s->s[i]);
		}
	}
	out = jv_from_sbuf(r, &b);
	return out;
}

/* Sort order: strings bytewise, numbers numerically (mixed types compare as 0). */
static int
cmp_jv(const void *x, const void *y, void *ctx)
{
	const struct jv *a = x, *b = y;

	(void)ctx;
	if (a->t == JV_STR && b->t == JV_STR) {
		int c = memcmp(a->u.s->s, b->u.s->s, a->u.s->n < b->u.s->n ? a->u.s->n : b->u.s->n);
		return c ? c : (a->u.s->n > b->u.s->n) - (a->u.s->n < b->u.s->n);
	}
	double p = a->t == JV_INT ? (double)a->u.i : a->t == JV_FLOAT ? a->u.f : 0;
	double q = b->t == JV_INT ? (double)b->u.i : b->t == JV_FLOAT ? b->u.f : 0;
	return (p > q) - (p < q);
}

static struct jv
f_sort_reverse(struct jrender *r, const struct jexpr *e, struct jv v, const struct jargs *a,
               bool sort)
{
	struct jv out = to_list(r, e, v);

	if (out.t != JV_LIST)
		return out;
	if (sort)
		qsort_r(out.u.l->v, out.u.l->n, sizeof(struct jv), cmp_jv, NULL);
	if (!sort || jv_truthy(arg(a, 0, "reverse", jv_bool(false)))) {
		for (size_t i = 0, j = out.u.l->n; i + 1 < j; i++, j--) {
			struct jv t = out.u.l->v[i];
			out.u.l->v[i] = out.u.l->v[j - 1];
			out.u.l->v[j - 1] = t;
		}
	}
	if (!sort && v.t == JV_STR) {
		struct sbuf b = {0};
		for (size_t i = 0; i < out.u.l->n; i++)
			jv_to_string(out.u.l->v[i], &b);
		out = jv_from_sbuf(r, &b);
	}
	return out;
}

struct jv
jr_filter(struct jrender *r, const struct jexpr *e, struct jv v, struct jv *args, size_t n,
          const char **kwn, struct jv *kwv, size_t nkw)
{
	const struct jargs a = {args, n, kwn, kwv, nkw};
	const char *f = e->name;

	if (strcmp(f, "default") == 0 || strcmp(f, "d") == 0) {
		bool boolean = jv_truthy(arg(&a, 1, "boolean", jv_bool(false)));
		bool use = v.t == JV_UNDEF || (boolean && !jv_truthy(v));
		return use ? arg(&a, 0, "default_value", jv_str(r, "", 0)) : v;
	}
	if (strcmp(f, "trim") == 0) {
		struct jv chars = arg(&a, 0, "chars", jv_none());
		return jr_strip(r, str_of(r, v), chars.t == JV_STR ? chars.u.s : NULL, 3);
	}
	if (strcmp(f, "length") == 0 || strcmp(f, "count") == 0)
		return f_length(r, e, v);
	if (strcmp(f, "tojson") == 0)
		return f_tojson(r, e, v, &a);
	if (strcmp(f, "string") == 0)
		return str_of(r, v);
	if (strcmp(f, "list") == 0)
		return to_list(r, e, v);
	if (strcmp(f, "items") == 0)
		return f_items(r, e, v);
	if (strcmp(f, "join") == 0)
		return f_join(r, e, v, &a);
	if (strcmp(f, "selectattr") == 0 || strcmp(f, "rejectattr") == 0)
		return select_items(r, e, v, &a, true, f[0] == 's');
	if (strcmp(f, "select") == 0 || strcmp(f, "reject") == 0)
		return select_items(r, e, v, &a, false, f[0] == 's' && f[2] == 'l');
	if (strcmp(f, "lower") == 0 || strcmp(f, "upper") == 0 || strcmp(f, "capitalize") == 0 ||
	    strcmp(f, "title") == 0)
		return jr_case(r, str_of(r, v), f[0] == 'l' ? 'l' : f[0] == 'u' ? 'u' : f[0]);
	if (strcmp(f, "replace") == 0)
		return f_replace(r, v, &a);
	if (strcmp(f, "first") == 0 || strcmp(f, "last") == 0)
		return f_first_last(r, e, v, f[0] == 'l');
	if (strcmp(f, "indent") == 0)
		return f_indent(r, v, &a);
	if (strcmp(f, "map") == 0)
		return f_map(r, e, v, &a);
	if (strcmp(f, "unique") == 0)
		return f_unique(r, e, v);
	if (strcmp(f, "int") == 0 || strcmp(f, "float") == 0)
		return f_number(r, v, &a, f[0] == 'i');
	if (strcmp(f, "abs") == 0)
		return v.t == JV_INT     ? jv_int(v.u.i < 0 ? -v.u.i : v.u.i)
		       : v.t == JV_FLOAT ? jv_float(fabs(v.u.f))
		                         : ffail(r, e, "abs needs a number");
	if (strcmp(f, "round") == 0) {
		struct jv p = arg(&a, 0, "precision", jv_int(0));
		double m = pow(10.0, (double)(p.t == JV_INT ? p.u.i : 0));
		double x = v.t == JV_INT ? (double)v.u.i : v.t == JV_FLOAT ? v.u.f : 0.0;
		return jv_float(round(x * m) / m);
	}
	if (strcmp(f, "sort") == 0 || strcmp(f, "reverse") == 0)
		return f_sort_reverse(r, e, v, &a, f[0] == 's');
	if (strcmp(f, "safe") == 0)
		return v;
	if (strcmp(f, "escape") == 0 || strcmp(f, "e") == 0)
		return f_escape(r, v);
	char msg[96];
	snprintf(msg, sizeof(msg), "no filter named '%s'", f);
	jr_fail(r, e->pos, ORCH_ETEMPLATE, "%s", msg);
	return jv_undef(NULL);
}
