/*
 * jinja_eval.c - rendering: scopes, expressions, statements.
 *
 * Design notes
 * - Values live in a per-render arena, freed in one go at the end; nothing
 *   is reference counted and no value outlives the render.
 * - Scopes as jinja2 has them: the template's top level; a fresh scope for
 *   every loop iteration (so "set" in a loop body does not leak out, which
 *   is why templates use namespace()); a fresh scope per macro call whose
 *   parent is the top level. "if" opens no scope.
 * - Undefined values (jinja2.Undefined): a missing variable, key or
 *   attribute is undefined; it is falsy, prints as "", iterates as empty,
 *   compares unequal; taking an attribute or item of it, calling it, or
 *   arithmetic on it is an error naming what was undefined.
 * - The first error sets r->failed; evaluation then unwinds, every
 *   function returning undefined, and no more output is produced.
 * - Limits: 50M evaluation steps, macro nesting 64, 64 MiB of output.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jinja_internal.h"

orch_err
jr_fail(struct jrender *r, size_t pos, orch_err code, const char *fmt, ...)
{
	char where[256], what[400];
	va_list ap;

	if (r->failed)
		return r->failed;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	r->failed = code;
	if (code == ORCH_ETEMPLATE_RAISE || code == ORCH_ENOMEM)
		return orch_errf(r->err, code, "%s", what);
	jinja_where(r->t->name, r->t->src, pos, where, sizeof(where));
	return orch_errf(r->err, code, "%s: %s", where, what);
}

static struct jv
fail(struct jrender *r, size_t pos, const char *what)
{
	jr_fail(r, pos, ORCH_ETEMPLATE, "%s", what);
	return jv_undef(NULL);
}

static struct jv
undefined_error(struct jrender *r, size_t pos, struct jv v)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "'%s' is undefined", v.u.undef_name ? v.u.undef_name : "value");
	return fail(r, pos, msg);
}

struct jv
jr_lookup(struct jrender *r, const char *name)
{
	size_t n = strlen(name);

	for (struct jscope *s = r->scope; s != NULL; s = s->parent) {
		struct jv *v = jv_dict_get(&s->vars, name, n);
		if (v != NULL)
			return *v;
	}
	return jr_global(r, name);
}

bool
jr_set(struct jrender *r, const char *name, struct jv v)
{
	return jv_dict_set(r, &r->scope->vars, jv_str(r, name, strlen(name)), v);
}

/* Python index semantics: negative counts from the end. */
static bool
norm_index(int64_t i, size_t n, size_t *out)
{
	if (i < 0)
		i += (int64_t)n;
	if (i < 0 || (uint64_t)i >= n)
		return false;
	*out = (size_t)i;
	return true;
}

/* Byte offset of code point @k in @s. */
static size_t
char_offset(const struct jstr *s, size_t k)
{
	size_t i = 0;

	for (; i < s->n && k > 0; i++)
		if (((unsigned char)s->s[i + 1] & 0xc0) != 0x80 || i + 1 == s->n)
			k--;
	return i < s->n ? i : s->n;
}

static struct jv
eval_item(struct jrender *r, const struct jexpr *e, struct jv obj, struct jv key)
{
	size_t i;

	if (obj.t == JV_UNDEF)
		return undefined_error(r, e->pos, obj);
	if (obj.t == JV_DICT) {
		for (size_t k = 0; k < obj.u.d->n; k++)
			if (jv_equal(obj.u.d->k[k], key))
				return obj.u.d->v[k];
		return key.t == JV_STR ? jv_undef(key.u.s->s) : jv_undef(NULL);
	}
	if (key.t == JV_STR) /* obj["attr"] falls back to attributes, as jinja2's getitem does */
		return jr_method(r, obj, key.u.s->s);
	if (key.t != JV_INT)
		return jv_undef(NULL);
	if (obj.t == JV_LIST)
		return norm_index(key.u.i, obj.u.l->n, &i) ? obj.u.l->v[i] : jv_undef(NULL);
	if (obj.t == JV_STR && norm_index(key.u.i, jv_len_chars(obj.u.s), &i)) {
		size_t a = char_offset(obj.u.s, i), b = char_offset(obj.u.s, i + 1);
		return jv_str(r, obj.u.s->s + a, b - a);
	}
	return jv_undef(NULL);
}

