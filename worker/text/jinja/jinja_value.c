/*
 * jinja_value.c - template values: construction (all in the render arena),
 * truthiness, equality, Python's str()/repr() of each type (what "{{ x }}"
 * prints), transformers' tojson, and conversion from JSON input.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/utf8.h"
#include "jinja_internal.h"

struct jv
jv_undef(const char *name)
{
	return (struct jv){.t = JV_UNDEF, .u.undef_name = name};
}

struct jv
jv_none(void)
{
	return (struct jv){.t = JV_NONE};
}

struct jv
jv_bool(bool b)
{
	return (struct jv){.t = JV_BOOL, .u.b = b};
}

struct jv
jv_int(int64_t i)
{
	return (struct jv){.t = JV_INT, .u.i = i};
}

struct jv
jv_float(double f)
{
	return (struct jv){.t = JV_FLOAT, .u.f = f};
}

void *
jr_alloc(struct jrender *r, size_t n)
{
	void *p;

	if (r->a->bytes + n > JINJA_MAX_MEMORY) {
		jr_fail(r, 0, ORCH_ETEMPLATE, "template uses more than %u bytes of memory",
		        JINJA_MAX_MEMORY);
		return NULL;
	}
	if ((p = arena_alloc(r->a, n)) == NULL)
		jr_fail(r, 0, ORCH_ENOMEM, "out of memory");
	return p;
}

bool
jr_room(struct jrender *r, size_t n)
{
	if (r->a->bytes + n <= JINJA_MAX_MEMORY)
		return true;
	jr_fail(r, 0, ORCH_ETEMPLATE, "template uses more than %u bytes of memory",
	        JINJA_MAX_MEMORY);
	return false;
}

struct jv
jv_str(struct jrender *r, const char *s, size_t n)
{
	struct jstr *js = jr_alloc(r, sizeof(*js) + n + 1);

	if (js == NULL)
		return jv_undef(NULL);
	js->n = n;
	if (n)
		memcpy(js->s, s, n);
	js->s[n] = '\0';
	return (struct jv){.t = JV_STR, .u.s = js};
}

struct jv
jv_from_sbuf(struct jrender *r, struct sbuf *b)
{
	struct jv v = b->oom ? jv_undef(NULL) : jv_str(r, b->p ? b->p : "", b->n);

	if (b->oom)
		jr_fail(r, 0, ORCH_ENOMEM, "out of memory");
	sbuf_fini(b);
	return v;
}

struct jv
jv_list(struct jrender *r, size_t cap)
{
	struct jlist *l = jr_alloc(r, sizeof(*l));

	if (l == NULL || (cap && (l->v = jr_alloc(r, cap * sizeof(*l->v))) == NULL))
		return jv_undef(NULL);
	l->cap = cap;
	return (struct jv){.t = JV_LIST, .u.l = l};
}

struct jv
jv_dict(struct jrender *r, size_t cap)
{
	struct jdict *d = jr_alloc(r, sizeof(*d));

	if (d == NULL || (cap && ((d->k = jr_alloc(r, cap * sizeof(*d->k))) == NULL ||
	                          (d->v = jr_alloc(r, cap * sizeof(*d->v))) == NULL)))
		return jv_undef(NULL);
	d->cap = cap;
	return (struct jv){.t = JV_DICT, .u.d = d};
}

bool
jv_list_push(struct jrender *r, struct jv list, struct jv item)
{
	struct jlist *l = list.u.l;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		struct jv *v = jr_alloc(r, cap * sizeof(*v));
		if (v == NULL)
			return false;
		if (l->n)
			memcpy(v, l->v, l->n * sizeof(*v));
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = item;
	return true;
}

static bool
key_is(struct jv k, const char *s, size_t n)
{
	return k.t == JV_STR && k.u.s->n == n && memcmp(k.u.s->s, s, n) == 0;
}

struct jv *
jv_dict_get(const struct jdict *d, const char *key, size_t n)
{
	for (size_t i = 0; i < d->n; i++)
		if (key_is(d->k[i], key, n))
			return &d->v[i];
	return NULL;
}

bool
jv_dict_set(struct jrender *r, struct jdict *d, struct jv key, struct jv val)
{
	for (size_t i = 0; i < d->n; i++) {
		if (jv_equal(d->k[i], key)) {
			d->v[i] = val;
			return true;
		}
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 8;
		struct jv *k = jr_alloc(r, cap * sizeof(*k)), *v = jr_alloc(r, cap * sizeof(*v));
		if (k == NULL || v == NULL)
			return false;
		if (d->n) {
			memcpy(k, d->k, d->n * sizeof(*k));
			memcpy(v, d->v, d->n * sizeof(*v));
		}
		d->k = k;
		d->v = v;
		d->cap = cap;
	}
	d->k[d->n] = key;
	d->v[d->n++] = val;
	return true;
}

bool
jv_truthy(struct jv v)
{
	switch (v.t) {
	case JV_UNDEF:
	case JV_NONE:
		return false;
	case JV_BOOL:
		return v.u.b;
	case JV_INT:
		return v.u.i != 0;
	case JV_FLOAT:
		return v.u.f != 0.0;
	case JV_STR:
		return v.u.s->n > 0;
	case JV_LIST:
		return v.u.l->n > 0;
	case JV_DICT:
		return v.u.d->n > 0 || v.u.d->ns;
	case JV_FUNC:
	case JV_MACRO:
		return true;
	}
	return false;
}

static bool
is_num(struct jv v)
{
	return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL;
}

static double
num(struct jv v)
{
	return v.t == JV_INT ? (double)v.u.i : v.t == JV_BOOL ? (v.u.b ? 1.0 : 0.0) : v.u.f;
}

static bool equal_d(struct jv a, struct jv b, int depth);

bool
jv_equal(struct jv a, struct jv b)
{
	return equal_d(a, b, 0);
}

/* Deep equality; containers nested past 64 levels (cycles) compare unequal. */
static bool
equal_d(struct jv a, struct jv b, int depth)
{
	if (is_num(a) && is_num(b)) {
		if (a.t == JV_INT && b.t == JV_INT)
			return a.u.i == b.u.i;
		return num(a) == num(b);
	}
	if (a.t != b.t)
		return false;
	switch (a.t) {
	case JV_UNDEF:
	case JV_NONE:
		return true;
	case JV_STR:
		return a.u.s->n == b.u.s->n && memcmp(a.u.s->s, b.u.s->s, a.u.s->n) == 0;
	case JV_LIST:
		if (a.u.l->n != b.u.l->n)
			return false;
		for (size_t i = 0; i < a.u.l->n; i++)
			if (depth > 64 || !equal_d(a.u.l->v[i], b.u.l->v[i], depth + 1))
				return false;
		return true;
	case JV_DICT:
		if (a.u.d == b.u.d)
			return true;
		if (a.u.d->n != b.u.d->n || a.u.d->ns || b.u.d->ns)
			return false;
		for (size_t i = 0; i < a.u.d->n; i++) {
			struct jv k = a.u.d->k[i];
			struct jv *o =
			        k.t == JV_STR ? jv_dict_get(b.u.d, k.u.s->s, k.u.s->n) : NULL;
			if (o == NULL || depth > 64 || !equal_d(a.u.d->v[i], *o, depth + 1))
				return false;
		}
		return true;
	case JV_FUNC:
		return a.u.fn == b.u.fn;
	case JV_MACRO:
		return a.u.m == b.u.m;
	case JV_BOOL:
	case JV_INT:
	case JV_FLOAT:
		break;
	}
	return false;
}

