/*
 * jinja_builtins.c - tests ("x is defined"), methods of values
 * (dict.items(), str.strip(), ...), and the globals templates call:
 * raise_exception, strftime_now, namespace, range, dict.
 *
 * Like transformers' ImmutableSandboxedEnvironment, methods that would
 * change a list or dict (append, update, pop, ...) are refused.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "jinja_internal.h"

static bool
is_number(struct jv v)
{
	return v.t == JV_INT || v.t == JV_FLOAT;
}

bool
jr_test(struct jrender *r, const struct jexpr *e, const char *name, struct jv v, struct jv *args,
        size_t n)
{
	struct jv a0 = n > 0 ? args[0] : jv_undef(NULL);

	if (strcmp(name, "defined") == 0)
		return v.t != JV_UNDEF;
	if (strcmp(name, "undefined") == 0)
		return v.t == JV_UNDEF;
	if (strcmp(name, "none") == 0)
		return v.t == JV_NONE;
	if (strcmp(name, "boolean") == 0)
		return v.t == JV_BOOL;
	if (strcmp(name, "true") == 0 || strcmp(name, "false") == 0)
		return v.t == JV_BOOL && v.u.b == (name[0] == 't');
	if (strcmp(name, "integer") == 0)
		return v.t == JV_INT;
	if (strcmp(name, "float") == 0)
		return v.t == JV_FLOAT;
	if (strcmp(name, "number") == 0)
		return is_number(v);
	if (strcmp(name, "string") == 0)
		return v.t == JV_STR;
	if (strcmp(name, "mapping") == 0)
		return v.t == JV_DICT;
	if (strcmp(name, "sequence") == 0)
		return v.t == JV_LIST || v.t == JV_STR || v.t == JV_DICT;
	if (strcmp(name, "iterable") == 0)
		return v.t == JV_LIST || v.t == JV_STR || v.t == JV_DICT || v.t == JV_UNDEF;
	if (strcmp(name, "callable") == 0)
		return v.t == JV_FUNC || v.t == JV_MACRO;
	if (strcmp(name, "equalto") == 0 || strcmp(name, "eq") == 0 || strcmp(name, "==") == 0 ||
	    strcmp(name, "sameas") == 0)
		return jv_equal(v, a0);
	if (strcmp(name, "ne") == 0 || strcmp(name, "!=") == 0)
		return !jv_equal(v, a0);
	if (strcmp(name, "in") == 0) {
		if (a0.t == JV_LIST)
			for (size_t i = 0; i < a0.u.l->n; i++)
				if (jv_equal(a0.u.l->v[i], v))
					return true;
		if (a0.t == JV_STR && v.t == JV_STR)
			return memmem(a0.u.s->s, a0.u.s->n, v.u.s->s, v.u.s->n) != NULL;
		if (a0.t == JV_DICT)
			for (size_t i = 0; i < a0.u.d->n; i++)
				if (jv_equal(a0.u.d->k[i], v))
					return true;
		return false;
	}
	if ((strcmp(name, "odd") == 0 || strcmp(name, "even") == 0) && v.t == JV_INT)
		return (v.u.i % 2 != 0) == (name[0] == 'o');
	if (strcmp(name, "divisibleby") == 0 && v.t == JV_INT && a0.t == JV_INT && a0.u.i != 0)
		return v.u.i % a0.u.i == 0;
	if (strcmp(name, "lower") == 0 || strcmp(name, "upper") == 0) {
		if (v.t != JV_STR)
			return false;
		struct jv c = jr_case(r, v, name[0] == 'l' ? 'l' : 'u');
		return c.t == JV_STR && memcmp(c.u.s->s, v.u.s->s, v.u.s->n) == 0;
	}
	if (strcmp(name, "lt") == 0 || strcmp(name, "gt") == 0 || strcmp(name, "le") == 0 ||
	    strcmp(name, "ge") == 0) {
		double x = v.t == JV_INT ? (double)v.u.i : v.t == JV_FLOAT ? v.u.f : (double)NAN;
		double y = a0.t == JV_INT     ? (double)a0.u.i
		           : a0.t == JV_FLOAT ? a0.u.f
		                              : (double)NAN;
		return name[0] == 'l' ? (name[1] == 't' ? x < y : x <= y)
		                      : (name[1] == 't' ? x > y : x >= y);
	}
	jr_fail(r, e->pos, ORCH_ETEMPLATE, "no test named '%s'", name);
	return false;
}

static struct jv
bound(struct jrender *r, struct jv self, const char *name)
{
	struct jfunc *f = jr_alloc(r, sizeof(*f));

	if (f == NULL) {
		jr_fail(r, 0, ORCH_ENOMEM, "out of memory");
		return jv_undef(NULL);
	}
	f->name = name;
	f->self = self;
	return (struct jv){.t = JV_FUNC, .u.fn = f};
}

struct jv
jr_method(struct jrender *r, struct jv self, const char *name)
{
	static const char *const dict_methods[] = {"items", "keys",       "values", "get", "update",
	                                           "pop",   "setdefault", "clear",  NULL};
	static const char *const str_methods[] = {
	        "strip",      "lstrip",   "rstrip", "upper",   "lower", "title", "capitalize",
	        "startswith", "endswith", "split",  "replace", "join",  "find",  NULL};
	static const char *const list_methods[] = {"append", "extend", "pop",  "insert",
	                                           "remove", "clear",  "sort", "reverse",
	                                           "index",  "count",  NULL};
	const char *const *m = self.t == JV_DICT && !self.u.d->ns ? dict_methods
	                       : self.t == JV_STR                 ? str_methods
	                       : self.t == JV_LIST                ? list_methods
	                                                          : NULL;

	for (; m != NULL && *m != NULL; m++)
		if (strcmp(*m, name) == 0)
			return bound(r, self, *m);
	return jv_undef(name);
}

struct jv
jr_global(struct jrender *r, const char *name)
{
	static const char *const globals[] = {"raise_exception", "strftime_now", "namespace",
	                                      "range",           "dict",         NULL};

	for (const char *const *g = globals; *g != NULL; g++)
		if (strcmp(*g, name) == 0)
			return bound(r, jv_undef(NULL), *g);
	return jv_undef(name);
}

static struct jv
dict_method(struct jrender *r, const struct jfunc *f, size_t pos, struct jv *args, size_t n)
{
	struct jdict *d = f->self.u.d;
	struct jv out;

	if (strcmp(f->name, "get") == 0) {
		struct jv dflt = n > 1 ? args[1] : jv_none();
		for (size_t i = 0; n > 0 && i < d->n; i++)
			if (jv_equal(d->k[i], args[0]))
				return d->v[i];
		return dflt;
	}
	if (strcmp(f->name, "items") != 0 && strcmp(f->name, "keys") != 0 &&
	    strcmp(f->name, "values") != 0) {
		jr_fail(r, pos, ORCH_ETEMPLATE,
		        "dict.%s() is not allowed: the sandbox is immutable", f->name);
		return jv_undef(NULL);
	}
	out = jv_list(r, d->n);
	for (size_t i = 0; i < d->n && out.t == JV_LIST; i++) {
		if (f->name[0] == 'k' || f->name[0] == 'v') {
			jv_list_push(r, out, f->name[0] == 'k' ? d->k[i] : d->v[i]);
			continue;
		}
		struct jv pair = jv_list(r, 2);
		if (pair.t != JV_LIST)
			break;
		jv_list_push(r, pair, d->k[i]);
		jv_list_push(r, pair, d->v[i]);
		jv_list_push(r, out, pair);
	}
	return out;
}

static bool
has_affix(struct jv s, struct jv a, bool suffix)
{
	if (a.t == JV_LIST) {
		for (size_t i = 0; i < a.u.l->n; i++)
			if (has_affix(s, a.u.l->v[i], suffix))
				return true;
		return false;
	}
	if (a.t != JV_STR || a.u.s->n > s.u.s->n)
		return false;
	return memcmp(s.u.s->s + (suffix ? s.u.s->n - a.u.s->n : 0), a.u.s->s, a.u.s->n) == 0;
}

/* str.split(sep=None, maxsplit=-1): no sep splits on runs of whitespace. */
static struct jv
str_split(struct jrender *r, struct jv s, struct jv sep, struct jv maxsplit)
{
	struct jv out = jv_list(r, 4);
	int64_t left = maxsplit.t == JV_INT && maxsplit.u.i >= 0 ? maxsplit.u.i : INT64_MAX;
	const char *p = s.u.s->s, *end = p + s.u.s->n;

	while (out.t == JV_LIST && p <= end) {
		if (sep.t == JV_STR && sep.u.s->n > 0) {
			const char *hit =
			        left > 0 ? memmem(p, (size_t)(end - p), sep.u.s->s, sep.u.s->n)
			                 : NULL;
			const char *stop = hit ? hit : end;
			jv_list_push(r, out, jv_str(r, p, (size_t)(stop - p)));
			if (hit == NULL)
				break;
			p = hit + sep.u.s->n;
			left--;
			continue;
		}
		while (p < end && (*p == ' ' || (*p >= '\t' && *p <= '\r')))
			p++;
		if (p == end)
			break;
		const char *w = p;
		while (p < end && (left == 0 || !(*p == ' ' || (*p >= '\t' && *p <= '\r'))))
			p++;
		jv_list_push(r, out, jv_str(r, w, (size_t)(p - w)));
		left--;
	}
	return out;
}