static struct jv
eval_attr(struct jrender *r, const struct jexpr *e, struct jv obj)
{
	if (obj.t == JV_UNDEF)
		return undefined_error(r, e->pos, obj);
	if (obj.t == JV_DICT) {
		struct jv *v = jv_dict_get(obj.u.d, e->name, strlen(e->name));
		if (v != NULL)
			return *v;
	}
	return jr_method(r, obj, e->name);
}

/* Slice bounds for @n items, Python's rules. */
static bool
slice_bounds(struct jrender *r, const struct jexpr *e, size_t n, int64_t *start, int64_t *stop,
             int64_t *step)
{
	struct jv a = e->b ? jr_eval(r, e->b) : jv_none(), b = e->c ? jr_eval(r, e->c) : jv_none();
	struct jv c = e->d ? jr_eval(r, e->d) : jv_none();
	int64_t len = (int64_t)n;

	*step = c.t == JV_INT ? c.u.i : 1;
	if (*step == 0 || (a.t != JV_INT && a.t != JV_NONE) || (b.t != JV_INT && b.t != JV_NONE))
		return fail(r, e->pos, "slice indices must be integers and the step non-zero"),
		       false;
	*start = a.t == JV_INT ? a.u.i : (*step > 0 ? 0 : len - 1);
	*stop = b.t == JV_INT ? b.u.i : (*step > 0 ? len : -len - 1);
	if (*start < 0)
		*start += len;
	if (*stop < 0)
		*stop += len;
	if (*step > 0) {
		*start = *start < 0 ? 0 : *start > len ? len : *start;
		*stop = *stop < 0 ? 0 : *stop > len ? len : *stop;
	} else {
		*start = *start < -1 ? -1 : *start > len - 1 ? len - 1 : *start;
		*stop = *stop < -1 ? -1 : *stop > len - 1 ? len - 1 : *stop;
	}
	return true;
}

static struct jv
eval_slice(struct jrender *r, const struct jexpr *e)
{
	struct jv obj = jr_eval(r, e->a), out;
	int64_t start, stop, step;
	size_t n;

	if (obj.t != JV_LIST && obj.t != JV_STR)
		return obj.t == JV_UNDEF ? undefined_error(r, e->pos, obj)
		                         : fail(r, e->pos, "only lists and strings can be sliced");
	n = obj.t == JV_LIST ? obj.u.l->n : jv_len_chars(obj.u.s);
	if (!slice_bounds(r, e, n, &start, &stop, &step))
		return jv_undef(NULL);
	if (obj.t == JV_LIST) {
		out = jv_list(r, 0);
		for (int64_t i = start; out.t == JV_LIST && (step > 0 ? i < stop : i > stop);
		     i += step)
			jv_list_push(r, out, obj.u.l->v[i]);
		return out;
	}
	struct sbuf b = {0};
	for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
		size_t a = char_offset(obj.u.s, (size_t)i), z = char_offset(obj.u.s, (size_t)i + 1);
		sbuf_put(&b, obj.u.s->s + a, z - a);
	}
	out = jv_from_sbuf(r, &b);
	return out;
}

/* Positional and keyword arguments of a call, filter or test. */
static bool
eval_args(struct jrender *r, const struct jexpr *e, struct jv **args, struct jv **kwv)
{
	*args = jr_alloc(r, (e->n_args + 1) * sizeof(**args));
	*kwv = jr_alloc(r, (e->n_kw + 1) * sizeof(**kwv));
	if (*args == NULL || *kwv == NULL)
		return jr_fail(r, e->pos, ORCH_ENOMEM, "out of memory"), false;
	for (size_t i = 0; i < e->n_args; i++)
		(*args)[i] = jr_eval(r, e->args[i]);
	for (size_t i = 0; i < e->n_kw; i++)
		(*kwv)[i] = jr_eval(r, e->vals[i]);
	return !r->failed;
}