const char *
jv_type_name(struct jv v)
{
	static const char *const names[] = {"undefined", "NoneType", "bool", "int",      "float",
	                                    "str",       "list",     "dict", "function", "macro"};

	return v.t == JV_DICT && v.u.d->ns ? "Namespace" : names[v.t];
}

size_t
jv_len_chars(const struct jstr *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += ((unsigned char)s->s[i] & 0xc0) != 0x80;
	return n;
}

/* Python's repr(float): the shortest digits that read back, in Python's layout. */
static void
float_repr(double f, struct sbuf *out)
{
	char buf[64], digits[32];
	int exp, nd = 0;

	if (isnan(f)) {
		sbuf_puts(out, "nan");
		return;
	}
	if (isinf(f)) {
		sbuf_puts(out, f < 0 ? "-inf" : "inf");
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, sizeof(buf), "%.*e", p - 1, f);
		if (strtod(buf, NULL) == f)
			break;
	}
	/* buf: [-]d[.ddd]e[+-]xx */
	const char *s = buf;
	if (*s == '-') {
		sbuf_putc(out, '-');
		s++;
	}
	for (; *s != 'e'; s++)
		if (*s != '.')
			digits[nd++] = *s;
	exp = atoi(s + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	if (exp < -4 || exp >= 16) {
		sbuf_putc(out, digits[0]);
		if (nd > 1) {
			sbuf_putc(out, '.');
			sbuf_put(out, digits + 1, (size_t)nd - 1);
		}
		sbuf_printf(out, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
	} else if (exp < 0) {
		sbuf_puts(out, "0.");
		for (int i = -1; i > exp; i--)
			sbuf_putc(out, '0');
		sbuf_put(out, digits, (size_t)nd);
	} else {
		for (int i = 0; i <= exp; i++)
			sbuf_putc(out, i < nd ? digits[i] : '0');
		sbuf_putc(out, '.');
		if (nd > exp + 1)
			sbuf_put(out, digits + exp + 1, (size_t)(nd - exp - 1));
		else
			sbuf_putc(out, '0');
	}
}

/* Python's repr(str): single quotes unless the text has ' and no ". */
static void
str_repr(const struct jstr *s, struct sbuf *out)
{
	char q = memchr(s->s, '\'', s->n) && !memchr(s->s, '"', s->n) ? '"' : '\'';

	sbuf_putc(out, q);
	for (size_t i = 0; i < s->n; i++) {
		unsigned char c = (unsigned char)s->s[i];
		if (c == (unsigned char)q || c == '\\')
			sbuf_printf(out, "\\%c", c);
		else if (c == '\n')
			sbuf_puts(out, "\\n");
		else if (c == '\r')
			sbuf_puts(out, "\\r");
		else if (c == '\t')
			sbuf_puts(out, "\\t");
		else if (c < 0x20 || c == 0x7f)
			sbuf_printf(out, "\\x%02x", c);
		else
			sbuf_putc(out, (char)c);
	}
	sbuf_putc(out, q);
}

static void to_string_d(struct jv v, struct sbuf *out, int depth);

/* Containers nested past 32 levels (a namespace holding itself) print as "...", as Python does. */
static void
repr(struct jv v, struct sbuf *out, int depth)
{
	if (v.t == JV_STR)
		str_repr(v.u.s, out);
	else if (depth > 32 && (v.t == JV_LIST || v.t == JV_DICT))
		sbuf_puts(out, "...");
	else
		to_string_d(v, out, depth + 1);
}

void
jv_to_string(struct jv v, struct sbuf *out)
{
	to_string_d(v, out, 0);
}

static void
to_string_d(struct jv v, struct sbuf *out, int depth)
{
	switch (v.t) {
	case JV_UNDEF:
		return;
	case JV_NONE:
		sbuf_puts(out, "None");
		return;
	case JV_BOOL:
		sbuf_puts(out, v.u.b ? "True" : "False");
		return;
	case JV_INT:
		sbuf_printf(out, "%lld", (long long)v.u.i);
		return;
	case JV_FLOAT:
		float_repr(v.u.f, out);
		return;
	case JV_STR:
		sbuf_put(out, v.u.s->s, v.u.s->n);
		return;
	case JV_LIST:
		sbuf_putc(out, '[');
		for (size_t i = 0; i < v.u.l->n; i++) {
			if (i)
				sbuf_puts(out, ", ");
			repr(v.u.l->v[i], out, depth);
		}
		sbuf_putc(out, ']');
		return;
	case JV_DICT:
		sbuf_puts(out, v.u.d->ns ? "<Namespace {" : "{");
		for (size_t i = 0; i < v.u.d->n; i++) {
			if (i)
				sbuf_puts(out, ", ");
			repr(v.u.d->k[i], out, depth);
			sbuf_puts(out, ": ");
			repr(v.u.d->v[i], out, depth);
		}
		sbuf_puts(out, v.u.d->ns ? "}>" : "}");
		return;
	case JV_FUNC:
		sbuf_printf(out, "<function %s>", v.u.fn->name);
		return;
	case JV_MACRO:
		sbuf_printf(out, "<Macro '%s'>", v.u.m->def->name ? v.u.m->def->name : "caller");
		return;
	}
}

/* A JSON string: ensure_ascii=False, so only '"', '\\' and controls are escaped. */
static void
json_str(const char *s, size_t n, struct sbuf *out)
{
	sbuf_putc(out, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"':
			sbuf_puts(out, "\\\"");
			break;
		case '\\':
			sbuf_puts(out, "\\\\");
			break;
		case '\n':
			sbuf_puts(out, "\\n");
			break;
		case '\r':
			sbuf_puts(out, "\\r");
			break;
		case '\t':
			sbuf_puts(out, "\\t");
			break;
		case '\b':
			sbuf_puts(out, "\\b");
			break;
		case '\f':
			sbuf_puts(out, "\\f");
			break;
		default:
			if (c < 0x20)
				sbuf_printf(out, "\\u%04x", c);
			else
				sbuf_putc(out, (char)c);
		}
	}
	sbuf_putc(out, '"');
}