static struct jv
str_method(struct jrender *r, const struct jfunc *f, size_t pos, struct jv *args, size_t n)
{
	struct jv s = f->self, a0 = n > 0 ? args[0] : jv_none();
	const char *m = f->name;

	if (strcmp(m, "strip") == 0 || strcmp(m, "lstrip") == 0 || strcmp(m, "rstrip") == 0)
		return jr_strip(r, s, a0.t == JV_STR ? a0.u.s : NULL,
		                m[0] == 'l'   ? 1
		                : m[0] == 'r' ? 2
		                              : 3);
	if (strcmp(m, "upper") == 0 || strcmp(m, "lower") == 0 || strcmp(m, "title") == 0 ||
	    strcmp(m, "capitalize") == 0)
		return jr_case(r, s, m[0] == 'l' ? 'l' : m[0] == 'u' ? 'u' : m[0]);
	if (strcmp(m, "startswith") == 0 || strcmp(m, "endswith") == 0)
		return jv_bool(has_affix(s, a0, m[0] == 'e'));
	if (strcmp(m, "split") == 0)
		return str_split(r, s, a0, n > 1 ? args[1] : jv_none());
	if (strcmp(m, "find") == 0) {
		const char *hit =
		        a0.t == JV_STR ? memmem(s.u.s->s, s.u.s->n, a0.u.s->s, a0.u.s->n) : NULL;
		return jv_int(hit ? (int64_t)(hit - s.u.s->s) : -1);
	}
	if (strcmp(m, "join") == 0) {
		struct jv *items;
		size_t k;
		struct sbuf b = {0};
		if (!jr_iterate(r, a0, pos, &items, &k))
			return jv_undef(NULL);
		for (size_t i = 0; i < k; i++) {
			if (i)
				sbuf_put(&b, s.u.s->s, s.u.s->n);
			jv_to_string(items[i], &b);
			if (!jr_room(r, b.n)) {
				sbuf_fini(&b);
				return jv_undef(NULL);
			}
		}
		struct jv out = jv_from_sbuf(r, &b);
		return out;
	}
	/* replace: the filter has the same semantics */
	struct jexpr e = {.kind = JX_FILTER, .pos = pos, .name = "replace"};
	return jr_filter(r, &e, s, args, n, NULL, NULL, 0);
}