static struct jv
eval_call(struct jrender *r, const struct jexpr *e)
{
	struct jv fn = jr_eval(r, e->a), *args, *kwv;

	if (r->failed || !eval_args(r, e, &args, &kwv))
		return jv_undef(NULL);
	if (fn.t == JV_FUNC)
		return jr_call_func(r, fn.u.fn, e->pos, args, e->n_args, e->kwnames, kwv, e->n_kw);
	if (fn.t == JV_MACRO)
		return jr_call_macro(r, fn.u.m, e->pos, args, e->n_args, e->kwnames, kwv, e->n_kw);
	if (fn.t == JV_UNDEF)
		return undefined_error(r, e->pos, fn);
	char msg[96];
	snprintf(msg, sizeof(msg), "'%s' object is not callable", jv_type_name(fn));
	return fail(r, e->pos, msg);
}

static struct jv
concat(struct jrender *r, struct jv a, struct jv b)
{
	struct sbuf s = {0};
	struct jv v;

	jv_to_string(a, &s);
	jv_to_string(b, &s);
	v = jv_from_sbuf(r, &s);
	return v;
}

static bool
contains(struct jv hay, struct jv needle)
{
	if (hay.t == JV_STR && needle.t == JV_STR)
		return needle.u.s->n == 0 ||
		       memmem(hay.u.s->s, hay.u.s->n, needle.u.s->s, needle.u.s->n) != NULL;
	if (hay.t == JV_LIST) {
		for (size_t i = 0; i < hay.u.l->n; i++)
			if (jv_equal(hay.u.l->v[i], needle))
				return true;
	}
	if (hay.t == JV_DICT) {
		for (size_t i = 0; i < hay.u.d->n; i++)
			if (jv_equal(hay.u.d->k[i], needle))
				return true;
	}
	return false;
}

static int
compare(struct jv a, struct jv b, bool *ok)
{
	*ok = true;
	if ((a.t == JV_INT || a.t == JV_FLOAT || a.t == JV_BOOL) &&
	    (b.t == JV_INT || b.t == JV_FLOAT || b.t == JV_BOOL)) {
		double x = a.t == JV_INT ? (double)a.u.i : a.t == JV_BOOL ? a.u.b : a.u.f;
		double y = b.t == JV_INT ? (double)b.u.i : b.t == JV_BOOL ? b.u.b : b.u.f;
		return (x > y) - (x < y);
	}
	if (a.t == JV_STR && b.t == JV_STR) {
		int c = memcmp(a.u.s->s, b.u.s->s, a.u.s->n < b.u.s->n ? a.u.s->n : b.u.s->n);
		return c ? (c > 0) - (c < 0) : (a.u.s->n > b.u.s->n) - (a.u.s->n < b.u.s->n);
	}
	*ok = false;
	return 0;
}

static struct jv
unary_arith(struct jrender *r, const struct jexpr *e, struct jv v)
{
	bool neg = e->kind == JX_NEG;

	if (v.t == JV_INT || v.t == JV_BOOL) {
		int64_t i = v.t == JV_BOOL ? v.u.b : v.u.i;
		return jv_int(neg ? -i : i);
	}
	if (v.t == JV_FLOAT)
		return jv_float(neg ? -v.u.f : v.u.f);
	if (v.t == JV_UNDEF)
		return undefined_error(r, e->pos, v);
	return fail(r, e->pos, "bad operand type for unary minus or plus");
}

static bool
is_number(struct jv v)
{
	return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL;
}

static double
as_double(struct jv v)
{
	return v.t == JV_INT ? (double)v.u.i : v.t == JV_BOOL ? (v.u.b ? 1.0 : 0.0) : v.u.f;
}