static void
json_newline(int indent, int level, struct sbuf *out)
{
	sbuf_putc(out, '\n');
	for (int i = 0; i < indent * level; i++)
		sbuf_putc(out, ' ');
}

static int
cmp_keys(const void *a, const void *b, void *ctx)
{
	const struct jdict *d = ctx;
	const struct jstr *x = d->k[*(const size_t *)a].u.s, *y = d->k[*(const size_t *)b].u.s;
	int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);

	return c ? c : (x->n > y->n) - (x->n < y->n);
}

static bool
json_dict(const struct jdict *d, int indent, bool sort, int level, struct sbuf *out)
{
	size_t order[512];

	if (d->n > 512)
		return false;
	for (size_t i = 0; i < d->n; i++) {
		if (d->k[i].t != JV_STR)
			return false;
		order[i] = i;
	}
	if (sort)
		qsort_r(order, d->n, sizeof(*order), cmp_keys, (void *)d);
	sbuf_putc(out, '{');
	for (size_t i = 0; i < d->n; i++) {
		if (i)
			sbuf_puts(out, indent >= 0 ? "," : ", ");
		if (indent >= 0)
			json_newline(indent, level + 1, out);
		json_str(d->k[order[i]].u.s->s, d->k[order[i]].u.s->n, out);
		sbuf_puts(out, ": ");
		if (!jv_tojson(d->v[order[i]], indent, sort, level + 1, out))
			return false;
	}
	if (indent >= 0 && d->n)
		json_newline(indent, level, out);
	sbuf_putc(out, '}');
	return true;
}