static struct jv
g_strftime(struct jrender *r, size_t pos, struct jv fmt)
{
	char buf[256];
	time_t now = r->opts->now >= 0 ? (time_t)r->opts->now : time(NULL);
	struct tm tm;

	if (fmt.t != JV_STR)
		return jr_fail(r, pos, ORCH_ETEMPLATE, "strftime_now needs a format string"),
		       jv_undef(NULL);
	gmtime_r(&now, &tm);
	/* The format is the template's, by design: strftime_now(fmt). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	size_t n = strftime(buf, sizeof(buf), fmt.u.s->s, &tm);
#pragma GCC diagnostic pop
	return jv_str(r, buf, n);
}

static struct jv
g_range(struct jrender *r, size_t pos, struct jv *args, size_t n)
{
	int64_t a = 0, b = 0, step = 1;
	struct jv out;

	for (size_t i = 0; i < n; i++)
		if (args[i].t != JV_INT)
			return jr_fail(r, pos, ORCH_ETEMPLATE, "range() needs integers"),
			       jv_undef(NULL);
	if (n == 1)
		b = args[0].u.i;
	else if (n >= 2) {
		a = args[0].u.i;
		b = args[1].u.i;
		step = n > 2 ? args[2].u.i : 1;
	}
	if (step == 0 || n == 0 || n > 3)
		return jr_fail(r, pos, ORCH_ETEMPLATE, "bad range() arguments"), jv_undef(NULL);
	int64_t count = step > 0 ? (b > a ? (b - a + step - 1) / step : 0)
	                         : (a > b ? (a - b - step - 1) / -step : 0);
	if (count > 1000000)
		return jr_fail(r, pos, ORCH_ETEMPLATE, "range() of %lld items is too long",
		               (long long)count),
		       jv_undef(NULL);
	out = jv_list(r, (size_t)count);
	for (int64_t i = 0; i < count && out.t == JV_LIST; i++)
		jv_list_push(r, out, jv_int(a + i * step));
	return out;
}

struct jv
jr_call_func(struct jrender *r, const struct jfunc *f, size_t pos, struct jv *args, size_t n,
             const char **kwn, struct jv *kwv, size_t nkw)
{
	if (f->self.t == JV_DICT)
		return dict_method(r, f, pos, args, n);
	if (f->self.t == JV_STR)
		return str_method(r, f, pos, args, n);
	if (f->self.t == JV_LIST) {
		if (strcmp(f->name, "index") != 0 && strcmp(f->name, "count") != 0)
			return jr_fail(r, pos, ORCH_ETEMPLATE,
			               "list.%s() is not allowed: the sandbox is immutable",
			               f->name),
			       jv_undef(NULL);
		int64_t count = 0, at = -1;
		for (size_t i = 0; n > 0 && i < f->self.u.l->n; i++) {
			if (jv_equal(f->self.u.l->v[i], args[0])) {
				count++;
				at = at < 0 ? (int64_t)i : at;
			}
		}
		if (f->name[0] == 'i' && at < 0)
			return jr_fail(r, pos, ORCH_ETEMPLATE, "value is not in list"),
			       jv_undef(NULL);
		return jv_int(f->name[0] == 'i' ? at : count);
	}
	if (strcmp(f->name, "raise_exception") == 0) {
		struct sbuf b = {0};
		if (n > 0)
			jv_to_string(args[0], &b);
		jr_fail(r, pos, ORCH_ETEMPLATE_RAISE, "%s", b.p ? b.p : "");
		sbuf_fini(&b);
		return jv_undef(NULL);
	}
	if (strcmp(f->name, "strftime_now") == 0)
		return g_strftime(r, pos, n > 0 ? args[0] : jv_none());
	if (strcmp(f->name, "range") == 0)
		return g_range(r, pos, args, n);
	/* namespace(...) and dict(...): keyword arguments (and a dict) become entries */
	struct jv d = jv_dict(r, nkw + 4);
	if (d.t != JV_DICT)
		return d;
	d.u.d->ns = f->name[0] == 'n';
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; args[i].t == JV_DICT && k < args[i].u.d->n; k++)
			jv_dict_set(r, d.u.d, args[i].u.d->k[k], args[i].u.d->v[k]);
	for (size_t i = 0; i < nkw; i++)
		jv_dict_set(r, d.u.d, jv_str(r, kwn[i], strlen(kwn[i])), kwv[i]);
	return d;
}