/* + - * / // % ** on numbers, Python's rules (ints stay ints where Python's do). */
static struct jv
arith(struct jrender *r, const struct jexpr *e, const char *op, struct jv a, struct jv b)
{
	bool ints = a.t != JV_FLOAT && b.t != JV_FLOAT;
	int64_t x = ints ? (a.t == JV_BOOL ? a.u.b : a.u.i) : 0,
	        y = ints ? (b.t == JV_BOOL ? b.u.b : b.u.i) : 0;
	double f = as_double(a), g = as_double(b);
	int64_t res;

	if (strcmp(op, "/") == 0)
		return g == 0.0 ? fail(r, e->pos, "division by zero") : jv_float(f / g);
	if ((strcmp(op, "//") == 0 || strcmp(op, "%") == 0) && g == 0.0)
		return fail(r, e->pos, "integer division or modulo by zero");
	if (strcmp(op, "**") == 0) {
		double p = pow(f, g);
		if (ints && y >= 0 && fabs(p) < 9.2e18)
			return jv_int((int64_t)llround(p));
		return jv_float(p);
	}
	if (ints) {
		if ((op[0] == '+' && !__builtin_add_overflow(x, y, &res)) ||
		    (op[0] == '-' && !__builtin_sub_overflow(x, y, &res)) ||
		    (op[0] == '*' && !__builtin_mul_overflow(x, y, &res)))
			return jv_int(res);
		if (strcmp(op, "//") == 0)
			return jv_int(x / y - ((x % y != 0) && ((x < 0) != (y < 0))));
		if (op[0] == '%') {
			int64_t m = x % y;
			return jv_int(m != 0 && ((m < 0) != (y < 0)) ? m + y : m);
		}
		return fail(r, e->pos, "integer overflow");
	}
	switch (op[0]) {
	case '+':
		return jv_float(f + g);
	case '-':
		return jv_float(f - g);
	case '*':
		return jv_float(f * g);
	default:
		break;
	}
	if (strcmp(op, "//") == 0)
		return jv_float(floor(f / g));
	double m = fmod(f, g);
	return jv_float(m != 0.0 && ((m < 0) != (g < 0)) ? m + g : m);
}

static struct jv
plus(struct jrender *r, const struct jexpr *e, struct jv a, struct jv b)
{
	if (a.t == JV_STR && b.t == JV_STR)
		return concat(r, a, b);
	if (a.t == JV_LIST && b.t == JV_LIST) {
		struct jv l = jv_list(r, a.u.l->n + b.u.l->n);
		for (size_t i = 0; i < a.u.l->n && l.t == JV_LIST; i++)
			jv_list_push(r, l, a.u.l->v[i]);
		for (size_t i = 0; i < b.u.l->n && l.t == JV_LIST; i++)
			jv_list_push(r, l, b.u.l->v[i]);
		return l;
	}
	if (is_number(a) && is_number(b))
		return arith(r, e, "+", a, b);
	if (a.t == JV_UNDEF || b.t == JV_UNDEF)
		return undefined_error(r, e->pos, a.t == JV_UNDEF ? a : b);
	char msg[160];
	snprintf(msg, sizeof(msg), "unsupported operand type(s) for +: '%s' and '%s'",
	         jv_type_name(a), jv_type_name(b));
	return fail(r, e->pos, msg);
}

static struct jv
binary_op(struct jrender *r, const struct jexpr *e, struct jv a, struct jv b)
{
	const char *op = e->name;
	bool ok;
	int c;

	if (strcmp(op, "==") == 0 || strcmp(op, "!=") == 0)
		return jv_bool(jv_equal(a, b) == (op[0] == '='));
	if (strcmp(op, "in") == 0)
		return jv_bool(contains(b, a));
	if (strcmp(op, "~") == 0)
		return concat(r, a, b);
	if (strcmp(op, "+") == 0)
		return plus(r, e, a, b);
	if (op[0] == '<' || op[0] == '>') {
		c = compare(a, b, &ok);
		if (!ok)
			return fail(r, e->pos, "values of these types cannot be compared");
		return jv_bool(op[0] == '<' ? (op[1] ? c <= 0 : c < 0) : (op[1] ? c >= 0 : c > 0));
	}
	if (op[0] == '*' && op[1] == '\0' && a.t == JV_STR && (b.t == JV_INT || b.t == JV_BOOL)) {
		struct sbuf s = {0};
		int64_t times = b.t == JV_INT ? b.u.i : b.u.b;
		if (times > 0 && a.u.s->n > 0 && (uint64_t)times > JINJA_MAX_OUTPUT / a.u.s->n)
			return fail(r, e->pos, "string repetition too large");
		for (int64_t i = 0; i < times; i++)
			sbuf_put(&s, a.u.s->s, a.u.s->n);
		struct jv v = jv_from_sbuf(r, &s);
		return v;
	}
	if (is_number(a) && is_number(b))
		return arith(r, e, op, a, b);
	if (a.t == JV_UNDEF || b.t == JV_UNDEF)
		return undefined_error(r, e->pos, a.t == JV_UNDEF ? a : b);
	char msg[160];
	snprintf(msg, sizeof(msg), "unsupported operand type(s) for %s: '%s' and '%s'", op,
	         jv_type_name(a), jv_type_name(b));
	return fail(r, e->pos, msg);
}