bool
jv_tojson(struct jv v, int indent, bool sort_keys, int level, struct sbuf *out)
{
	if (level > 64)
		return false;
	switch (v.t) {
	case JV_NONE:
		sbuf_puts(out, "null");
		return true;
	case JV_BOOL:
		sbuf_puts(out, v.u.b ? "true" : "false");
		return true;
	case JV_INT:
		sbuf_printf(out, "%lld", (long long)v.u.i);
		return true;
	case JV_FLOAT:
		if (isnan(v.u.f) || isinf(v.u.f))
			sbuf_puts(out, isnan(v.u.f) ? "NaN" : v.u.f < 0 ? "-Infinity" : "Infinity");
		else
			float_repr(v.u.f, out);
		return true;
	case JV_STR:
		json_str(v.u.s->s, v.u.s->n, out);
		return true;
	case JV_LIST:
		sbuf_putc(out, '[');
		for (size_t i = 0; i < v.u.l->n; i++) {
			if (i)
				sbuf_puts(out, indent >= 0 ? "," : ", ");
			if (indent >= 0)
				json_newline(indent, level + 1, out);
			if (!jv_tojson(v.u.l->v[i], indent, sort_keys, level + 1, out))
				return false;
		}
		if (indent >= 0 && v.u.l->n)
			json_newline(indent, level, out);
		sbuf_putc(out, ']');
		return true;
	case JV_DICT:
		return !v.u.d->ns && json_dict(v.u.d, indent, sort_keys, level, out);
	case JV_UNDEF:
	case JV_FUNC:
	case JV_MACRO:
		break;
	}
	return false;
}

struct jv
jv_from_json(struct jrender *r, const void *vj)
{
	const cJSON *j = vj;
	struct jv v;

	if (j == NULL || cJSON_IsNull(j))
		return jv_none();
	if (cJSON_IsBool(j))
		return jv_bool(cJSON_IsTrue(j));
	if (cJSON_IsNumber(j)) {
		double d = j->valuedouble;
		if (d == floor(d) && fabs(d) < 9007199254740992.0)
			return jv_int((int64_t)d);
		return jv_float(d);
	}
	if (cJSON_IsString(j))
		return jv_str(r, j->valuestring, strlen(j->valuestring));
	if (cJSON_IsArray(j)) {
		v = jv_list(r, (size_t)cJSON_GetArraySize(j));
		for (const cJSON *c = j->child; c != NULL && v.t == JV_LIST; c = c->next)
			jv_list_push(r, v, jv_from_json(r, c));
		return v;
	}
	v = jv_dict(r, (size_t)cJSON_GetArraySize(j));
	for (const cJSON *c = j->child; c != NULL && v.t == JV_DICT; c = c->next)
		jv_dict_set(r, v.u.d, jv_str(r, c->string, strlen(c->string)), jv_from_json(r, c));
	return v;
}