struct jv
jr_eval(struct jrender *r, const struct jexpr *e)
{
	struct jv a, b;

	if (r->failed || e == NULL)
		return jv_undef(NULL);
	if (++r->steps > JINJA_MAX_STEPS)
		return fail(r, e->pos, "template took too many steps");
	switch (e->kind) {
	case JX_LIT:
		return e->lit;
	case JX_NAME:
		a = jr_lookup(r, e->name);
		return a.t == JV_UNDEF ? jv_undef(e->name) : a;
	case JX_ATTR:
		return eval_attr(r, e, jr_eval(r, e->a));
	case JX_ITEM:
		a = jr_eval(r, e->a);
		return eval_item(r, e, a, jr_eval(r, e->b));
	case JX_SLICE:
		return eval_slice(r, e);
	case JX_CALL:
		return eval_call(r, e);
	case JX_FILTER: {
		struct jv *args, *kwv;
		a = jr_eval(r, e->a);
		if (r->failed || !eval_args(r, e, &args, &kwv))
			return jv_undef(NULL);
		return jr_filter(r, e, a, args, e->n_args, e->kwnames, kwv, e->n_kw);
	}
	case JX_TEST: {
		struct jv *args, *kwv;
		a = jr_eval(r, e->a);
		if (r->failed || !eval_args(r, e, &args, &kwv))
			return jv_undef(NULL);
		return jv_bool(jr_test(r, e, e->name, a, args, e->n_args) != e->negate);
	}
	case JX_NOT:
		return jv_bool(!jv_truthy(jr_eval(r, e->a)));
	case JX_NEG:
	case JX_POS:
		return unary_arith(r, e, jr_eval(r, e->a));
	case JX_AND:
		a = jr_eval(r, e->a);
		return jv_truthy(a) ? jr_eval(r, e->b) : a;
	case JX_OR:
		a = jr_eval(r, e->a);
		return jv_truthy(a) ? a : jr_eval(r, e->b);
	case JX_COND:
		return jv_truthy(jr_eval(r, e->b)) ? jr_eval(r, e->a)
		       : e->c                      ? jr_eval(r, e->c)
		                                   : jv_undef(NULL);
	case JX_BIN:
		a = jr_eval(r, e->a);
		b = jr_eval(r, e->b);
		return r->failed ? jv_undef(NULL) : binary_op(r, e, a, b);
	case JX_LIST:
	case JX_TUPLE:
		a = jv_list(r, e->n_args);
		for (size_t i = 0; i < e->n_args && a.t == JV_LIST; i++)
			jv_list_push(r, a, jr_eval(r, e->args[i]));
		return a;
	case JX_DICT:
		a = jv_dict(r, e->n_args);
		for (size_t i = 0; i < e->n_args && a.t == JV_DICT; i++)
			jv_dict_set(r, a.u.d, jr_eval(r, e->args[i]), jr_eval(r, e->vals[i]));
		return a;
	}
	return jv_undef(NULL);
}

orch_err
jinja_render(const struct jinja_tmpl *t, const void *vars, const struct jinja_opts *o,
             struct sbuf *out, struct orch_errinfo *reterr)
{
	struct arena a = {0};
	struct jscope root = {0};
	struct jinja_opts dflt = {.now = -1};
	struct jrender r = {t, o ? o : &dflt, &a, reterr, &root, &root, 0, 0, 0, ORCH_OK};

	for (const cJSON *c = vars ? ((const cJSON *)vars)->child : NULL; c && !r.failed;
	     c = c->next)
		jr_set(&r, c->string, jv_from_json(&r, c));
	if (!r.failed)
		jr_exec_body(&r, &t->root, out);
	if (!r.failed && out->oom)
		jr_fail(&r, 0, ORCH_ENOMEM, "out of memory");
	arena_free(&a);
	return r.failed;
}
